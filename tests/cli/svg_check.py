#!/usr/bin/env python3
"""Check a heatmap written by '--heatmap FILE.svg'.

usage: svg_check.py --links N [--panels N] SVG [-- COMMAND...]

Runs COMMAND first when given (exit 0).  The SVG must be well-formed XML
(python3's xml.etree) with exactly one element of class "link" per directed
link, with ids l0..l(N-1), each filled with a colour, a legend, and (with
--panels) that many panels.
"""
import subprocess
import sys
import xml.etree.ElementTree as ET


def main(argv):
    cmd = []
    if "--" in argv:
        i = argv.index("--")
        argv, cmd = argv[:i], argv[i + 1:]
    links = panels = None
    path = None
    i = 0
    while i < len(argv):
        if argv[i] == "--links":
            links = int(argv[i + 1])
            i += 2
        elif argv[i] == "--panels":
            panels = int(argv[i + 1])
            i += 2
        else:
            path = argv[i]
            i += 1
    if cmd:
        res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=110)
        if res.returncode != 0:
            sys.exit("FAIL: exit %d\n%s" % (res.returncode, res.stderr.decode()))
    root = ET.parse(path).getroot()
    els = [e for e in root.iter() if e.get("class") == "link"]
    ids = sorted(int(e.get("id")[1:]) for e in els)
    if links is not None and ids != list(range(links)):
        sys.exit("FAIL: %d link elements (ids %s...), want %d" % (len(els), ids[:5], links))
    if any(not e.get("fill", "").startswith("#") for e in els):
        sys.exit("FAIL: a link without a colour")
    if not any(e.get("class") == "legend" for e in root.iter()):
        sys.exit("FAIL: no legend")
    np_ = sum(1 for e in root.iter() if e.get("class") == "panel")
    if panels is not None and np_ != panels:
        sys.exit("FAIL: %d panels, want %d" % (np_, panels))
    print("ok: %s: %d links, %d panels" % (path, len(els), np_))


main(sys.argv[1:])
