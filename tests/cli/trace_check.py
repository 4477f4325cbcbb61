#!/usr/bin/env python3
"""Check a Chrome trace-event file written by 'tpuemu ... --trace FILE'.

usage: trace_check.py [--chips N] [--links N] [--summary] [--measured]
                      [--max-bytes N] [--min-ops N] [--truncated] [--compute N]
                      [--op-args] TRACE [-- COMMAND...]

With a COMMAND, runs it first (it must exit 0).  Then loads TRACE with
python3's json module and checks:
  - every event has a known phase, and X events non-negative ts and dur;
  - X events on one (pid, tid) track nest: each starts after the one before
    ends or ends inside it (times compared in whole nanoseconds);
  - full trace: a process named "chip N ..." for every chip 0..N-1, a
    "collectives" track in each, and a counter track named "ICI ... link L ..."
    for every directed link 0..L-1;
  - summary: one pod process and counters per link class;
  - every flow-arrow start ('s') has its finish ('f');
  - --measured: a "measured" process per chip with slices on it;
  - the file is at most --max-bytes;
  - --truncated: it ends with the "trace truncated" instant event (a trace cut at
    its size budget); without it, no such event;
  - --compute N: chip 0's (or the pod's) compute track holds at least N slices;
  - every slice (X) and instant event (i) has a "cat" (step, collective, compute,
    link, dma, input) and "args"; no X event lasts zero (an instant event instead);
    counters are "link", flow arrows "dma";
  - a modeled collective's args name its collective, bytes, axes, group_size,
    group_count, algorithm and modeled_us; a compute slice's its op_name and
    modeled_us (--op-args: also flops, bytes and bound); a measured slice's its
    clock ("measured") and measured_us;
  - clocks: otherData names both; the modeled timeline starts at 0; the measured
    processes (from otherData's measured_pid0) hold only measured slices.
"""
import json
import os
import re
import subprocess
import sys


def ns(v):
    return int(round(float(v) * 1000))


def main(argv):
    opts = {"chips": None, "links": None, "summary": False, "measured": False,
            "max_bytes": None, "min_ops": 1, "truncated": False, "compute": 0, "op_args": False}
    cmd = []
    if "--" in argv:
        i = argv.index("--")
        argv, cmd = argv[:i], argv[i + 1:]
    path = None
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--summary", "--measured", "--truncated", "--op-args"):
            opts[a[2:].replace("-", "_")] = True
            i += 1
        elif a in ("--chips", "--links", "--max-bytes", "--min-ops", "--compute"):
            opts[a[2:].replace("-", "_")] = int(argv[i + 1])
            i += 2
        else:
            path = a
            i += 1
    if cmd:
        res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=110)
        if res.returncode != 0:
            sys.exit("FAIL: exit %d\n%s" % (res.returncode, res.stderr.decode()))
    size = os.path.getsize(path)
    with open(path) as f:
        doc = json.load(f)
    ev = doc["traceEvents"]
    other = doc.get("otherData", {})
    if "modeled" not in other.get("clocks", {}) or "measured" not in other.get("clocks", {}):
        sys.exit("FAIL: otherData does not name the two clocks")
    mpid0 = other.get("measured_pid0", 0)
    cats = ("step", "collective", "compute", "link", "dma", "input")
    first_modeled = None
    procs, threads, counters, tracks = {}, {}, set(), {}
    flows = {}
    truncated = 0
    instants = {}
    for e in ev:
        ph = e["ph"]
        if ph not in ("M", "X", "C", "s", "f", "i"):
            sys.exit("FAIL: unknown phase %r" % ph)
        if ph == "i" and e["name"].startswith("trace truncated"):
            if e is not ev[-1]:
                sys.exit("FAIL: a truncation mark that is not the last event")
            truncated += 1
            continue
        if ph in ("X", "i", "C", "s", "f"):
            if e.get("cat") not in cats or (ph in ("X", "i", "C") and not isinstance(e.get("args"), dict)):
                sys.exit("FAIL: an event without a known cat or without args: %r" % e)
            if ph == "C" and e["cat"] != "link" or ph in ("s", "f") and e["cat"] != "dma":
                sys.exit("FAIL: a counter not of cat link or an arrow not of cat dma: %r" % e)
        if ph in ("X", "i"):
            a, measured = e["args"], mpid0 and e["pid"] >= mpid0
            if measured:
                if a.get("clock") != "measured" or not isinstance(a.get("measured_us"), (int, float)):
                    sys.exit("FAIL: a measured slice without its clock and measured_us: %r" % e)
            else:
                first_modeled = ns(e["ts"]) if first_modeled is None else min(first_modeled, ns(e["ts"]))
                want = {"collective": ("collective", "bytes", "axes", "group_size", "group_count",
                                       "algorithm", "modeled_us"),
                        "compute": ("op_name", "modeled_us") + (("flops", "bytes", "bound")
                                                                 if opts["op_args"] else ())}
                miss = [k for k in want.get(e["cat"], ()) if k not in a]
                if miss:
                    sys.exit("FAIL: a %s slice without %s: %r" % (e["cat"], miss, e))
        if ph == "i":
            instants[(e["pid"], e["tid"])] = instants.get((e["pid"], e["tid"]), 0) + 1
            continue
        if ph == "M":
            if e["name"] == "process_name":
                procs[e["pid"]] = e["args"]["name"]
            elif e["name"] == "thread_name":
                threads[(e["pid"], e["tid"])] = e["args"]["name"]
            continue
        if float(e["ts"]) < 0:
            sys.exit("FAIL: negative ts: %r" % e)
        if ph == "X":
            if ns(e["dur"]) <= 0:
                sys.exit("FAIL: a complete event of no duration (an instant event instead): %r" % e)
            tracks.setdefault((e["pid"], e["tid"]), []).append(
                (ns(e["ts"]), -ns(e["dur"]), e["name"]))
        elif ph == "C":
            counters.add((e["pid"], e["name"]))
        elif ph == "s":
            flows[e["id"]] = flows.get(e["id"], 0) + 1
        elif ph == "f":
            flows[e["id"]] = flows.get(e["id"], 0) - 1
    for key, slices in tracks.items():
        slices.sort()
        stack = []
        for ts, negdur, name in slices:
            end = ts - negdur
            while stack and stack[-1][0] <= ts:
                stack.pop()
            if stack and end > stack[-1][0]:
                sys.exit("FAIL: %r on track %r overlaps %r without nesting"
                         % (name, key, stack[-1][1]))
            stack.append((end, name))
    if any(v != 0 for v in flows.values()):
        sys.exit("FAIL: a flow arrow without its other end")
    names = set(procs.values())
    if opts["summary"]:
        if not any(n.startswith("pod:") for n in names):
            sys.exit("FAIL: no pod process in a summary trace")
        if not any(n.startswith("ICI") for _, n in counters):
            sys.exit("FAIL: no link-class counters")
    if opts["chips"] is not None and not opts["summary"]:
        for c in range(opts["chips"]):
            pid = c + 1
            if not procs.get(pid, "").startswith("chip %d " % c):
                sys.exit("FAIL: no process for chip %d" % c)
            if threads.get((pid, 2)) != "collectives":
                sys.exit("FAIL: chip %d has no collectives track" % c)
    if opts["links"] is not None and not opts["summary"]:
        seen = set()
        for _, n in counters:
            m = re.match(r"ICI [xyz][+-] link (\d+) ", n)
            if m:
                seen.add(int(m.group(1)))
        if seen != set(range(opts["links"])):
            sys.exit("FAIL: counters for %d links, want %d" % (len(seen), opts["links"]))
    if opts["measured"]:
        meas = [p for p, n in procs.items() if n.endswith(" measured")]
        if len(meas) != (opts["chips"] or len(meas)) or not any(k[0] in meas for k in tracks):
            sys.exit("FAIL: measured processes missing or empty")
    ops = sum(1 for k, v in tracks.items() if threads.get(k, "").startswith("collectives")
              for s in v if not s[2].startswith("step"))
    if ops < opts["min_ops"]:
        sys.exit("FAIL: %d collective slices, want at least %d" % (ops, opts["min_ops"]))
    if first_modeled not in (None, 0):
        sys.exit("FAIL: the modeled timeline starts at %d ns, not 0" % first_modeled)
    if opts["measured"] and not mpid0:
        sys.exit("FAIL: --measured but otherData has no measured_pid0")
    if truncated != (1 if opts["truncated"] else 0):
        sys.exit("FAIL: truncation mark %s" % ("missing" if opts["truncated"] else "unexpected"))
    compute = len(tracks.get((1, 1), [])) + instants.get((1, 1), 0)  # ops of no time: instants
    if compute < opts["compute"]:
        sys.exit("FAIL: %d compute slices on chip 0, want at least %d" % (compute, opts["compute"]))
    if opts["max_bytes"] is not None and size > opts["max_bytes"]:
        sys.exit("FAIL: %d bytes, over %d" % (size, opts["max_bytes"]))
    print("ok: %s: %d bytes, %d events, %d processes, %d counter tracks, %d tracks of slices%s"
          % (path, size, len(ev), len(procs), len(counters), len(tracks),
             ", truncated" if truncated else ""))


main(sys.argv[1:])
