#!/usr/bin/env bash
# usage: bench/scale.sh [BUILD]   (default build/)
# Scale figures of the model and of one rank's part (issue 13 items 5 and 6).
# A benchmark, not a test: it prints figures and never fails on a timing.
#  1. 'tpuemu model' wall/user/sys time and peak memory for every collective on
#     16x20x28 open, wrapped and mixed, and on two 2D pods;
#  2. bench_scale: plan time, model time and one rank's part (time, peak RSS) at
#     16, 256 and 8,960 chips (a transport hosting one chip, as an MPI rank);
#  3. every collective x every algorithm that can be chosen or forced (--algo), open
#     and wrapped, at 16, 256 and 8,960 chips, and the group algorithms over the
#     groups of a mesh axis of 256 and 8,960 chips and named over every axis of
#     8,960: plan time, rank part, the pod's and the plan's flows, peak RSS;
#  4. 'mpirun -n 16 tpuemu run' (the default tour on 4x4): peak RSS of each rank.
# Expect noise on a loaded machine.
set -u
b=${1:-build}
T=/usr/bin/time
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

echo "== tpuemu model: wall s / user s / sys s / peak KB (17203200 bytes: whole f32 blocks on every pod; ppermute along x)"
for shape in 16x20x28 16x16 12x10; do
    case $shape in
    16x20x28) wraps="none all x,y" ;;
    *) wraps="none all x" ;;
    esac
    for wrap in $wraps; do
        for op in psum all-gather reduce-scatter all-to-all ppermute p2p; do
            out=$($T -f "TIME %e %U %S %M" "$b/tpuemu" model --topology "$shape" --wrap "$wrap" \
                --collective "$op" $([ "$op" = ppermute ] && echo --axes x) --bytes 17203200 --json - 2>&1)
            us=$(echo "$out" | grep -o '"modeled_us": *[0-9.]*' | grep -o '[0-9.]*$')
            tm=$(echo "$out" | grep '^TIME' | cut -d' ' -f2-)
            err=$(echo "$out" | grep '^tpuemu:' | head -1)
            printf '%-9s %-5s %-15s modeled %12s us   %s %s\n' "$shape" "$wrap" "$op" "${us:--}" \
                "$tm" "$err"
        done
    done
done

echo
echo "== one rank's part (bench_scale): plan, model, the rank's run object, peak RSS"
for cfg in "4x4 none" "4x4 all" "16x16 none" "8x8x4 none" "8x8x4 all" "16x20x28 none" \
    "16x20x28 all" "16x20x28 x,y"; do
    set -- $cfg
    for op in psum all-gather all-to-all ppermute; do
        "$b/bench/bench_scale" "$1" "$2" "$op" 17203200 1 || true
    done
done

echo
echo "== every collective x algorithm (forced with --algo; '-': the cost model's choice): plan, rank part, peak RSS"
echo "   (group algorithms over every axis of 8,960 chips: refused on the open pod, see below)"
for cfg in "4x4 none" "4x4 all" "16x16 none" "16x16 all" "16x20x28 none" "16x20x28 all"; do
    set -- $cfg
    for ca in psum:- psum:rs_ag psum:rs_ag_axis_by_axis psum:snake psum:tree psum:group_rs_ag psum:group_direct psum:group_tree \
        all-gather:- all-gather:torus all-gather:axis_by_axis all-gather:snake all-gather:tree all-gather:group_ring \
        all-gather:group_direct reduce-scatter:- reduce-scatter:torus reduce-scatter:axis_by_axis \
        reduce-scatter:snake reduce-scatter:tree reduce-scatter:group_ring reduce-scatter:group_direct all-to-all:- \
        all-to-all:direct all-to-all:group_direct ppermute:- ppermute:direct ppermute:pairs p2p:- \
        p2p:multipath; do
        op=${ca%%:*}
        al=${ca#*:}
        (ulimit -v 6000000; timeout 120 "$b/bench/bench_scale" "$1" "$2" "$op" 17203200 0 "$al") 2>&1 | tail -1
    done
done
echo "== groups of a mesh over 'model' (8x8x4 data=16,model=16: 16 chips, half of y x all of z;"
echo "   16x20x28 data=64,model=140: 140 chips, 5 of y x all of z), open and wrapped"
for cfg in "8x8x4 data=16,model=16" "16x20x28 data=64,model=140"; do
    set -- $cfg
    for wrap in none all; do
        for ca in psum:- psum:group_direct psum:group_tree all-gather:- all-gather:group_direct reduce-scatter:- \
            reduce-scatter:group_direct all-to-all:group_direct; do
            (ulimit -v 6000000; timeout 300 "$b/bench/bench_scale" "$1" "$wrap" "${ca%%:*}" 17203200 0 \
                "${ca#*:}" model "$2") 2>&1 | tail -1
        done
    done
done
echo "== group algorithms named over every axis of 16x20x28 (one group of 8,960 chips)"
for wrap in all none; do
    for ca in psum:group_rs_ag all-gather:group_ring reduce-scatter:group_ring psum:group_direct \
        all-to-all:group_direct; do
        (ulimit -v 6000000; timeout 300 "$b/bench/bench_scale" 16x20x28 "$wrap" "${ca%%:*}" 17203200 0 \
            "${ca#*:}") 2>&1 | tail -1
    done
done

echo
echo "== mpirun -n 16 tpuemu run --topology 4x4: peak RSS (KB) of each rank"
mpirun -n 16 --oversubscribe --mca mpi_yield_when_idle 1 $T -f "RSS_KB %M" "$b/tpuemu" run \
    --topology 4x4 --quiet 2>&1 >/dev/null | grep RSS_KB | awk '{print $2}' | sort -n |
    awk '{a[NR]=$1} END {if (NR) printf "ranks %d  min %d  median %d  max %d KB\n", NR, a[1], a[int((NR+1)/2)], a[NR]}'
