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

# The MPI tier under ASan: Open MPI's own allocations are not ours to free, so
# leak detection is off for it (detect_leaks=0); addressing errors still fail.
# The 5-rank shared-memory tests run every collective that goes through the
# node's shared window (psum, all-gather, reduce-scatter) against messages.
echo "== small MPI tier (4-5 ranks) and loopback under ASan/UBSan (build-asan/)"
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=0 \
    ctest --test-dir "$TPU_ROOT/build-asan" -R 'mpi_run_np4|mpi_coll_2x2_all|loopback|mpi_shm_.*_5$|cli_train_pipeline_same' \
    --output-on-failure -j 1

# The hostile probe's fast part (tests/probe/probe.sh) under ASan/UBSan: no crash, hang,
# sanitizer report, multi-line error or exit code outside docs/errors.md's table.
echo "== the probe under ASan/UBSan (build-asan/)"
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=0 \
    ctest --test-dir "$TPU_ROOT/build-asan" -L probe --output-on-failure -j 1

# Each parser's libFuzzer target for 20 s (tests/fuzz/run_fuzz.sh 36000 for hours).
if command -v clang >/dev/null; then
    echo "== fuzzing the parsers (20 s each)"
    TPU_FUZZ_DIR="$TPU_ROOT/build-asan/fuzz" bash "$TPU_ROOT/tests/fuzz/run_fuzz.sh" 20
    TPU_FUZZ_DIR="$TPU_ROOT/build-asan/fuzz" bash "$TPU_ROOT/tests/fuzz/run_hlo_fuzz.sh" 20
fi

echo "== every test (build/)"
cd "$TPU_BUILD"
ctest --output-on-failure -j 2 "$@"
# The cluster tier (ctest label cluster, tests/cluster/) ran above where the machine
# can make its namespaces; it must leave none behind.
if command -v ip >/dev/null && ip netns list 2>/dev/null | grep -q '^tpuemu-'; then
    echo "the cluster tier left namespaces behind: $(ip netns list | grep '^tpuemu-' | tr '\n' ' ')"
    exit 1
fi
