#!/usr/bin/env bash
# usage: liveness.sh MODE TPUEMU
#   MODE stop:   SIGSTOP world rank 2 of a 4-rank bench (--timeout 2) once it runs
#   MODE kill:   kill -9 world rank 2 of a 4-rank bench once it runs
#   MODE term:   SIGTERM to world rank 2 of a 4-rank bench once it runs, as Open MPI's daemon
#                ends the ranks of rank 0's node when a rank on another node died: no
#                'lost' line names a rank the runtime ended (mpirun names the rank), the
#                job ends non-zero, and the monitor leaves no file in /tmp
#   MODE inject: a 4-rank run with --inject crash:chip=3,call=2
#   MODE injstop: a 4-rank bench with --inject stop:chip=C,call=5, C = 1, 2, 3
#   MODE trainstop: SIGSTOP world rank 2 of a 4-rank train (--timeout 2) once it runs
#   MODE runstop: the default run with --inject stop:chip=2,call=3 (the stop comes before the
#                 comparison of the chips' calls, a collective of the transport)
#   MODE mpistop: SIGSTOP world rank 2 of a 4-rank bench --compare-mpi (--timeout 2): the
#                 stop lands in ours or in the host MPI's own blocking psum (the guard)
#   MODE replaystop: a 4-rank replay of tests/fixtures/hlo/loop_2x2.hlo (11 executions) with
#                 --inject stop:chip=2,call=5 --timeout 2 (mid-replay)
#   MODE shmstop: as stop, on a 1 MiB psum (the two-round psum through the node's shared
#                 memory): the stop lands anywhere, in a psum (the others then wait for
#                 chip 2 in shared memory) or in the bench's barriers and checks
#   MODE shminjstop: --inject stop:chip=2,call=5 on that 1 MiB psum: the others always
#                 wait for chip 2's first phase of call 5 in shared memory
# Passes when one 'tpuemu:' line names the chip that was behind or lost by its
# coordinates within the bound (--timeout + 5 s for stop, mpistop, injstop, runstop,
# replaystop, shmstop and shminjstop, + 7 s for trainstop (a step of compute first), 10 s for kill and inject, from the signal, or from the moment the chip
# that stops or kills itself is seen stopped or gone) and the job then ends non-zero
# (within 10 s more: mpirun's teardown).  Prints the seconds it took and the line.
set -u
mode=$1 tpuemu=$2
# MODE injstop: --inject stop:chip=C,call=K stops chip C (SIGSTOP, raised by
# itself) at a sync point the others reach too, so that chips wait on it
# directly and through others; run 3 times with C = 1, 2, 3 on a 2x2 bench.  The
# watchdog follows who waits on whom, so the stopped chip is named every time.
if [ "$mode" = injstop ]; then
    for c in 1 2 3; do
        TPU_LIVENESS_CHIP=$c bash "$0" injstop1 "$tpuemu" || exit 1
    done
    exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
args=(bench --topology 2x2 --collective psum --min-bytes 4K --max-bytes 4K --iters 1000000
      --warmup 0 --timeout 2)
[ "$mode" = inject ] && args=(run --topology 2x2 --inject crash:chip=3,call=2 --timeout 20)
# trainstop: SIGSTOP rank 2 of a training job; between steps (the step-time and
# error checks) as inside its collectives, the watchdog names it.
[ "$mode" = trainstop ] && args=(train --topology 2x2 --steps 1000000 --hidden 256 --timeout 2)
[ "$mode" = mpistop ] && args+=(--compare-mpi)
# shmstop, shminjstop: a psum of 1 MiB (the two-round plan) through shared memory.
case $mode in shmstop | shminjstop)
    args=(bench --topology 2x2 --collective psum --min-bytes 1M --max-bytes 1M --iters 1000000
          --warmup 0 --timeout 2) ;;
esac
[ "$mode" = shminjstop ] && args+=(--inject "stop:chip=2,call=5")
chip=${TPU_LIVENESS_CHIP:-2}
[ "$mode" = injstop1 ] && args+=(--inject "stop:chip=$chip,call=5")
[ "$mode" = runstop ] && args=(run --topology 2x2 --inject stop:chip=2,call=3 --timeout 2)
[ "$mode" = replaystop ] && args=(replay "$(dirname "$0")/../fixtures/hlo/loop_2x2.hlo"
                                  --topology 2x2 --quiet --inject stop:chip=2,call=5 --timeout 2)
start=$(date +%s.%N)
mpirun --oversubscribe --mca mpi_yield_when_idle 1 -n 4 "$tpuemu" "${args[@]}" >"$out" 2>&1 &
mpid=$!
# The pid of world rank 2 (its environment says which rank it is).
victim=
# The pid of world rank $1, once it exists (empty if it does not yet).
rank_pid() {
    local p
    for p in $(pgrep -P "$mpid"); do
        if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1"; then
            echo "$p"
        fi
    done
}
if [ "$mode" = injstop1 ] || [ "$mode" = runstop ] || [ "$mode" = replaystop ] ||
    [ "$mode" = inject ] || [ "$mode" = shminjstop ]; then
    # A chip that stops (or kills) itself: the bound counts from the moment it is
    # seen stopped (or gone).  From the start, it counted the start-up too, which a
    # loaded machine stretches: under two CPU hogs 'inject' took 10.1 s of its 10.
    [ "$mode" = inject ] && chip=3
    stopped=
    for _ in $(seq 1 1200); do
        [ -n "$victim" ] || victim=$(rank_pid "$chip")
        if [ -n "$victim" ]; then
            state=$(awk '{ print $3 }' "/proc/$victim/stat" 2>/dev/null)
            case $mode:$state in
            inject: | inject:Z | inject:X | injstop1:T | runstop:T | replaystop:T | shminjstop:T)
                stopped=1 ;;
            esac
            [ -n "$stopped" ] && break
        fi
        kill -0 "$mpid" 2>/dev/null || break
        sleep 0.05
    done
    [ -n "$stopped" ] || { echo "FAIL: chip $chip never stopped"; cat "$out"; kill "$mpid"; exit 1; }
    start=$(date +%s.%N)
fi
if [ "$mode" = stop ] || [ "$mode" = kill ] || [ "$mode" = term ] || [ "$mode" = trainstop ] ||
    [ "$mode" = mpistop ] || [ "$mode" = shmstop ]; then
    for _ in $(seq 1 300); do
        if grep -qE '^ *4096|^#|^step' "$out" 2>/dev/null; then
            victim=$(rank_pid 2)
            [ -n "$victim" ] && break
        fi
        sleep 0.1
    done
    [ -n "$victim" ] || { echo "FAIL: rank 2 never started"; cat "$out"; kill "$mpid"; exit 1; }
    sleep 0.5
    pid0=$(rank_pid 0)
    start=$(date +%s.%N)
    case $mode in
    kill) kill -9 "$victim" ;;
    term) kill -TERM "$victim" ;;
    *) kill -STOP "$victim" ;;
    esac
fi
limit=10
case $mode in stop | trainstop | mpistop | injstop1 | runstop | replaystop | shmstop | shminjstop) limit=7 ;; esac
# In train the others start waiting for the stopped chip only after their compute of
# the step (0.6 to 1.5 s a step under two CPU hogs): named after 5.4 to 5.7 s there.
[ "$mode" = trainstop ] && limit=9
rc=0
# The bound is on our part: the moment a 'tpuemu:' line names the chip.  mpirun's
# teardown after that (it stops 4 processes, one of them stopped, on a loaded
# machine: 2.8 s under two CPU hogs) only has to end: $teardown s more.
teardown=10
named=
for _ in $(seq 1 $(((limit + teardown) * 10))); do
    if [ -z "$named" ] && grep -qE '^tpuemu: .*(behind|lost)' "$out" 2>/dev/null; then
        named=$(date +%s.%N)
    fi
    kill -0 "$mpid" 2>/dev/null || break
    sleep 0.1
done
if kill -0 "$mpid" 2>/dev/null; then
    echo "FAIL: the job still runs $((limit + teardown)) s after the $mode"
    [ -n "$victim" ] && kill -CONT "$victim" 2>/dev/null
    kill "$mpid"
    cat "$out"
    exit 1
fi
wait "$mpid"
rc=$?
end=$(date +%s.%N)
[ -n "$named" ] || named=$end
secs=$(echo "$named - $start" | bc)
echo "$mode: named after $secs s, exit $rc after $(echo "$end - $start" | bc) s"
grep '^tpuemu: ' "$out" | grep -v 'chips of' | sed 's/^/  /'
[ "$rc" -ne 0 ] || { echo "FAIL: exit 0"; cat "$out"; exit 1; }
if [ "$mode" = term ]; then
    if grep -qE '^tpuemu: .*lost' "$out"; then
        echo "FAIL: a rank the runtime ended was reported lost"; cat "$out"; exit 1
    fi
    # The monitor removes its marker and the ranks' SIGTERM files once they are gone.
    for _ in $(seq 1 100); do
        compgen -G "/tmp/tpuemu-$pid0.abort*" >/dev/null || break
        sleep 0.1
    done
    if compgen -G "/tmp/tpuemu-$pid0.abort*" >/dev/null; then
        echo "FAIL: left in /tmp:" /tmp/tpuemu-"$pid0".abort*; exit 1
    fi
    echo ok
    exit 0
fi
awk -v s="$secs" -v l="$limit" 'BEGIN { exit !(s <= l) }' || {
    echo "FAIL: the chip was named after $secs s, more than $limit"; cat "$out"; exit 1; }
case $mode in
stop | trainstop | mpistop | runstop | replaystop | shmstop | shminjstop)
    want='chip 2 \(1,0\), MPI rank 2 is behind' ;;
kill) want='lost chip 2 \(1,0\), MPI rank 2' ;;
inject) want='lost chip 3 \(1,1\), MPI rank 3' ;;
injstop1) want="chip $chip \\($((chip / 2)),$((chip % 2))\\), MPI rank $chip is behind" ;;
esac
n=$(grep -cE "^tpuemu: .*$want" "$out")
[ "$n" -ge 1 ] || { echo "FAIL: no line matches /$want/"; cat "$out"; exit 1; }
echo ok
