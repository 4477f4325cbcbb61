#!/usr/bin/env bash
# usage: expect_usage.sh REGEX COMMAND...
# Bad input: COMMAND must exit with 2, print exactly one "tpuemu: ..." line (on
# every rank together, under mpirun), and that output must match REGEX.
set -u
regex=$1
shift
out=$("$@" 2>&1)
rc=$?
fail() {
    echo "FAIL: $1"
    echo "--- exit code: $rc"
    echo "--- output:"
    echo "$out"
    exit 1
}
[ "$rc" -eq 2 ] || fail "expected exit code 2"
n=$(printf '%s\n' "$out" | grep -c '^tpuemu: ' || true)
[ "$n" -eq 1 ] || fail "expected exactly one 'tpuemu: ' line, got $n"
printf '%s\n' "$out" | grep -Eq -- "$regex" || fail "output does not match /$regex/"
printf '%s\n' "$out" | grep '^tpuemu: '
