#!/usr/bin/env bash
# The progress bar of 'bench', 'train' and 'replay' (launch/output/progress.c):
#   - on a terminal (a pty from script(1)) the bar shows, with the percentage, the
#     elapsed time, the ETA, the rate and the current item;
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
    echo "$out" | grep -Eq '\] 1/4  25%, [0-9.:]+ s? ?elapsed, ETA [^,]+, [0-9.e+-]+/s  psum 2 KiB' || { echo "FAIL: no progress bar on a pty:"; echo "$out"; exit 1; }
    out=$(script -qec "$q --quiet" /dev/null)
    echo "$out" | grep -q '\] 1/4' && { echo "FAIL: a progress bar with --quiet:"; echo "$out"; exit 1; }
    # train (one chip, in this process): the bar names the step running.
    tpuemu=${*: -1}
    out=$(script -qec "$(printf '%q' "$tpuemu") train --topology 1x1 --steps 2 --hidden 64" /dev/null)
    echo "$out" | grep -Eq '\] 1/2  50%, .* elapsed, ETA .*/s  step 1' || { echo "FAIL: no progress bar in train:"; echo "$out"; exit 1; }
    # train under mpirun (rank 0's bar), and not with --quiet.
    mpi=("${@:1:$#-1}")
    tq="$(printf '%q ' "${mpi[@]}") $(printf '%q' "$tpuemu") train --topology 2x2 --steps 2 --hidden 64 --batch 16"
    out=$(script -qec "$tq" /dev/null)
    echo "$out" | grep -Eq '\] 1/2  50%, .* elapsed, ETA .*/s  step 1' || { echo "FAIL: no progress bar in train under mpirun:"; echo "$out"; exit 1; }
    out=$(script -qec "$tq --quiet" /dev/null)
    echo "$out" | grep -q '\] 1/2' && { echo "FAIL: a progress bar in train with --quiet:"; echo "$out"; exit 1; }
    # replay under mpirun: the bar names the collective running (11 executions).
    hlo=$(dirname "$0")/../fixtures/hlo/loop_2x2.hlo
    rq="$(printf '%q ' "${mpi[@]}") $(printf '%q' "$tpuemu") replay $(printf '%q' "$hlo") --topology 2x2"
    out=$(script -qec "$rq" /dev/null)
    echo "$out" | grep -Eq '\] 1/11 .*%, .* elapsed, ETA .*/s  ar' || { echo "FAIL: no progress bar in replay:"; echo "$out"; exit 1; }
    out=$(script -qec "$rq --quiet" /dev/null)
    echo "$out" | grep -q '\] 1/11' && { echo "FAIL: a progress bar in replay with --quiet:"; echo "$out"; exit 1; }
    # replay without mpirun: the bar while the trace is written.
    out=$(script -qec "$(printf '%q' "$tpuemu") replay $(printf '%q' "$hlo") --topology 2x2 --trace /dev/null" /dev/null)
    echo "$out" | grep -Eq '\] 0/23   0%, .* elapsed, ETA \?, 0/s  writing the trace' || { echo "FAIL: no progress bar writing a trace:"; echo "$out"; exit 1; }
fi
out=$("${cmd[@]}" 2>&1)
echo "$out" | grep -q '\] 1/4' && { echo "FAIL: a progress bar without a terminal:"; echo "$out"; exit 1; }
echo "$out" | grep -q "all results verified" || { echo "FAIL: bench failed:"; echo "$out"; exit 1; }
out=$("${@:1:$#-1}" "${*: -1}" replay "$(dirname "$0")/../fixtures/hlo/loop_2x2.hlo" --topology 2x2 2>&1)
echo "$out" | grep -q '\] 1/11' && { echo "FAIL: a progress bar in replay without a terminal:"; echo "$out"; exit 1; }
echo "ok: progress bar on a pty only, and not with --quiet (bench, train, replay)"
