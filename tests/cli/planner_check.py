#!/usr/bin/env python3
"""The planner's CLI (issue 25): --search on a small pod and the input pipeline.

usage: planner_check.py TPUEMU

- search: the JSON's layouts ranked by step_us, each within the chip's HBM, the
  best one's step equal to a direct --model-only run of its mesh and remat, the
  counts consistent (tried >= fit >= listed), the text's top line naming it;
- input: the producer time and the input-bound step worked out by hand;
- every listed layout's step equal to a direct run (the search's shared times);
- an odd bf16 fsdp shard gathered as whole f32 words (worked out by hand);
- a preset with a flag beside it: the flag wins.
"""
import json
import subprocess
import sys

T = sys.argv[1]
BASE = ["train", "--model", "transformer", "--model-only", "--chip", "v5e", "--topology", "2x2",
        "--layers", "2", "--d-model", "64", "--heads", "4", "--d-ff", "128", "--vocab", "64",
        "--seq", "16", "--batch", "8", "--calibrated"]
fails = []


def check(cond, what):
    if not cond:
        fails.append(what)


def mesh(layout):
    """A ranked layout's mesh map as the --mesh flag spells it (data=4,fsdp=64)."""
    return ",".join("%s=%d" % (k, v) for k, v in layout["mesh"].items())


def run(args):
    p = subprocess.run([T] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=120)
    if p.returncode != 0:
        print("FAIL: %s: %s" % (" ".join(args), p.stderr.strip()))
        sys.exit(1)
    return p.stdout


d = json.loads(run(BASE + ["--search", "--json", "-"]))
ls = d["layouts"]
check(len(ls) >= 2, "search lists at least two layouts")
check(all(ls[i]["step_us"] <= ls[i + 1]["step_us"] for i in range(len(ls) - 1)),
      "layouts ranked by step_us")
check(all(l["hbm_peak_bytes"] <= 16 * 2**30 for l in ls), "every layout fits v5e HBM")
check(d["tried"] >= d["fit"] >= len(ls), "tried >= fit >= listed")
best = ls[0]
one = json.loads(run(BASE + ["--mesh", mesh(best), "--remat", best["remat"], "--json", "-"]))
check(abs(one["step_us"] - best["step_us"]) < 1e-3 * best["step_us"],
      "the best layout's step equals a direct run (%s vs %s)" % (one["step_us"], best["step_us"]))
# The search shares collective times between layouts whose axes make the same groups
# (data=4 and fsdp=4 both sum the loss over the four chips): every listed layout's step
# equals a direct run of it, which times each collective afresh.
for l in ls[1:]:
    one = json.loads(run(BASE + ["--mesh", mesh(l), "--remat", l["remat"], "--json", "-"]))
    check(abs(one["step_us"] - l["step_us"]) < 1e-3 * l["step_us"],
          "%s remat %s: a direct run's step %s, the search's %s" % (
              mesh(l), l["remat"], one["step_us"], l["step_us"]))
text = run(BASE + ["--search"])
check(("1    " + mesh(best)) in text, "the text's first row is the best layout")
check("best: " + mesh(best) in text, "the text names why the best wins")

# Input: batch 8 of 16 tokens over data=4 is 32 tokens a chip; a v5e host has 4 chips
# (128 tokens); at 1000 tokens/s the producer takes 128000 us, far above the step.
d = json.loads(run(BASE + ["--input-rate", "1000", "--json", "-"]))
i = d["input"]
check(i["chips_per_host"] == 4 and i["hosts"] == 1, "one host of four chips")
check(abs(i["producer_us"] - 128000.0) < 1e-6, "producer 128000 us (%s)" % i["producer_us"])
check(i["input_bound"] and not i["input_hidden"], "input-bound")
check(abs(i["step_us"] - 128000.0) < 1e-6, "the step is the input's 128000 us")
d = json.loads(run(BASE + ["--input-rate", "1000", "--prefetch", "0", "--json", "-"]))
check(abs(d["input"]["step_us"] - (d["step_us"] + 128000.0)) < 1e-3,
      "prefetch 0 adds the input to the step")

# An fsdp shard of an odd number of bf16 elements: a norm of D = 66 over fsdp=6 is 11
# elements (22 bytes) a chip, gathered as whole f32 words: 24 bytes a chip, 144 in all.
d = json.loads(run(["train", "--model", "transformer", "--model-only", "--chip", "v5e",
                    "--topology", "2x3", "--layers", "1", "--d-model", "66", "--heads", "6",
                    "--d-ff", "132", "--vocab", "66", "--seq", "12", "--batch", "6",
                    "--calibrated", "--mesh", "fsdp=6", "--json", "-"]))
rows = [(c["name"], c["collective"], c["bytes"]) for c in d["collectives"]]
check(("gather", "all-gather", 144) in rows and ("grad", "reduce-scatter", 144) in rows,
      "the odd bf16 shard's gather and reduce-scatter move 144 bytes (%s)" % rows)

# A preset with a flag beside it: the flag wins.
d = json.loads(run(["train", "--model", "transformer", "--model-only", "--chip", "v5p",
                    "--topology", "4x4x4", "--mesh", "fsdp=64", "--preset", "llama2-7b",
                    "--layers", "2", "--batch", "64", "--json", "-"]))
check(d["layers"] == 2 and d["d_model"] == 4096 and d["plan"]["kv_heads"] == 32,
      "--layers beside --preset llama2-7b")

for f in fails:
    print("FAIL: " + f)
print("planner_check: %d failures" % len(fails))
sys.exit(1 if fails else 0)
