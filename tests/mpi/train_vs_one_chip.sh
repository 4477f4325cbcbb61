#!/usr/bin/env bash
# usage: train_vs_one_chip.sh TPUEMU TOOL DATADIR TOL MESH STRATEGY DTYPE USERDATA MPIRUN...
# The same training (data, weights, global batch) on one chip (--topology 1x1, one
# process) and under MPIRUN on a 4x4 with MESH and STRATEGY: losses and final
# weights must agree within TOL (relative to the largest value of each array),
# and data-parallel replicas must stay bit-identical (train exits 1 otherwise).
# USERDATA 1 trains on DATADIR/x.npy, y.npy from DATADIR/init; 0 on the seed.
set -eu
tpuemu=$1 tool=$2 dir=$3 tol=$4 mesh=$5 strategy=$6 dtype=$7 userdata=$8
shift 8
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
common=(--hidden 64 --batch 64 --steps 3 --lr 0.05 --dtype "$dtype" --seed 3)
if [ "$userdata" = 1 ]; then
    common+=(--data "$dir/x.npy" --labels "$dir/y.npy" --init "$dir/init")
fi
"$tpuemu" train --topology 1x1 "${common[@]}" --save "$out/one" --quiet >"$out/one.txt" 2>&1 ||
    { cat "$out/one.txt"; exit 1; }
"$@" "$tpuemu" train --topology 4x4 --mesh "$mesh" --strategy "$strategy" "${common[@]}" \
    --save "$out/many" --json "$out/many.json" >"$out/many.txt" 2>&1 ||
    { cat "$out/many.txt"; exit 1; }
grep -E "^step|replicas|modeled step" "$out/many.txt" || true
"$tool" compare "$out/many" "$out/one" "$tol"
if [ "$strategy" != fsdp ]; then
    grep -q '"replicas_identical": true' "$out/many.json"
fi
