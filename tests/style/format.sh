#!/usr/bin/env bash
# Every C file of the tree is clang-formatted with the repository's .clang-format.
set -u
root=$1
cd "$root" || exit 1
command -v clang-format >/dev/null || { echo "clang-format not installed"; exit 1; }
files=$(git ls-files '*.c' '*.h' 2>/dev/null)
[ -n "$files" ] || files=$(find . -name '*.[ch]' -not -path './build*')
clang-format --dry-run --Werror $files && echo "format ok"
