#!/usr/bin/env bash
# usage: tests/cli/train_save.sh TPUEMU NFILES [TRAIN FLAGS...]
# (NFILES: the files of a checkpoint of that model, its parameters and losses.npy)
# train --save DIR writes every file under a temporary name and renames them into place once
# all are complete: a save that fails, or a run interrupted by SIGTERM, leaves the old
# checkpoint as it was and no temporary file; a complete one replaces every file.
set -u
tpuemu=$1
nfiles=$2
shift 2
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail() { echo "FAIL: $*"; ls -la "$d/ck"; exit 1; }
args=(train "$@")
"$tpuemu" "${args[@]}" --steps 2 --save "$d/ck" >/dev/null || fail "the first save failed"
[ "$(ls "$d/ck" | wc -l)" -eq "$nfiles" ] || fail "not the $nfiles files of a checkpoint"
(cd "$d/ck" && md5sum ./*.npy) >"$d/sums"
temps() { ls -A "$d/ck" | grep '\.tmp'; }

# A save that fails (losses.npy, the last file, is a directory): exit 3, one line, old files kept.
rm "$d/ck/losses.npy" && mkdir "$d/ck/losses.npy"
out=$("$tpuemu" "${args[@]}" --steps 3 --save "$d/ck" 2>&1 >/dev/null)
rc=$?
[ "$rc" -eq 3 ] || fail "a failed save exited $rc, not 3"
[ "$(printf '%s\n' "$out" | grep -c '^tpuemu: ')" -eq 1 ] || fail "not one line: $out"
printf '%s\n' "$out" | grep -q "losses.npy" || fail "the line does not name the file: $out"
(cd "$d/ck" && grep -v losses "$d/sums" | md5sum -c --quiet) || fail "a failed save changed the old files"
[ -z "$(temps)" ] || fail "temporary files left: $(temps)"
rmdir "$d/ck/losses.npy"

# Interrupted by SIGTERM during the training: exit 143, the old files kept, no temporary file.
"$tpuemu" "${args[@]}" --steps 1000000 --save "$d/ck" >"$d/out" 2>"$d/err" &
pid=$!
for _ in $(seq 1 100); do grep -q '^step' "$d/out" && break; sleep 0.1; done
kill -TERM "$pid"
wait "$pid"
rc=$?
[ "$rc" -eq 143 ] || fail "SIGTERM: exit $rc, not 143"
grep -q '^tpuemu: interrupted by SIGTERM' "$d/err" || fail "SIGTERM: no line: $(cat "$d/err")"
(cd "$d/ck" && grep -v losses "$d/sums" | md5sum -c --quiet) || fail "SIGTERM changed the old files"
[ -z "$(temps)" ] || fail "temporary files left after SIGTERM: $(temps)"

# A complete save replaces every file (a different number of steps: other weights and losses).
"$tpuemu" "${args[@]}" --steps 3 --save "$d/ck" >/dev/null || fail "the second save failed"
(cd "$d/ck" && md5sum -c --quiet "$d/sums" >/dev/null 2>&1) && fail "the files were not replaced"
[ -z "$(temps)" ] || fail "temporary files left: $(temps)"
python3 -c 'import sys; d=open(sys.argv[1],"rb").read(); assert d[:6]==b"\x93NUMPY"' "$d/ck/losses.npy" ||
    fail "losses.npy is not a .npy file"
echo ok
