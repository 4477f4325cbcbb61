#!/usr/bin/env bash
# usage: rdma_expect_fail.sh REGEX COMMAND...
# Passes when COMMAND exits non-zero and its output matches REGEX (extended).
set -u
regex=$1
shift
out=$("$@" 2>&1)
rc=$?
echo "$out"
[ "$rc" -ne 0 ] || { echo "FAIL: expected a non-zero exit"; exit 1; }
printf '%s\n' "$out" | grep -Eq -- "$regex" || { echo "FAIL: no /$regex/"; exit 1; }
echo "ok: exit $rc, /$regex/"
