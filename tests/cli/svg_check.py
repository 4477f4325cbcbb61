#!/usr/bin/env python3
"""Check a heatmap written by '--heatmap FILE.svg'.

usage: svg_check.py --links N [--panels N] [--chips N] SVG [-- COMMAND...]

Runs COMMAND first when given (exit 0).  The SVG must be well-formed XML
(python3's xml.etree) with exactly one element of class "link" per directed
link, with ids l0..l(N-1), each filled with a colour, a legend, and (with
--panels) that many panels.  Every link and every chip (class "chip", --chips N
of them) carries a <title> tooltip (a link's names its bytes); the texts of the
legend above the panels do not overlap (their boxes estimated from the font size:
0.6 em a character).
"""
import subprocess
import sys
import xml.etree.ElementTree as ET


def main(argv):
    cmd = []
    if "--" in argv:
        i = argv.index("--")
        argv, cmd = argv[:i], argv[i + 1:]
    links = panels = chips = None
    path = None
    i = 0
    while i < len(argv):
        if argv[i] == "--links":
            links = int(argv[i + 1])
            i += 2
        elif argv[i] == "--chips":
            chips = int(argv[i + 1])
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
    ns = "{http://www.w3.org/2000/svg}"
    def tip(e):
        t = e.find(ns + "title")
        return t.text if t is not None else None
    if any(tip(e) is None or "bytes" not in tip(e) for e in els):
        sys.exit("FAIL: a link without a tooltip naming its bytes")
    boxes = [e for e in root.iter() if (e.get("class") or "").split(" ")[0] == "chip"]
    if chips is not None and len(boxes) != chips:
        sys.exit("FAIL: %d chips, want %d" % (len(boxes), chips))
    if any(tip(e) is None or not tip(e).startswith("chip ") for e in boxes):
        sys.exit("FAIL: a chip without a tooltip")
    # The texts of the header (direct children of the root or of the legend group).
    heads = []
    for parent in [root] + [g for g in root if g.get("class") == "legend"]:
        for e in parent:
            if e.tag == ns + "text" and e.text:
                fs = float(e.get("font-size", root.get("font-size", "12")))
                w, x = 0.6 * fs * len(e.text), float(e.get("x"))
                x0 = {"middle": x - w / 2, "end": x - w}.get(e.get("text-anchor"), x)
                y = float(e.get("y"))
                heads.append((x0, x0 + w, y - fs, y, e.text))
    for i, a in enumerate(heads):
        for b in heads[i + 1:]:
            if a[0] < b[1] and b[0] < a[1] and a[2] < b[3] and b[2] < a[3]:
                sys.exit("FAIL: legend texts overlap: %r and %r" % (a[4], b[4]))
    if not any(e.get("class") == "legend" for e in root.iter()):
        sys.exit("FAIL: no legend")
    np_ = sum(1 for e in root.iter() if e.get("class") == "panel")
    if panels is not None and np_ != panels:
        sys.exit("FAIL: %d panels, want %d" % (np_, panels))
    print("ok: %s: %d links, %d panels" % (path, len(els), np_))


main(sys.argv[1:])
