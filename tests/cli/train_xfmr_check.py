#!/usr/bin/env python3
"""tpuemu train --model transformer against one chip: the run of the sharded layout (over
loopback, or under mpirun with --run MPIRUN... TPUEMU) and the same run on --topology 1x1 must
give the same losses (1e-5 relative) and the same final weights (--save; 1e-5 relative to each
parameter's largest entry); the losses finite and falling; the JSON's keys there; with --run,
the collectives table equal to loopback's; without, a token id outside the vocabulary in
--data named with its row and column (exit 2).

  train_xfmr_check.py TPUEMU SCRATCH [--run CMD...]
"""
import array
import ast
import glob
import json
import math
import os
import shutil
import struct
import subprocess
import sys

ARGS = ["train", "--model", "transformer", "--layers", "1", "--d-model", "32", "--heads", "4",
        "--d-ff", "64", "--vocab", "48", "--seq", "16", "--batch", "8", "--steps", "3",
        "--dtype", "f32"]
LAYOUT = ["--topology", "2x2", "--mesh", "data=2,tensor=2"]
KEYS = ["model", "layers", "d_model", "heads", "d_ff", "vocab", "seq", "batch", "mesh", "losses",
        "compute_us", "comm_us", "collectives", "transport"]
ROW_KEYS = ["name", "collective", "mesh_axis", "group_size", "bytes", "count", "modeled_us", "algorithm"]


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=120)
    if p.returncode != 0:
        fail("%s: exit %d\n%s" % (" ".join(cmd), p.returncode, p.stderr))
    try:
        return json.loads(p.stdout)
    except ValueError as e:
        fail("%s: stdout is not JSON: %s\n%s" % (" ".join(cmd), e, p.stdout[:2000]))


def load_npy(path):
    b = open(path, "rb").read()
    n = struct.unpack("<H", b[8:10])[0]
    head = ast.literal_eval(b[10:10 + n].decode())
    a = array.array("f")
    a.frombytes(b[10 + n:])
    return head["shape"], a


def write_i32(path, rows, cols, values):
    head = "{'descr': '<i4', 'fortran_order': False, 'shape': (%d, %d), }" % (rows, cols)
    head += " " * (63 - 10 - len(head)) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head.encode())
        f.write(struct.pack("<%di" % len(values), *values))


def main(argv):
    if len(argv) < 3:
        fail(__doc__)
    tpuemu, scratch = argv[1], argv[2]
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    cmd = argv[argv.index("--run") + 1:] if "--run" in argv else [tpuemu]
    one = run([tpuemu] + ARGS + ["--topology", "1x1", "--json", "-", "--save", scratch + "/one"])
    got = run(cmd + ARGS + LAYOUT + ["--json", "-", "--save", scratch + "/pod"])
    for k in KEYS:
        if k not in got:
            fail("the JSON has no '%s'" % k)
    if got["mesh"] != {"data": 2, "fsdp": 1, "sequence": 1, "tensor": 2, "dcn": 1}:
        fail("mesh %s" % got["mesh"])
    la, lb = one["losses"], got["losses"]
    if len(la) != 3 or len(lb) != 3:
        fail("losses %s %s: one per step" % (la, lb))
    for a, b in zip(la, lb):
        if not (math.isfinite(a) and math.isfinite(b)) or abs(a - b) > 1e-5 * abs(a):
            fail("losses %s (pod) differ from %s (one chip)" % (lb, la))
    if not lb[-1] < lb[0]:
        fail("losses %s do not fall" % lb)
    if not got["collectives"] or got["comm_us"] <= 0 or got["compute_us"] <= 0:
        fail("no collectives or no modeled time: %s" % got)
    for r in got["collectives"]:
        for k in ROW_KEYS:
            if k not in r:
                fail("collective row %s has no '%s'" % (r, k))
    total = sum(r["modeled_us"] * r["count"] for r in got["collectives"])
    if abs(total - got["comm_us"]) > 1e-6 * got["comm_us"] + 1e-6:
        fail("comm_us %g is not the sum of the rows %g" % (got["comm_us"], total))
    worst = 0.0
    for f in sorted(glob.glob(scratch + "/one/*.npy")):
        sa, a = load_npy(f)
        sb, b = load_npy(scratch + "/pod/" + os.path.basename(f))
        if sa != sb:
            fail("%s: shape %s, one chip %s" % (f, sb, sa))
        den = max(max(abs(x) for x in a), 1e-30)
        worst = max(worst, max(abs(x - y) for x, y in zip(a, b)) / den)
    if worst > 1e-5:
        fail("final weights differ from one chip by %g (relative)" % worst)
    if "--run" in argv:
        # The same run over loopback: the same collectives and modeled times.
        loop = run([tpuemu] + ARGS + LAYOUT + ["--json", "-"])
        if got["transport"] != "mpi" or loop["collectives"] != got["collectives"]:
            fail("under mpirun (%s) the collectives differ from loopback's:\n%s\n%s" %
                 (got["transport"], got["collectives"], loop["collectives"]))
    else:
        vals = [1] * 32
        vals[16 + 5] = 48
        write_i32(scratch + "/bad.npy", 2, 16, vals)
        p = subprocess.run([tpuemu] + ARGS[:ARGS.index("--batch")] +
                           ["--topology", "1x1", "--batch", "2", "--steps", "1",
                            "--data", scratch + "/bad.npy", "--labels", scratch + "/bad.npy"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
        if p.returncode != 2 or "row 1, column 5" not in p.stderr:
            fail("a token id out of the vocabulary: exit %d, %s" % (p.returncode, p.stderr))
    print("ok: losses %s equal one chip's %s; weights within %.2g; %d collective rows, comm %.3f "
          "us, compute %.3f us" % (lb, la, worst, len(got["collectives"]), got["comm_us"],
                                   got["compute_us"]))


if __name__ == "__main__":
    main(sys.argv)
