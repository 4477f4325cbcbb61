#!/usr/bin/env bash
# usage: train_json.sh STEPS COMMAND...
# Runs 'tpuemu train ... --json -' and loads stdout with python3's json module:
# exactly one object, the keys of the issue, one loss per step, numbers that add
# up (step = compute + exposed communication; comm = the sum of the collectives).
set -eu
steps=$1
shift
out=$("$@" 2>/dev/null)
printf '%s' "$out" | python3 -c '
import json, math, sys
steps = int(sys.argv[1])
d = json.load(sys.stdin)
for k in ("losses", "step_us", "compute_us", "comm_us", "hbm_peak_bytes", "mfu",
          "collectives", "exposed_comm_us", "overlapped_comm_us", "step_measured_us", "strategy"):
    assert k in d, "missing key %s" % k
assert len(d["losses"]) == steps, "losses: %d, not %d" % (len(d["losses"]), steps)
assert all(isinstance(x, float) and math.isfinite(x) for x in d["losses"])
assert abs(d["step_us"] - d["compute_us"] - d["exposed_comm_us"]) < 1e-6 * d["step_us"] + 1e-9
assert abs(sum(c["modeled_us"] for c in d["collectives"]) - d["comm_us"]) < 1e-6 * d["comm_us"] + 1e-9
for c in d["collectives"]:
    for k in ("collective", "mesh_axis", "group_size", "bytes", "modeled_us", "overlapped", "algorithm"):
        assert k in c, "collective without %s" % k
assert d["hbm_peak_bytes"] > 0 and 0 < d["mfu"] < 1
print("json ok: %d losses, %d collectives, step %.3f us" % (len(d["losses"]), len(d["collectives"]), d["step_us"]))
' "$steps"
