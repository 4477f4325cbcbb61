#!/usr/bin/env bash
# usage: tests/cli/bench_scale_agrees.sh TPUEMU BENCH_SCALE
# bench_scale's modeled figure is the one 'tpuemu model --chip v5p' gives for the
# same collective on the same pod (one link model for both; it once had its own).
set -u
. "$(dirname "$0")/agree.sh"
tpuemu=$1
bench=$2
bad=0
for spec in "4x4 none psum x,y" "4x4 all all-gather x,y" "4x4x4 none reduce-scatter x,y,z" \
    "8x8 all ppermute x" "4x8 none all-to-all x,y"; do
    set -- $spec
    b=$("$bench" "$1" "$2" "$3" 1048576 0 - "$4" | grep -o 'modeled *[0-9.]* us' | grep -o '[0-9.]*')
    m=$("$tpuemu" model --chip v5p --topology "$1" --wrap "$2" --collective "$3" --axes "$4" \
        --bytes 1048576 --json - | python3 -c 'import json,sys; print("%.3f" % json.load(sys.stdin)["modeled_us"])')
    agree "$spec" bench_scale "$b" "tpuemu model" "$m"
done
exit $bad
