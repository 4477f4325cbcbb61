/*
 * MXU matmul through the VMEM executor: bf16 (f32 accumulation, bf16 or f32
 * output) and f32 against a double-precision reference on odd shapes, int8
 * exact in int32 (including the wraparound of the accumulator), the block plan
 * and its pipeline counts.
 */
#include "tpu/chip.h"
#include "tpu/dtype.h"
#include "tpu/mxu.h"
#include "tpu/roofline.h"
#include "tpu/vmem.h"
#include "tpu/vpu.h"

#include "test_main.h"
#include "test_support.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* A VMEM executor for a preset chip (the test fails if it cannot be made). */
static tpu_vmem_t *make_vmem(const char *chip)
{
    tpu_vmem_t *vmem = tpu_test_vmem(chip);

    assert_non_null(vmem);
    return vmem;
}

static uint32_t rng_next(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

/* A value in [-2, 2). */
static float rnd(uint32_t *s)
{
    return (float)rng_next(s) / (float)(1u << 24) * 4.0f - 2.0f;
}

typedef struct shape {
    int64_t m, k, n;
    int64_t bm, bk, bn; /* 0: chosen */
} shape_t;

static const shape_t shapes[] = {
    {1, 1, 1, 0, 0, 0},
    {7, 13, 5, 0, 0, 0},
    {127, 129, 131, 0, 0, 0},
    {130, 257, 200, 0, 0, 0},
    {1, 300, 9, 0, 0, 0},
    {127, 129, 131, 64, 32, 48},
    {200, 1000, 3, 128, 256, 128},
};

/*
 * C against sum_p A[i,p] B[p,j] in double.  The f32 sums are off by at most
 * about k x 2^-24 x sum |A B|; a bf16 output adds half an ulp of bf16 (2^-9
 * relative).
 */
static void check_against_reference(const double *a, const double *b, const float *c,
                                    const shape_t *s, int bf16_out)
{
    int64_t i, j, p;

    for (i = 0; i < s->m; i++) {
        for (j = 0; j < s->n; j++) {
            double ref = 0;
            double mag = 0;
            double tol;

            for (p = 0; p < s->k; p++) {
                ref += a[i * s->k + p] * b[p * s->n + j];
                mag += fabs(a[i * s->k + p] * b[p * s->n + j]);
            }
            tol = (double)s->k * 0x1p-23 * mag + (bf16_out ? 0x1p-8 * fabs(ref) : 0) + 1e-30;
            if (fabs(c[i * s->n + j] - ref) > tol) {
                fail_msg("%lldx%lldx%lld C[%lld,%lld] = %.9g, reference %.9g (tolerance %.3g)",
                         (long long)s->m, (long long)s->k, (long long)s->n, (long long)i,
                         (long long)j, (double)c[i * s->n + j], ref, tol);
            }
        }
    }
}

static void run_float_case(tpu_vmem_t *vmem, const shape_t *s, tpu_dtype_t in, tpu_dtype_t out)
{
    const size_t mk = (size_t)(s->m * s->k);
    const size_t kn = (size_t)(s->k * s->n);
    const size_t mn = (size_t)(s->m * s->n);
    double *ad = malloc(mk * sizeof(double));
    double *bd = malloc(kn * sizeof(double));
    void *a = malloc(mk * 4);
    void *b = malloc(kn * 4);
    void *c = malloc(mn * 4);
    float *cf = malloc(mn * sizeof(float));
    tpu_mxu_desc_t desc;
    tpu_roofline_report_t rep;
    tpu_err_t err = {0};
    uint32_t seed = (uint32_t)(s->m * 31 + s->k * 7 + s->n);
    size_t i;

    for (i = 0; i < mk; i++) {
        float v = rnd(&seed);

        if (in == TPU_DTYPE_BF16) {
            ((uint16_t *)a)[i] = tpu_dtype_f32_to_bf16(v);
            ad[i] = tpu_dtype_bf16_to_f32(((uint16_t *)a)[i]);
        } else {
            ((float *)a)[i] = v;
            ad[i] = v;
        }
    }
    for (i = 0; i < kn; i++) {
        float v = rnd(&seed);

        if (in == TPU_DTYPE_BF16) {
            ((uint16_t *)b)[i] = tpu_dtype_f32_to_bf16(v);
            bd[i] = tpu_dtype_bf16_to_f32(((uint16_t *)b)[i]);
        } else {
            ((float *)b)[i] = v;
            bd[i] = v;
        }
    }
    memset(c, 0xff, mn * 4); /* NaN everywhere: every element must be written */
    tpu_mxu_desc_init(&desc, s->m, s->k, s->n, in);
    desc.out = out;
    desc.bm = s->bm;
    desc.bk = s->bk;
    desc.bn = s->bn;
    if (tpu_mxu_matmul(vmem, &desc, a, b, c, &rep, &err) != TPU_OK) {
        fail_msg("%s", err.msg);
    }
    for (i = 0; i < mn; i++) {
        cf[i] = out == TPU_DTYPE_BF16 ? tpu_dtype_bf16_to_f32(((uint16_t *)c)[i]) : ((float *)c)[i];
    }
    check_against_reference(ad, bd, cf, s, out == TPU_DTYPE_BF16);
    if (out == TPU_DTYPE_BF16) {
        /* bf16 output: the f32 result rounded once, to nearest even. */
        for (i = 0; i < mn; i++) {
            assert_int_equal(((uint16_t *)c)[i], tpu_dtype_f32_to_bf16(cf[i]));
        }
    }
    assert_float_equal(rep.roofline.flops, 2.0 * s->m * s->k * s->n, 0);
    assert_float_equal(rep.pipeline.flops, 2.0 * s->m * s->k * s->n, 0);
    if (s->bm > 0) {
        assert_int_equal(rep.block[0], s->bm);
        assert_int_equal(rep.block[1], s->bk);
        assert_int_equal(rep.block[2], s->bn);
    }
    free(ad);
    free(bd);
    free(a);
    free(b);
    free(c);
    free(cf);
}

static void test_bf16_odd_shapes(void **state)
{
    tpu_vmem_t *vmem = make_vmem("v5e");
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        run_float_case(vmem, &shapes[i], TPU_DTYPE_BF16, TPU_DTYPE_BF16);
        run_float_case(vmem, &shapes[i], TPU_DTYPE_BF16, TPU_DTYPE_F32);
    }
    tpu_vmem_destroy(vmem);
}

static void test_f32_odd_shapes(void **state)
{
    tpu_vmem_t *vmem = make_vmem("v6e");
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        run_float_case(vmem, &shapes[i], TPU_DTYPE_F32, TPU_DTYPE_F32);
    }
    tpu_vmem_destroy(vmem);
}

/* bf16 products are exact in f32: a sum of few exact terms is exact. */
static void test_bf16_exact_small(void **state)
{
    tpu_vmem_t *vmem = make_vmem("v5e");
    /* A = [1.5, -2.25; 3, 0.5], B = [4, 0.125; -1, 8] */
    uint16_t a[4] = {0x3fc0, 0xc010, 0x4040, 0x3f00};
    uint16_t b[4] = {0x4080, 0x3e00, 0xbf80, 0x4100};
    float c[4];
    uint16_t c16[4];
    tpu_mxu_desc_t desc;

    (void)state;
    tpu_mxu_desc_init(&desc, 2, 2, 2, TPU_DTYPE_BF16);
    desc.out = TPU_DTYPE_F32;
    assert_int_equal(tpu_mxu_matmul(vmem, &desc, a, b, c, NULL, NULL), TPU_OK);
    assert_float_equal(c[0], 1.5 * 4 + 2.25, 0);
    assert_float_equal(c[1], 1.5 * 0.125 - 2.25 * 8, 0); /* -17.8125: 9 significant bits */
    assert_float_equal(c[2], 3 * 4 - 0.5, 0);
    assert_float_equal(c[3], 3 * 0.125 + 0.5 * 8, 0);
    /* With a bf16 output, -17.8125 is a tie between -17.75 and -17.875: to even. */
    desc.out = TPU_DTYPE_BF16;
    assert_int_equal(tpu_mxu_matmul(vmem, &desc, a, b, c16, NULL, NULL), TPU_OK);
    assert_float_equal(tpu_dtype_bf16_to_f32(c16[1]), -17.75, 0);
    assert_float_equal(tpu_dtype_bf16_to_f32(c16[0]), 8.25, 0);
    tpu_vmem_destroy(vmem);
}

static void run_int8_case(tpu_vmem_t *vmem, int64_t m, int64_t k, int64_t n, int64_t bk)
{
    int8_t *a = malloc((size_t)(m * k));
    int8_t *b = malloc((size_t)(k * n));
    int32_t *c = malloc((size_t)(m * n) * 4);
    tpu_mxu_desc_t desc;
    tpu_err_t err = {0};
    uint32_t seed = 99;
    int64_t i, j, p;

    for (i = 0; i < m * k; i++) {
        a[i] = (int8_t)(int)(rng_next(&seed) % 256 - 128);
    }
    for (i = 0; i < k * n; i++) {
        b[i] = (int8_t)(int)(rng_next(&seed) % 256 - 128);
    }
    a[0] = -128;
    b[0] = -128;
    b[k * n - 1] = 127;
    tpu_mxu_desc_init(&desc, m, k, n, TPU_DTYPE_I8);
    assert_int_equal(desc.out, TPU_DTYPE_I32);
    desc.bk = bk;
    if (tpu_mxu_matmul(vmem, &desc, a, b, c, NULL, &err) != TPU_OK) {
        fail_msg("%s", err.msg);
    }
    for (i = 0; i < m; i++) {
        for (j = 0; j < n; j++) {
            int64_t ref = 0;

            for (p = 0; p < k; p++) {
                ref += (int64_t)a[i * k + p] * b[p * n + j];
            }
            assert_int_equal(c[i * n + j], (int32_t)ref);
        }
    }
    free(a);
    free(b);
    free(c);
}

static void test_int8_exact(void **state)
{
    tpu_vmem_t *vmem = make_vmem("v5e");

    (void)state;
    run_int8_case(vmem, 1, 1, 1, 0);
    run_int8_case(vmem, 33, 3000, 17, 0);    /* k in 2 blocks, chunks of 1024 */
    run_int8_case(vmem, 9, 2500, 131, 2500); /* one k block of 3 chunks */
    run_int8_case(vmem, 127, 129, 131, 0);
    tpu_vmem_destroy(vmem);
}

/* Sums of 2^14 that pass 2^24 stay exact, and past 2^31 wrap like int32. */
static void test_int8_large_sums_wrap(void **state)
{
    enum {
        K = 140000
    };
    tpu_vmem_t *vmem = make_vmem("v5e");
    int8_t *a = malloc(K);
    int8_t *b = malloc(K);
    int32_t c = 0;
    tpu_mxu_desc_t desc;
    int64_t exact;
    uint32_t wrapped;
    int32_t expect;

    (void)state;
    memset(a, -128, K);
    memset(b, -128, K);
    a[K - 1] = 1;
    b[K - 1] = 1;
    exact = (int64_t)(K - 1) * 16384 + 1;
    wrapped = (uint32_t)exact;
    memcpy(&expect, &wrapped, sizeof(expect));
    tpu_mxu_desc_init(&desc, 1, K, 1, TPU_DTYPE_I8);
    assert_int_equal(tpu_mxu_matmul(vmem, &desc, a, b, &c, NULL, NULL), TPU_OK);
    assert_true(exact > INT32_MAX);
    assert_int_equal(c, expect);
    free(a);
    free(b);
    tpu_vmem_destroy(vmem);
}

/* The pipeline counts of a blocked matmul: grid (2, 3, 5), k innermost. */
static void test_pipeline_counts(void **state)
{
    tpu_vmem_t *vmem = make_vmem("v5e");
    tpu_mxu_desc_t desc;
    tpu_roofline_report_t rep;

    (void)state;
    tpu_mxu_desc_init(&desc, 256, 640, 384, TPU_DTYPE_BF16);
    desc.bm = 128;
    desc.bk = 128;
    desc.bn = 128;
    assert_int_equal(tpu_mxu_matmul_model(vmem, &desc, &rep, NULL), TPU_OK);
    assert_int_equal(rep.pipeline.steps, 2 * 3 * 5);
    assert_int_equal(rep.pipeline.fetches, 2 * 30); /* A and B change every step */
    assert_int_equal(rep.pipeline.writebacks, 6);
    assert_float_equal(rep.pipeline.bytes_in, (256.0 * 640 * 3 + 640.0 * 384 * 2) * 2, 0);
    assert_float_equal(rep.pipeline.bytes_out, 256.0 * 384 * 2, 0);
    /* plan: 2 x (3 bf16 blocks of 128 x 128) + an f32 accumulator */
    assert_float_equal(rep.pipeline.vmem_bytes, 2 * 3 * 32768 + 65536, 0);
    assert_true(rep.pipeline.modeled_us >= rep.roofline.modeled_us);

    /* With k in one block, A's block survives the j loop. */
    desc.bk = 0;
    assert_int_equal(tpu_mxu_matmul_model(vmem, &desc, &rep, NULL), TPU_OK);
    assert_int_equal(rep.block[1], 640);
    assert_int_equal(rep.pipeline.fetches, 2 + 6);
    assert_int_equal(rep.pipeline.fetches_skipped, 4);
    tpu_vmem_destroy(vmem);
}

/* The chosen blocks fit each chip's VMEM and pipeline close to the roofline. */
static void test_block_choice(void **state)
{
    static const char *const chips[] = {"v4", "v5e", "v5p", "v6e", "v7"};
    tpu_mxu_desc_t desc;
    tpu_roofline_report_t rep;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(chips) / sizeof(chips[0]); i++) {
        tpu_vmem_t *vmem = make_vmem(chips[i]);

        tpu_mxu_desc_init(&desc, 8192, 8192, 8192, TPU_DTYPE_BF16);
        assert_int_equal(tpu_mxu_matmul_model(vmem, &desc, &rep, NULL), TPU_OK);
        assert_true(rep.pipeline.vmem_bytes <= (double)tpu_vmem_capacity(vmem));
        assert_true(rep.pipeline.modeled_us >= rep.roofline.modeled_us * (1 - 1e-12));
        assert_true(rep.pipeline.modeled_us <= rep.roofline.modeled_us * 1.05);
        if (i == 1) {
            assert_int_equal(rep.block[0], 2048);
            assert_int_equal(rep.block[1], 2048);
            assert_int_equal(rep.block[2], 2048);
            assert_float_equal(rep.pipeline.vmem_bytes, 64.0 * 1024 * 1024, 0);
        }
        tpu_vmem_destroy(vmem);
    }
}

static void test_bad_requests(void **state)
{
    tpu_vmem_t *vmem = make_vmem("v5e");
    tpu_mxu_desc_t desc;
    tpu_err_t err = {0};
    float x[4] = {0};

    (void)state;
    tpu_mxu_desc_init(&desc, 0, 4, 4, TPU_DTYPE_BF16);
    assert_int_equal(tpu_mxu_matmul(vmem, &desc, x, x, x, NULL, &err), TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "m 0"));
    tpu_mxu_desc_init(&desc, 2, 2, 2, TPU_DTYPE_I8);
    desc.out = TPU_DTYPE_BF16;
    tpu_err_clear(&err);
    assert_int_equal(tpu_mxu_matmul(vmem, &desc, x, x, x, NULL, &err), TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "i8 inputs with bf16 output"));
    tpu_mxu_desc_init(&desc, 2, 2, 2, TPU_DTYPE_F32);
    assert_int_equal(tpu_mxu_matmul(vmem, &desc, x, NULL, x, NULL, NULL), TPU_ERR_INVALID);
    /* Given blocks that do not fit: 2 x 3 x 4096^2 x 4 bytes = 384 MiB. */
    tpu_mxu_desc_init(&desc, 8192, 8192, 8192, TPU_DTYPE_F32);
    desc.bm = desc.bk = desc.bn = 4096;
    tpu_err_clear(&err);
    assert_int_equal(tpu_mxu_matmul_model(vmem, &desc, NULL, &err), TPU_ERR_RESOURCE_EXHAUSTED);
    assert_string_equal(err.msg, "matmul on chip v5e: VMEM plan needs 384.0 MiB (2 x 3 blocks), "
                                 "capacity 128.0 MiB");
    tpu_vmem_destroy(vmem);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bf16_odd_shapes),      cmocka_unit_test(test_f32_odd_shapes),
        cmocka_unit_test(test_bf16_exact_small),     cmocka_unit_test(test_int8_exact),
        cmocka_unit_test(test_int8_large_sums_wrap), cmocka_unit_test(test_pipeline_counts),
        cmocka_unit_test(test_block_choice),         cmocka_unit_test(test_bad_requests),
    };

    return tpu_test_main(argc, argv, "chip matmul", tests, sizeof tests / sizeof tests[0]);
}
