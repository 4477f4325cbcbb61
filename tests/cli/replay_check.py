#!/usr/bin/env python3
"""tpuemu replay against tpuemu model, run side by side.

usage: replay_check.py TPUEMU FIXTURE_DIR

- Every collective of coll_4x4.hlo replayed on v5e 4x4 takes exactly the time
  'tpuemu model' gives for the same collective, axes and bytes.
- The dots of coll_4x4.hlo and multi.hlo (module 3) have the FLOPs and the time
  of 'tpuemu model --op matmul' with the same m, k, n.
- The JSON output is one document with the documented keys.
"""
import json
import subprocess
import sys

tpuemu, fix = sys.argv[1], sys.argv[2]


def run_json(*args):
    out = subprocess.run([tpuemu, *args, "--json", "-"], check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out)  # exactly one document, nothing else on stdout


failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


rep = run_json("replay", f"{fix}/coll_4x4.hlo", "--topology", "4x4")
for key in ("step_us", "compute_us", "comm_us", "exposed_comm_us", "collectives", "compute"):
    check(key in rep, f"JSON has '{key}'")
for c in rep["collectives"]:
    for key in ("name", "collective", "bytes", "group_size", "executions", "modeled_us"):
        check(key in c, f"collective {c.get('name')} has '{key}'")
for o in rep["compute"]:
    for key in ("name", "flops", "bytes", "modeled_us"):
        check(key in o, f"op {o.get('name')} has '{key}'")

# name -> the same case for 'tpuemu model' (device d is chip d: x = d / 4, y = d % 4)
cases = {
    "ar_y": ["--collective", "psum", "--axes", "y", "--bytes", "1M"],
    "ag_x": ["--collective", "all-gather", "--axes", "x", "--bytes", "1M"],
    "rs_xy": ["--collective", "reduce-scatter", "--axes", "x,y", "--bytes", "1M"],
    "a2a_y": ["--collective", "all-to-all", "--axes", "y", "--bytes", "1M"],
    "cp_x": ["--collective", "ppermute", "--axes", "x", "--shift", "1", "--bytes", "1M"],
    "cb_y": ["--collective", "all-gather", "--axes", "y", "--bytes", "1M"],
}
rows = {c["name"]: c for c in rep["collectives"]}
check(set(rows) == set(cases), "one row per collective of the module")
for name, args in cases.items():
    model = run_json("model", "--topology", "4x4", *args)
    row = rows[name]
    check(row["modeled_us"] == model["modeled_us"],
          f"{name}: replay {row['modeled_us']} us == model {model['modeled_us']} us "
          f"({' '.join(args)})")
    check(row["bytes"] == model["bytes"] and row["algorithm"] == model["algorithm"],
          f"{name}: same bytes ({row['bytes']}) and algorithm ({row['algorithm']})")
    check(row["executions"] == 1 and row["group_size"] == (16 if name == "rs_xy" else 4),
          f"{name}: 1 execution, group size {row['group_size']}")
check(abs(rep["comm_us"] - sum(r["modeled_us"] for r in rows.values())) < 1e-5,
      "comm_us is the sum of the collectives")

ops = {o["name"]: o for o in rep["compute"]}
mm = run_json("model", "--op", "matmul", "--m", "512", "--k", "1024", "--n", "256",
              "--dtype", "bf16")
check(ops["dot"]["flops"] == mm["flops"] == 2 * 512 * 1024 * 256,
      f"dot FLOPs {ops['dot']['flops']} == model --op matmul {mm['flops']} == 2*512*1024*256")
check(ops["dot"]["modeled_us"] == mm["modeled_us"],
      f"dot time {ops['dot']['modeled_us']} us == model --op matmul {mm['modeled_us']} us")
check(ops["dot"]["bytes"] == mm["hbm_traffic_bytes"], "dot HBM bytes == model --op matmul")

add = run_json("model", "--op", "add", "--elements", "262144", "--dtype", "f32")
check(ops["r"]["flops"] == add["flops"] and ops["r"]["bytes"] == add["hbm_traffic_bytes"]
      and ops["r"]["modeled_us"] == add["modeled_us"],
      f"elementwise add: {ops['r']['modeled_us']} us == model --op add {add['modeled_us']} us")

rep3 = run_json("replay", f"{fix}/multi.hlo", "--module", "3", "--topology", "4x4")
mm = run_json("model", "--op", "matmul", "--m", "128", "--k", "128", "--n", "128",
              "--dtype", "bf16")
d = rep3["compute"][0]
check(rep3["module"] == "third_16dev" and d["flops"] == mm["flops"]
      and d["modeled_us"] == mm["modeled_us"],
      f"multi.hlo module 3: dot {d['flops']} FLOPs {d['modeled_us']} us == model --op matmul")
check(abs(rep3["step_us"] - mm["modeled_us"]) < 1e-6, "a lone dot is the whole step")

# v5p 2x2x4: the same module's groups land on other axes and still match 'model'.
rep = run_json("replay", f"{fix}/coll_4x4.hlo", "--topology", "2x2x4", "--chip", "v5p")
rows = {c["name"]: c for c in rep["collectives"]}
model = run_json("model", "--chip", "v5p", "--topology", "2x2x4", "--collective", "psum",
                 "--axes", "z", "--bytes", "1M")
check(rows["ar_y"]["axes"] == "z" and rows["ar_y"]["modeled_us"] == model["modeled_us"],
      f"v5p 2x2x4: ar over devices 4k..4k+3 is axis z, {model['modeled_us']} us")

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("all replay checks passed")
