#!/usr/bin/env bash
# Shared by quickstart.sh and check.sh: install what is missing (Debian 12),
# configure and build into build/.  Source it; it defines tpu_setup and tpu_mpirun.
set -euo pipefail

TPU_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TPU_BUILD=${TPU_BUILD:-$TPU_ROOT/build}
TPU_PACKAGES=(build-essential cmake pkg-config openmpi-bin libopenmpi-dev libhwloc-dev hwloc
              libyaml-dev libcmocka-dev libopenblas-dev clang-format clang valgrind
              python3-torch)

tpu_install() {
    local missing=() p
    for p in "${TPU_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
            missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" -ne 0 ]; then
        echo "tpuemu: missing packages; install them with:" >&2
        echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
        exit 1
    fi
    echo "tpuemu: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
}

tpu_build() {
    cmake -S "$TPU_ROOT" -B "$TPU_BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
    cmake --build "$TPU_BUILD" -j "$(nproc)"
}

# mpirun with what a small machine needs: oversubscription when ranks exceed
# cores, yielding when idle, and the two variables Open MPI wants as root.
tpu_mpirun() {
    if [ "$(id -u)" -eq 0 ]; then
        export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    fi
    # One OpenBLAS thread per rank: each rank is one chip, and 16 ranks with a
    # BLAS thread pool each would oversubscribe a small machine further.
    OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1} \
        mpirun --oversubscribe --mca mpi_yield_when_idle 1 "$@"
}

tpu_setup() {
    tpu_install
    tpu_build "$@"
}
