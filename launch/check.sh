#!/usr/bin/env bash
# Install what is missing, build (warnings are errors), and run every test:
# first the MPI-free tiers under AddressSanitizer and UBSan (build-asan/), then
# the whole suite.  The last line is ctest's summary of the whole suite.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
tpu_setup -DTPU_WERROR=ON
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

echo "== unit tests under ASan/UBSan (build-asan/)"
TPU_BUILD="$TPU_ROOT/build-asan" tpu_build -DTPU_WERROR=ON -DTPU_SANITIZE=ON \
    -DCMAKE_BUILD_TYPE=Debug
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
    ctest --test-dir "$TPU_ROOT/build-asan" -L unit --output-on-failure -j 2

echo "== every test (build/)"
cd "$TPU_BUILD"
ctest --output-on-failure -j 2 "$@"
