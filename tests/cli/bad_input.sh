#!/usr/bin/env bash
# usage: bad_input.sh TABLE NAME TPUEMU
# Runs row NAME of TABLE (bad_inputs.txt: "name | regex | arguments | yaml"), and
# passes when the program exits 2 within 20 s and prints exactly one line, a
# "tpuemu: ..." line matching the extended regex.  Arguments are shell words
# ($'\x01' quoting works); $Y stands for a file holding the row's YAML (\n for
# newlines), $D for a scratch directory, $FIFO for a FIFO in it, $FIX for
# tests/fixtures.  Arguments that
# start with "MPI4 " run under mpirun -n 4; then exactly one line over all ranks.
set -u
table=$1 name=$2 tpuemu=$3
row=$(grep -E "^$name +\|" "$table" | head -1)
[ -n "$row" ] || { echo "FAIL: no row '$name' in $table"; exit 1; }
IFS='|' read -r _ regex argstr yaml <<<"$row"
regex=$(echo "$regex" | sed 's/^ *//; s/ *$//')
argstr=$(echo "$argstr" | sed 's/^ *//; s/ *$//')
yaml=$(echo "$yaml" | sed 's/^ *//; s/ *$//')
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
Y=$D/pod.yaml
FIFO=$D/fifo
mkfifo "$FIFO"
# $FIX is tests/fixtures (HLO modules for replay rows).
FIX=$(cd "$(dirname "$0")/../fixtures" && pwd)
# '@BIG' (YAML) and $BIG (arguments) are a 100 KB value.
BIG=
case $row in *BIG*) BIG=$(printf 'a%.0s' $(seq 1 1000)); BIG=${BIG}${BIG}${BIG}${BIG}${BIG}${BIG}${BIG}${BIG}${BIG}${BIG}; BIG=${BIG}${BIG}${BIG}${BIG}${BIG}${BIG}${BIG}${BIG}${BIG}${BIG} ;; esac
printf '%b' "${yaml//@BIG/$BIG}" >"$Y"
export D Y FIFO BIG FIX
eval "args=($argstr)"
cmd=("$tpuemu")
if [ "${args[0]}" = MPI4 ]; then
    [ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    cmd=(mpirun --oversubscribe --mca mpi_yield_when_idle 1 -n 4 "$tpuemu")
    args=("${args[@]:1}")
fi
out=$(timeout 20 "${cmd[@]}" "${args[@]}" 2>&1 </dev/null)
rc=$?
fail() {
    echo "FAIL ($name): $*"
    echo "--- command: ${cmd[*]} ${args[*]:0:20}" | cut -c1-400
    echo "--- exit code: $rc"
    echo "--- output:"
    echo "$out" | cut -c1-600 | head -20
    exit 1
}
[ "$rc" -ne 124 ] || fail "no answer within 20 s"
lines=$(printf '%s\n' "$out" | grep -cv '^$')
ours=$(printf '%s\n' "$out" | grep -c '^tpuemu: ')
if [ "${cmd[0]}" = mpirun ]; then
    # mpirun adds its own banner after a non-zero exit; ours must be one line.
    [ "$ours" -eq 1 ] || fail "expected one 'tpuemu: ' line over all ranks, got $ours"
    [ "$rc" -ne 0 ] || fail "expected a non-zero exit"
    printf '%s\n' "$out" | grep -q 'Exit code: *2$' || fail "expected exit code 2 from the ranks"
else
    [ "$rc" -eq 2 ] || fail "expected exit code 2"
    [ "$lines" -eq 1 ] && [ "$ours" -eq 1 ] || fail "expected exactly one line, 'tpuemu: ...'"
fi
printf '%s\n' "$out" | grep '^tpuemu: ' | grep -Eq -- "$regex" || fail "no match for /$regex/"
len=$(printf '%s\n' "$out" | grep '^tpuemu: ' | wc -c)
[ "$len" -le 600 ] || fail "the line is $len characters long"
echo "ok ($name): $(printf '%s\n' "$out" | grep '^tpuemu: ' | cut -c1-200)"
