#!/usr/bin/env bash
# A small real cluster on one machine, for the cluster tier (docs/cluster.md):
# N nodes, each a network namespace with its own address and host name, joined by
# veth pairs on one bridge, and a head namespace that runs mpirun; Open MPI's rsh
# launcher starts its daemons on the nodes through an agent that runs
# `ip netns exec NODE unshare --uts ...` (no sshd to configure, no keys).
#
# usage: cluster.sh check              what this machine lacks (exit 77: the tier skips)
#        cluster.sh up N [PPN]         N nodes (1 to 8) of PPN slots (default 8)
#        cluster.sh down               remove every namespace, link and process it made
#        cluster.sh run N PPN CMD...   up, CMD with the cluster's environment, down (always)
#        cluster.sh mpirun ARGS...     mpirun from the head node with the cluster's flags
#        cluster.sh pids NODE          the live processes of node NODE (0..N-1), one a line
#        cluster.sh node NODE CMD...   CMD inside node NODE's network namespace
# CMD of `run` gets TPU_CLUSTER_DIR (the hostfile, the agent, `mpirun`: the wrapper
# with every flag), TPU_CLUSTER_NODES, TPU_CLUSTER_PPN and TPU_CLUSTER (this script);
# TPU_CLUSTER_BTL (default tcp,self) is the wrapper's --mca btl when it runs.
# Names: namespaces tpuemu-hd and tpuemu-n0.., the bridge tpuemu-br0, the veths
# tpuemu-vhd and tpuemu-v0.., the subnet 10.231.0.0/24 (head .2, node i .(10+i)).
# One cluster at a time: `up` and `run` hold a lock on /tmp while they live.
set -u
self=$(readlink -f "${BASH_SOURCE[0]}")
dir=/tmp/tpuemu-cluster
net=10.231.0
subnet=$net.0/24

die() {
    echo "cluster: $*" >&2
    exit 1
}

# What is missing, as one line; empty when the machine can make the cluster.
missing() {
    local tool
    [ "$(id -u)" -eq 0 ] || { echo "not root (network namespaces need root)"; return; }
    for tool in ip unshare mpirun orted flock; do
        command -v "$tool" >/dev/null || { echo "no '$tool' on PATH"; return; }
    done
    ip netns add tpuemu-probe 2>/dev/null || { echo "'ip netns add' fails here"; return; }
    if ! ip link add tpuemu-pbr type bridge 2>/dev/null; then
        ip netns del tpuemu-probe
        echo "the kernel cannot make a bridge"
        return
    fi
    if ! ip link add tpuemu-pv type veth peer name eth0 netns tpuemu-probe 2>/dev/null; then
        ip link del tpuemu-pbr
        ip netns del tpuemu-probe
        echo "the kernel cannot make a veth pair into a namespace"
        return
    fi
    ip link del tpuemu-pv
    ip link del tpuemu-pbr
    ip netns del tpuemu-probe
    if ! unshare --uts true 2>/dev/null; then
        echo "'unshare --uts' fails here (each node needs its own host name)"
    fi
}

# Remove every namespace, link and process of a cluster (this one or a stale one).
down() {
    local ns pids link
    for ns in $(ip netns list 2>/dev/null | awk '{ print $1 }' | grep -E '^tpuemu-(hd|n[0-9]+|probe)$'); do
        pids=$(ip netns pids "$ns" 2>/dev/null)
        # shellcheck disable=SC2086
        [ -z "$pids" ] || kill -9 $pids 2>/dev/null
        ip netns del "$ns" 2>/dev/null
    done
    for link in $(ip -o link show 2>/dev/null | awk -F': ' '{ print $2 }' | sed 's/@.*//' |
        grep -E '^tpuemu-(v[a-z0-9]+|br0|pv|pbr)$'); do
        ip link del "$link" 2>/dev/null
    done
    rm -rf "$dir"
}

# A namespace NAME with address ADDR on the bridge, host side of its veth LINK.
add_node() {
    local name=$1 addr=$2 link=$3
    ip netns add "$name" &&
        ip link add "$link" type veth peer name eth0 netns "$name" &&
        ip link set "$link" master tpuemu-br0 up &&
        ip -n "$name" addr add "$addr/24" dev eth0 &&
        ip -n "$name" link set eth0 up &&
        ip -n "$name" link set lo up
}

up() {
    local n=$1 ppn=${2:-8} i why
    case $n in [1-8]) ;; *) die "N must be 1 to 8, got '$n'" ;; esac
    case $ppn in [1-9] | [1-9][0-9]) ;; *) die "PPN must be 1 to 99, got '$ppn'" ;; esac
    why=$(missing)
    [ -z "$why" ] || die "cannot make a cluster: $why"
    down # a stale cluster of a run that was killed
    mkdir -p "$dir"
    ip link add tpuemu-br0 type bridge && ip link set tpuemu-br0 up ||
        die "cannot make the bridge tpuemu-br0"
    add_node tpuemu-hd "$net.2" tpuemu-vhd || die "cannot make the head node"
    : >"$dir/hostfile"
    for ((i = 0; i < n; i++)); do
        add_node "tpuemu-n$i" "$net.$((10 + i))" "tpuemu-v$i" || die "cannot make node $i"
        echo "$net.$((10 + i)) slots=$ppn" >>"$dir/hostfile"
    done
    # A dead node is found by TCP: short retransmission and keepalive limits in the
    # cluster's namespaces only (the machine's own stay as they are).
    for ns in tpuemu-hd $(seq -f 'tpuemu-n%g' 0 $((n - 1))); do
        ip netns exec "$ns" sysctl -qw net.ipv4.tcp_retries2=5 >/dev/null 2>&1
    done
    # The rsh agent: Open MPI calls it as `agent [options] HOST COMMAND...`.
    cat >"$dir/agent" <<EOF
#!/bin/sh
while [ "\${1#-}" != "\$1" ]; do shift; done
host=\$1
shift
i=\$((\${host##*.} - 10))
exec ip netns exec "tpuemu-n\$i" unshare --uts sh -c 'hostname "\$0" && exec sh -c "\$1"' \\
    "tpuemu-n\$i" "\$*"
EOF
    cat >"$dir/mpirun" <<EOF
#!/bin/sh
# mpirun from the head node of the cluster in $dir, with the flags that matter.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
exec ip netns exec tpuemu-hd unshare --uts sh -c 'hostname tpuemu-hd && exec "\$@"' sh \\
    mpirun --hostfile $dir/hostfile --mca plm_rsh_agent $dir/agent \\
    --mca plm_rsh_no_tree_spawn 1 --mca btl \${TPU_CLUSTER_BTL:-tcp,self} \\
    --mca btl_tcp_if_include $subnet --mca oob_tcp_if_include $subnet \\
    --mca oob_tcp_keepalive_time 2 --mca oob_tcp_keepalive_intvl 1 \\
    --mca oob_tcp_keepalive_probes 3 \\
    --oversubscribe --mca mpi_yield_when_idle 1 "\$@"
EOF
    chmod +x "$dir/agent" "$dir/mpirun"
}

# The live processes (not zombies) of node $1.
node_pids() {
    local p s
    for p in $(ip netns pids "tpuemu-n$1" 2>/dev/null); do
        s=$(awk '{ print $3 }' "/proc/$p/stat" 2>/dev/null)
        [ -z "$s" ] || [ "$s" = Z ] || [ "$s" = X ] || echo "$p"
    done
}

# The lock is on /tmp itself: `ip netns add` locks /run/netns, and a lock file would
# be one more thing to leave behind.
lock() {
    exec 9</tmp
    flock -w 240 9 || die "another cluster still runs after 240 s"
}

cmd=${1:-}
shift || true
case $cmd in
check)
    why=$(missing)
    if [ -n "$why" ]; then
        echo "cluster tier skipped: $why"
        exit 77
    fi
    echo "cluster: this machine can make the cluster"
    ;;
up)
    lock
    up "${1:-2}" "${2:-8}"
    echo "$dir"
    ;;
down) down ;;
run)
    [ $# -ge 3 ] || die "usage: cluster.sh run N PPN CMD..."
    why=$(missing)
    if [ -n "$why" ]; then
        echo "cluster tier skipped: $why"
        exit 77
    fi
    n=$1 ppn=$2
    shift 2
    lock
    child=
    # CMD runs in a session of its own, waited for in the background, so that a
    # signal to this script ends all of CMD (and its processes outside the cluster,
    # such as a one-node mpirun) at once, before the cluster goes.
    stop() {
        [ -z "$child" ] || kill -TERM -- "-$child" 2>/dev/null
        down
    }
    trap stop EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    up "$n" "$ppn"
    TPU_CLUSTER_DIR=$dir TPU_CLUSTER_NODES=$n TPU_CLUSTER_PPN=$ppn TPU_CLUSTER=$self \
        setsid "$@" &
    child=$!
    wait "$child"
    rc=$?
    child=
    exit "$rc"
    ;;
mpirun)
    [ -x "$dir/mpirun" ] || die "no cluster is up (cluster.sh up N)"
    exec "$dir/mpirun" "$@"
    ;;
pids) node_pids "$1" ;;
node)
    i=$1
    shift
    exec ip netns exec "tpuemu-n$i" "$@"
    ;;
*) die "usage: cluster.sh check|up N [PPN]|down|run N PPN CMD...|mpirun ARGS...|pids NODE|node NODE CMD..." ;;
esac
