#!/usr/bin/env python3
"""refresh_docs.py FILE.md [--match TEXT] [--dry-run]: paste the real output of the
current build under every runnable block of a docs page.

A runnable block is a fence opened with "```sh runnable"; its output is the
"```text" fence right after it (blank lines between allowed).  Each runnable
block whose text contains TEXT (every one without --match) is run with bash
from the repository's root, as docs_runnable_blocks runs it, and the text
fence under it is replaced by what it printed (stdout then stderr).  A block
with no text fence under it is run but nothing is pasted.  The whole output
replaces the fence: a page that shows part of a block's output (an elision,
one file of several) is refreshed by hand, or with --match on the other blocks.  The page is written
to a temporary file beside it and renamed into place, so a failure leaves it
as it was.  Blocks that fail are named and the page is left unchanged.

  tests/tools/refresh_docs.py docs/train.md --match "--model transformer"
"""
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(argv):
    args = argv[1:]
    match, dry = None, False
    if "--dry-run" in args:
        args.remove("--dry-run")
        dry = True
    if "--match" in args:
        i = args.index("--match")
        if i + 1 >= len(args):
            print("refresh_docs: --match needs a value", file=sys.stderr)
            return 2
        match = args[i + 1]
        del args[i:i + 2]
    if len(args) != 1 or not os.path.isfile(args[0]):
        print("usage: tests/tools/refresh_docs.py FILE.md [--match TEXT] [--dry-run]",
              file=sys.stderr)
        return 2
    path = args[0]
    lines = open(path, encoding="utf-8").read().split("\n")
    out, i, failed, done = [], 0, [], 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        if line.strip() != "```sh runnable":
            continue
        body = []
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i])
            out.append(lines[i])
            i += 1
        if i < len(lines):
            out.append(lines[i])
            i += 1
        j = i
        while j < len(lines) and lines[j].strip() == "":
            j += 1
        has_text = j < len(lines) and lines[j].strip() == "```text"
        script = "\n".join(body)
        if match is not None and match not in script:
            continue
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        r = subprocess.run(["bash", "-c", script], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            failed.append((script.splitlines()[0], r.returncode, r.stderr.strip()[-300:]))
            continue
        done += 1
        if not has_text:
            continue
        out.extend(lines[i:j])
        out.append("```text")
        k = j + 1
        while k < len(lines) and lines[k].strip() != "```":
            k += 1
        text = (r.stdout + r.stderr).rstrip("\n")
        out.extend(text.split("\n"))
        out.append("```")
        i = k + 1
    for cmd, code, err in failed:
        print("refresh_docs: exit %d: %s\n  %s" % (code, cmd, err), file=sys.stderr)
    if failed:
        return 1
    print("refresh_docs: %d blocks run in %s" % (done, path))
    if not dry:
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path), dir=os.path.dirname(
            os.path.abspath(path)))
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write("\n".join(out))
        os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        os.replace(tmp, path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
