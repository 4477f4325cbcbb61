#!/usr/bin/env python3
"""tpuemu train --model transformer, each layout of a group run under mpirun (one chip per rank)
against the same run on --topology 1x1:

  f32:  losses within 1e-5 relative and final weights (--save) within 1e-5 relative to each
        parameter's largest entry;
  bf16: the same run in bf16 against 1x1 f32 and 1x1 bf16, within BF16_BOUND (see below);
  both: the replicas over dcn and data bit-identical: the JSON's "replicas" (each chip's piece
        and the hash of every parameter piece it holds) shows one hash per piece, as many
        pieces as fsdp x sequence x tensor, and different pieces different hashes; the gathers
        and reduce-scatters over fsdp there when fsdp > 1 and not otherwise.

  train_xfmr_layouts.py TPUEMU SCRATCH GROUP --run MPIRUN...   (MPIRUN starts 16 ranks)

GROUP: one layout of LAYOUTS, its mesh without '=' and with '_' for ',' (data16, fsdp4_tensor4,
dcn2_fsdp2_tensor4, ...); the dcn layouts run on two slices of 2x4.

BF16 bounds.  In bf16 every matmul rounds both inputs to bf16 (8 significant bits: a relative
error up to 2^-9 per input) and accumulates in f32; norms, softmax, GELU, the update stay f32.
Against 1x1 f32, the roundings move the losses of 3 steps by ~1e-4 relative and the weights by
~1e-4 of their largest entry, except the embeddings (embed, pos): their entries are small (init
N(0, 0.02^2), largest ~0.09) while their updates, lr x the residual stream's gradient, carry an
absolute bf16 error of the same ~2e-4 as every other parameter's, which is ~5e-3 of their
largest entry.  Against 1x1 bf16, a sharded run rounds the same values (each chip's matmul
inputs are blocks of one chip's), but sums in f32 in another order (psums of partial products
over tensor, gradient psums and reduce-scatters over dcn, data, fsdp and sequence: ~1e-7
relative, the f32 figures); an input that lies within that distance of a bf16 rounding boundary
then rounds one bf16 ulp (2^-8) the other way, and the steps carry those flips on: the sharded
bf16 run lands about as far from one chip's bf16 run as bf16 from f32, never further (both are
within the bf16 noise, of random sign).  Asserted, for both comparisons and every layout:
losses within 1e-3 relative (10x the ~1e-4 seen), the embeddings' weights within 1e-2 of their
largest entry (2x the ~5e-3 seen), every other weight within 1e-3 (5x the ~2e-4 seen); the
figures are printed by each run.
"""
import math
import os
import shutil
import sys

from train_xfmr_check import fail, load_npy, run

MODEL = ["train", "--model", "transformer", "--layers", "2", "--d-model", "64", "--heads", "16",
         "--d-ff", "256", "--vocab", "256", "--seq", "32", "--batch", "16", "--steps", "3",
         "--lr", "0.1", "--seed", "5"]
LAYOUTS = {m.replace("=", "").replace(",", "_"): [(shape, slices, m)] for shape, slices, m in (
    ("4x4", 1, "data=16"), ("4x4", 1, "fsdp=16"), ("4x4", 1, "sequence=16"),
    ("4x4", 1, "tensor=16"), ("4x4", 1, "data=4,tensor=4"), ("4x4", 1, "fsdp=4,tensor=4"),
    ("4x4", 1, "data=2,fsdp=2,tensor=4"), ("4x4", 1, "sequence=4,tensor=4"),
    ("4x4", 1, "data=4,sequence=4"), ("2x4", 2, "dcn=2,fsdp=2,tensor=4"),
    ("2x4", 2, "dcn=2,data=2,sequence=4"))}
F32_TOL = 1e-5
BF16_LOSS, BF16_EMBED, BF16_REST = 1e-3, 1e-2, 1e-3


def train(cmd, dtype, where, extra):
    """One run: its JSON and its saved folder."""
    os.makedirs(where, exist_ok=True)
    return run(cmd + MODEL + ["--dtype", dtype, "--json", "-", "--save", where + "/w"] +
               extra), where + "/w"


def differ(a, b):
    """Largest relative difference of the losses, and of the weights (relative to each
    parameter's largest entry in a): of the embeddings (embed, pos) and of the rest."""
    (ja, da), (jb, db) = a, b
    if len(ja["losses"]) != 3 or len(jb["losses"]) != 3:
        fail("losses %s %s: one per step" % (ja["losses"], jb["losses"]))
    dl = 0.0
    for x, y in zip(ja["losses"], jb["losses"]):
        if not (math.isfinite(x) and math.isfinite(y)):
            fail("losses %s %s are not finite" % (ja["losses"], jb["losses"]))
        dl = max(dl, abs(x - y) / abs(x))
    de = dr = 0.0
    names = sorted(f for f in os.listdir(da) if f.endswith(".npy") and f != "losses.npy")
    if len(names) != 2 + 8 * 2 + 2:
        fail("%s holds %d parameter files" % (da, len(names)))
    for f in names:
        sa, wa = load_npy(da + "/" + f)
        sb, wb = load_npy(db + "/" + f)
        if sa != sb:
            fail("%s: shape %s, one chip %s" % (f, sb, sa))
        den = max(max(abs(x) for x in wa), 1e-30)
        d = max(abs(x - y) for x, y in zip(wa, wb)) / den
        if f in ("embed.npy", "pos.npy"):
            de = max(de, d)
        else:
            dr = max(dr, d)
    return dl, de, dr


def check_replicas(js, mesh):
    size = {k: 1 for k in ("dcn", "data", "fsdp", "sequence", "tensor")}
    for part in mesh.split(","):
        k, v = part.split("=")
        size[k] = int(v)
    got = {k: js["mesh"][k] for k in size}
    if got != size:
        fail("%s: the JSON's mesh is %s" % (mesh, js["mesh"]))
    if js["replicas_identical"] is not True:
        fail("%s: replicas_identical is %s" % (mesh, js["replicas_identical"]))
    reps = js["replicas"]
    if len(reps) != 16 or sorted(r["chip"] for r in reps) != list(range(16)):
        fail("%s: replicas %s: one row per chip" % (mesh, reps))
    pieces = {}
    for r in reps:
        pieces.setdefault(r["piece"], set()).add(r["param_hash"])
    want = size["fsdp"] * size["sequence"] * size["tensor"]
    if len(pieces) != want:
        fail("%s: %d pieces, expected fsdp x sequence x tensor = %d" % (mesh, len(pieces), want))
    for k, h in pieces.items():
        if len(h) != 1:
            fail("%s: the replicas of piece %d hold different weights (hashes %s)" %
                 (mesh, k, sorted(h)))
    hashes = [next(iter(h)) for h in pieces.values()]
    if len(set(hashes)) != len(hashes):
        fail("%s: different pieces with one hash: %s" % (mesh, pieces))
    kinds = {(c["name"], c["collective"], c["mesh_axis"]) for c in js["collectives"]}
    fs = size["fsdp"] > 1
    for row in (("gather", "all-gather", "fsdp"), ("grad", "reduce-scatter", "fsdp")):
        if (row in kinds) != fs:
            fail("%s: collective %s %s" % (mesh, row, "missing" if fs else "unexpected"))
    return len(pieces), 16 // len(pieces)


def main(argv):
    if len(argv) < 5 or "--run" not in argv or argv[3] not in LAYOUTS:
        fail(__doc__)
    tpuemu, scratch, group = argv[1], argv[2], argv[3]
    mpirun = argv[argv.index("--run") + 1:]
    shutil.rmtree(scratch, ignore_errors=True)
    one = {d: train([tpuemu], d, "%s/one_%s" % (scratch, d), ["--topology", "1x1"])
           for d in ("f32", "bf16")}
    print("1x1 bf16 vs 1x1 f32: losses %.2e, weights %.2e (embeddings) %.2e (the rest)" %
          differ(one["f32"], one["bf16"]))
    for shape, slices, mesh in LAYOUTS[group]:
        extra = ["--topology", shape, "--mesh", mesh] + (["--slices", str(slices)]
                                                         if slices > 1 else [])
        cmd = mpirun + [tpuemu]
        extra += ["--timeout", "45"]  # a stalled chip is named, not a silent hang
        res = {}
        for d in ("f32", "bf16"):
            res[d] = train(cmd, d, "%s/%s_%s" % (scratch, mesh.replace(",", "_"), d), extra)
            if res[d][0]["transport"] != "mpi":
                fail("%s: transport %s" % (mesh, res[d][0]["transport"]))
            npieces, nrep = check_replicas(res[d][0], mesh)
        f32 = differ(one["f32"], res["f32"])
        bf = differ(one["f32"], res["bf16"])
        bb = differ(one["bf16"], res["bf16"])
        print("%-24s %s%s: f32 vs 1x1 f32: losses %.2e, weights %.2e; bf16 vs 1x1 f32: losses "
              "%.2e, weights %.2e (embeddings) %.2e (rest); bf16 vs 1x1 bf16: %.2e, %.2e, %.2e; "
              "%d pieces x %d replicas identical" %
              ((mesh, shape, " x %d slices" % slices if slices > 1 else "", f32[0],
                max(f32[1:])) + bf + bb + (npieces, nrep)))
        if not (f32[0] <= F32_TOL and max(f32[1:]) <= F32_TOL):
            fail("%s f32: %s from one chip, tolerance %g" % (mesh, f32, F32_TOL))
        for what, d in (("1x1 f32", bf), ("1x1 bf16", bb)):
            if not (d[0] <= BF16_LOSS and d[1] <= BF16_EMBED and d[2] <= BF16_REST):
                fail("%s bf16 vs %s: %s (losses, embeddings, rest), bounds %g, %g, %g" %
                     (mesh, what, d, BF16_LOSS, BF16_EMBED, BF16_REST))
        l0 = res["f32"][0]["losses"]
        if not l0[-1] < l0[0]:
            fail("%s: losses %s do not fall" % (mesh, l0))
    print("ok: %s" % ", ".join(m for _, _, m in LAYOUTS[group]))


if __name__ == "__main__":
    main(sys.argv)
