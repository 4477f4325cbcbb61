#!/usr/bin/env bash
# usage: liveness.sh MODE TPUEMU
#   MODE stop:   SIGSTOP world rank 2 of a 4-rank bench (--timeout 2) once it runs
#   MODE kill:   kill -9 world rank 2 of a 4-rank bench once it runs
#   MODE inject: a 4-rank run with --inject crash:chip=3,call=2
#   MODE injstop: a 4-rank bench with --inject stop:chip=C,call=5, C = 1, 2, 3
#   MODE trainstop: SIGSTOP world rank 2 of a 4-rank train (--timeout 2) once it runs
# Passes when the job ends non-zero within the bound (--timeout + 5 s for stop and trainstop,
# 10 s for kill and inject, 15 s for injstop, from the signal or the start), and one 'tpuemu:'
# line names the chip that was behind or lost by its coordinates.  Prints the
# seconds it took and the line.
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
chip=${TPU_LIVENESS_CHIP:-2}
[ "$mode" = injstop1 ] && args+=(--inject "stop:chip=$chip,call=5")
start=$(date +%s.%N)
mpirun --oversubscribe --mca mpi_yield_when_idle 1 -n 4 "$tpuemu" "${args[@]}" >"$out" 2>&1 &
mpid=$!
# The pid of world rank 2 (its environment says which rank it is).
victim=
if [ "$mode" = stop ] || [ "$mode" = kill ] || [ "$mode" = trainstop ]; then
    for _ in $(seq 1 300); do
        if grep -qE '^ *4096|^#|^step' "$out" 2>/dev/null; then
            for p in $(pgrep -P "$mpid"); do
                if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx OMPI_COMM_WORLD_RANK=2
                then
                    victim=$p
                fi
            done
            [ -n "$victim" ] && break
        fi
        sleep 0.1
    done
    [ -n "$victim" ] || { echo "FAIL: rank 2 never started"; cat "$out"; kill "$mpid"; exit 1; }
    sleep 0.5
    start=$(date +%s.%N)
    if [ "$mode" = kill ]; then kill -9 "$victim"; else kill -STOP "$victim"; fi
fi
limit=10
[ "$mode" = stop ] || [ "$mode" = trainstop ] && limit=7
# injstop counts from the start (the stop comes at call 5, after start-up).
[ "$mode" = injstop1 ] && limit=15
rc=0
for _ in $(seq 1 $((limit * 10 + 50))); do
    kill -0 "$mpid" 2>/dev/null || break
    sleep 0.1
done
if kill -0 "$mpid" 2>/dev/null; then
    echo "FAIL: the job still runs $((limit + 5)) s after the $mode"
    [ -n "$victim" ] && kill -CONT "$victim" 2>/dev/null
    kill "$mpid"
    cat "$out"
    exit 1
fi
wait "$mpid"
rc=$?
end=$(date +%s.%N)
secs=$(echo "$end - $start" | bc)
echo "$mode: exit $rc after $secs s"
grep '^tpuemu: ' "$out" | grep -v 'chips of' | sed 's/^/  /'
[ "$rc" -ne 0 ] || { echo "FAIL: exit 0"; cat "$out"; exit 1; }
awk -v s="$secs" -v l="$limit" 'BEGIN { exit !(s <= l) }' || {
    echo "FAIL: took $secs s, more than $limit"; cat "$out"; exit 1; }
case $mode in
stop | trainstop) want='chip 2 \(1,0\), MPI rank 2 is behind' ;;
kill) want='lost chip 2 \(1,0\), MPI rank 2' ;;
inject) want='lost chip 3 \(1,1\), MPI rank 3' ;;
injstop1) want="chip $chip \\($((chip / 2)),$((chip % 2))\\), MPI rank $chip is behind" ;;
esac
n=$(grep -cE "^tpuemu: .*$want" "$out")
[ "$n" -ge 1 ] || { echo "FAIL: no line matches /$want/"; cat "$out"; exit 1; }
echo ok
