#!/usr/bin/env bash
# usage: nothing_lost.sh TPUEMU HLO_DIR
# Output files are written under a temporary name and renamed into place: a run
# that fails, or is ended by SIGTERM or SIGINT, leaves the old file as it was and
# no temporary file; a run that succeeds replaces it.  A write error on stdout
# fails the run with one line.
set -u
tpuemu=$1 hlo=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; ls -la "$dir"; exit 1; }
leftovers() { ls -A "$dir" | grep -E '\.tmp' && fail "a temporary file was left: $1"; }

# 1. Refused after the outputs were opened (16 devices on 4 chips): old files intact.
echo OLD >"$dir/t.json"
echo OLD >"$dir/h.svg"
"$tpuemu" replay "$hlo/coll_4x4.hlo" --topology 2x2 --trace "$dir/t.json" --heatmap "$dir/h.svg" \
    >/dev/null 2>"$dir/err" && fail "the replay on 2x2 succeeded"
[ "$(cat "$dir/t.json")" = OLD ] && [ "$(cat "$dir/h.svg")" = OLD ] || fail "a failed run changed a file"
leftovers "failed replay"

# 2. The same run that succeeds replaces both, whole.
"$tpuemu" replay "$hlo/coll_4x4.hlo" --topology 4x4 --trace "$dir/t.json" --heatmap "$dir/h.svg" \
    >/dev/null 2>&1 || fail "the replay on 4x4 failed"
head -c1 "$dir/t.json" | grep -q '{' && grep -q '</svg>' "$dir/h.svg" || fail "not replaced whole"
leftovers "replay"

# 3. Interrupted: SIGTERM and SIGINT while a long training runs (one line, old file kept).
for sig in TERM INT; do
    echo OLD >"$dir/m.json"
    # (started with SIGINT at its default: a script's background jobs ignore it)
    python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' \
        "$tpuemu" train --topology 2x2 --steps 1000000 --hidden 64 --batch 16 --json "$dir/m.json" \
        >/dev/null 2>"$dir/err" &
    pid=$!
    sleep 1
    kill -s "$sig" "$pid"
    timeout 20 tail --pid="$pid" -f /dev/null || { kill -9 "$pid"; fail "SIG$sig did not end the run"; }
    wait "$pid"
    rc=$?
    if [ "$rc" -eq 0 ]; then
        echo "note: the model ended before SIG$sig"
        continue
    fi
    [ "$rc" -eq $((128 + $(kill -l "$sig"))) ] || fail "SIG$sig: exit $rc"
    [ "$(cat "$dir/m.json")" = OLD ] || fail "SIG$sig changed the old file"
    [ "$(grep -c '^tpuemu: interrupted by SIG'"$sig" "$dir/err")" -eq 1 ] || {
        cat "$dir/err"
        fail "SIG$sig: not one 'interrupted' line"
    }
    leftovers "SIG$sig"
done

# 4. A full disk through stdout.
out=$("$tpuemu" info 2>&1 >/dev/full)
rc=$?
[ "$rc" -eq 3 ] || fail "info > /dev/full: exit $rc"
[ "$out" = "tpuemu: cannot write stdout: No space left on device" ] || fail "info > /dev/full: '$out'"
echo ok
