#!/usr/bin/env bash
# A module whose file name is Latin-1 (the byte 0xe9, not valid UTF-8): replay's JSON,
# CSV and trace still load as UTF-8 (python3 refuses invalid UTF-8), the name read back
# as the Latin-1 character, U+00E9.
# usage: latin1_check.sh TPUEMU HLO_FIXTURE
set -eu
tpuemu=$(realpath "$1") hlo=$(realpath "$2")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
name=$(printf 'caf\351.hlo')
cp "$hlo" "$dir/$name"
cd "$dir"
"$tpuemu" replay "$name" --topology 2x2 --json j.json --csv c.csv --trace t.json --quiet > /dev/null
python3 - <<'PY'
import csv, json
d = json.load(open("j.json", encoding="utf-8"))
assert d["file"] == "caf\u00e9.hlo", d["file"]
rows = list(csv.reader(open("c.csv", encoding="utf-8")))
assert len(rows) > 1
t = json.load(open("t.json", encoding="utf-8"))
assert "caf\u00e9.hlo" in t["otherData"]["title"], t["otherData"]["title"]
print("ok: a Latin-1 file name in replay's JSON, CSV and trace, as U+00E9")
PY
