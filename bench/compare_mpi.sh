#!/usr/bin/env bash
# usage: bench/compare_mpi.sh [REPEATS] [TPUEMU] [extra bench flags...]
# The host speed of the executor against the host MPI library, measured in the
# same job (tpuemu bench --compare-mpi alternates ours and MPI's call by call):
# runs the psum sweep REPEATS times (default 5) on 16 ranks and prints, per size,
# the median of ours / MPI_Allreduce over the runs.  A benchmark, not a test: it
# never fails on a timing.  Expect noise on a loaded machine; compare medians.
set -eu
reps=${1:-5}
prog=${2:-build/tpuemu}
shift $(($# < 2 ? $# : 2))
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmd="mpirun -n 16 --oversubscribe --mca mpi_yield_when_idle 1 $prog bench --topology 4x4
 --collective psum --min-bytes 8 --max-bytes 64M --factor 8 --iters 8 --compare-mpi --json - $*"
echo "# $cmd" | tr '\n' ' '
echo
for i in $(seq "$reps"); do
    # shellcheck disable=SC2086
    $cmd >"$tmp/run$i.json" 2>/dev/null
done
python3 - "$tmp" "$reps" <<'PY'
import json, statistics, sys
d, reps = sys.argv[1], int(sys.argv[2])
rows = {}
for i in range(1, reps + 1):
    doc = json.load(open(f"{d}/run{i}.json"))
    if not doc["passed"]:
        print(f"run {i}: results NOT verified (#wrong > 0)")
    for r in doc["rows"]:
        rows.setdefault(r["bytes"], []).append((r["measured_us"], r["mpi_us"], r["mpi_ratio"]))
print(f"{'bytes':>10} {'ours_us':>10} {'mpi_us':>10} {'ratio':>7}  (medians of {reps} runs; ratios per run)")
for b in sorted(rows):
    v = rows[b]
    print(f"{b:>10} {statistics.median(x[0] for x in v):>10.1f} "
          f"{statistics.median(x[1] for x in v):>10.1f} {statistics.median(x[2] for x in v):>7.2f}  "
          + " ".join(f"{x[2]:.2f}" for x in v))
PY
