#!/usr/bin/env bash
# usage: flag_coverage.sh TABLE TPUEMU
# Every flag that a command's --help lists must have a row in the bad-input table
# (bad_inputs.txt) that gives it to that command: the commands come from 'tpuemu
# help' (its "commands:" list), the flags from the option lines ("  --NAME ...")
# of 'tpuemu COMMAND --help' for each, and of 'tpuemu model --op matmul --help';
# a row counts for COMMAND when its arguments (after an optional MPI4) start with
# COMMAND (a row starting with an option counts for run, the default command) and
# hold the flag as a word.  Prints every pair with no row and fails if there is one.
set -u
table=$1 tpuemu=$2
cmds=$("$tpuemu" help 2>&1 | sed -n '/^commands:/,/^$/p' | awk 'NR > 1 && NF && $2 !~ /^--/ { print $1 }')
[ -n "$cmds" ] || { echo "FAIL: no command list in 'tpuemu help'"; exit 1; }
args=$(grep -E '^[a-z0-9_]+ +\|' "$table" | awk -F'|' '{ a = $3; sub(/^ +/, "", a); sub(/ +$/, "", a);
    sub(/^MPI4 /, "", a); print a }')
missing=0 pairs=0
check() { # COMMAND-PREFIX HELP-TEXT
    local prefix=$1 text=$2 flag rows
    if [ "$prefix" = run ]; then
        rows=$(printf '%s\n' "$args" | grep -E '^(run( |$)|--)')
    else
        rows=$(printf '%s\n' "$args" | grep -E "^$prefix( |\$)")
    fi
    for flag in $(printf '%s\n' "$text" | grep -oE -- '^  --[a-z][a-z0-9_-]*' | sed 's/^  //' | sort -u); do
        pairs=$((pairs + 1))
        if ! printf '%s\n' "$rows" | grep -qE -- "(^| )$flag([ =]|\$)"; then
            echo "no row: $prefix $flag"
            missing=$((missing + 1))
        fi
    done
}
for c in $cmds; do
    check "$c" "$("$tpuemu" "$c" --help 2>&1)"
done
check "model --op" "$("$tpuemu" model --op matmul --help 2>&1)"
echo "$pairs command/flag pairs from --help, $missing without a row"
[ "$missing" -eq 0 ]
