#!/bin/bash
# Runs every command block of README.md and docs/*.md marked as runnable, and fails
# naming the file and line of the first block that fails (all blocks run; every
# failure is named).
#
# A runnable block is a fenced block whose info string is `sh runnable`:
#
#     ```sh runnable
#     build/tpuemu info --chip v5e
#     ```
#
# Each block runs with `bash -e` from a scratch copy of the repository root (every
# top-level entry a symlink to the source tree, `build` a symlink to BUILD_DIR), so
# `build/tpuemu` and `tests/fixtures/...` resolve as they do from a clone after
# `cmake -B build`. Blocks run one after the other, each in its own shell (a block
# whose text repeats one already run is counted, not run again); a block
# that sets variables (the `export` of the OMPI variables) does so for itself only:
# as root the script sets OMPI_ALLOW_RUN_AS_ROOT=1 and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# for every block. A block that writes files writes under build/ or /tmp.
#
# usage: run_blocks.sh SOURCE_DIR BUILD_DIR [FILE.md...]
#   FILE.md default: README.md and docs/*.md of SOURCE_DIR.
#   DOCS_BLOCK_TIMEOUT (seconds, default 60): the time limit of one block.
#   DOCS_LIST=1: list the blocks (file:line and first command) without running them.
set -u
src=$(cd "${1:?usage: run_blocks.sh SOURCE_DIR BUILD_DIR [FILE.md...]}" && pwd) || exit 2
build=$(cd "${2:?usage: run_blocks.sh SOURCE_DIR BUILD_DIR [FILE.md...]}" && pwd) || exit 2
shift 2
limit=${DOCS_BLOCK_TIMEOUT:-60}

files=("$@")
if [ ${#files[@]} -eq 0 ]; then
    files=("$src/README.md")
    for f in "$src"/docs/*.md; do
        [ -e "$f" ] && files+=("$f")
    done
fi

# The scratch root: the source tree's entries, and build/ pointing at BUILD_DIR.
root=$(mktemp -d "${TMPDIR:-/tmp}/tpuemu-docs.XXXXXX") || exit 2
trap 'rm -rf "$root"' EXIT
for e in "$src"/* "$src"/.[!.]*; do
    [ -e "$e" ] || continue
    [ "$(basename "$e")" = build ] && continue
    ln -s "$e" "$root/$(basename "$e")"
done
ln -s "$build" "$root/build"

if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

blocks=0
failed=0
declare -A seen
for f in "${files[@]}"; do
    rel=${f#"$src"/}
    # One line per block: LINE<TAB>path of a file holding its text.
    n=0
    while IFS=$'\t' read -r line body; do
        n=$((n + 1))
        blocks=$((blocks + 1))
        if [ "${DOCS_LIST:-0}" = 1 ]; then
            printf '%s:%s: %s\n' "$rel" "$line" "$(grep -v '^[[:space:]]*\(#\|$\)' "$body" | head -1)"
            continue
        fi
        # A block that repeats one already run (README.md shows some of the pages'
        # commands) is not run twice.
        sum=$(md5sum < "$body" | cut -d' ' -f1)
        if [ -n "${seen[$sum]:-}" ]; then
            printf 'ok   %s:%s (the same as %s)\n' "$rel" "$line" "${seen[$sum]}"
            continue
        fi
        seen[$sum]="$rel:$line"
        start=$(date +%s.%N)
        out=$(cd "$root" && timeout -k 5 "$limit" bash -e "$body" 2>&1 </dev/null)
        rc=$?
        secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
        if [ $rc -ne 0 ]; then
            failed=$((failed + 1))
            why="exit $rc"
            [ $rc -eq 124 ] && why="over the ${limit} s limit"
            printf 'FAIL %s:%s: block failed (%s, %s s):\n' "$rel" "$line" "$why" "$secs"
            sed 's/^/    | /' "$body"
            printf '%s\n' "$out" | tail -20 | sed 's/^/    > /'
        else
            printf 'ok   %s:%s (%s s)\n' "$rel" "$line" "$secs"
        fi
    done < <(awk -v dir="$root" -v base="$(basename "$f" .md)" '
        /^```sh runnable[[:space:]]*$/ && !inblk { inblk = 1; k++; start = NR + 1;
            path = sprintf("%s/.block-%s-%d.sh", dir, base, k); printf "" > path; next }
        /^```[[:space:]]*$/ && inblk { inblk = 0; close(path); printf "%d\t%s\n", start, path; next }
        inblk { print > path }
        END { if (inblk) printf "%d\tUNTERMINATED\n", start }' "$f")
done

if [ $blocks -eq 0 ]; then
    echo "FAIL: no runnable blocks found in ${files[*]}"
    exit 1
fi
if [ "${DOCS_LIST:-0}" = 1 ]; then
    echo "$blocks runnable blocks"
    exit 0
fi
echo "$blocks runnable blocks, $failed failed"
[ $failed -eq 0 ]
