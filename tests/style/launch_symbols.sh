#!/usr/bin/env bash
# The program's own layer (launch/) names its global symbols with its own prefix,
# app_ (STYLE.md R3): none uses the library's tpu_, and none is unprefixed but
# main.  Arguments: the object files of launch/.
set -u
bad=$(nm -g --defined-only "$@" | awk 'NF == 3 && $2 ~ /[TDBRC]/ {print $3}' |
    grep -vE '^(app_|main$)' | sort -u || true)
if [ -n "$bad" ]; then
    echo "launch/ symbols without the app_ prefix:"
    echo "$bad"
    exit 1
fi
echo "launch symbols ok: $(nm -g --defined-only "$@" | awk 'NF == 3 && $2 ~ /[TDBRC]/' | grep -c ' app_') app_ symbols"
