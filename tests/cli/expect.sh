#!/usr/bin/env bash
# usage: expect.sh RC REGEX COMMAND...
# Runs COMMAND; passes when it exits with RC ("nonzero" for any failure) and its
# combined output matches the extended regular expression REGEX.  With RC not 0
# the program's own error must be a single "tpuemu: ..." line.  RC "usage" (bad
# input, expect_usage.sh): exit 2, exactly one "tpuemu: ..." line (on every rank
# together, under mpirun), which is printed.
set -u
want=$1 regex=$2
shift 2
cmd="$*"
out=$("$@" 2>&1)
rc=$?
fail() {
    echo "FAIL: $*"
    echo "--- command: $cmd"
    echo "--- exit code: $rc"
    echo "--- output:"
    echo "$out"
    exit 1
}
if [ "$want" = nonzero ] || [ "$want" = usage ]; then
    if [ "$want" = usage ]; then
        [ "$rc" -eq 2 ] || fail "expected exit code 2"
    else
        [ "$rc" -ne 0 ] || fail "expected a non-zero exit"
    fi
    n=$(printf '%s\n' "$out" | grep -c '^tpuemu: ' || true)
    [ "$n" -eq 1 ] || fail "expected exactly one 'tpuemu: ' error line, got $n"
elif [ "$rc" -ne "$want" ]; then
    fail "expected exit code $want"
fi
printf '%s\n' "$out" | grep -Eq -- "$regex" || fail "output does not match /$regex/"
if [ "$want" = usage ]; then
    printf '%s\n' "$out" | grep '^tpuemu: '
else
    echo "ok: $cmd -> $rc"
fi
