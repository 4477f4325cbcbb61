#!/usr/bin/env python3
"""Run a tpuemu command and check its machine-readable stdout.

usage: json_check.py [--has PATH ...] [--equal PATH=VALUE ...] [--len PATH=N ...]
                     [--csv-rows N] [--schema docs/output.md:NAME] [--vocab docs/output.md]
                     -- COMMAND...

stdout must be exactly one JSON document (or, with --csv-rows, a CSV table with
a header and N rows of the same width; N "any": at least one); everything else the command prints must
be on stderr.  PATH is dot-separated keys and array indexes ("rows.0.redop").
VALUE is compared as JSON when it parses as JSON, else as a string.

--schema docs/output.md:NAME reads the row `NAME` of the table under the heading
"Output: JSON and CSV" (up to the next second-level heading) and checks every key it documents (the first `...` of the row:
`a, b{c, d}, e[]{f}`; keys in [...] and notes in (...) are optional) is in the
document (for a key under an array, in its first element when it has one); with
--csv-rows, the CSV header is exactly the documented columns, in order.

--vocab docs/output.md reads the table under "## Vocabulary" (one row per key: `key`,
meaning, unit, type) and fails on any key of the document (at any depth) or any CSV
column that is not a row of it; the members of a key of type `map` are names, not keys.
A JSON document must start with "schema_version" and "command".
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


def schema_keys(readme, name):
    """The key paths the docs document for the table row `name`."""
    text = open(readme).read()
    sec = text[text.index("# Output: JSON and CSV"):]
    end = sec.find("\n## ", 3)
    sec = sec if end < 0 else sec[:end]
    row = None
    for line in sec.splitlines():
        cells = line.split(" | ")
        if len(cells) >= 2 and cells[0].strip("| ") == "`%s`" % name:
            row = cells[1]
    if row is None:
        sys.exit("json_check: no row `%s` in %s" % (name, readme))
    spec = row.split("`")[1]
    keys, stack, cur, arr, i = [], [""], None, False, 0
    while i < len(spec):
        c = spec[i]
        if c.isalnum() or c == "_":
            j = i
            while j < len(spec) and (spec[j].isalnum() or spec[j] == "_"):
                j += 1
            cur, arr = stack[-1] + spec[i:j], False
            keys.append(cur)
            i = j
        elif spec.startswith("[]", i):
            arr = True
            i += 2
        elif c in "[(":
            close, depth = "])"["[(".index(c)], 0
            while i < len(spec):  # an optional group or a note: skipped
                depth += spec[i] == c
                depth -= spec[i] == close
                i += 1
                if depth == 0:
                    break
        elif c == "{":
            stack.append("" if cur is None else cur + (".0." if arr else "."))
            i += 1
        elif c == "}":
            stack.pop()
            i += 1
        else:
            i += 1
    return keys


def vocab_table(path):
    """{key: type} of the rows of the table under "## Vocabulary"."""
    text = open(path).read()
    sec = text[text.index("\n## Vocabulary"):]
    end = sec.find("\n## ", 3)
    sec = sec if end < 0 else sec[:end]
    table = {}
    for line in sec.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].startswith("`"):
            table[cells[0].split("`")[1]] = cells[3]
    if len(table) < 20:
        sys.exit("json_check: no vocabulary table in %s" % path)
    return table


def unknown_keys(doc, table, where=""):
    """The key paths of 'doc' that are not rows of 'table'."""
    bad = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            if k not in table:
                bad.append(where + k)
            elif table[k] != "map":
                bad += unknown_keys(v, table, where + k + ".")
    elif isinstance(doc, list):
        for v in doc:
            bad += unknown_keys(v, table, where + "[].")
    return sorted(set(bad))


def has_path(doc, path):
    """Is 'path' there?  An empty array stands for any element."""
    cur = doc
    for part in [p for p in path.split(".") if p]:
        if isinstance(cur, list):
            if not cur:
                return True
            cur = cur[int(part)]
        elif isinstance(cur, dict) and part in cur:
            cur = cur[part]
        else:
            return False
    return True


def main(argv):
    sep = argv.index("--")
    opts, cmd = argv[:sep], argv[sep + 1:]
    has, equal, lens, csv_rows, schema, vocab = [], [], [], None, None, None
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
            csv_rows = -1 if val == "any" else int(val)
        elif flag == "--vocab":
            vocab = vocab_table(val)
        elif flag == "--schema":
            readme, name = val.rsplit(":", 1)
            schema = schema_keys(readme, name)
        else:
            sys.exit("json_check: unknown flag " + flag)
        i += 2
    res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=110)
    out = res.stdout.decode()
    if res.returncode != 0:
        sys.exit("FAIL: exit %d\nstderr:\n%s" % (res.returncode, res.stderr.decode()))
    if csv_rows is not None:
        rows = list(csv.reader(io.StringIO(out)))
        if (csv_rows < 0 and len(rows) < 2) or (csv_rows >= 0 and len(rows) != csv_rows + 1):
            sys.exit("FAIL: %d CSV lines, want a header and %d rows:\n%s" % (len(rows), csv_rows, out))
        if any(len(r) != len(rows[0]) for r in rows):
            sys.exit("FAIL: CSV rows of different widths")
        if schema is not None and rows[0] != schema:
            sys.exit("FAIL: CSV header %s, the docs document %s" % (rows[0], schema))
        if vocab is not None:
            bad = [c for c in rows[0] if c not in vocab]
            if bad:
                sys.exit("FAIL: CSV columns outside the vocabulary of docs/output.md: %s" % bad)
        print("ok: CSV with %d columns, %d rows" % (len(rows[0]), len(rows) - 1))
        return
    try:
        doc = json.loads(out)  # exactly one document: trailing text fails here
    except ValueError as e:
        sys.exit("FAIL: stdout is not one JSON document (%s):\n%s" % (e, out[:2000]))
    if vocab is not None:
        bad = unknown_keys(doc, vocab)
        if bad:
            sys.exit("FAIL: keys outside the vocabulary of docs/output.md: %s" % bad)
        if not isinstance(doc, dict) or list(doc)[:2] != ["schema_version", "command"]:
            sys.exit("FAIL: the document does not start with schema_version, command")
    for p in schema or []:
        if not has_path(doc, p):
            sys.exit("FAIL: the docs document '%s', not in %s" % (p, out[:2000]))
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
    print("ok: %s%s" % (" ".join(cmd), " (%d documented keys)" % len(schema) if schema else ""))


if __name__ == "__main__":
    main(sys.argv[1:])
