#!/usr/bin/env python3
"""Compare bench's table with nccl-tests' (written by hand from nccl-tests' documented output).

usage: bench_nccl_check.py -- COMMAND...   (a bench run of all-gather on 4 ranks, 1K to 4K, f32)

nccl-tests prints, for all_gather_perf -b 1K -e 4K -f 2 on 4 ranks (float):
  #                                                              out-of-place                       in-place
  #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
  #        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
          1024            64     float    none      -1  ...
and ends with "# Out of bounds values : 0 OK" and "# Avg bus bandwidth    : X".
bench's header must start with the same thirteen titles and units in the same order,
each title ending in the same column as nccl-tests' (its widths), the group line
must name out-of-place then in-place, its rows must give size, count (per rank:
1024 / 4 / 4 = 64) and type as nccl-tests does, both #wrong 0, every row must fit
160 columns, and the two closing lines must be there.
"""
import re
import subprocess
import sys

NCCL_HEADER = ("#       size         count      type   redop    root     time   algbw   busbw"
               " #wrong     time   algbw   busbw #wrong")
NCCL_TITLES = NCCL_HEADER.lstrip("# ").split()
NCCL_UNITS = ["(B)", "(elements)", "(us)", "(GB/s)", "(GB/s)", "(us)", "(GB/s)", "(GB/s)"]
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
    if titles[:13] != NCCL_TITLES:
        sys.exit("FAIL: header %s, nccl-tests has %s" % (titles[:13], NCCL_TITLES))
    if not heads[0].startswith(NCCL_HEADER):
        sys.exit("FAIL: header\n%s\nnot in nccl-tests' columns\n%s" % (heads[0], NCCL_HEADER))
    group = lines[lines.index(heads[0]) - 1]
    if not re.match(r"^#\s+out-of-place.*\s+in-place", group):
        sys.exit("FAIL: the line above the titles does not name out-of-place then in-place: %r" % group)
    units = lines[lines.index(heads[0]) + 1].lstrip("# ").split()
    if units[:8] != NCCL_UNITS:
        sys.exit("FAIL: units %s, nccl-tests has %s" % (units[:8], NCCL_UNITS))
    rows = [l.split() for l in lines if re.match(r"^\s+\d+\s", l)]
    if [r[:5] for r in rows] != NCCL_ROWS:
        sys.exit("FAIL: rows %s, nccl-tests prints %s" % ([r[:5] for r in rows], NCCL_ROWS))
    if any(r[8] != "0" or r[12] != "0" for r in rows):
        sys.exit("FAIL: an out-of-place or in-place #wrong not 0: %s" % rows)
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
