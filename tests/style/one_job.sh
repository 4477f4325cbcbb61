#!/usr/bin/env bash
# One job per file (STYLE.md R20), checked on every C source and header of the
# library, the public headers, launch/, the tests, bench/ and examples/: each opens with a comment (the file's
# job, or for a header what its source does) and has at most 800 lines.
set -u
root=$1
cd "$root" || exit 2
bad=0
while IFS= read -r f; do
    if ! head -1 "$f" | grep -q '^/\*'; then
        echo "$f:1: the file does not open with a comment that says its job"
        bad=1
    fi
    n=$(wc -l <"$f")
    if [ "$n" -gt 800 ]; then
        echo "$f: $n lines, over 800: a file of two jobs"
        bad=1
    fi
done < <(find common topology collectives emulator launch include tests bench examples \( -name '*.c' -o -name '*.h' \) | sort)
[ $bad -eq 0 ] && echo "one job per file: every file opens with its job and has at most 800 lines"
exit $bad
