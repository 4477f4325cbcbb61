#!/usr/bin/env bash
# Install what is missing, build (warnings are errors), and run every test.
# The last line is ctest's summary.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
tpu_setup -DTPU_WERROR=ON
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
cd "$TPU_BUILD"
ctest --output-on-failure -j 2 "$@"
