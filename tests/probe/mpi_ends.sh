#!/usr/bin/env bash
# usage: tests/probe/mpi_ends.sh MODE TPUEMU
# How a 4-rank job ends when something happens to it (docs/errors.md):
#   trainstop  SIGSTOP world rank 2 of a train with --timeout 3: the job ends, exit 4 (timeout),
#              one line names chip 2's rank and quotes "--timeout 3"
#   termjob    SIGTERM to mpirun during a train with --json OLD: one "interrupted by SIGTERM"
#              line naming the step, the old JSON intact, no temporary file, every rank gone
#   termrank   SIGTERM to world rank 1 of a bench with --json OLD: one line naming chip 1's rank
#              and the row, the old JSON intact, no temporary file
#   startloss  TPUEMU_TEST_LOSE_AT_START=3:init (rank 3 killed right after MPI_Init): one line
#              "lost MPI rank 3 ... during start-up", non-zero exit, no start-up file left
#   monitor    the monitor process of rank 0 killed mid-bench: the bench still ends with 0
#   devfull    bench --json /dev/full: one line, exit 3 (an output that could not be written)
# Prints the seconds from the event to the end (reported, not asserted: no timing threshold).
set -u
mode=$1 tpuemu=$2
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN=(mpirun --oversubscribe --mca mpi_yield_when_idle 1 -n 4)
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail() { echo "FAIL ($mode): $*"; cat "$d/err"; exit 1; }
echo OLD >"$d/old.json"
# The ranks' start-up files go to TMPDIR: a folder of this test's own, so that the
# files of other jobs running beside it are not taken for this job's.
export TMPDIR=$d/tmp
mkdir "$TMPDIR"
extra=()
case $mode in
trainstop) args=(train --topology 2x2 --steps 1000000 --hidden 64 --batch 16 --timeout 3) ;;
termjob) args=(train --topology 2x2 --steps 1000000 --hidden 64 --batch 16 --json "$d/old.json") ;;
termrank) args=(bench --topology 2x2 --iters 400 --json "$d/old.json") ;;
monitor) args=(bench --topology 2x2 --max-bytes 64K --iters 100 --json "$d/old.json") ;;
startloss) args=(run --topology 2x2) extra=(-x TPUEMU_TEST_LOSE_AT_START=3:init) ;;
devfull) args=(bench --topology 2x2 --max-bytes 4K --json /dev/full) ;;
*) echo "unknown mode $mode"; exit 2 ;;
esac
"${MPIRUN[@]}" "${extra[@]}" "$tpuemu" "${args[@]}" >"$d/out" 2>"$d/err" &
mpid=$!
# The pid of world rank $1 (its environment says which rank it is), once it runs.
rank_pid() {
    local p
    for p in $(pgrep -P "$mpid"); do
        tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1" && echo "$p"
    done
}
# Wait until the ranks have started their work (the train prints its steps; bench its rows).
wait_started() {
    for _ in $(seq 1 300); do
        [ -s "$d/out" ] && return 0
        kill -0 "$mpid" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}
t0=$(date +%s.%N)
case $mode in
trainstop)
    wait_started || fail "the job never started"
    kill -STOP "$(rank_pid 2)"
    t0=$(date +%s.%N) ;;
termjob)
    wait_started || fail "the job never started"
    kill -TERM "$mpid"
    t0=$(date +%s.%N) ;;
termrank)
    wait_started || fail "the job never started"
    sleep 1
    kill -TERM "$(rank_pid 1)"
    t0=$(date +%s.%N) ;;
monitor)
    wait_started || fail "the job never started"
    r0=$(rank_pid 0)
    m=$(pgrep -P "$r0")
    [ -n "$m" ] || fail "no monitor process under rank 0"
    kill -9 $m ;;
esac
wait "$mpid"
rc=$?
t1=$(date +%s.%N)
lines=$(grep -c '^tpuemu: ' "$d/err")
echo "$mode: exit $rc, ended $(echo "$t1 - $t0" | bc) s after the event"
grep '^tpuemu: ' "$d/err"
left=$(ls -A "$d" | grep -v '^\(old.json\|out\|err\|tmp\)$')
[ -z "$left" ] || fail "left in the output folder: $left"
case $mode in
trainstop)
    [ "$rc" -eq 4 ] || fail "exit $rc, not 4"
    [ "$lines" -eq 1 ] || fail "$lines lines"
    grep -q '^tpuemu: chip 2 (1,0), MPI rank 2 is behind.*(--timeout 3[;)]' "$d/err" ||
        fail "the line does not name rank 2 and --timeout 3" ;;
termjob | termrank)
    [ "$rc" -ne 0 ] || fail "exit 0"
    [ "$lines" -eq 1 ] || fail "$lines lines"
    [ "$(cat "$d/old.json")" = OLD ] || fail "the old JSON was replaced"
    if [ "$mode" = termjob ]; then
        grep -q '^tpuemu: interrupted by SIGTERM (mpirun ended the job) with [0-9]* of 1000000 done (running: step [0-9]*)' "$d/err" ||
            fail "no line naming the step"
    else
        grep -q '^tpuemu: interrupted by SIGTERM (sent to chip 1 (0,1), MPI rank 1) with [0-9]* of [0-9]* done (running: [a-z-]* [0-9.]* [KM]\?i\?B)' "$d/err" ||
            fail "no line naming rank 1 and the row"
    fi ;;
startloss)
    [ "$rc" -ne 0 ] || fail "exit 0"
    [ "$lines" -eq 1 ] || fail "$lines lines"
    grep -q '^tpuemu: lost MPI rank 3 (pid [0-9]* on node .*) during start-up' "$d/err" ||
        fail "no line naming rank 3"
    sleep 1
    new=$(ls "$TMPDIR"/tpuemu-start-* 2>/dev/null)
    [ -z "$new" ] || fail "start-up files left: $new" ;;
monitor)
    [ "$rc" -eq 0 ] || fail "exit $rc"
    [ "$lines" -eq 0 ] || fail "$lines lines"
    new=$(ls "$TMPDIR"/tpuemu-start-* 2>/dev/null)
    [ -z "$new" ] || fail "start-up files left: $new"
    head -c1 "$d/old.json" | grep -q '{' || fail "the JSON was not written" ;;
devfull)
    [ "$rc" -eq 3 ] || fail "exit $rc, not 3"
    [ "$lines" -eq 1 ] || fail "$lines lines" ;;
esac
pgrep -P "$mpid" >/dev/null 2>&1 && fail "ranks still running"
echo ok
