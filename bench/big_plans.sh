#!/usr/bin/env bash
# usage: [WRAPS="none x,z all"] bench/big_plans.sh [BUILD] [LIMIT_KB]   (default build/, 6000000)
# Every algorithm of the registry (collectives/algorithms.def), forced with --algo
# over every axis, on the three 8,960-chip v5p shapes (16x20x28 open, x and z
# wrapped, wrapped; WRAPS lists others, e.g. "x y z x,y y,z"): 'tpuemu model --json -' (both modes) at 1,174,405,120 bytes
# (ppermute: along x), one row per run as it ends: wall seconds, CPU seconds
# (user + sys), peak RSS, modeled time, or the one-line refusal.  Each run is capped at
# LIMIT_KB of address space and 60 s of CPU (600 s of wall clock on a loaded
# machine).  A benchmark, not a test: it prints figures and never fails on a
# timing.
set -u
b=${1:-build}
limit=${2:-6000000}
bytes=1174405120
def=$(dirname "$0")/../collectives/algorithms.def
printf '%-15s %-13s %-9s %7s %8s %9s %14s  %s\n' collective algo wrap wall_s cpu_s rss_mb modeled_us note
grep '^TPU_ALGO(' "$def" | sed 's/^TPU_ALGO( *\([A-Z_0-9]*\), *\([a-z_0-9]*\),.*/\1 \2/' |
    while read -r kind algo; do
        op=$(echo "$kind" | tr 'A-Z_' 'a-z-')
        [ "$op" = p2p ] && continue # two chips, not a collective over the axes
        axes=x,y,z
        [ "$op" = ppermute ] && axes=x
        for wrap in ${WRAPS:-none x,z all}; do
            out=$( (ulimit -v "$limit" -t 60; timeout 600 /usr/bin/time -f "TIME %U %S %M %e" "$b/tpuemu" model \
                --chip v5p --topology 16x20x28 --wrap "$wrap" --collective "$op" --axes "$axes" \
                --algo "$algo" --bytes "$bytes" --json -) 2>&1)
            us=$(echo "$out" | grep -o '"modeled_us": *[0-9.]*' | grep -o '[0-9.]*$')
            tm=$(echo "$out" | grep '^TIME' | tail -1)
            err=$(echo "$out" | grep -v '^TIME' | grep -v '^ *[{}"]' | head -1 | cut -c1-160)
            echo "$out" | grep -q 'terminated by signal 24' && err="over 60 s of CPU"
            [ -z "$tm" ] && tm="TIME - - 0 -" && err="${err:-killed (time or memory limit)}"
            set -- $tm
            cpu=$(awk -v u="$2" -v s="$3" 'BEGIN { if (u == "-") print "-"; else printf "%.2f", u + s }')
            rss=$(awk -v k="$4" 'BEGIN { printf "%.0f", k / 1024 }')
            printf '%-15s %-13s %-9s %7s %8s %9s %14s  %s\n' "$op" "$algo" "$wrap" "$5" "$cpu" "$rss" "${us:--}" \
                "$([ -z "$us" ] && echo "$err")"
        done
    done
