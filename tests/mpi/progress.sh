#!/usr/bin/env bash
# The progress bar of 'bench' (launch/output/progress.c), under mpirun:
#   - on a terminal (a pty from script(1)) the bar with the current item shows;
#   - with --quiet, or when the output is not a terminal, nothing of it shows.
# TPUEMU_PROGRESS_AFTER=0 shows it from the first row, so no wall time matters.
# usage: progress.sh MPIRUN_COMMAND...  (tpuemu last)
set -u
cmd=("$@" bench --topology 2x2 --collective psum --min-bytes 1K --max-bytes 8K --iters 1
     --warmup 0)
export TPUEMU_PROGRESS_AFTER=0
q=$(printf '%q ' "${cmd[@]}")
if ! command -v script > /dev/null; then
    echo "script(1) missing: only the not-a-terminal case is checked"
else
    out=$(script -qec "$q" /dev/null)
    echo "$out" | grep -Eq '\] 1/4  psum 2 KiB' || { echo "FAIL: no progress bar on a pty:"; echo "$out"; exit 1; }
    out=$(script -qec "$q --quiet" /dev/null)
    echo "$out" | grep -q '\] 1/4' && { echo "FAIL: a progress bar with --quiet:"; echo "$out"; exit 1; }
    # train (one chip, in this process): the bar names the step running.
    tpuemu=${*: -1}
    out=$(script -qec "$(printf '%q' "$tpuemu") train --topology 1x1 --steps 2 --hidden 64" /dev/null)
    echo "$out" | grep -Eq '\] 1/2  step 1' || { echo "FAIL: no progress bar in train:"; echo "$out"; exit 1; }
fi
out=$("${cmd[@]}" 2>&1)
echo "$out" | grep -q '\] 1/4' && { echo "FAIL: a progress bar without a terminal:"; echo "$out"; exit 1; }
echo "$out" | grep -q "all results verified" || { echo "FAIL: bench failed:"; echo "$out"; exit 1; }
echo "ok: progress bar on a pty only, and not with --quiet"
