#!/usr/bin/env bash
# usage: bench/compare_mpi.sh [REPEATS] [TPUEMU] [COLLECTIVE] [DTYPE] [SIZES] [extra bench flags...]
# The host speed of the executor against the host MPI library, measured in the
# same job (tpuemu bench --compare-mpi alternates ours and MPI's call by call):
# runs each size of SIZES (comma-separated, default 8,4K,1M,16M,64M) REPEATS times
# (default 5) on 16 ranks, 4x4, one mpirun per size and run, and prints per size
# the median of ours / MPI's collective over the runs (each run's ratio is the
# mean of ours over the mean of MPI's, both over the iterations of that run).
# COLLECTIVE (default psum) is any collective bench compares (psum against
# MPI_Allreduce, all-gather MPI_Allgather, reduce-scatter
# MPI_Reduce_scatter_block, all-to-all MPI_Alltoall); DTYPE f32 (default), i32
# or bf16 (bf16 reductions against MPI with a user-defined bf16 sum).
# Both sides are measured in steady state after --warmup 20 untimed iterations
# (ours and MPI's alike): Open MPI's shared-memory transport (vader) gives a peer
# a fast box only after 16 messages to it (btl_vader_fbox_threshold), so a cold
# run times the library's set-up, not the collective.
# Each run's figures are printed as soon as it ends (a run cut short by a timeout
# loses nothing before it), the medians at the end.
# A benchmark, not a test: it never fails on a timing.  Expect noise on a loaded
# machine; compare medians.
set -eu
reps=${1:-5}
prog=${2:-build/tpuemu}
coll=${3:-psum}
dtype=${4:-f32}
sizes=${5:-8,4K,1M,16M,64M}
shift $(($# < 5 ? $# : 5))
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
base="mpirun -n 16 --oversubscribe --mca mpi_yield_when_idle 1 $prog bench --topology 4x4
 --collective $coll --dtype $dtype --iters 8 --warmup 20 --compare-mpi --json - $*"
echo "# $base --min-bytes SIZE --max-bytes SIZE   (SIZE in $sizes; $reps runs)" | tr '\n' ' '
echo
for i in $(seq "$reps"); do
    for s in ${sizes//,/ }; do
        # shellcheck disable=SC2086
        $base --min-bytes "$s" --max-bytes "$s" >"$tmp/run$i.$s.json" 2>/dev/null ||
            echo "run $i size $s: exit $?"
        python3 - "$tmp/run$i.$s.json" "$i" <<'PY'
import json, sys
try:
    doc = json.load(open(sys.argv[1]))
except ValueError:
    sys.exit(print(f"run {sys.argv[2]}: no JSON"))
for r in doc["rows"]:
    if "mpi_ratio" in r:
        print(f"run {sys.argv[2]} {r['bytes']:>10} bytes: ours {r['measured_us']:.1f} us, "
              f"MPI {r['mpi_us']:.1f} us, ratio {r['mpi_ratio']:.2f} ({r['algorithm']})"
              + ("" if doc["passed"] else ", NOT verified"), flush=True)
PY
    done
done
python3 - "$tmp" <<'PY'
import glob, json, statistics, sys
rows = {}
for path in sorted(glob.glob(f"{sys.argv[1]}/run*.json")):
    try:
        doc = json.load(open(path))
    except ValueError:
        print(f"{path}: no JSON")
        continue
    if not doc["passed"]:
        print(f"{path}: results NOT verified (#wrong > 0)")
    for r in doc["rows"]:
        if "mpi_ratio" in r:
            rows.setdefault(r["bytes"], []).append(
                (r["measured_us"], r["mpi_us"], r["mpi_ratio"], r["algorithm"]))
print(f"{'bytes':>10} {'ours_us':>10} {'mpi_us':>10} {'ratio':>7}  (medians; ratios per run)")
for b in sorted(rows):
    v = rows[b]
    print(f"{b:>10} {statistics.median(x[0] for x in v):>10.1f} "
          f"{statistics.median(x[1] for x in v):>10.1f} {statistics.median(x[2] for x in v):>7.2f}  "
          + " ".join(f"{x[2]:.2f}" for x in sorted(v, key=lambda x: x[2])))
PY
