#!/usr/bin/env bash
# usage: rdma_vs_loopback.sh EXAMPLE "ARGS" MPIEXEC...
# Runs a remote-DMA example alone (every chip in one process, loopback) and
# under MPIEXEC (one chip per rank); passes when both succeed and print the same
# modeled time, bit for bit (modeled_hex, the C99 %a form).
set -u
ex=$1 args=$2
shift 2
lo=$("$ex" $args 2>&1) || { echo "FAIL: loopback run"; echo "$lo"; exit 1; }
mp=$("$@" "$ex" $args 2>&1) || { echo "FAIL: mpirun"; echo "$mp"; exit 1; }
a=$(printf '%s\n' "$lo" | grep -o 'modeled_hex=[^ ]*' | head -1)
b=$(printf '%s\n' "$mp" | grep -o 'modeled_hex=[^ ]*' | head -1)
echo "$lo"
echo "$mp"
[ -n "$a" ] && [ "$a" = "$b" ] || { echo "FAIL: loopback $a, mpi $b"; exit 1; }
echo "ok: $a over loopback and MPI"
