#!/usr/bin/env bash
# usage: tests/fuzz/run_fuzz.sh [SECONDS] [TARGET...]
#   (default 20 s each; targets shape size mesh coords yaml; for hours: 36000)
# Builds each libFuzzer target of tests/fuzz/fuzz_parsers.c with clang (ASan +
# UBSan) and runs it on a copy of its seed corpus tests/fuzz/corpus/TARGET.
# Prints one line per target with the executions; exits non-zero on a finding
# (the crashing input is left in build/fuzz/).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
secs=${1:-20}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(shape size mesh coords yaml)
out=${TPU_FUZZ_DIR:-$root/build/fuzz}
mkdir -p "$out"
common=("$root/common/status.c" "$root/common/alloc.c" "$root/topology/topo.c")
chip=("$root"/emulator/chip/chip_presets.c "$root"/emulator/chip/chip_util.c)
mesh=("$root/topology/mesh.c" "$root/topology/groups.c")
status=0
for t in "${targets[@]}"; do
    case $t in
    shape) src=() ;;
    size) src=("$root/launch/units.c") ;;
    yaml)
        src=("$root"/launch/config/config_{yaml,schema,walk,sections}.c "$root/launch/units.c"
            "$root/common/file.c" "$root/topology/fault.c" "${mesh[@]}" "${chip[@]}")
        ;;
    mesh) src=("${mesh[@]}") ;;
    coords) src=("$root/launch/coords.c") ;;
    *) echo "unknown target '$t'" >&2; exit 2 ;;
    esac
    T=$(echo "$t" | tr a-z A-Z)
    clang -std=c11 -D_POSIX_C_SOURCE=200809L -DTARGET_"$T" -g -O1 \
        -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
        -I"$root/include" -I"$root/common" -I"$root/launch/config" -I"$root/launch" \
        -I"$root/emulator/chip" -I"$root/topology" \
        "$root/tests/fuzz/fuzz_parsers.c" "${common[@]}" "${src[@]}" -lyaml -lm \
        -o "$out/fuzz_$t"
    rm -rf "$out/corpus_$t"
    cp -r "$root/tests/fuzz/corpus/$t" "$out/corpus_$t"
    if (cd "$out" && ./"fuzz_$t" -max_total_time="$secs" -max_len=4096 -timeout=10 \
        "corpus_$t" >"$out/fuzz_$t.log" 2>&1); then
        runs=$(grep -oE 'Done [0-9]+ runs' "$out/fuzz_$t.log" | grep -oE '[0-9]+' || echo '?')
        echo "fuzz $t: $runs executions in $secs s, no finding"
    else
        echo "fuzz $t: FINDING (see $out/fuzz_$t.log)"
        tail -30 "$out/fuzz_$t.log"
        status=1
    fi
done
exit $status
