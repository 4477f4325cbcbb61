#!/usr/bin/env bash
# usage: tests/fuzz/run_hlo_fuzz.sh [SECONDS]   (default 20; run for hours with 36000)
# Builds the HLO parser's (and verifier's) libFuzzer target with clang (ASan + UBSan) and runs it
# on a copy of the seed corpus tests/fixtures/hlo (and hlo/bad).  Exits non-zero on a finding.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
secs=${1:-20}
out=${TPU_FUZZ_DIR:-$root/build/fuzz}
mkdir -p "$out/corpus_hlo"
cp "$root"/tests/fixtures/hlo/*.hlo "$out/corpus_hlo/"
cp "$root"/tests/fixtures/hlo/bad/*.hlo "$out/corpus_hlo/"
clang -std=c11 -D_POSIX_C_SOURCE=200809L -g -O1 -fsanitize=fuzzer,address,undefined \
    -fno-sanitize-recover=undefined -I"$root/include" -I"$root/common" \
    "$root/tests/fuzz/fuzz_hlo.c" "$root"/emulator/replay/hlo_{lex,shape,groups,instr,parse,verify}.c \
    "$root/common/alloc.c" "$root/common/status.c" -o "$out/fuzz_hlo"
"$out/fuzz_hlo" -max_total_time="$secs" -max_len=65536 -timeout=10 -artifact_prefix="$out/" \
    "$out/corpus_hlo" 2>&1 |
    tail -5
