#!/usr/bin/env bash
# Faults under mpirun (4 ranks, real bytes): on a ring of 4 with the link 1 -> 2
# failed (traffic rerouted the other way round), a slow link and a slow chip,
# every collective of 'tpuemu bench' moves its bytes correctly (#wrong 0 in every
# row) and reports the same modeled_us as 'tpuemu model' in one process (the sim
# transport); the bench JSON lists the three faults.
# usage: faults_mpi.sh TPUEMU COLLECTIVES MPIRUN [MPIRUN ARGS...]
#   COLLECTIVES: comma-separated, of psum, all-gather, reduce-scatter, all-to-all,
#   ppermute, p2p (ctest runs them in two tests)
set -eu
tpuemu=$1 colls=$2
shift 2
mpirun=("$@")
faults=(--fault link-down:chip=1,dir=+x --fault slow-link:chip=3,dir=-x,factor=0.25
    --fault slow-chip:chip=0,factor=0.5)
pod=(--topology 4 --wrap all "${faults[@]}")
fail=0
for coll in ${colls//,/ }; do
    extra=()
    [ "$coll" = p2p ] && extra=(--src 1 --dst 2)
    json=$("${mpirun[@]}" "$tpuemu" bench "${pod[@]}" --collective "$coll" "${extra[@]}" \
        --min-bytes 64K --max-bytes 64K --iters 2 --warmup 1 --json -)
    bench=$(printf '%s' "$json" | grep -o '"modeled_us": [0-9.]*' | head -1 | awk '{print $2}')
    wrong=$(printf '%s' "$json" | grep -o '"wrong": [0-9]*' | head -1 | awk '{print $2}')
    nfaults=$(printf '%s' "$json" | grep -o '"kind": "[a-z-]*"' | wc -l)
    model=$("$tpuemu" model "${pod[@]}" --collective "$coll" "${extra[@]}" --bytes 64K --json - |
        grep -o '"modeled_us": [0-9.]*' | awk '{print $2}')
    if [ -z "$bench" ] || [ "$bench" != "$model" ] || [ "$wrong" != 0 ] || [ "$nfaults" != 3 ]; then
        echo "FAIL $coll: bench '$bench' model '$model' #wrong '$wrong' faults listed $nfaults"
        fail=1
    else
        echo "ok $coll: $bench us, #wrong 0"
    fi
done
exit $fail
