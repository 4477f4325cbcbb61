#!/usr/bin/env python3
"""Predicted transformer step vs MaxText's measured MFU (issue 25).

For every usable row of shared/reference/maxtext_mfu_public.csv (read in
place; use_for_check=yes, model fields present) run

    tpuemu train --model transformer --model-only --calibrated

with that row's chip, slice shape, slices, mesh and workload flags, and print
the predicted step time against implied_step_time_s (the step its measured MFU
implies) with the error, and the hardware FLOP utilisation the measurement
implies: the model's chip_flops (what one chip executes: remat's recomputation
and flash's recomputed scores counted) over implied step x peak.  With --search also run --search for the row and say
whether the fastest layout is MaxText's or a faster one, and by how much.

    bench/maxtext_compare.py --tpuemu build/tpuemu [--csv PATH] [--markdown]
        [--search] [--tolerance PCT]

--tolerance: exit 1 when a row's |error| exceeds PCT percent (the ctest).
"""
import argparse
import csv
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CSV = os.path.join(HERE, "..", "..", "shared", "reference", "maxtext_mfu_public.csv")


# The code a row ran, where it differs from the CSV's workload columns: MaxText's
# MaxText/layers.py at e47fa1b5d (the v5e table's commit, whose config scripts
# the v5e rows ran) calls the Pallas flash kernel with `causal = False` (in
# Attention.apply_attention), so those steps attend every key; the v5p commits'
# MaxText/layers/attentions.py passes `causal=True`.  Keyed by config_commit.
UNMASKED_FLASH_COMMITS = ("e47fa1b5d",)


def attention_of(row):
    """causal, or full where the row's code called the flash kernel without the mask."""
    return "full" if row.get("config_commit", "").startswith(UNMASKED_FLASH_COMMITS) else "causal"


def usable(row):
    return row.get("use_for_check") == "yes" and row.get("num_layers") not in (None, "")


def mesh_of(row):
    axes = [("dcn", int(row["dcn_data"])), ("data", int(row["ici_data"])),
            ("fsdp", int(row["ici_fsdp"])), ("tensor", int(row["ici_tensor"]))]
    seq = row["ici_sequence"]
    if seq.isdigit() and int(seq) > 1:
        axes.insert(3, ("sequence", int(seq)))
    return ",".join("%s=%d" % (n, v) for n, v in axes if v > 1) or "data=1"


def flags_of(row):
    """The row's workload as tpuemu flags."""
    f = ["--chip", row["chip"], "--topology", row["topology"], "--slices", row["slices"],
         "--mesh", mesh_of(row),
         "--layers", row["num_layers"], "--d-model", row["d_model"], "--heads", row["num_heads"],
         "--kv-heads", row["num_kv_heads"], "--head-dim", row["head_dim"],
         "--d-ff", row["mlp_dim"], "--vocab", row["vocab_size"], "--seq", row["seq_len"],
         "--batch", row["global_batch_seqs"], "--mlp", row["mlp_activations"],
         "--block", "parallel" if row["block"].startswith("parallel") else "sequential",
         "--remat", row["remat_policy"],
         "--param-dtype", "f32" if row["weight_dtype"] == "float32" else "bf16",
         "--dtype", "bf16" if row["activation_dtype"] == "bfloat16" else "f32",
         "--optimizer", "adamw" if row["optimizer"].startswith("adamw") else "sgd",
         "--attention", attention_of(row)]
    if row["tied_embedding"].startswith("yes"):
        f.append("--tied-embeddings")
    return f


def run(tpuemu, args):
    p = subprocess.run([tpuemu, "train", "--model", "transformer", "--model-only",
                        "--calibrated", "--json", "-"] + args,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        return None, p.stderr.strip()
    return json.loads(p.stdout), None


def show(a, row):
    """One row of the table, as soon as it is known."""
    rid, cfg, mesh, step, implied, e, mfu, hfu, note = row
    if step is None:
        print("%s %s: failed: %s" % (rid, cfg, mfu), flush=True)
    elif a.markdown:
        print("| %s | %s | %s | %.3f | %.3f | %+.1f%% | %.1f%% | %.1f%% |%s" % (
            rid, cfg, mesh, step, implied, e, 100 * mfu, 100 * hfu,
            (" %s |" % note) if a.search else ""), flush=True)
    else:
        print("%-5s %-40s %-28s predicted %8.3f s  implied %8.3f s  error %+6.1f%%  "
              "HFU %4.1f%%  %s" % (rid, cfg, mesh, step, implied, e, 100 * hfu, note), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tpuemu", default=os.path.join(HERE, "..", "build", "tpuemu"))
    ap.add_argument("--csv", default=DEFAULT_CSV)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--search", action="store_true")
    ap.add_argument("--tolerance", type=float, default=None)
    a = ap.parse_args()
    with open(a.csv, newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if usable(r)]
    out = []
    worst = 0.0
    if a.markdown:
        print("| row | config | mesh | predicted step (s) | implied step (s) | error | predicted MFU "
              "| measured HFU |%s" % (" search |" if a.search else ""))
        print("|---|---|---|---|---|---|---|---|%s" % ("---|" if a.search else ""))
    for r in rows:
        args = flags_of(r)
        d, err = run(a.tpuemu, args)
        implied = float(r["implied_step_time_s"])
        cfg = "%s %s x%s %s pdbs %s remat %s" % (
            r["chip"], r["topology"], r["slices"], r["model_name"].replace("maxtext-default-", ""),
            r["per_device_batch_size"], r["remat_policy"])
        if d is None:
            out.append((r["id"], cfg, mesh_of(r), None, implied, None, err, None, ""))
            worst = float("inf")
            show(a, out[-1])
            continue
        step = d["step_us"] / 1e6
        e = 100.0 * (step / implied - 1)
        worst = max(worst, abs(e))
        note = ""
        if a.search:
            s_args = [x for x in args]
            i = s_args.index("--mesh")
            del s_args[i:i + 2]
            i = s_args.index("--remat")
            del s_args[i:i + 2]
            sd, serr = run(a.tpuemu, s_args + ["--search"])
            if sd is None:
                note = "search: " + serr
            else:
                best = sd["layouts"][0]
                best_mesh = ",".join("%s=%d" % kv for kv in best["mesh"].items())
                same = best_mesh == mesh_of(r) and best["remat"] == r["remat_policy"]
                note = ("search: MaxText's layout" if same else
                        "search: %s remat %s, %.2f%% faster" % (
                            best_mesh, best["remat"],
                            100.0 * (d["step_us"] / best["step_us"] - 1)))
        hfu = d["chip_flops"] / (implied * d["peak_bf16_flops"])
        out.append((r["id"], cfg, mesh_of(r), step, implied, e, d["mfu"], hfu, note))
        show(a, out[-1])
    print("%d rows, largest |error| %.1f%%" % (len(out), worst))
    if a.tolerance is not None and worst > a.tolerance:
        print("FAIL: a row is off by more than %.1f%%" % a.tolerance)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
