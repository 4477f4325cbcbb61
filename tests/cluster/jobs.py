#!/usr/bin/env python3
"""Jobs across the nodes of the cluster (cluster.sh), each checked for its data (every
element verified) and its modeled times: equal to the same job on one node (plain mpirun)
and to `tpuemu model` in one process.

  cluster.sh run N PPN jobs.py CASE TPUEMU SRCDIR

CASE (nodes x ranks per node):
  tour      2x8  the default run on 4x4: CSV rows equal to one node's and to model; the
                 TPU hosts whole on the nodes, two node names, no split warning
  tour4     4x4  the default run on a v5p 2x2x4 (4 TPU hosts of 4 chips): one host a node
  split     2x3  a v5e 2x2 (one TPU host of 4 chips) on 3 + 1 ranks: the split warning
  slices    2x4  2x2 x 2 slices: one slice a node (the DCN axis between the nodes)
  bench     2x4  bench --compare-mpi of psum and all-gather on a v5p 2x2x2: verified,
                 modeled == model, the host path and the MPI baseline's time in each row
  train     2x8  train of the MLP, mesh data=8,model=2 (data groups {0,2,..,14}: chips of
                 both nodes; model groups {0,1}.. within a node):
                 losses and modeled step equal to one node's
  transformer 2x2  train --model transformer on a 2x2, data=2,tensor=2 (data groups {0,2}
                 {1,3}: across the nodes) against one chip, tests/cli/train_xfmr_check.py
  replay    2x8  replay of tests/fixtures/hlo/while_4x4.hlo: every execution verified, the
                 JSON's modeled figures equal to the replay in one process
"""
import json
import os
import subprocess
import sys

CASE, TPUEMU, SRC = sys.argv[1], sys.argv[2], sys.argv[3]
CLUSTER = [os.path.join(os.environ["TPU_CLUSTER_DIR"], "mpirun")]
LOCAL = ["mpirun", "--oversubscribe", "--mca", "mpi_yield_when_idle", "1"]
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(cmd, want_rc=0):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=100, env=ENV)
    if p.returncode != want_rc:
        fail("%s: exit %d\n%s\n%s" % (" ".join(cmd), p.returncode, p.stdout, p.stderr))
    return p.stdout, p.stderr


def both(np, args):
    """The job on the cluster and on one node: (cluster stdout, stderr, local stdout)."""
    out, err = run(CLUSTER + ["-n", str(np), TPUEMU] + args)
    local, _ = run(LOCAL + ["-n", str(np), TPUEMU] + args)
    return out, err, local


def model_us(args):
    return json.loads(run([TPUEMU, "model"] + args + ["--json", "-"])[0])["modeled_us"]


def placement(doc, nodes, host_nodes):
    """Each TPU host on one node, 'nodes' node names, host h on node host_nodes[h]."""
    names = {}
    for p in doc["placement"]:
        names.setdefault(p["tpu_host"], set()).add(p["mpi_host"])
    seen = sorted(set().union(*names.values()))
    if len(seen) != nodes:
        fail("the chips ran on nodes %s, not %d distinct nodes" % (seen, nodes))
    for h, n in names.items():
        if len(n) != 1:
            fail("TPU host %d runs on nodes %s" % (h, sorted(n)))
        if host_nodes is not None and n != {host_nodes[h]}:
            fail("TPU host %d runs on %s, not %s" % (h, sorted(n), host_nodes[h]))
    print("placement: %d TPU hosts on nodes %s, each whole" % (len(names), seen))


def clean(obj):
    """'obj' without the keys of measured times (which differ from run to run)."""
    if isinstance(obj, dict):
        return {k: clean(v) for k, v in obj.items() if "measured" not in k and k != "wall_s"}
    if isinstance(obj, list):
        return [clean(v) for v in obj]
    return obj


def tour(np, args, nodes, host_nodes):
    out, err, local = both(np, args + ["--quiet", "--json", "-"])
    doc, one = json.loads(out), json.loads(local)
    if not doc["passed"] or doc["hosts_split_across_nodes"] != 0 or "span several" in err:
        fail("the run failed or split a TPU host:\n" + err)
    placement(doc, nodes, host_nodes)
    ours, theirs = clean(doc["collectives"]), clean(one["collectives"])
    if ours != theirs:
        fail("collectives differ from the one-node run:\n%s\n%s" % (ours, theirs))
    topo = args[args.index("--topology") + 1]
    chip = args[args.index("--chip") + 1] if "--chip" in args else "v5e"
    for c in doc["collectives"]:
        if c["collective"] == "p2p" or c["wrong"] != 0:
            continue
        m = model_us(["--chip", chip, "--topology", topo, "--collective", c["collective"],
                      "--axes", c["axes"], "--bytes", str(c["bytes"])])
        if abs(m - c["modeled_us"]) > 1e-6 * max(1.0, m):
            fail("%s %d B: modeled %s on the cluster, %s by model" %
                 (c["collective"], c["bytes"], c["modeled_us"], m))
    if clean(doc.get("train")) != clean(one.get("train")):
        fail("the tour's train step differs from the one-node run")
    print("%s: %d collectives verified, modeled equal to one node's and to model" %
          (CASE, len(doc["collectives"])))


if CASE == "tour":
    tour(16, ["--topology", "4x4"], 2, {0: "tpuemu-n0", 1: "tpuemu-n1"})
elif CASE == "tour4":
    tour(16, ["--chip", "v5p", "--topology", "2x2x4"], 4,
         {h: "tpuemu-n%d" % h for h in range(4)})
elif CASE == "split":
    out, err = run(CLUSTER + ["-n", "4", TPUEMU, "--topology", "2x2", "--quiet", "--json", "-"])
    doc = json.loads(out)
    if doc["hosts_split_across_nodes"] != 1 or "span several MPI nodes" not in err:
        fail("no split warning for a TPU host on two nodes:\n" + err)
    print([line for line in err.splitlines() if "span several" in line][0])
    nodes = sorted({p["mpi_host"] for p in doc["placement"]})
    if nodes != ["tpuemu-n0", "tpuemu-n1"] or not doc["passed"]:
        fail("nodes %s, passed %s" % (nodes, doc["passed"]))
elif CASE == "slices":
    args = ["--topology", "2x2", "--slices", "2", "--quiet", "--json", "-"]
    out, err, local = both(8, args)
    doc, one = json.loads(out), json.loads(local)
    for p in doc["placement"]:
        if p["mpi_host"] != "tpuemu-n%d" % p["slice"]:
            fail("chip %d of slice %d runs on %s" % (p["chip"], p["slice"], p["mpi_host"]))
    if not doc["passed"] or clean(doc["collectives"]) != clean(one["collectives"]):
        fail("the 2-slice run failed or differs from one node's")
    dcn = [c for c in doc["collectives"] if "dcn" in c["axes"] or "slice" in c["axes"]]
    print("slices: slice s on node tpuemu-n<s>; %d collectives (%d over the DCN axis) equal "
          "to one node's" % (len(doc["collectives"]), len(dcn)))
elif CASE == "bench":
    for coll in ("psum", "all-gather"):
        out, _ = run(CLUSTER + ["-n", "8", TPUEMU, "bench", "--chip", "v5p", "--topology",
                                "2x2x2", "--collective", coll, "--min-bytes", "4K",
                                "--max-bytes", "256K", "--factor", "64", "--iters", "4",
                                "--compare-mpi", "--json", "-"])
        doc = json.loads(out)
        if not doc["passed"]:
            fail("bench %s failed" % coll)
        for r in doc["rows"]:
            m = model_us(["--chip", "v5p", "--topology", "2x2x2", "--collective", coll,
                          "--bytes", str(r["bytes"])])
            if r["wrong"] != 0 or abs(m - r["modeled_us"]) > 1e-6 * max(1.0, m):
                fail("%s %d B: wrong %d, modeled %s, model %s" %
                     (coll, r["bytes"], r["wrong"], r["modeled_us"], m))
            if r["host_path"] != "messages" or r["mpi_us"] <= 0:
                fail("%s %d B: host path %s (a group across nodes goes through messages), "
                     "mpi_us %s" % (coll, r["bytes"], r["host_path"], r["mpi_us"]))
            print("bench %s %7d B: modeled %.3f us (= model), ours %.1f us over %s, MPI %.1f us,"
                  " ratio %.2f" % (coll, r["bytes"], r["modeled_us"], r["measured_us"],
                                   r["host_path"], r["mpi_us"], r["mpi_ratio"]))
elif CASE == "train":
    args = ["train", "--topology", "4x4", "--mesh", "data=8,model=2", "--steps", "3",
            "--hidden", "64", "--batch", "32", "--json", "-"]
    out, _, local = both(16, args)
    doc, one = json.loads(out), json.loads(local)
    if clean(doc) != clean(one):
        diff = [k for k in clean(doc) if clean(doc).get(k) != clean(one).get(k)]
        fail("train differs from the one-node run in %s" % diff)
    print("train: losses %s and every modeled figure equal to one node's" % doc.get("losses"))
elif CASE == "transformer":
    scratch = os.path.join(os.environ["TPU_CLUSTER_DIR"], "xfmr")
    out, _ = run(["python3", os.path.join(SRC, "tests/cli/train_xfmr_check.py"), TPUEMU, scratch,
                  "--run"] + CLUSTER + ["-n", "4", TPUEMU])
    print(out.strip())
elif CASE == "replay":
    fixture = os.path.join(SRC, "tests/fixtures/hlo/while_4x4.hlo")
    args = ["replay", fixture, "--topology", "4x4", "--json", "-"]
    out, err = run(CLUSTER + ["-n", "16", TPUEMU] + args)
    alone, _ = run([TPUEMU] + args)
    want = "real run over MPI (16 ranks): 16 executions with real bytes, 0 wrong elements, " \
           "0 not run"
    if want not in out + err:
        fail("no line '%s':\n%s" % (want, err))
    doc, one = clean(json.loads(out)), clean(json.loads(alone))
    # Under mpirun each collective row adds its runs, measured time and wrong elements.
    if any(r["wrong"] != 0 or r["runs"] != r["executions"] for r in doc["collectives"]):
        fail("replay: a collective with wrong elements or not run")
    doc["collectives"] = [{k: r[k] for k in o} for r, o in zip(doc["collectives"],
                                                              one["collectives"])]
    if {k: v for k, v in doc.items() if k != "mpi"} != one:
        fail("replay's modeled figures differ from the replay in one process")
    print("replay: %s; step %s us as in one process" % (want, json.loads(out)["step_us"]))
else:
    fail("unknown case " + CASE)
print("ok")
