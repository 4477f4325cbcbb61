#!/usr/bin/env bash
# A slow chip at factor 0.5 paces every SPMD step: 'train --model-only' and 'replay'
# report exactly twice the compute time they report without it (the ratio is
# computed here, not by the program).  usage: fault_pace.sh TPUEMU
set -eu
tpuemu=$1
here=$(cd "$(dirname "$0")" && pwd)
num() { python3 -c "import json,sys; print(repr(json.load(sys.stdin)['$1']))"; }
train=(train --model-only --topology 4x4 --mesh data=4,model=4 --steps 1 --json -)
a=$("$tpuemu" "${train[@]}" 2>/dev/null | num compute_us)
b=$("$tpuemu" "${train[@]}" --fault slow-chip:chip=3,factor=0.5 2>/dev/null | num compute_us)
replay=(replay "$here/../fixtures/hlo/coll_4x4.hlo" --topology 4x4 --json -)
c=$("$tpuemu" "${replay[@]}" 2>/dev/null | num compute_us)
d=$("$tpuemu" "${replay[@]}" --fault slow-chip:chip=3,factor=0.5 2>/dev/null | num compute_us)
python3 - "$a" "$b" "$c" "$d" <<'PY'
import sys
a, b, c, d = map(float, sys.argv[1:])
ok = a > 0 and c > 0 and abs(b / a - 2) < 1e-6 and abs(d / c - 2) < 1e-6
print("train compute %g -> %g us, replay compute %g -> %g us: %s" % (a, b, c, d, "ok" if ok else "FAIL"))
sys.exit(0 if ok else 1)
PY
