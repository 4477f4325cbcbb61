#!/usr/bin/env bash
# usage: tests/probe/probe.sh TPUEMU [fast|full] [-v]
# A hostile probe of tpuemu: several hundred command lines over every command,
# flag, file format (HLO, YAML, .npy, output targets) and, in 'full', MPI faults
# (a rank that crashes, stops, or is ended by SIGTERM; ranks that disagree).
# Each case runs under a timeout and gets one class:
#   ok        exit 0                    exit-1    exit 1 (a failure found while running)
#   exit-2    exit 2 (bad input, refused before the work; docs/errors.md)
#   exit-3    exit 3 (an output that could not be written)
#   exit-4    exit 4 (a timeout: the watchdog ended the job)
#   exit-130/143  ended by SIGINT/SIGTERM (the probe's own signal)
#   interrupted  under mpirun, a SIGTERM or SIGINT the probe sent (to mpirun or one rank):
#             non-zero exit and one "interrupted by" line
#   rank-killed  under mpirun, exit 137 with one "lost chip" (or, at start-up, "lost MPI
#             rank") line (--inject crash, TPUEMU_TEST_LOSE_AT_START)
#   no-line   a failure with no "tpuemu:" line at all
#   warned    exit 0 with one "tpuemu: warning:" line and a JSON document on stdout that parses
#             (an extreme but valid value, docs/limits.md)
#   crash     a signal or an exit code >= 128 not sent by the probe
#   hang      no end within the timeout
#   sanitizer an AddressSanitizer / UBSan report
#   multiline a failure with more than one "tpuemu:" line, or a line that is not one
#   inf-nan   "inf" or "nan" printed as a number
#   bad-exit  an exit code outside the classes above
#   unexpected  the case names the classes it may end in, and it ended in another
# Prints the counts by class; exits 1 when any case is crash, hang, sanitizer,
# multiline, no-line, inf-nan, bad-exit or unexpected (-v: print each such case).
set -u
tpuemu=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
mode=${2:-fast}
verbose=${3:-}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
FIX=$root/tests/fixtures
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
cd "$D" || exit 1
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN=(mpirun --oversubscribe --mca mpi_yield_when_idle 1)
T=${PROBE_TIMEOUT:-20}
declare -A count
bad=0 n=0

# classify RC OUTPUT -> class
classify() {
    local rc=$1 out=$2 sent=${3:-} lines # $4: the case
    if printf '%s' "$out" | grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:'; then
        echo sanitizer
        return
    fi
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 -a "$sent" != mpi ]; then
        echo hang
        return
    fi
    # (not when the case itself typed inf or nan: the message echoes it)
    if printf '%s' "$out" | grep -qiE '(^|[^a-z_])-?(nan|inf)([^a-z_]|$)' &&
        ! printf '%s' "$4" | grep -qiE '(^|[^a-z_])[.+-]?(nan|inf)([^a-z_]|$)'; then
        echo inf-nan
        return
    fi
    # (a warning is not an error line: docs/limits.md)
    lines=$(printf '%s\n' "$out" | grep '^tpuemu: ' | grep -vc '^tpuemu: warning: ')
    if [ "$sent" = mpisig ] && [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]; then
        if [ "$lines" -eq 1 ] && printf '%s\n' "$out" | grep -q '^tpuemu: interrupted by SIG'; then
            echo interrupted
        elif [ "$lines" -eq 0 ]; then
            echo no-line
        else
            echo multiline
        fi
        return
    fi
    if [ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] && [ "$lines" -eq 0 ]; then
        echo no-line
        return
    fi
    case $rc in
    0) echo ok; return ;;
    1 | 2 | 3 | 4)
        if [ "$lines" -ne 1 ]; then
            echo multiline
        else
            echo "exit-$rc"
        fi
        return
        ;;
    130 | 143)
        if [ -n "$sent" ] && [ "$sent" != mpi ]; then
            echo "exit-$rc"
            return
        fi
        ;;
    137)
        # under mpirun: the status of a rank killed by SIGKILL (--inject crash), named by a line
        if [ "$sent" = mpi ] && [ "$lines" -eq 1 ] &&
            printf '%s\n' "$out" | grep -qE '^tpuemu: lost (chip|MPI rank)'; then
            echo rank-killed
            return
        fi
        ;;
    esac
    if [ "$rc" -ge 128 ]; then
        echo crash
    else
        echo bad-exit
    fi
}

# run EXPECT ARGS...: EXPECT is a '/'-list of classes the case may end in, or 'any'
# (any of ok, exit-1, exit-2).  Only the 'tpuemu:' lines of stderr count for an error.
run() {
    local expect=$1 rc out cls
    shift
    out=$(timeout -k 2 "$T" "$tpuemu" "$@" 2>&1 >"$D/stdout" </dev/null)
    rc=$?
    # stdout counts for inf and nan only (its text is not an error line).
    if grep -qiE '(^|[^a-z_])-?(nan|inf)([^a-z_]|$)' "$D/stdout" 2>/dev/null; then
        out="$out
$(grep -iE '(^|[^a-z_])-?(nan|inf)([^a-z_]|$)' "$D/stdout" | head -2)"
    fi
    case "$*" in *y.yaml*) set -- "$@" "[y.yaml: $(head -c 120 y.yaml | tr '\n' ' ')]" ;; esac
    record "$expect" "$rc" "$out" "" "$*"
}

# mpi N EXPECT ARGS...: under mpirun -n N; the error lines of every rank count.
mpi() {
    local np=$1 expect=$2 rc out
    shift 2
    local t0=$SECONDS
    out=$(timeout -k 2 $((T + 40)) "${MPIRUN[@]}" -n "$np" "$tpuemu" "$@" 2>&1 >/dev/null </dev/null)
    rc=$?
    [ $((SECONDS - t0)) -ge $((T + 40)) ] && rc=124
    out=$(printf '%s\n' "$out" | grep -E '^tpuemu: |Sanitizer|runtime error:')
    record "$expect" "$rc" "$out" mpi "mpirun -n $np $*"
}

record() {
    local expect=$1 rc=$2 out=$3 sent=$4 what=$5 cls ok=0 e
    cls=$(classify "$rc" "$out" "$sent" "$what")
    n=$((n + 1))
    case $cls in
    crash | hang | sanitizer | multiline | inf-nan | bad-exit | no-line) ok=1 ;;
    *)
        [ "$expect" = any ] && expect=ok/exit-1/exit-2
        ok=1
        for e in ${expect//\// }; do
            [ "$e" = "$cls" ] && ok=0
        done
        [ $ok -eq 0 ] || cls=unexpected
        ;;
    esac
    count[$cls]=$((${count[$cls]:-0} + 1))
    if [ $ok -ne 0 ]; then
        bad=$((bad + 1))
        if [ -n "$verbose" ]; then
            printf '%s (expected %s, exit %s): %s\n' "$cls" "$expect" "$rc" "${what:0:300}"
            printf '%s\n' "$out" | head -3 | cut -c1-300 | sed 's/^/    /'
        fi
    fi
}

# A signal to a running command after S seconds: it must end, with one line, and no temporary file.
signal_case() {
    local sig=$1 after=$2 rc out pid
    shift 2
    mkdir -p "$D/sig"
    echo OLD >"$D/sig/out.json"
    python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' \
        "$tpuemu" "$@" --json "$D/sig/out.json" >/dev/null 2>"$D/sig/err" </dev/null &
    pid=$!
    sleep "$after"
    kill -s "$sig" "$pid" 2>/dev/null
    timeout 10 tail --pid="$pid" -f /dev/null
    wait "$pid"
    rc=$?
    out=$(cat "$D/sig/err")
    if ls -A "$D/sig" | grep -q '\.tmp'; then
        out="tpuemu: a temporary file was left behind
$out"
    fi
    if [ "$rc" -ne 0 ] && [ "$(cat "$D/sig/out.json")" != OLD ] && [ -s "$D/sig/out.json" ] &&
        ! head -c1 "$D/sig/out.json" | grep -q '{'; then
        out="tpuemu: a partial file replaced the old one
$out"
    fi
    record "ok/exit-130/exit-143/exit-1" "$rc" "$out" "$sig" "kill -$sig after ${after}s: $*"
    rm -rf "$D/sig"
}

# mpi_event NP EXPECT EVENT ARGS...: under mpirun -n NP, once the job prints its first line of
# output, EVENT happens: TERM|INT (to mpirun), TERM@R|INT@R|STOP@R (to world rank R), monitor
# (rank 0's monitor process killed); the error lines of every rank count.  With --json, the
# file holds OLD before and must hold OLD or a whole JSON document after, with no temporary
# file beside it.
mpi_event() {
    local np=$1 expect=$2 ev=$3 rc out mp p r target sent=mpi
    shift 3
    mkdir -p "$D/ev"
    echo OLD >"$D/ev/old.json"
    timeout -k 2 $((T + 40)) "${MPIRUN[@]}" -n "$np" "$tpuemu" "$@" >"$D/ev/out" 2>"$D/ev/err" </dev/null &
    mp=$!
    for _ in $(seq 1 300); do
        [ -s "$D/ev/out" ] && break
        kill -0 "$mp" 2>/dev/null || break
        sleep 0.1
    done
    sleep 0.5
    # (mpirun runs under timeout: the ranks are its grandchildren)
    target=
    for p in $(pgrep -P "$(pgrep -P "$mp" | head -1)"); do
        r=$(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | sed -n 's/^OMPI_COMM_WORLD_RANK=//p')
        case $ev in
        *@"$r") target=$p ;;
        monitor) [ "$r" = 0 ] && target=$(pgrep -P "$p" | head -1) ;;
        esac
    done
    case $ev in
    TERM | INT) kill -s "$ev" "$(pgrep -P "$mp" | head -1)"; sent=mpisig ;;
    STOP@*) [ -n "$target" ] && kill -STOP "$target" ;;
    *@*) [ -n "$target" ] && kill -s "${ev%@*}" "$target"; sent=mpisig ;;
    monitor) [ -n "$target" ] && kill -9 "$target" ;;
    esac
    wait "$mp"
    rc=$?
    out=$(grep -E '^tpuemu: |Sanitizer|runtime error:' "$D/ev/err")
    if ls -A "$D/ev" | grep -q '\.tmp'; then
        out="tpuemu: a temporary file was left behind
$out"
    fi
    if [ "$(cat "$D/ev/old.json")" != OLD ] && ! python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$D/ev/old.json" 2>/dev/null; then
        out="tpuemu: a partial file replaced the old one
$out"
    fi
    record "$expect" "$rc" "$out" "$sent" "mpirun -n $np [$ev] $*"
    rm -rf "$D/ev"
}

# ---------------------------------------------------------------- inputs
HLO=$FIX/hlo/loop_2x2.hlo
printf 'pod:\n  topology: 2x2\n' >pod.yaml
cp "$HLO" m.hlo
BIG=$(head -c 100000 /dev/zero | tr '\0' a)
mkfifo fifo

# Hostile values, and the flags that take a value (each command that takes it).
values=("" "-1" "0" "1e-300" "4.9e-324" "nan" "inf" "99999999999999999999" "1,,2" "x," "1,1"
    $'a\x01b' "$BIG")
[ "$mode" = fast ] && values=("" "1e-300" "99999999999999999999" "1,,2")

# Flags and the command line that takes them (a small, quick run when valid).
flags_of() {
    "$tpuemu" "$@" --help 2>/dev/null | grep -oE '^ +--[a-z-]+ [A-Za-z|.=,<>0-9_-]+' |
        awk '{print $1}' | grep -vE -- '--(json|csv|trace|heatmap|config|data|labels|init|save)$'
}
cmds=("model --topology 2x2" "model --op matmul --m 8 --k 8 --n 8" "info" "replay m.hlo --topology 2x2"
    "train --topology 2x2 --steps 1 --hidden 64 --batch 16" "run --topology 2x2" "bench --topology 2x2")
declare -A seen
for c in "${cmds[@]}"; do
    read -r -a words <<<"$c"
    for f in $(flags_of "${words[@]:0:1}" $([ "${words[1]:-}" = --op ] && echo --op matmul)); do
        key=${words[0]}$f
        [ "$mode" = fast ] && key=$f # each flag once, with the first command that takes it
        [ -n "${seen[$key]:-}" ] && continue
        seen[$key]=1
        for v in "${values[@]}"; do
            run any "${words[@]}" "$f" "$v"
        done
        run any "${words[@]}" "$f"
        run exit-2 "${words[@]}" "$f" x "$f" x
    done
done

# Lists: empty items, trailing separators, duplicates -> exit 2.
for a in "--mesh data=2,,model=2" "--mesh data=2,model=2," "--mesh data=2,data=2"; do
    run exit-2 train --topology 2x2 --steps 1 --hidden 64 --batch 16 $a
done
for a in "--device-order 0,1,2,3," "--device-order 0,,1,2,3" "--device-order 0,0,1,2" \
    "--device-order ,0,1,2,3" "--trip-count loop=1," "--trip-count loop=1,,loop=2" \
    "--trip-count loop=1,loop=2" "--custom-call-us h=1," "--custom-call-us h=1,h=2"; do
    run exit-2 replay m.hlo --topology 2x2 $a
done
for a in "--axes x," "--axes x,,y" "--axes x,x" "--wrap x," "--wrap x,x" "--topology 2x2x" "--topology 2xx2"; do
    run exit-2 model --topology 2x2 $a
done

# Numbers at their limits: refused (exit 2), never inf or nan.
for f in --ici-bw --dcn-bw --pcie-bw --nic-bw --reduce-bw; do
    for v in 1e-300 4.9e-324 1e-310 1e308 1e16; do
        run exit-2 model --topology 2x2 "$f" "$v"
    done
done
for f in --ici-latency-us --dcn-latency-us --msg-cost-us; do
    for v in 1e-300 1e7 1e308; do
        run exit-2/ok model --topology 2x2 "$f" "$v"
    done
done
for b in 9223372036854775807 4611686018427387904 18446744073709551616; do
    run exit-2 train --topology 2x2 --model-only --batch "$b"
    run exit-2 model --topology 2x2 --bytes "$b"
done
run exit-2 run --topology 2x2 --inject crash:chip=0,call=99999999999999999999999
run exit-2 run --topology 2x2 --inject crash:chip=99999999999,call=1
for k in ici_bandwidth dcn_bandwidth ici_latency_us dcn_latency_us; do
    for v in 1e-300 4.9e-324 1e308 -1 .nan .inf; do
        printf 'topology: 2x2\nlinks:\n  %s: %s\n' "$k" "$v" >y.yaml
        run exit-2/ok model --config y.yaml
    done
done
printf 'chip:\n  base: v5e\n  hbm_bytes: 99999999G\ntopology: 2x2\n' >y.yaml
run exit-2 model --config y.yaml

# Extreme but valid values: one warning line, exit 0, the JSON on stdout still parses.
warn_case() {
    local rc out cls=warned
    out=$(timeout -k 2 "$T" "$tpuemu" "$@" --json - 2>&1 >"$D/stdout" </dev/null)
    rc=$?
    if [ "$rc" -ne 0 ] || [ "$(printf '%s\n' "$out" | grep -c '^tpuemu: warning: ')" -ne 1 ] ||
        ! python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$D/stdout" 2>/dev/null; then
        cls=$(classify "$rc" "$out" "" "$*")
        [ "$cls" = ok ] && cls=unwarned
    fi
    n=$((n + 1))
    count[$cls]=$((${count[$cls]:-0} + 1))
    if [ "$cls" != warned ]; then
        bad=$((bad + 1))
        [ -n "$verbose" ] && printf '%s (expected warned, exit %s): %s\n    %s\n' "$cls" "$rc" "$*" "$(printf '%s' "$out" | head -2)"
    fi
}
for a in "--ici-bw 1e14" "--ici-bw 1e4" "--dcn-bw 1e13" "--dcn-bw 1e5" "--pcie-bw 1e15" \
    "--nic-bw 1e4" "--reduce-bw 1e15" "--ici-latency-us 1000" "--dcn-latency-us 5000" \
    "--msg-cost-us 100"; do
    # shellcheck disable=SC2086
    warn_case model --topology 2x2 $a
done
for kv in "hbm_bytes: 100000G" "hbm_bytes: 100M" "hbm_bw: 1e15" "bf16_flops: 1e18" "bf16_flops: 1e11"; do
    printf 'chip:\n  base: v5e\n  %s\ntopology: 2x2\n' "$kv" >y.yaml
    warn_case model --config y.yaml
done
warn_case info --chip v7 --topology 16x24x24 --slices 101

# YAML files: every bad fixture, and hostile documents.
for y in "$FIX"/config/*.yaml; do
    run exit-2 model --config "$y"
done
for doc in '' '[' '{a: [' 'topology: !!binary AAAA' '&a [*a]' 'topology: 2x2\ntopology: 2x2' \
    'chip: {base: v5e, hbm_bytes: -1}' 'slices: 99999999999999999999' 'mesh: data=,model=2' \
    "topology: $BIG"; do
    printf '%b\n' "$doc" >y.yaml
    run exit-2 model --config y.yaml
done
run exit-2 model --config /dev/null
run exit-2 model --config "$D"
run exit-2 model --config missing.yaml

# HLO files: the verifier's classes, hostile text, truncations of every fixture.
for h in "$FIX"/hlo/bad/*.hlo "$FIX"/hlo/bad_*.hlo; do
    run exit-2 replay "$h" --topology 2x2
done
for h in "$FIX"/hlo/*.hlo; do
    sz=$(wc -c <"$h")
    for cut in 1 17 $((sz / 3)) $((sz / 2)) $((sz - 2)); do
        head -c "$cut" "$h" >t.hlo
        run any replay t.hlo --topology 2x2
    done
done
python3 - <<'EOF'
import random
random.seed(29)
open('deep.hlo','w').write('HloModule d\nENTRY e {\n  p = ' + '('*100000 + 'f32[]' + ')'*100000 + ' parameter(0)\n}\n')
ids = ','.join(str(i % 4) for i in range(5000000))
open('biggroup.hlo','w').write('HloModule g, num_partitions=4\nadd {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] add(a, b)\n}\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT r = f32[4] all-reduce(p), channel_id=1, replica_groups={{' + ids + '}}, use_global_device_ids=true, to_apply=add\n}\n')
open('junk.hlo','wb').write(bytes(random.randrange(256) for _ in range(20000)))
open('attrs.hlo','w').write('HloModule a\nENTRY e {\n  p = f32[4] parameter(0), ' + ', '.join('x%d={%s}' % (i, '{'*50 + '}'*50) for i in range(2000)) + '\n}\n')
open('dims.hlo','w').write('HloModule a\nENTRY e {\n  p = f32[' + ','.join(['99999999999']*8) + '] parameter(0)\n  ROOT n = f32[' + ','.join(['99999999999']*8) + '] negate(p)\n}\n')
open('many.hlo','w').write('HloModule a\nENTRY e {\n  p = f32[4] parameter(0)\n' + ''.join('  x%d = f32[4] add(p, p)\n' % i for i in range(200000)) + '}\n')
EOF
for h in deep biggroup junk attrs dims many; do
    run any replay "$h.hlo" --topology 2x2
done
: >empty.hlo
run exit-2 replay empty.hlo --topology 2x2
run exit-2 replay "$D" --topology 2x2
run exit-2 replay /dev/null --topology 2x2
run exit-2 replay fifo --topology 2x2

# .npy inputs.
printf '\x93NUMPY\x01\x00\x10\x00{}              \n' >bad.npy
head -c 5000 /dev/urandom >junk.npy
for f in bad.npy junk.npy /dev/null missing.npy; do
    run exit-2 train --topology 2x2 --steps 1 --hidden 64 --batch 16 --data "$f" --labels "$f"
done
for f in "$FIX"/npy/*.npy; do
    run any train --topology 2x2 --steps 1 --hidden 64 --batch 16 --data "$f" --labels "$f"
done

# Outputs: nothing lost (m.hlo copied again: a run that overwrote it would break later cases).
cp "$HLO" m.hlo
run exit-2 replay m.hlo --topology 2x2 --json m.hlo
run exit-2 replay m.hlo --topology 2x2 --csv ./m.hlo
run exit-2 model --config pod.yaml --json pod.yaml
run exit-2 model --topology 2x2 --json o.json --trace o.json
run exit-2 model --topology 2x2 --json o.json --csv ./o.json
run exit-2 replay m.hlo --topology 2x2 --trace o.svg --heatmap o.svg
run exit-2 model --topology 2x2 --json "$D"
run exit-2 model --topology 2x2 --json missing/dir/o.json
run exit-2 model --topology 2x2 --json fifo
run ok model --topology 2x2 --json /dev/null --csv /dev/null
out=$(timeout 10 "$tpuemu" info 2>&1 >/dev/full)
record exit-3 $? "$out" "" "info > /dev/full"
out=$(timeout 10 "$tpuemu" model --topology 2x2 2>&1 >/dev/full)
record exit-3 $? "$out" "" "model > /dev/full"
cp "$HLO" m.hlo
out=$(timeout 10 "$tpuemu" replay m.hlo --topology 2x2 --json /dev/full 2>&1 >/dev/null)
record exit-3 $? "$out" "" "replay --json /dev/full"
# Every command's outputs on a full disk: exit 3 (docs/errors.md), one line.
for c in "train --topology 2x2 --steps 1 --hidden 64 --batch 16" "model --op matmul --m 8 --k 8 --n 8" \
    "info --chip v5e" "replay m.hlo --topology 2x2" "model --topology 2x2 --collective all-gather" \
    "train --topology 2x2 --model-only --model transformer"; do
    # shellcheck disable=SC2086
    out=$(timeout 20 "$tpuemu" $c 2>&1 >/dev/full)
    record exit-3 $? "$out" "" "$c > /dev/full"
    for f in --json --csv; do
        # shellcheck disable=SC2086
        out=$(timeout 20 "$tpuemu" $c $f /dev/full 2>&1 >/dev/null)
        record exit-3 $? "$out" "" "$c $f /dev/full"
    done
done

# Commands and options.
for a in "" "modle" "help nope" "--bogus" "model --bytes" "model --quiet=yes" "--version x" \
    "model $BIG" "model --$BIG" "replay" "replay a.hlo b.hlo" "train --model nope" "info --chip"; do
    # shellcheck disable=SC2086
    run any $a
done

# ---------------------------------------------------------------- full: bigger values, MPI faults
if [ "$mode" = full ]; then
    signal_case INT 1 train --topology 2x2 --steps 1000000 --hidden 64 --batch 16
    signal_case TERM 1 train --topology 2x2 --steps 1000000 --hidden 64 --batch 16
    mpi 4 ok run --topology 2x2
    mpi 4 exit-2 run --topology 2x2 --bogus
    mpi 4 exit-2 run --topology 4x4
    mpi 4 rank-killed run --topology 2x2 --inject crash:chip=1,call=3
    mpi 4 exit-4 run --topology 2x2 --inject stop:chip=2,call=3 --timeout 2
    mpi 4 rank-killed bench --topology 2x2 --max-bytes 4K --inject crash:chip=3,call=0
    mpi 4 rank-killed replay m.hlo --topology 2x2 --inject crash:chip=1,call=2
    mpi 4 exit-4 replay m.hlo --topology 2x2 --inject stop:chip=0,call=1 --timeout 2
    mpi 4 exit-4 bench --topology 2x2 --max-bytes 4K --inject stop:chip=1,call=2 --timeout 2
    mpi 4 exit-2 replay "$FIX/hlo/bad/nested6.hlo" --topology 2x2
    mpi 4 exit-2 replay "$FIX/hlo/bad/dup_groups.hlo" --topology 2x2
    out=$(timeout 60 "${MPIRUN[@]}" -n 2 "$tpuemu" bench --topology 2x2 --chunks 1 : \
        -n 2 "$tpuemu" bench --topology 2x2 --chunks 2 2>&1 >/dev/null | grep '^tpuemu: ')
    record exit-2 "$([ -n "$out" ] && echo 2 || echo 0)" "$out" "" "ranks with --chunks 1 and 2"
    out=$(timeout 60 "${MPIRUN[@]}" -n 2 "$tpuemu" run --topology 2x2 : \
        -n 2 "$tpuemu" run --topology 2x2 --iters 3 2>&1 >/dev/null | grep '^tpuemu: ')
    record exit-2 "$([ -n "$out" ] && echo 2 || echo 0)" "$out" "" "ranks with and without --iters"
fi

# Interrupted, stopped and dying MPI jobs (docs/errors.md): one line each, the classes' codes.
if [ "$mode" = full ]; then
    TR=(train --topology 2x2 --steps 1000000 --hidden 64 --batch 16)
    BE=(bench --topology 2x2 --iters 400)
    for ev in TERM INT TERM@1 TERM@0 INT@3; do
        mpi_event 4 interrupted "$ev" "${TR[@]}" --json "$D/ev/old.json"
        mpi_event 4 interrupted "$ev" "${BE[@]}" --json "$D/ev/old.json"
    done
    for r in 1 2 3; do
        mpi_event 4 exit-4 "STOP@$r" "${TR[@]}" --timeout 3
    done
    mpi_event 4 exit-4 STOP@2 "${BE[@]}" --timeout 3
    mpi_event 4 ok monitor bench --topology 2x2 --max-bytes 64K --iters 100 --json "$D/ev/old.json"
    for w in 3:init 0:init 1:before 2:before; do
        out=$(TPUEMU_TEST_LOSE_AT_START=$w timeout 60 "${MPIRUN[@]}" -x TPUEMU_TEST_LOSE_AT_START \
            -n 4 "$tpuemu" run --topology 2x2 2>&1 >/dev/null </dev/null)
        rc=$?
        record rank-killed "$rc" "$(printf '%s\n' "$out" | grep -E '^tpuemu: ')" mpi \
            "rank lost at start-up ($w)"
    done
    mpi 4 exit-3 bench --topology 2x2 --max-bytes 4K --json /dev/full
    mpi 4 exit-3 run --topology 2x2 --csv /dev/full
    mpi 4 exit-3 replay m.hlo --topology 2x2 --json /dev/full
    mpi 4 exit-3 train --topology 2x2 --steps 2 --hidden 64 --batch 16 --json /dev/full
    mpi 4 exit-3 train --topology 2x2 --steps 2 --hidden 64 --batch 16 --trace /dev/full
    mpi 4 exit-3 train --topology 2x2 --steps 2 --model transformer --csv /dev/full
    mpi 4 exit-3 bench --topology 2x2 --max-bytes 4K --heatmap /dev/full
fi

printf 'probe (%s): %d cases\n' "$mode" "$n"
for k in ok warned exit-1 exit-2 exit-3 exit-4 exit-130 exit-143 interrupted rank-killed crash hang \
    sanitizer multiline no-line inf-nan bad-exit unwarned unexpected; do
    [ -n "${count[$k]:-}" ] && printf '  %-10s %d\n' "$k" "${count[$k]}"
done
[ "$bad" -eq 0 ] || { echo "FAIL: $bad cases crashed, hung, or ended outside their class"; exit 1; }
echo ok
