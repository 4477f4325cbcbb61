#!/usr/bin/env bash
# usage: train_roundtrip.sh TPUEMU TOOL WORKDIR
# --init then --save with lr 0 gives back the initial weights bit for bit, and a
# trained run saved and loaded again continues from the same weights.
set -eu
tpuemu=$1 tool=$2 dir=$3
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$tpuemu" train --topology 2x2 --mesh data=2,model=2 --hidden 64 --batch 32 --steps 1 --lr 0 \
    --init "$dir/init" --data "$dir/x.npy" --labels "$dir/y.npy" --save "$out/a" --quiet >/dev/null
"$tool" compare-weights "$out/a" "$dir/init" 0
# Two steps in one run equal one step, saved, then one more from the saved weights.
"$tpuemu" train --topology 1x1 --hidden 64 --batch 32 --steps 2 --init "$dir/init" \
    --data "$dir/x.npy" --labels "$dir/y.npy" --save "$out/two" --quiet >/dev/null
"$tpuemu" train --topology 1x1 --hidden 64 --batch 32 --steps 1 --init "$dir/init" \
    --data "$dir/x.npy" --labels "$dir/y.npy" --save "$out/one" --quiet >/dev/null
# The second step uses rows [32, 64): give them as their own data set.
"$tool" slice "$dir/x.npy" "$dir/y.npy" 32 32 "$out/rest" >/dev/null
"$tpuemu" train --topology 1x1 --hidden 64 --batch 32 --steps 1 --init "$out/one" \
    --data "$out/rest/x.npy" --labels "$out/rest/y.npy" --save "$out/again" --quiet >/dev/null
"$tool" compare-weights "$out/again" "$out/two" 0
echo "round trip ok"
