/*
 * The calibrated matmul (tpu_mxu_seconds_calibrated(), tpu_mxu_efficiency())
 * against measured matmul throughput, and the calibration profiles of the
 * presets (tpu/calibration.h).
 *
 * The anchors: AI-Hypercomputer/accelerator-microbenchmarks,
 * Ironwood/Ironwood_Microbenchmarks_readme.md (commit ee16a1c), section
 * "GEMM": bf16 gemm_multiple_run, m = n = k, TFLOP/s per device.  A TPU7x
 * device is one TensorCore, a tpuemu chip two: two devices each running an
 * N x N x N matmul are one chip running a 2N x N x N matmul whose TensorCores
 * split the rows, so the throughput per TensorCore is 2 N^3 / t of the chip's
 * 2N x N x N.  And v6e: AI-Hypercomputer/tpu-recipes, microbenchmarks/README.md,
 * the example outputs of benchmark_matmul.py on a v6e-1 (device time from the
 * trace): bf16 4096^3 in 0.163585039 ms (commit af2a7cd), 8192^3 in
 * 1.328756094 ms (2a33362), 16384^3 in 10.584555 ms (f0335a7).  Each anchor
 * within 10%.
 */
#include "tpu/calibration.h"
#include "tpu/chip.h"
#include "tpu/mxu.h"

#include "test_main.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

static const struct {
    int64_t n;
    double tflops; /* measured, per TensorCore */
} ironwood_gemm[] = {
    {128, 2.589961271}, {256, 18.28645367},  {512, 105.0783466},   {1024, 349.7270639},
    {2048, 679.284728}, {4096, 892.9445127}, {16384, 950.1286983}, {32768, 956.3824592},
};

static void test_ironwood_gemm(void **state)
{
    tpu_chip_spec_t v7;
    size_t i;

    (void)state;
    assert_int_equal(tpu_chip_preset("v7", &v7, NULL), TPU_OK);
    printf("%8s %10s %10s %8s\n", "m=n=k", "measured", "modeled", "error");
    for (i = 0; i < sizeof(ironwood_gemm) / sizeof(ironwood_gemm[0]); i++) {
        int64_t n = ironwood_gemm[i].n;
        double t = tpu_mxu_seconds_calibrated(&v7, 2 * n, n, n, TPU_DTYPE_BF16);
        double tflops = 2.0 * (double)n * (double)n * (double)n / t / 1e12;
        double e = tflops / ironwood_gemm[i].tflops - 1;

        printf("%8lld %10.2f %10.2f %+7.1f%%\n", (long long)n, ironwood_gemm[i].tflops, tflops,
               100 * e);
        assert_true(fabs(e) < 0.10);
    }
}

static const struct {
    int64_t n;
    double ms; /* measured */
} trillium_matmul[] = {{4096, 0.163585039}, {8192, 1.328756094}, {16384, 10.584555}};

static void test_trillium_matmul(void **state)
{
    tpu_chip_spec_t v6e;
    size_t i;

    (void)state;
    assert_int_equal(tpu_chip_preset("v6e", &v6e, NULL), TPU_OK);
    for (i = 0; i < sizeof(trillium_matmul) / sizeof(trillium_matmul[0]); i++) {
        int64_t n = trillium_matmul[i].n;
        double ms = 1e3 * tpu_mxu_seconds_calibrated(&v6e, n, n, n, TPU_DTYPE_BF16);
        double e = ms / trillium_matmul[i].ms - 1;

        printf("v6e %lld^3: measured %.4f ms, modeled %.4f ms (%+.1f%%)\n", (long long)n,
               trillium_matmul[i].ms, ms, 100 * e);
        assert_true(fabs(e) < 0.10);
    }
}

/* Small and skinny matmuls fall far below peak; the padding to the MXU edge is
 * paid; nothing goes above the roofline's rate. */
static void test_shapes(void **state)
{
    tpu_chip_spec_t v5e;

    (void)state;
    assert_int_equal(tpu_chip_preset("v5e", &v5e, NULL), TPU_OK);
    assert_true(tpu_mxu_efficiency(&v5e, 128, 128, 128, TPU_DTYPE_BF16) < 0.05);
    assert_true(tpu_mxu_efficiency(&v5e, 8, 8192, 8192, TPU_DTYPE_BF16) < 0.10);
    assert_true(tpu_mxu_efficiency(&v5e, 8192, 8192, 8192, TPU_DTYPE_BF16) > 0.7);
    assert_true(tpu_mxu_efficiency(&v5e, 8192, 8192, 8192, TPU_DTYPE_BF16) <= 1.0);
    /* 129 pads to 256 on a 128-wide MXU: more time than 128, for one more row. */
    assert_true(tpu_mxu_seconds_calibrated(&v5e, 4096, 4096, 4224 + 1, TPU_DTYPE_BF16) >
                tpu_mxu_seconds_calibrated(&v5e, 4096, 4096, 4224, TPU_DTYPE_BF16) * 1.02);
    assert_true(tpu_mxu_seconds_calibrated(&v5e, 0, 1, 1, TPU_DTYPE_BF16) == 0);
}

/*
 * By hand, v5e (one TensorCore, v7's MXU constants), bf16 1024 x 1024 x 1024:
 *   hbm     = 8.1e11 x 0.865                   = 7.0065e11 B/s
 *   bytes   = 3 x 1024^2 x 2                   = 6291456 B -> 8.97946 us
 *   fill    = blocks 1024: the same 6291456 B  ->            8.97946 us
 *   compute = 2 x 1024^3 / (1.97e14 x 0.80)    =            13.62616 us
 *   t       = 1.6 + max(13.62616, 8.97946) + 8.97946 = 24.20562 us
 */
static void test_by_hand(void **state)
{
    tpu_chip_spec_t v5e;
    double hbm = 8.1e11 * 0.865, mem = 6291456 / hbm, compute = 2.0 * 1024 * 1024 * 1024 / 1.576e14;

    (void)state;
    assert_int_equal(tpu_chip_preset("v5e", &v5e, NULL), TPU_OK);
    assert_float_equal(tpu_mxu_seconds_calibrated(&v5e, 1024, 1024, 1024, TPU_DTYPE_BF16),
                       1.6e-6 + compute + mem, 1e-12);
    assert_float_equal(1e6 * (1.6e-6 + compute + mem), 24.20562, 1e-4);
}

/* Every preset has a profile; one without measurements names a measured chip. */
static void test_profiles(void **state)
{
    int i;

    (void)state;
    for (i = 0; i < tpu_chip_preset_count(); i++) {
        const tpu_chip_spec_t *s = tpu_chip_preset_at(i);
        const tpu_chip_calibration_t *c = tpu_chip_calibration(s->name);
        const tpu_chip_calibration_t *from = tpu_chip_calibration(c->links_from);

        assert_string_equal(c->chip, s->name);
        assert_string_equal(from->links_from, c->links_from);
        assert_string_equal(tpu_chip_calibration(c->mxu_from)->mxu_from, c->mxu_from);
        assert_true(c->ici_efficiency > 0 && c->ici_efficiency <= 1);
        assert_true(c->launch > 0 && c->mxu_launch > 0 && c->mxu_block > 0);
    }
    assert_string_equal(tpu_chip_calibration("ironwood")->chip, "v7");
    assert_true(tpu_chip_calibration_measured(tpu_chip_calibration("v7")));
    assert_true(tpu_chip_calibration_measured(tpu_chip_calibration("v6e")));
    assert_false(tpu_chip_calibration_measured(tpu_chip_calibration("v5p")));
    assert_string_equal(tpu_chip_calibration("v5p")->links_from, "v5e");
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ironwood_gemm), cmocka_unit_test(test_trillium_matmul),
        cmocka_unit_test(test_shapes),        cmocka_unit_test(test_by_hand),
        cmocka_unit_test(test_profiles),
    };

    return tpu_test_main(argc, argv, "mxu calibrated", tests, sizeof tests / sizeof tests[0]);
}
