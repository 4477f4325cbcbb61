#!/usr/bin/env bash
# usage: expect.sh RC REGEX COMMAND...
# Runs COMMAND; passes when it exits with RC ("nonzero" for any failure) and its
# combined output matches the extended regular expression REGEX.  With RC not 0
# the program's own error must be a single "tpuemu: ..." line.
set -u
want=$1 regex=$2
shift 2
out=$("$@" 2>&1)
rc=$?
fail() {
    echo "FAIL: $*"
    echo "--- command: $*"
    echo "--- exit code: $rc"
    echo "--- output:"
    echo "$out"
    exit 1
}
if [ "$want" = nonzero ]; then
    [ "$rc" -ne 0 ] || fail "expected a non-zero exit"
    n=$(printf '%s\n' "$out" | grep -c '^tpuemu: ' || true)
    [ "$n" -eq 1 ] || fail "expected exactly one 'tpuemu: ' error line, got $n"
elif [ "$rc" -ne "$want" ]; then
    fail "expected exit code $want"
fi
printf '%s\n' "$out" | grep -Eq -- "$regex" || fail "output does not match /$regex/"
echo "ok: $* -> $rc"
