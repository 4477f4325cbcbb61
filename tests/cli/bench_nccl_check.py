#!/usr/bin/env python3
"""Compare bench's table with nccl-tests' (written by hand from nccl-tests' documented output).

usage: bench_nccl_check.py -- COMMAND...   (a bench run of all-gather on 4 ranks, 1K to 4K, f32)

nccl-tests prints, for all_gather_perf -b 1K -e 4K -f 2 on 4 ranks (float):
  #       size         count      type   redop    root     time   algbw   busbw #wrong ...
  #        (B)    (elements)                               (us)  (GB/s)  (GB/s)
          1024            64     float    none      -1  ...
and ends with "# Out of bounds values : 0 OK" and "# Avg bus bandwidth    : X".
bench's header must start with the same nine titles and units in the same order,
its rows must give size, count (per rank: 1024 / 4 / 4 = 64) and type as nccl-tests
does, every row must fit 160 columns, and the two closing lines must be there.
"""
import re
import subprocess
import sys

NCCL_TITLES = ["size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong"]
NCCL_UNITS = ["(B)", "(elements)", "(us)", "(GB/s)", "(GB/s)"]
# size, count, type, redop, root of nccl-tests' all_gather rows on 4 ranks, by hand
NCCL_ROWS = [["1024", "64", "float", "none", "-1"], ["2048", "128", "float", "none", "-1"],
             ["4096", "256", "float", "none", "-1"]]


def main(argv):
    cmd = argv[argv.index("--") + 1:]
    res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=110)
    out = res.stdout.decode()
    if res.returncode != 0:
        sys.exit("FAIL: exit %d\n%s" % (res.returncode, out))
    lines = out.splitlines()
    heads = [l for l in lines if l.startswith("#") and "size" in l.split()]
    if not heads:
        sys.exit("FAIL: no header line with 'size':\n" + out)
    titles = heads[0].lstrip("# ").split()
    if titles[:9] != NCCL_TITLES:
        sys.exit("FAIL: header %s, nccl-tests has %s" % (titles[:9], NCCL_TITLES))
    units = lines[lines.index(heads[0]) + 1].lstrip("# ").split()
    if units[:5] != NCCL_UNITS:
        sys.exit("FAIL: units %s, nccl-tests has %s" % (units[:5], NCCL_UNITS))
    rows = [l.split() for l in lines if re.match(r"^\s+\d+\s", l)]
    if [r[:5] for r in rows] != NCCL_ROWS:
        sys.exit("FAIL: rows %s, nccl-tests prints %s" % ([r[:5] for r in rows], NCCL_ROWS))
    if any(r[8] != "0" for r in rows):
        sys.exit("FAIL: #wrong not 0: %s" % rows)
    wide = [l for l in lines if len(l) > 160]
    if wide:
        sys.exit("FAIL: %d lines past 160 columns, the first: %r" % (len(wide), wide[0]))
    if "# Out of bounds values : 0 OK" not in lines:
        sys.exit("FAIL: no '# Out of bounds values : 0 OK'")
    if not any(re.match(r"^# Avg bus bandwidth\s+: [0-9.e+-]+$", l) for l in lines):
        sys.exit("FAIL: no '# Avg bus bandwidth : X'")
    print("ok: bench's columns and closing lines as nccl-tests'")


if __name__ == "__main__":
    main(sys.argv[1:])
