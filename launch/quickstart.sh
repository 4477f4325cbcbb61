#!/usr/bin/env bash
# Install what is missing, build, and run the default 16-chip job:
#   mpirun -n 16 tpuemu --topology 4x4
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
tpu_setup
tpu_mpirun -n 16 "$TPU_BUILD/tpuemu" --topology 4x4 "$@"
