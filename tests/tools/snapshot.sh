#!/usr/bin/env bash
# snapshot.sh BIN OUTDIR: the modeled figures of a tpuemu binary, wall-time keys
# stripped, one file per case, so that two builds can be compared with diff -r:
# every row of the public fidelity table (default and calibrated), every
# collective on five pods, every HLO fixture and reference module through replay
# (JSON and text), train --model-only and a 2x2 in-process training run, chip ops
# and info.  A change of structure must leave "diff -r A B" empty.
#   tests/tools/snapshot.sh OLD/tpuemu /tmp/a; tests/tools/snapshot.sh build/tpuemu /tmp/b
#   diff -r /tmp/a /tmp/b
set -u
BIN=$(realpath "${1:-}"); OUT=$(realpath -m "${2:-.}")
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
REF=$ROOT/../shared/reference; FIX=$ROOT/tests/fixtures/hlo
if [ $# -ne 2 ] || [ ! -x "$BIN" ]; then
    echo "usage: tests/tools/snapshot.sh BIN OUTDIR (BIN an executable tpuemu)" >&2
    exit 2
fi
if [ -e "$OUT" ] && [ -n "$(ls -A "$OUT")" ]; then
    echo "snapshot: '$OUT' is not empty: give a new folder (nothing is overwritten)" >&2
    exit 2
fi
mkdir -p "$OUT"
strip() { python3 -c '
import json,sys,re
def clean(o):
    if isinstance(o,dict): return {k:clean(v) for k,v in o.items() if not re.search(r"wall|measured|elapsed|host_", k)}
    if isinstance(o,list): return [clean(v) for v in o]
    return o
try:
    d=json.load(sys.stdin); print(json.dumps(clean(d),indent=1,sort_keys=True))
except Exception as e: print("NOJSON", e)
'; }
# the fidelity table, default and calibrated
python3 - "$REF/fidelity_public.csv" > "$OUT/.rows" <<'PY'
import csv,sys
for r in csv.DictReader(open(sys.argv[1])):
    print(r["id"],r["chip"],r["topology"],r["wrap"],r["slices"],r["collective"],r["axes"],r["bytes"])
PY
while read id chip topo wrap slices coll axes bytes; do
  for cal in "" --calibrated; do
    "$BIN" model --chip $chip --topology $topo --wrap $wrap --slices $slices --collective $coll --axes $axes --bytes $bytes $cal --json - 2>&1 | strip > "$OUT/model_${id}${cal}.json"
  done
done < "$OUT/.rows"
# model on more shapes
for c in psum all-gather reduce-scatter all-to-all ppermute; do
  for t in "4x4 --wrap all" "8x8 --wrap none" "4x4x4" "2x4x4 --wrap x" "4x4 --slices 2"; do
    n=$(echo "$c $t" | tr ' /' '__')
    "$BIN" model --topology $t --collective $c --bytes 4M --json - 2>&1 | strip > "$OUT/model_$n.json"
  done
done
# replay fixtures and reference modules
for f in $FIX/*.hlo $REF/hlo/*.hlo $REF/hlo-real/*.hlo; do
  b=$(basename $f .hlo)
  # From the module's folder, by its bare name: the file names in the output do
  # not depend on where the checkout is.
  cd "$(dirname "$f")" || exit 2
  f=$(basename "$f")
  n=$("$BIN" replay "$f" --list 2>&1 | grep -o 'runs on [0-9]* devices' | head -1 | grep -o '[0-9]*')
  n=${n:-$("$BIN" replay "$f" 2>&1 | grep -o 'runs on [0-9]* devices' | head -1 | grep -o '[0-9]*')}
  case "$n" in 2) t="--topology 2";; 4) t="--topology 2x2";; 8) t="--topology 2x4";; 32) t="--topology 4x8";; 64) t="--topology 8x8";; 8960) t="--chip v5p --topology 16x20x28";; *) t="";; esac
  echo "$b: $n devices, $t" >> "$OUT/.topos"
  "$BIN" replay "$f" $t --json - 2>/dev/null | strip > "$OUT/replay_$b.json"
  "$BIN" replay "$f" $t --quiet 2>&1 | grep -v -i 'wall\|took\|measured' > "$OUT/replay_$b.txt"
  cd "$ROOT" || exit 2
done
"$BIN" replay $FIX/coll_4x4.hlo --topology 4x4 --calibrated --json - 2>/dev/null | strip > "$OUT/replay_coll_cal.json"
# train --model-only
for m in "data=16" "data=4,model=4" "data=2,model=8"; do
  "$BIN" train --model-only --topology 4x4 --mesh $m --json - 2>/dev/null | strip > "$OUT/train_$m.json"
done
"$BIN" train --model-only --chip v5p --topology 16x16x16 --mesh data=512,model=8 --batch 4096 --hidden 8192 --json - 2>/dev/null | strip > "$OUT/train_big.json"
"$BIN" train --topology 2x2 --steps 3 --json - 2>/dev/null | strip > "$OUT/train_2x2_inproc.json"
# chip ops and info
"$BIN" model --op matmul --m 1024 --k 1024 --n 1024 --json - 2>&1 | strip > "$OUT/op_matmul.json"
"$BIN" model --op add --elements 1000000 --json - 2>&1 | strip > "$OUT/op_add.json"
for c in v4 v5e v5p v6e v7; do "$BIN" info --chip $c --json - 2>&1 | strip > "$OUT/info_$c.json"; done
"$BIN" info --algorithms > "$OUT/info_algorithms.txt" 2>&1
echo "snapshot: $(ls $OUT | wc -l) files, $(grep -l NOJSON $OUT/*.json | wc -l) without JSON"
