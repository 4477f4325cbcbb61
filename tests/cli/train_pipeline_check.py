#!/usr/bin/env python3
"""The real input pipeline of tpuemu train --model transformer (launch/train_prefetch.c).

  train_pipeline_check.py same TPUEMU SCRATCH MPIRUN...
      --data/--labels on 4 ranks (data=2,tensor=2) with --prefetch 0, 1 and 2, and over
      loopback: the losses and every chip's parameter hash equal (bit for bit); the
      measured wait of every step in the JSON (step_input_wait_measured_us, its mean
      input_wait_measured_us), the CSV (input_us, input_wait_measured_us) and the text;
      --trace-measured: an "input" slice and a "step" slice per step on every chip.
  train_pipeline_check.py rate TPUEMU SCRATCH MPIRUN...
      --input-rate 256 tokens/s per host (a v5e host of 4 chips, 4 x 64 tokens a step: the
      producer takes 1 s a step, by hand) against the unlimited producer, in one test: the
      modeled producer_us is 1e6 and the step input-bound; the measured wait is longer than
      the unlimited run's.  SIGINT in the middle of a paced read (with and without the
      reader thread) ends the run with the interrupt's line, no hang.
"""
import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_xfmr_check import write_i32  # noqa: E402

ARGS = ["train", "--model", "transformer", "--topology", "2x2", "--mesh", "data=2,tensor=2",
        "--layers", "1", "--d-model", "32", "--heads", "4", "--d-ff", "64", "--vocab", "48",
        "--seq", "16", "--batch", "8", "--dtype", "f32"]


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(cmd, timeout=60):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout)
    if p.returncode != 0:
        fail("%s: exit %d\n%s" % (" ".join(cmd), p.returncode, p.stderr))
    return p.stdout


def dataset(scratch):
    """32 rows of 16 ids in [0, 48) (a fixed LCG) and their targets, int32."""
    s, x = 12345, []
    for _ in range(32 * 17):
        s = (s * 1103515245 + 12345) % 2**31
        x.append(s % 48)
    rows = [x[r * 17:(r + 1) * 17] for r in range(32)]
    write_i32(scratch + "/x.npy", 32, 16, [v for r in rows for v in r[:16]])
    write_i32(scratch + "/y.npy", 32, 16, [v for r in rows for v in r[1:]])
    return ["--data", scratch + "/x.npy", "--labels", scratch + "/y.npy"]


def check_waits(doc, steps, what):
    w = doc.get("step_input_wait_measured_us")
    if not isinstance(w, list) or len(w) != steps or \
            not all(isinstance(v, (int, float)) and v >= 0 for v in w):
        fail("%s: step_input_wait_measured_us %r, want %d numbers >= 0" % (what, w, steps))
    if not isinstance(doc.get("input_wait_measured_us"), (int, float)):
        fail("%s: no input_wait_measured_us" % what)
    if "input" not in doc or "input_us" not in doc["input"]:
        fail("%s: no modeled input beside the measured wait" % what)
    return w


def same(tpuemu, scratch, mpirun):
    data = dataset(scratch)
    runs = {}
    for pf in ["0", "1", "2"]:
        j, c = "%s/pf%s.json" % (scratch, pf), "%s/pf%s.csv" % (scratch, pf)
        extra = ["--trace", scratch + "/trace.json", "--trace-measured"] if pf == "2" else []
        text = run(mpirun + [tpuemu] + ARGS + data + ["--steps", "3", "--prefetch", pf, "--json", j, "--csv", c]
                   + extra)
        doc = json.load(open(j))
        if doc["transport"] != "mpi" or doc["input"]["prefetch"] != int(pf):
            fail("prefetch %s: transport %s, input %s" % (pf, doc["transport"], doc["input"]))
        w = check_waits(doc, 3, "prefetch " + pf)
        rows = list(csv.DictReader(open(c)))
        if len(rows) != 3 or any(float(r["input_wait_measured_us"]) < 0 or
                                 float(r["input_us"]) != doc["input"]["input_us"] for r in rows):
            fail("prefetch %s: CSV %s" % (pf, rows))
        lines = [ln for ln in text.splitlines() if ln.startswith("step ") and "input wait" in ln]
        if len(lines) != 3 or "input (measured)" not in text:
            fail("prefetch %s: the text has no measured wait per step:\n%s" % (pf, text))
        runs[pf] = (doc["losses"], [r["param_hash"] for r in doc["replicas"]], w)
    loop = json.loads(run([tpuemu] + ARGS + data + ["--steps", "3", "--prefetch", "1", "--json", "-"]))
    runs["loopback"] = (loop["losses"], [r["param_hash"] for r in loop["replicas"]],
                        check_waits(loop, 3, "loopback"))
    for k, v in runs.items():
        if v[:2] != runs["0"][:2]:
            fail("--prefetch %s: losses %s hashes %s, --prefetch 0: %s %s" %
                 (k, v[0], v[1], runs["0"][0], runs["0"][1]))
    t = json.load(open(scratch + "/trace.json"))
    pid0 = t["otherData"]["measured_pid0"]
    ev = [e for e in t["traceEvents"] if e.get("ph") == "X" and e.get("pid", -1) >= pid0]
    for cat in ["input", "step"]:
        n = len([e for e in ev if e.get("cat") == cat])
        if n != 3 * 4:
            fail("the measured trace has %d '%s' slices, want 3 steps x 4 chips" % (n, cat))
    print("ok: --prefetch 0, 1, 2 and loopback: losses %s, hashes %s the same; waits (us) %s" %
          (runs["0"][0], runs["0"][1], {k: v[2] for k, v in runs.items()}))


def interrupted(cmd, what):
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    p.send_signal(signal.SIGINT)
    try:
        out, err = p.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        p.kill()
        fail("%s: SIGINT in a paced read: no end in 20 s" % what)
    if p.returncode not in (-signal.SIGINT, 128 + signal.SIGINT) or "interrupted by SIGINT" not in err:
        fail("%s: SIGINT: exit %d, stderr %s" % (what, p.returncode, err))


def rate(tpuemu, scratch, mpirun):
    fast = json.loads(run(mpirun + [tpuemu] + ARGS + ["--steps", "2", "--json", "-"]))
    slow = json.loads(run(mpirun + [tpuemu] + ARGS + ["--steps", "2", "--input-rate", "256",
                                                     "--json", "-"]))
    wf, ws = check_waits(fast, 2, "unlimited"), check_waits(slow, 2, "256 tokens/s")
    if slow["input"]["producer_us"] != 1e6 or not slow["input"]["input_bound"] or \
            fast["input"]["input_bound"]:
        fail("modeled: producer %s us (want 1e6 by hand), input-bound %s (unlimited: %s)" %
             (slow["input"]["producer_us"], slow["input"]["input_bound"],
              fast["input"]["input_bound"]))
    if not slow["input_wait_measured_us"] > fast["input_wait_measured_us"]:
        fail("the wait at 256 tokens/s %s is not longer than unlimited %s" % (ws, wf))
    if slow["losses"] != fast["losses"]:
        fail("the rate changed the losses: %s, %s" % (slow["losses"], fast["losses"]))
    # A bad id in rows 4..7 (data index 1: ranks 2 and 3) while ranks 0 and 1 have started
    # their readers at 1 token/s: one line naming it, exit 2, the readers stopped, no hang.
    vals = [1] * (8 * 16)
    vals[5 * 16 + 3] = 48
    write_i32(scratch + "/bad.npy", 8, 16, vals)
    p = subprocess.run(mpirun + [tpuemu] + ARGS + ["--steps", "2", "--input-rate", "1", "--data",
                                                  scratch + "/bad.npy", "--labels",
                                                  scratch + "/bad.npy"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("tpuemu:")]
    if p.returncode == 0 or len(lines) != 1 or "row 5, column 3" not in lines[0]:
        fail("a bad id on ranks 2 and 3: exit %d, %s" % (p.returncode, p.stderr))
    for pf in ["0", "2"]:
        interrupted([tpuemu] + ARGS + ["--steps", "3", "--input-rate", "1", "--prefetch", pf],
                    "--prefetch " + pf)
    print("ok: waits %s us at 256 tokens/s per host (modeled producer %.0f us, input-bound) vs %s "
          "us unlimited; SIGINT ends a paced read" % (ws, slow["input"]["producer_us"], wf))


def main(argv):
    if len(argv) < 4 or argv[1] not in ("same", "rate"):
        fail(__doc__)
    tpuemu, scratch, mpirun = argv[2], argv[3], argv[4:]
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    (same if argv[1] == "same" else rate)(tpuemu, scratch, mpirun)


if __name__ == "__main__":
    main(sys.argv)
