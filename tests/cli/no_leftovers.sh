#!/usr/bin/env bash
# usage: no_leftovers.sh TPUEMU HLO_DIR
# A command that fails after it opened --trace and --heatmap leaves neither file
# behind (no partial document); the same command that succeeds writes both.
set -u
tpuemu=$1 hlo=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# 16-device module on a 4-chip pod: refused after the report files were opened.
"$tpuemu" replay "$hlo/coll_4x4.hlo" --topology 2x2 --trace "$dir/t.json" \
    --heatmap "$dir/h.svg" >"$dir/out" 2>&1
rc=$?
[ "$rc" -ne 0 ] || { echo "FAIL: the replay on 2x2 succeeded"; cat "$dir/out"; exit 1; }
grep -q "16-chip topology" "$dir/out" || { echo "FAIL: not the expected error"; cat "$dir/out"; exit 1; }
rm -f "$dir/out"
left=$(ls -A "$dir")
[ -z "$left" ] || { echo "FAIL: left behind after exit $rc: $left"; exit 1; }
"$tpuemu" replay "$hlo/coll_4x4.hlo" --topology 4x4 --trace "$dir/t.json" \
    --heatmap "$dir/h.svg" >/dev/null 2>&1 || { echo "FAIL: the replay on 4x4 failed"; exit 1; }
[ -s "$dir/t.json" ] && [ -s "$dir/h.svg" ] || { echo "FAIL: files missing after success"; exit 1; }
echo ok
