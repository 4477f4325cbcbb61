#!/usr/bin/env bash
# The shared library exports only tpu_ / tpu__ symbols (STYLE.md R3).
set -u
lib=$1
bad=$(nm -D --defined-only "$lib" | awk '$2 ~ /[TDBR]/ {print $3}' | grep -vE '^tpu_' || true)
if [ -n "$bad" ]; then
    echo "symbols without the tpu_ prefix:"
    echo "$bad"
    exit 1
fi
echo "symbols ok: $(nm -D --defined-only "$lib" | grep -c ' T tpu_') functions"
