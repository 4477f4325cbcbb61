#!/usr/bin/env bash
# tpuemu bench --json under mpirun (16 ranks, real data) and tpuemu model --json in
# one process must report the same modeled_us for the same cases.
# usage: bench_vs_model.sh TPUEMU MPIRUN [MPIRUN ARGS...]
set -eu
. "$(dirname "$0")/../cli/agree.sh"
tpuemu=$1
shift
mpirun=("$@")
bad=0
for coll in psum all-gather reduce-scatter all-to-all ppermute; do
    bench=$("${mpirun[@]}" "$tpuemu" bench --topology 4x4 --collective "$coll" --min-bytes 64K \
        --max-bytes 64K --iters 1 --warmup 0 --json - | grep -o '"modeled_us": [0-9.]*' |
        head -1 | awk '{print $2}')
    model=$("$tpuemu" model --topology 4x4 --collective "$coll" --bytes 64K --json - |
        grep -o '"modeled_us": [0-9.]*' | awk '{print $2}')
    agree "$coll" bench "$bench" model "$model"
done
exit $bad
