#!/usr/bin/env python3
"""The report of tpuemu train --model transformer, read with real parsers: a real run over
loopback (2x2, data=2,tensor=2) with --json -, --csv, --trace and --heatmap, and --model-only
runs of the same layout, of fsdp and dcn layouts and of a pod-scale shape.  Checks the JSON's
keys, the relations (step >= compute, exposed <= comm, hbm_peak_bytes = the sum of the items,
0 < mfu <= 1, mfu = model_flops / (step x chips x peak)), model_flops against 6 N B S +
12 L B S^2 D computed here, the real run's figures equal to --model-only's for the same layout
(and its compute equal to the run's own), the collectives of fsdp (gather, reduce-scatter) and
dcn, the CSV's columns and rows, the trace as JSON and the heatmap as XML.

  train_xfmr_report.py TPUEMU SCRATCH
"""
import csv
import json
import os
import shutil
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_xfmr_check import fail, run  # noqa: E402

L, D, H, F, V, S, B = 1, 32, 4, 64, 48, 16, 8
ARGS = ["train", "--model", "transformer", "--layers", str(L), "--d-model", str(D), "--heads",
        str(H), "--d-ff", str(F), "--vocab", str(V), "--seq", str(S), "--batch", str(B),
        "--dtype", "f32"]
KEYS = ["step_us", "compute_us", "comm_us", "exposed_comm_us", "hbm_peak_bytes", "hbm_items",
        "mfu", "model_flops", "collectives", "losses", "mesh", "model_only"]
ROW_KEYS = ["name", "collective", "mesh_axis", "axes", "group_size", "groups", "group_count",
            "bytes", "count", "modeled_us", "exposed", "algorithm"]
FIGS = ["step_us", "compute_us", "comm_us", "exposed_comm_us", "hbm_peak_bytes", "mfu",
        "model_flops"]


def close(a, b, rel=1e-9):
    return abs(a - b) <= rel * max(abs(a), abs(b)) + 1e-12


def check(doc, what, chips, peak):
    for k in KEYS:
        if k not in doc:
            fail("%s: the JSON has no '%s'" % (what, k))
    for r in doc["collectives"]:
        for k in ROW_KEYS:
            if k not in r:
                fail("%s: collective row %s has no '%s'" % (what, r, k))
        if not isinstance(r["exposed"], bool) or r["group_count"] * r["group_size"] != chips:
            fail("%s: row %s: exposed a bool, group_count x group_size the chips" % (what, r))
        if chips <= 8 and r["groups"].count("{") != r["group_count"]:
            fail("%s: row %s: groups are not %d groups of chip ids" % (what, r, r["group_count"]))
    if not doc["step_us"] >= doc["compute_us"] > 0:
        fail("%s: step %g < compute %g" % (what, doc["step_us"], doc["compute_us"]))
    if not 0 <= doc["exposed_comm_us"] <= doc["comm_us"] + 1e-9:
        fail("%s: exposed %g > comm %g" % (what, doc["exposed_comm_us"], doc["comm_us"]))
    if not close(doc["step_us"], doc["compute_us"] + doc["exposed_comm_us"], 1e-7):
        fail("%s: step is not compute + exposed" % what)
    total = sum(r["modeled_us"] * r["count"] for r in doc["collectives"])
    if not close(total, doc["comm_us"], 1e-7):
        fail("%s: comm_us %g is not the sum of the rows %g" % (what, doc["comm_us"], total))
    if doc["hbm_peak_bytes"] != sum(i["bytes"] for i in doc["hbm_items"]):
        fail("%s: hbm_peak_bytes is not the sum of the items" % what)
    if not 0 < doc["mfu"] <= 1:
        fail("%s: mfu %g" % (what, doc["mfu"]))
    mfu = doc["model_flops"] / (doc["step_us"] * 1e-6 * chips * peak)
    if not close(mfu, doc["mfu"], 1e-7):
        fail("%s: mfu %g, model_flops / (step x chips x peak) %g" % (what, doc["mfu"], mfu))


def main(argv):
    if len(argv) < 3:
        fail(__doc__)
    tpuemu, scratch = argv[1], argv[2]
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    lay = ["--topology", "2x2", "--mesh", "data=2,tensor=2"]
    trace, svg, csvf = scratch + "/t.json", scratch + "/h.svg", scratch + "/s.csv"
    real = run([tpuemu] + ARGS + lay + ["--steps", "2", "--json", "-", "--csv", csvf, "--trace",
                                        trace, "--heatmap", svg])
    model = run([tpuemu] + ARGS + lay + ["--model-only", "--json", "-"])
    peak = real["peak_bf16_flops"]
    check(real, "real run", 4, peak)
    check(model, "model only", 4, peak)
    # 6 N B S + 12 L B S^2 D, N the parameters that multiply.
    n = L * (4 * D * D + 2 * D * F) + D * V
    want = 6 * n * B * S + 12 * L * B * S * S * D
    if not close(model["model_flops"], want):
        fail("model_flops %g, by hand %g" % (model["model_flops"], want))
    if not close(model["chip_flops"] * 4, want):
        fail("chip_flops x chips %g != model_flops %g" % (model["chip_flops"] * 4, want))
    for k in FIGS:
        if not close(real[k], model[k], 1e-9):
            fail("%s: real run %g, --model-only %g" % (k, real[k], model[k]))
    if not close(real["run_compute_us"], real["compute_us"], 1e-9) or real["collectives_note"]:
        fail("the run's compute %g or collectives differ from the model's (%s)" %
             (real["run_compute_us"], real["collectives_note"]))
    if len(real["losses"]) != 2 or model["losses"] or not model["model_only"]:
        fail("losses %s / %s" % (real["losses"], model["losses"]))
    kinds = {(r["name"], r["collective"], r["mesh_axis"], r["exposed"]) for r in
             real["collectives"]}
    for k in [("attn_out", "psum", "tensor", True), ("vocab_max", "pmax", "tensor", True),
              ("grad", "psum", "data", False), ("loss", "psum", "data", True)]:
        if k not in kinds:
            fail("no row %s in %s" % (k, sorted(kinds)))
    # The CSV, the trace, the heatmap.
    rows = list(csv.DictReader(open(csvf)))
    if len(rows) != 2 or list(rows[0].keys()) != ["chip", "topology", "wrap", "slices", "step",
                                                  "loss", "step_us", "compute_us", "comm_us",
                                                  "exposed_comm_us", "measured_us", "input_us",
                                                  "input_wait_measured_us"]:
        fail("csv %s" % rows)
    if not close(float(rows[1]["step_us"]), real["step_us"], 1e-6):
        fail("csv step_us %s, JSON step_us %g" % (rows[1]["step_us"], real["step_us"]))
    events = json.load(open(trace))
    events = events["traceEvents"] if isinstance(events, dict) else events
    names = [e.get("name", "") for e in events if e.get("ph") == "X"]
    if "step 0" not in names or "step 1" not in names or \
            not any(x.startswith("psum attn_out") for x in names) or \
            not any("q = a @ wq" in x for x in names):
        fail("the trace lacks steps, collectives or compute ops: %s" % names[:40])
    links = ET.parse(svg).getroot().findall(".//*[@class='link']")
    if len(links) != 8:
        fail("heatmap: %d links" % len(links))
    # fsdp and dcn, model only: the gathers and reduce-scatters over fsdp, the sum over dcn.
    fd = run([tpuemu] + ARGS + ["--topology", "2x2", "--slices", "2", "--mesh",
                                "dcn=2,fsdp=2,tensor=2", "--model-only", "--json", "-"])
    check(fd, "fsdp, dcn", 8, peak)
    kinds = {(r["name"], r["collective"], r["mesh_axis"], r["exposed"]) for r in
             fd["collectives"]}
    for k in [("gather", "all-gather", "fsdp", True), ("gather", "all-gather", "fsdp", False),
              ("grad", "reduce-scatter", "fsdp", False), ("grad", "psum", "dcn", False),
              ("loss", "psum", "dcn,fsdp", True)]:
        if k not in kinds:
            fail("fsdp, dcn: no row %s in %s" % (k, sorted(kinds)))
    gathers = sum(r["count"] for r in fd["collectives"] if r["name"] == "gather")
    if gathers != (2 + 8 * L + 2) + 8 * L:
        fail("fsdp: %d gathers, want every parameter once and each layer's again" % gathers)
    items = {i["name"]: i["bytes"] for i in fd["hbm_items"]}
    if not items.get("fsdp: gathered weights (a unit and the next)"):
        fail("fsdp: no gathered weights in %s" % items)
    # A pod-scale shape.
    pod = run([tpuemu, "train", "--model", "transformer", "--model-only", "--chip", "v5p",
               "--topology", "16x16x16", "--mesh", "data=16,fsdp=16,tensor=16", "--layers", "8",
               "--d-model", "4096", "--heads", "32", "--d-ff", "16384", "--vocab", "32768",
               "--seq", "2048", "--batch", "1024", "--json", "-"])
    check(pod, "pod", 4096, pod["peak_bf16_flops"])
    print("ok: step %.3f us (compute %.3f, comm %.3f, exposed %.3f), HBM %d B, MFU %.4f; "
          "real run equal to --model-only; fsdp/dcn and pod layouts consistent" %
          (model["step_us"], model["compute_us"], model["comm_us"], model["exposed_comm_us"],
           model["hbm_peak_bytes"], model["mfu"]))


if __name__ == "__main__":
    main(sys.argv)
