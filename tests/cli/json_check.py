#!/usr/bin/env python3
"""Run a tpuemu command and check its machine-readable stdout.

usage: json_check.py [--has PATH ...] [--equal PATH=VALUE ...] [--len PATH=N ...]
                     [--csv-rows N] -- COMMAND...

stdout must be exactly one JSON document (or, with --csv-rows, a CSV table with
a header and N rows of the same width); everything else the command prints must
be on stderr.  PATH is dot-separated keys and array indexes ("rows.0.redop").
VALUE is compared as JSON when it parses as JSON, else as a string.
"""
import csv
import io
import json
import subprocess
import sys


def lookup(doc, path):
    cur = doc
    for part in [p for p in path.split(".") if p]:
        if isinstance(cur, list):
            cur = cur[int(part)]
        else:
            cur = cur[part]
    return cur


def main(argv):
    sep = argv.index("--")
    opts, cmd = argv[:sep], argv[sep + 1:]
    has, equal, lens, csv_rows = [], [], [], None
    i = 0
    while i < len(opts):
        flag, val = opts[i], opts[i + 1]
        if flag == "--has":
            has.append(val)
        elif flag == "--equal":
            equal.append(val.split("=", 1))
        elif flag == "--len":
            p, n = val.split("=", 1)
            lens.append((p, int(n)))
        elif flag == "--csv-rows":
            csv_rows = int(val)
        else:
            sys.exit("json_check: unknown flag " + flag)
        i += 2
    res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=110)
    out = res.stdout.decode()
    if res.returncode != 0:
        sys.exit("FAIL: exit %d\nstderr:\n%s" % (res.returncode, res.stderr.decode()))
    if csv_rows is not None:
        rows = list(csv.reader(io.StringIO(out)))
        if len(rows) != csv_rows + 1:
            sys.exit("FAIL: %d CSV lines, want a header and %d rows:\n%s" % (len(rows), csv_rows, out))
        if any(len(r) != len(rows[0]) for r in rows):
            sys.exit("FAIL: CSV rows of different widths")
        print("ok: CSV with %d columns, %d rows" % (len(rows[0]), csv_rows))
        return
    try:
        doc = json.loads(out)  # exactly one document: trailing text fails here
    except ValueError as e:
        sys.exit("FAIL: stdout is not one JSON document (%s):\n%s" % (e, out[:2000]))
    for p in has:
        try:
            lookup(doc, p)
        except (KeyError, IndexError, ValueError, TypeError):
            sys.exit("FAIL: no '%s' in %s" % (p, out[:2000]))
    for p, v in equal:
        try:
            want = json.loads(v)
        except ValueError:
            want = v
        got = lookup(doc, p)
        if got != want:
            sys.exit("FAIL: %s is %r, want %r" % (p, got, want))
    for p, n in lens:
        if len(lookup(doc, p)) != n:
            sys.exit("FAIL: %s has %d elements, want %d" % (p, len(lookup(doc, p)), n))
    print("ok: %s" % " ".join(cmd))


if __name__ == "__main__":
    main(sys.argv[1:])
