#!/usr/bin/env bash
# usage: cluster.sh run 2 2 faults.sh MODE TPUEMU
# Faults across the nodes of the cluster (cluster.sh): a 4-rank bench, two ranks on
# each node, chips 2 and 3 (world ranks 2 and 3) on node 1, rank 0 on node 0.
#   kill:     kill -9 of world rank 3: a 'tpuemu: lost chip 3 (1,1)' line, and every
#             process of every node gone, within 10 s of the kill
#   stop:     SIGSTOP of world rank 3 (--timeout 2): 'chip 3 (1,1) ... is behind'
#             within --timeout + 5 s, then every process gone
#   linkdown: node 1's eth0 down inside its namespace (--timeout 2): a line naming
#             chips 2 and 3 within --timeout + 5 s, mpirun ends within 20 s of the
#             cut, and no process is left on any node while the link is still down
#   slowlink: node 1's link limited to 2 Mbit/s each way (tc tbf; netem where the
#             kernel has it: 5 ms delay): a 64 KiB psum bench ends, verified, with the
#             same modeled times as on the healthy link and higher measured times
# Prints the seconds each step took.
set -u
mode=$1 tpuemu=$2
: "${TPU_CLUSTER_DIR:?run me under cluster.sh run}"
mpirun=$TPU_CLUSTER_DIR/mpirun
cluster=$TPU_CLUSTER
out=$(mktemp)
trap 'rm -f "$out" "$out.fast" "$out.slow"' EXIT
now() { date +%s.%N; }
since() { echo "$(now) - $1" | bc; }
fail() {
    echo "FAIL: $*"
    cat "$out"
    exit 1
}

# The pid of world rank $1 on node $2, once it runs (empty before).
rank_pid() {
    local p
    for p in $("$cluster" pids "$2"); do
        if tr '\0' '\n' 2>/dev/null <"/proc/$p/environ" | grep -qx "OMPI_COMM_WORLD_RANK=$1"; then
            echo "$p"
        fi
    done
}

# Every process of every node gone (zombies waiting for their reaper count as gone).
nodes_empty() {
    local i
    for ((i = 0; i < TPU_CLUSTER_NODES; i++)); do
        [ -z "$("$cluster" pids "$i")" ] || return 1
    done
}

if [ "$mode" = slowlink ]; then
    args=(bench --topology 2x2 --collective psum --min-bytes 64K --max-bytes 64K --iters 4
          --warmup 1 --json -)
    "$mpirun" -n 4 "$tpuemu" "${args[@]}" >"$out.fast" 2>"$out" || fail "the healthy run failed"
    how="tbf rate 2mbit"
    if "$cluster" node 1 tc qdisc add dev eth0 root netem delay 5ms rate 2mbit 2>/dev/null; then
        tc qdisc add dev tpuemu-v1 root netem delay 5ms rate 2mbit || fail "netem on tpuemu-v1"
        how="netem delay 5ms rate 2mbit"
    else
        "$cluster" node 1 tc qdisc add dev eth0 root tbf rate 2mbit burst 16kb latency 2s ||
            fail "no tbf qdisc on node 1's eth0"
        tc qdisc add dev tpuemu-v1 root tbf rate 2mbit burst 16kb latency 2s ||
            fail "no tbf qdisc on tpuemu-v1"
    fi
    start=$(now)
    "$mpirun" -n 4 "$tpuemu" "${args[@]}" >"$out.slow" 2>"$out" || fail "the run on the slow link failed"
    secs=$(since "$start")
    python3 - "$out.fast" "$out.slow" "$how" "$secs" <<'EOF' || exit 1
import json, sys
fast, slow = (json.load(open(p))["rows"][0] for p in sys.argv[1:3])
print(f"slowlink ({sys.argv[3]}): ended in {float(sys.argv[4]):.1f} s; modeled {fast['modeled_us']} "
      f"and {slow['modeled_us']} us; measured {fast['measured_us']} -> {slow['measured_us']} us "
      f"(x{slow['measured_us'] / fast['measured_us']:.1f})")
ok = slow["wrong"] == 0 and fast["wrong"] == 0
ok = ok and slow["modeled_us"] == fast["modeled_us"] and slow["formula_us"] == fast["formula_us"]
# 2 Mbit/s: 64 KiB take 0.26 s a way; the healthy link moves them in milliseconds.
ok = ok and slow["measured_us"] > fast["measured_us"]
sys.exit(0 if ok else "FAIL: wrong elements, modeled times changed, or measured did not rise")
EOF
    echo ok
    exit 0
fi

args=(bench --topology 2x2 --collective psum --min-bytes 4K --max-bytes 4K --iters 1000000
      --warmup 0 --timeout 2)
start=$(now)
"$mpirun" -n 4 "$tpuemu" "${args[@]}" >"$out" 2>&1 &
mpid=$!
victim=
for _ in $(seq 1 600); do
    victim=$(rank_pid 3 1)
    [ -n "$victim" ] && grep -q '^#' "$out" && break
    kill -0 "$mpid" 2>/dev/null || fail "the job ended before the fault"
    sleep 0.1
done
[ -n "$victim" ] || fail "rank 3 never ran on node 1"
sleep 0.5
start=$(now)
case $mode in
kill) kill -9 "$victim" ;;
stop) kill -STOP "$victim" ;;
linkdown) "$cluster" node 1 ip link set eth0 down ;;
*) fail "unknown mode $mode" ;;
esac
limit=10 want='lost chip 3 \(1,1\), MPI rank 3'
case $mode in
stop) limit=7 want='chip 3 \(1,1\), MPI rank 3 is behind' ;;
linkdown) limit=7 want='chips 2 \(1,0\), MPI rank 2 and 3 \(1,1\), MPI rank 3 are silent' ;;
esac
named= ended= empty=
for _ in $(seq 1 300); do
    if [ -z "$named" ] && grep -qE "^tpuemu: .*$want" "$out"; then
        named=$(since "$start")
    fi
    if [ -z "$ended" ] && ! kill -0 "$mpid" 2>/dev/null; then
        ended=$(since "$start")
    fi
    if [ -z "$empty" ] && nodes_empty; then
        empty=$(since "$start")
    fi
    [ -n "$ended" ] && [ -n "$empty" ] && break
    sleep 0.1
done
echo "$mode: named after ${named:-never} s, mpirun ended after ${ended:-never} s," \
    "every node empty after ${empty:-never} s"
grep '^tpuemu: ' "$out" | sed 's/^/  /'
[ -n "$named" ] || fail "no line matches /$want/"
awk -v s="$named" -v l="$limit" 'BEGIN { exit !(s <= l) }' || fail "named after more than $limit s"
[ -n "$ended" ] || fail "mpirun still runs 30 s after the $mode"
[ -n "$empty" ] || fail "processes left on a node: $("$cluster" pids 0) $("$cluster" pids 1)"
bound=10
[ "$mode" = linkdown ] && bound=20
awk -v s="$empty" -v l="$bound" 'BEGIN { exit !(s <= l) }' ||
    fail "processes on the nodes after more than $bound s"
wait "$mpid" && fail "exit 0 after the $mode"
echo ok
