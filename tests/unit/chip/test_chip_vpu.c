/*
 * VPU ops through the VMEM executor: elementwise add, mul, max, relu, exp,
 * tanh, gelu; row softmax; sum and max reductions; in f32, bf16 and int8,
 * on sizes that are not whole (8,128) tiles and on several blocks.
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

static double ref1(tpu_vpu_op_t op, double x, double y)
{
    switch (op) {
    case TPU_VPU_ADD:
        return x + y;
    case TPU_VPU_MUL:
        return x * y;
    case TPU_VPU_MAX:
        return x > y ? x : y;
    case TPU_VPU_RELU:
        return x > 0 ? x : 0;
    case TPU_VPU_EXP:
        return exp(x);
    case TPU_VPU_TANH:
        return tanh(x);
    case TPU_VPU_GELU:
        return 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    default:
        return NAN;
    }
}

static float value(uint32_t i)
{
    uint32_t h = i * 2654435761u;

    return (float)(h >> 8) / (float)(1u << 24) * 8.0f - 4.0f;
}

static void elementwise_case(tpu_vmem_t *vmem, tpu_vpu_op_t op, tpu_dtype_t dt, int64_t n,
                             int64_t block)
{
    const size_t es = (size_t)tpu_dtype_size(dt);
    void *x = malloc((size_t)n * es);
    void *y = malloc((size_t)n * es);
    void *o = malloc((size_t)n * es);
    double rel = dt == TPU_DTYPE_BF16 ? 0x1p-8 : 4e-7;
    tpu_vpu_desc_t desc;
    tpu_roofline_report_t rep;
    tpu_err_t err = {0};
    int64_t i;

    for (i = 0; i < n; i++) {
        float a = value((uint32_t)i);
        float b = value((uint32_t)(i + 77777));

        if (dt == TPU_DTYPE_F32) {
            ((float *)x)[i] = a;
            ((float *)y)[i] = b;
        } else {
            ((uint16_t *)x)[i] = tpu_dtype_f32_to_bf16(a);
            ((uint16_t *)y)[i] = tpu_dtype_f32_to_bf16(b);
        }
    }
    tpu_vpu_desc_init(&desc, op, dt, 1, n);
    desc.block = block;
    if (tpu_vpu_run(vmem, &desc, x, tpu_vpu_op_inputs(op) == 2 ? y : NULL, o, &rep, &err) !=
        TPU_OK) {
        fail_msg("%s", err.msg);
    }
    for (i = 0; i < n; i++) {
        double a =
            dt == TPU_DTYPE_F32 ? ((float *)x)[i] : tpu_dtype_bf16_to_f32(((uint16_t *)x)[i]);
        double b =
            dt == TPU_DTYPE_F32 ? ((float *)y)[i] : tpu_dtype_bf16_to_f32(((uint16_t *)y)[i]);
        double got =
            dt == TPU_DTYPE_F32 ? ((float *)o)[i] : tpu_dtype_bf16_to_f32(((uint16_t *)o)[i]);
        double want = ref1(op, a, b);

        if (fabs(got - want) > rel * fabs(want) + 1e-6) {
            fail_msg("%s %s [%lld]: got %.9g, want %.9g", tpu_vpu_op_name(op), tpu_dtype_name(dt),
                     (long long)i, got, want);
        }
    }
    assert_float_equal(rep.roofline.flops, (double)n * tpu_vpu_op_flops(op), 0);
    assert_float_equal(rep.pipeline.bytes_in, (double)n * es * tpu_vpu_op_inputs(op), 0);
    assert_float_equal(rep.pipeline.bytes_out, (double)n * es, 0);
    free(x);
    free(y);
    free(o);
}

static void test_elementwise_float(void **state)
{
    static const tpu_vpu_op_t ops[] = {TPU_VPU_ADD, TPU_VPU_MUL,  TPU_VPU_MAX, TPU_VPU_RELU,
                                       TPU_VPU_EXP, TPU_VPU_TANH, TPU_VPU_GELU};
    tpu_vmem_t *vmem = make_vmem("v5e");
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        elementwise_case(vmem, ops[i], TPU_DTYPE_F32, 1000, 0);
        elementwise_case(vmem, ops[i], TPU_DTYPE_BF16, 1000, 0);
        elementwise_case(vmem, ops[i], TPU_DTYPE_F32, 5000, 1024); /* 5 blocks, the last partial */
        elementwise_case(vmem, ops[i], TPU_DTYPE_BF16, 3333, 1000);
    }
    tpu_vmem_destroy(vmem);
}

/* bf16 results are the f32 results rounded once, to nearest even. */
static void test_bf16_rounding_of_results(void **state)
{
    tpu_vmem_t *vmem = make_vmem("v6e");
    uint16_t x[3] = {0x3f80, 0x3f80, 0x4000}; /* 1, 1, 2 */
    uint16_t y[3] = {0x3b80, 0x3b81, 0x3c00}; /* 2^-8, 2^-8 (1 + 2^-7), 2^-7 */
    uint16_t o[3];
    tpu_vpu_desc_t desc;

    (void)state;
    tpu_vpu_desc_init(&desc, TPU_VPU_ADD, TPU_DTYPE_BF16, 1, 3);
    assert_int_equal(tpu_vpu_run(vmem, &desc, x, y, o, NULL, NULL), TPU_OK);
    assert_int_equal(o[0], 0x3f80); /* 1 + 2^-8: a tie, to even (1) */
    assert_int_equal(o[1], 0x3f81); /* above the tie: up */
    assert_int_equal(o[2], 0x4000); /* 2 + 2^-7: a tie, to even (2) */
    tpu_vmem_destroy(vmem);
}

static void test_nan_propagation(void **state)
{
    tpu_vmem_t *vmem = make_vmem("v5e");
    float x[4] = {NAN, 1.0f, -2.0f, NAN};
    float y[4] = {1.0f, NAN, -3.0f, -1.0f};
    float o[4];
    tpu_vpu_desc_t desc;

    (void)state;
    tpu_vpu_desc_init(&desc, TPU_VPU_MAX, TPU_DTYPE_F32, 1, 4);
    assert_int_equal(tpu_vpu_run(vmem, &desc, x, y, o, NULL, NULL), TPU_OK);
    assert_true(isnan(o[0]));
    assert_true(isnan(o[1]));
    assert_float_equal(o[2], -2.0f, 0);
    assert_true(isnan(o[3]));
    tpu_vpu_desc_init(&desc, TPU_VPU_RELU, TPU_DTYPE_F32, 1, 4);
    assert_int_equal(tpu_vpu_run(vmem, &desc, x, NULL, o, NULL, NULL), TPU_OK);
    assert_true(isnan(o[0]));
    assert_float_equal(o[1], 1.0f, 0);
    assert_float_equal(o[2], 0.0f, 0);
    tpu_vmem_destroy(vmem);
}

static void test_int8_elementwise(void **state)
{
    tpu_vmem_t *vmem = make_vmem("v5p");
    int8_t x[5] = {100, -128, 127, -5, 0};
    int8_t y[5] = {100, -1, 2, 7, -9};
    int8_t o[5];
    tpu_vpu_desc_t desc;
    tpu_err_t err = {0};

    (void)state;
    tpu_vpu_desc_init(&desc, TPU_VPU_ADD, TPU_DTYPE_I8, 1, 5);
    assert_int_equal(tpu_vpu_run(vmem, &desc, x, y, o, NULL, NULL), TPU_OK);
    assert_int_equal(o[0], -56); /* 200 wraps */
    assert_int_equal(o[1], 127); /* -129 wraps */
    assert_int_equal(o[2], -127);
    assert_int_equal(o[3], 2);
    tpu_vpu_desc_init(&desc, TPU_VPU_MUL, TPU_DTYPE_I8, 1, 5);
    assert_int_equal(tpu_vpu_run(vmem, &desc, x, y, o, NULL, NULL), TPU_OK);
    assert_int_equal(o[0], 16); /* 10000 mod 256 */
    assert_int_equal(o[1], -128);
    assert_int_equal(o[3], -35);
    tpu_vpu_desc_init(&desc, TPU_VPU_MAX, TPU_DTYPE_I8, 1, 5);
    assert_int_equal(tpu_vpu_run(vmem, &desc, x, y, o, NULL, NULL), TPU_OK);
    assert_int_equal(o[1], -1);
    assert_int_equal(o[4], 0);
    tpu_vpu_desc_init(&desc, TPU_VPU_RELU, TPU_DTYPE_I8, 1, 5);
    assert_int_equal(tpu_vpu_run(vmem, &desc, x, NULL, o, NULL, NULL), TPU_OK);
    assert_int_equal(o[1], 0);
    assert_int_equal(o[2], 127);
    tpu_vpu_desc_init(&desc, TPU_VPU_EXP, TPU_DTYPE_I8, 1, 5);
    assert_int_equal(tpu_vpu_run(vmem, &desc, x, NULL, o, NULL, &err), TPU_ERR_INVALID);
    assert_string_equal(err.msg, "exp does not take i8 (i8: add, mul, max, relu, sum, reduce_max)");
    tpu_vmem_destroy(vmem);
}

static void test_softmax(void **state)
{
    enum {
        R = 13,
        C = 1000
    };
    static const tpu_dtype_t types[] = {TPU_DTYPE_F32, TPU_DTYPE_BF16};
    tpu_vmem_t *vmem = make_vmem("v5e");
    float *xf = malloc(sizeof(float) * R * C);
    float *of = malloc(sizeof(float) * R * C);
    uint16_t *xh = malloc(2 * R * C);
    uint16_t *oh = malloc(2 * R * C);
    tpu_vpu_desc_t desc;
    tpu_roofline_report_t rep;
    size_t t;
    int r, c;

    (void)state;
    for (r = 0; r < R * C; r++) {
        xf[r] = value((uint32_t)r) * (r % C == 0 ? 20.0f : 1.0f); /* some large values */
        xh[r] = tpu_dtype_f32_to_bf16(xf[r]);
    }
    for (t = 0; t < 2; t++) {
        tpu_vpu_desc_init(&desc, TPU_VPU_SOFTMAX, types[t], R, C);
        desc.block = 4; /* 4 blocks of rows, the last partial */
        assert_int_equal(tpu_vpu_run(vmem, &desc, t ? (void *)xh : (void *)xf, NULL,
                                     t ? (void *)oh : (void *)of, &rep, NULL),
                         TPU_OK);
        assert_int_equal(rep.pipeline.steps, 4);
        for (r = 0; r < R; r++) {
            double m = -INFINITY;
            double s = 0;

            for (c = 0; c < C; c++) {
                double v = t ? tpu_dtype_bf16_to_f32(xh[r * C + c]) : xf[r * C + c];

                m = v > m ? v : m;
            }
            for (c = 0; c < C; c++) {
                double v = t ? tpu_dtype_bf16_to_f32(xh[r * C + c]) : xf[r * C + c];

                s += exp(v - m);
            }
            for (c = 0; c < C; c++) {
                double v = t ? tpu_dtype_bf16_to_f32(xh[r * C + c]) : xf[r * C + c];
                double want = exp(v - m) / s;
                double got = t ? tpu_dtype_bf16_to_f32(oh[r * C + c]) : of[r * C + c];

                if (fabs(got - want) > (t ? 0x1p-8 : 1e-5) * want + 1e-12) {
                    fail_msg("softmax %s [%d,%d]: %.9g vs %.9g", t ? "bf16" : "f32", r, c, got,
                             want);
                }
            }
        }
    }
    free(xf);
    free(of);
    free(xh);
    free(oh);
    tpu_vmem_destroy(vmem);
}

/* Row sums and maxima, with rows longer than one reduction block. */
static void test_reductions(void **state)
{
    enum {
        R = 3,
        C = 300001
    };
    tpu_vmem_t *vmem = make_vmem("v5e");
    float *x = malloc(sizeof(float) * R * C);
    uint16_t *xh = malloc(2 * (size_t)R * C);
    int8_t *xi = malloc((size_t)R * C);
    float sf[R];
    float mf[R];
    uint16_t sh[R];
    int32_t si[R];
    int8_t mi[R];
    tpu_vpu_desc_t desc;
    tpu_roofline_report_t rep;
    int64_t i;
    int r;

    (void)state;
    for (i = 0; i < (int64_t)R * C; i++) {
        x[i] = value((uint32_t)i);
        xh[i] = tpu_dtype_f32_to_bf16(x[i]);
        xi[i] = (int8_t)(int)(i % 251 - 125);
    }
    x[C + 12345] = 9.5f;
    xi[2 * C + 7] = 127;
    tpu_vpu_desc_init(&desc, TPU_VPU_SUM, TPU_DTYPE_F32, R, C);
    assert_int_equal(tpu_vpu_run(vmem, &desc, x, NULL, sf, &rep, NULL), TPU_OK);
    assert_int_equal(rep.pipeline.steps, 3 * 2); /* 1 MiB blocks: 1 row of 2 column blocks */
    tpu_vpu_desc_init(&desc, TPU_VPU_REDUCE_MAX, TPU_DTYPE_F32, R, C);
    assert_int_equal(tpu_vpu_run(vmem, &desc, x, NULL, mf, NULL, NULL), TPU_OK);
    tpu_vpu_desc_init(&desc, TPU_VPU_SUM, TPU_DTYPE_BF16, R, C);
    assert_int_equal(tpu_vpu_run(vmem, &desc, xh, NULL, sh, NULL, NULL), TPU_OK);
    tpu_vpu_desc_init(&desc, TPU_VPU_SUM, TPU_DTYPE_I8, R, C);
    assert_int_equal(tpu_vpu_out_dtype(&desc), TPU_DTYPE_I32);
    assert_int_equal(tpu_vpu_run(vmem, &desc, xi, NULL, si, &rep, NULL), TPU_OK);
    assert_float_equal(rep.roofline.hbm_bytes, (double)R * C + 4.0 * R, 0);
    tpu_vpu_desc_init(&desc, TPU_VPU_REDUCE_MAX, TPU_DTYPE_I8, R, C);
    assert_int_equal(tpu_vpu_run(vmem, &desc, xi, NULL, mi, NULL, NULL), TPU_OK);
    for (r = 0; r < R; r++) {
        double s = 0;
        double sb = 0;
        double mx = -INFINITY;
        int64_t is = 0;
        int im = -128;

        for (i = 0; i < C; i++) {
            s += x[r * C + i];
            sb += tpu_dtype_bf16_to_f32(xh[r * C + i]);
            mx = x[r * C + i] > mx ? x[r * C + i] : mx;
            is += xi[r * C + i];
            im = xi[r * C + i] > im ? xi[r * C + i] : im;
        }
        assert_float_equal(sf[r], s, 1e-3 * (fabs(s) + 1));
        assert_float_equal(tpu_dtype_bf16_to_f32(sh[r]), sb, 0x1p-8 * fabs(sb) + 1e-2);
        assert_float_equal(mf[r], mx, 0);
        assert_int_equal(si[r], is);
        assert_int_equal(mi[r], im);
    }
    assert_float_equal(mf[1], 9.5, 0);
    assert_int_equal(mi[2], 127);
    free(x);
    free(xh);
    free(xi);
    tpu_vmem_destroy(vmem);
}

/* A softmax row that does not fit VMEM is a plan error, not a crash. */
static void test_softmax_row_too_long(void **state)
{
    tpu_vmem_t *vmem = make_vmem("v5e");
    tpu_vpu_desc_t desc;
    tpu_roofline_report_t rep;
    tpu_err_t err = {0};

    (void)state;
    tpu_vpu_desc_init(&desc, TPU_VPU_SOFTMAX, TPU_DTYPE_F32, 1, 64 << 20);
    assert_int_equal(tpu_vpu_model(vmem, &desc, &rep, &err), TPU_ERR_RESOURCE_EXHAUSTED);
    assert_string_equal(err.msg, "softmax on chip v5e: VMEM plan needs 1024.0 MiB (2 x 2 blocks), "
                                 "capacity 128.0 MiB");
    tpu_vmem_destroy(vmem);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_elementwise_float),
        cmocka_unit_test(test_bf16_rounding_of_results),
        cmocka_unit_test(test_nan_propagation),
        cmocka_unit_test(test_int8_elementwise),
        cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_reductions),
        cmocka_unit_test(test_softmax_row_too_long),
    };

    return tpu_test_main(argc, argv, "chip vpu", tests, sizeof tests / sizeof tests[0]);
}
