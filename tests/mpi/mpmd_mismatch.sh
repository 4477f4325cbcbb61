#!/usr/bin/env bash
# usage: mpmd_mismatch.sh REGEX TPUEMU "FLAGS A" "FLAGS B" MPIRUN...
# Two halves of one job (MPMD: 2 ranks with FLAGS A, 2 with FLAGS B) run the same
# bench (or MPMD_ARGS) with flags that change the schedule, its times or the
# sequence of calls.  Passes when the job
# exits non-zero, without a crash, and names the differing field (REGEX).
set -u
regex=$1 prog=$2 a=$3 b=$4
shift 4
# MPMD_ARGS (environment) replaces the common arguments (another command).
args=${MPMD_ARGS:-bench --topology 2x2 --collective psum --min-bytes 64K --max-bytes 64K --iters 1}
# shellcheck disable=SC2086
out=$(timeout 100 "$@" -n 2 "$prog" $args $a : -n 2 "$prog" $args $b 2>&1)
rc=$?
fail() {
    echo "FAIL: $*"
    echo "--- exit code: $rc"
    echo "$out"
    exit 1
}
[ "$rc" -ne 0 ] || fail "expected a non-zero exit"
[ "$rc" -ne 124 ] || fail "timed out"
[ "$(printf '%s\n' "$out" | grep -c '^tpuemu: ')" -ge 1 ] || fail "no 'tpuemu: ' line"
if printf '%s\n' "$out" | grep -Eq 'Segmentation|signal 11|Signal: '; then
    fail "a rank crashed"
fi
printf '%s\n' "$out" | grep -Eq -- "$regex" || fail "output does not match /$regex/"
echo "ok: halves '$a' and '$b' -> $rc, named /$regex/"
