/*
 * The roofline cost model: every row of the reference table
 * (../shared/reference/roofline_public.csv, read where it lies) within 5%,
 * and a table of extra cases computed by hand (other chips, int8, f32, padding
 * to the MXU and to (8,128) tiles).
 */
#include "tpu/chip.h"
#include "tpu/mxu.h"
#include "tpu/roofline.h"
#include "tpu/vpu.h"

#include "test_main.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#ifndef TPU_SOURCE_DIR
#define TPU_SOURCE_DIR "."
#endif

#define MAX_ERR 0.05

static FILE *open_table(void)
{
    static const char *const paths[] = {
        TPU_SOURCE_DIR "/../shared/reference/roofline_public.csv",
    };
    FILE *f;
    size_t i;

    for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        f = fopen(paths[i], "r");
        if (f != NULL) {
            printf("roofline table: %s\n", paths[i]);
            return f;
        }
    }
    fail_msg("roofline_public.csv not found under %s", TPU_SOURCE_DIR);
    return NULL;
}

/* Split 'line' at the first 'n' commas into 'fields' (the last keeps the rest). */
static int split(char *line, char **fields, int n)
{
    int i = 0;

    fields[i++] = line;
    while (i < n && (line = strchr(line, ',')) != NULL) {
        *line++ = '\0';
        fields[i++] = line;
    }
    return i;
}

static void test_reference_table(void **state)
{
    FILE *f = open_table();
    char line[512];
    char worst_id[sizeof(line)] = "";
    double worst = 0;
    int rows = 0;

    (void)state;
    assert_non_null(fgets(line, sizeof(line), f)); /* header */
    assert_non_null(strstr(line, "id,chip,op,m,k,n,elements,dtype,expected_us,bound"));
    while (fgets(line, sizeof(line), f) != NULL) {
        char *fld[11] = {NULL}; /* split() fills them (asserted: cmocka's asserts do not
                                 * tell the compiler that they end the test) */
        tpu_chip_spec_t spec;
        tpu_roofline_t rl;
        tpu_err_t err = {0};
        tpu_dtype_t dt;
        double expected;
        double rel;

        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] == '\0') {
            continue;
        }
        assert_int_equal(split(line, fld, 11), 11);
        assert_int_equal(tpu_chip_preset(fld[1], &spec, &err), TPU_OK);
        assert_int_equal(tpu_dtype_parse(fld[7], &dt, &err), TPU_OK);
        if (strcmp(fld[2], "matmul") == 0) {
            tpu_mxu_desc_t d;

            tpu_mxu_desc_init(&d, atoll(fld[3]), atoll(fld[4]), atoll(fld[5]), dt);
            assert_int_equal(tpu_mxu_roofline(&spec, &d, &rl, &err), TPU_OK);
        } else {
            tpu_vpu_desc_t d;
            tpu_vpu_op_t op;

            assert_int_equal(tpu_vpu_op_parse(fld[2], &op, &err), TPU_OK);
            tpu_vpu_desc_init(&d, op, dt, 1, atoll(fld[6]));
            assert_int_equal(tpu_vpu_roofline(&spec, &d, &rl, &err), TPU_OK);
        }
        expected = atof(fld[8]);
        rel = fabs(rl.modeled_us - expected) / expected;
        printf("  %-4s %-4s %-7s expected %10.3f us  modeled %10.3f us  %-7s  error %.4f%%\n",
               fld[0], fld[1], fld[2], expected, rl.modeled_us, tpu_roofline_bound_name(rl.bound),
               rel * 100);
        if (rel > worst) {
            worst = rel;
            snprintf(worst_id, sizeof(worst_id), "%s", fld[0]);
        }
        if (rel > MAX_ERR) {
            fail_msg("%s: modeled %.3f us, expected %.3f us", fld[0], rl.modeled_us, expected);
        }
        assert_string_equal(tpu_roofline_bound_name(rl.bound), fld[9]);
        rows++;
    }
    fclose(f);
    printf("roofline table: %d rows, worst error %.4f%% (%s)\n", rows, worst * 100,
           rows > 0 ? worst_id : "-");
    assert_true(rows >= 16);
}

/* Cases computed by hand; the comment of each gives the arithmetic. */
typedef struct hand_case {
    const char *chip;
    const char *op; /* "matmul" or a VPU op */
    tpu_dtype_t in, out;
    int64_t m, k, n;    /* matmul */
    int64_t rows, cols; /* VPU */
    double flops, hbm_bytes, modeled_us;
    tpu_roofline_bound_t bound;
} hand_case_t;

static const hand_case_t hand[] = {
    /* 2 x 4096^3 = 1.374e11 int8 ops / 9.18e14 = 149.716 us; bytes 2 x 4096^2 x 1 +
     * 4096^2 x 4 (int32 out) = 100663296 / 2.8e12 = 35.95 us. */
    {"v5p", "matmul", TPU_DTYPE_I8, TPU_DTYPE_I32, 4096, 4096, 4096, 0, 0, 137438953472.0,
     100663296.0, 149.715636, TPU_ROOFLINE_COMPUTE},
    /* f32 at bf16 / 3: 2 x 1024^3 / 6.5667e13 = 32.703 us; 3 x 1024^2 x 4 B / 8.1e11 = 15.53. */
    {"v5e", "matmul", TPU_DTYPE_F32, TPU_DTYPE_F32, 1024, 1024, 1024, 0, 0, 2147483648.0,
     12582912.0, 32.702797, TPU_ROOFLINE_COMPUTE},
    /* Padding turns it compute-bound: 130 -> 256 on each dimension, 2 x 256^3 / 1.97e14 =
     * 0.170327 us > 3 x 130^2 x 2 B / 8.1e11 = 0.125185 us (unpadded: 0.0223 us). */
    {"v5e", "matmul", TPU_DTYPE_BF16, TPU_DTYPE_BF16, 130, 130, 130, 0, 0, 4394000.0, 101400.0,
     0.170327, TPU_ROOFLINE_COMPUTE},
    /* v6e pads to 256: 2 x 512 x 256 x 512 / 9.2e14 = 0.145889 us; bytes (300x200 +
     * 200x500 + 300x500) x 2 = 620000 / 1.6e12 = 0.3875 us. */
    {"v6e", "matmul", TPU_DTYPE_BF16, TPU_DTYPE_BF16, 300, 200, 500, 0, 0, 60000000.0, 620000.0,
     0.3875, TPU_ROOFLINE_MEMORY},
    /* v7 int8: 2 x 1024^3 / 4.61e15 = 0.4658 us; 2e6 x 1 + 1e6 x 4 = 6e6 B / 7.4e12 =
     * 0.810811 us. */
    {"v7", "matmul", TPU_DTYPE_I8, TPU_DTYPE_I32, 1000, 1000, 1000, 0, 0, 2e9, 6e6, 0.810811,
     TPU_ROOFLINE_MEMORY},
    /* bf16 in, f32 out: 2 x 4096^3 / 2.75e14 = 499.778 us; bytes 2 x 4096^2 x 2 + 4096^2 x 4. */
    {"v4", "matmul", TPU_DTYPE_BF16, TPU_DTYPE_F32, 4096, 4096, 4096, 0, 0, 137438953472.0,
     134217728.0, 499.778013, TPU_ROOFLINE_COMPUTE},
    /* gelu f32, 2^20 elements: 12 FLOPs each; bytes 2 x 4 x 2^20 / 1.2e12 = 6.990507 us. */
    {"v4", "gelu", TPU_DTYPE_F32, TPU_DTYPE_F32, 0, 0, 0, 1, 1 << 20, 12.0 * (1 << 20), 8388608.0,
     6.990507, TPU_ROOFLINE_MEMORY},
    /* exp bf16 of 4096: 4 FLOPs each = 16384; bytes 2 x 2 x 4096 = 16384 / 8.1e11. */
    {"v5e", "exp", TPU_DTYPE_BF16, TPU_DTYPE_BF16, 0, 0, 0, 1, 4096, 16384.0, 16384.0, 0.020227,
     TPU_ROOFLINE_MEMORY},
    /* int8 sum of 1000 into one int32: bytes 1000 + 4. */
    {"v5e", "sum", TPU_DTYPE_I8, TPU_DTYPE_I32, 0, 0, 0, 1, 1000, 1000.0, 1004.0, 0.001240,
     TPU_ROOFLINE_MEMORY},
    /* int8 add of 1e6 on v7: 3e6 B / 7.4e12 = 0.405405 us. */
    {"v7", "add", TPU_DTYPE_I8, TPU_DTYPE_I8, 0, 0, 0, 1, 1000000, 1e6, 3e6, 0.405405,
     TPU_ROOFLINE_MEMORY},
    /* softmax f32 8 x 100: 8 FLOPs each; bytes 2 x 800 x 4 = 6400 / 8.1e11. */
    {"v5e", "softmax", TPU_DTYPE_F32, TPU_DTYPE_F32, 0, 0, 0, 8, 100, 6400.0, 6400.0, 0.007901,
     TPU_ROOFLINE_MEMORY},
};

static void test_hand_table(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(hand) / sizeof(hand[0]); i++) {
        const hand_case_t *h = &hand[i];
        tpu_chip_spec_t spec;
        tpu_roofline_t rl;
        tpu_err_t err = {0};

        assert_int_equal(tpu_chip_preset(h->chip, &spec, NULL), TPU_OK);
        if (strcmp(h->op, "matmul") == 0) {
            tpu_mxu_desc_t d;

            tpu_mxu_desc_init(&d, h->m, h->k, h->n, h->in);
            d.out = h->out;
            assert_int_equal(tpu_mxu_roofline(&spec, &d, &rl, &err), TPU_OK);
        } else {
            tpu_vpu_desc_t d;
            tpu_vpu_op_t op;

            assert_int_equal(tpu_vpu_op_parse(h->op, &op, NULL), TPU_OK);
            tpu_vpu_desc_init(&d, op, h->in, h->rows, h->cols);
            assert_int_equal(tpu_vpu_out_dtype(&d), h->out);
            assert_int_equal(tpu_vpu_roofline(&spec, &d, &rl, &err), TPU_OK);
        }
        if (fabs(rl.modeled_us - h->modeled_us) > 1e-6 * h->modeled_us + 1e-6 ||
            rl.flops != h->flops || rl.hbm_bytes != h->hbm_bytes || rl.bound != h->bound) {
            fail_msg("case %zu (%s %s): modeled %.6f us (want %.6f), flops %.0f (want %.0f), "
                     "bytes %.0f (want %.0f), %s-bound",
                     i, h->chip, h->op, rl.modeled_us, h->modeled_us, rl.flops, h->flops,
                     rl.hbm_bytes, h->hbm_bytes, tpu_roofline_bound_name(rl.bound));
        }
        assert_float_equal(rl.intensity, h->flops / h->hbm_bytes, 1e-12 * rl.intensity);
        assert_float_equal(rl.modeled_us, fmax(rl.compute_us, rl.memory_us), 0);
    }
}

/* The compute term pads every matmul dimension to the MXU edge (128, 256 on v6e). */
static void test_mxu_padding(void **state)
{
    tpu_chip_spec_t v5e;
    tpu_chip_spec_t v6e;
    tpu_mxu_desc_t d;
    tpu_roofline_t rl;

    (void)state;
    assert_int_equal(tpu_chip_preset("v5e", &v5e, NULL), TPU_OK);
    assert_int_equal(tpu_chip_preset("v6e", &v6e, NULL), TPU_OK);
    tpu_mxu_desc_init(&d, 1, 1, 1, TPU_DTYPE_BF16);
    assert_int_equal(tpu_mxu_roofline(&v5e, &d, &rl, NULL), TPU_OK);
    assert_float_equal(rl.flops, 2, 0);
    assert_float_equal(rl.hw_flops, 2.0 * 128 * 128 * 128, 0);
    assert_int_equal(tpu_mxu_roofline(&v6e, &d, &rl, NULL), TPU_OK);
    assert_float_equal(rl.hw_flops, 2.0 * 256 * 256 * 256, 0);
    tpu_mxu_desc_init(&d, 129, 128, 257, TPU_DTYPE_BF16);
    assert_int_equal(tpu_mxu_roofline(&v5e, &d, &rl, NULL), TPU_OK);
    assert_float_equal(rl.hw_flops, 2.0 * 256 * 128 * 384, 0);
    assert_float_equal(tpu_mxu_seconds(&v5e, 129, 128, 257, TPU_DTYPE_BF16),
                       2.0 * 256 * 128 * 384 / 1.97e14, 1e-20);
    assert_float_equal(tpu_vpu_seconds(&v5e, 1025, 1), 2048 / v5e.vpu_flops, 1e-20);
}

static void test_names_and_errors(void **state)
{
    tpu_chip_spec_t spec;
    tpu_vpu_desc_t vd;
    tpu_mxu_desc_t md;
    tpu_roofline_t rl;
    tpu_err_t err = {0};
    tpu_dtype_t e;
    tpu_vpu_op_t op;

    (void)state;
    assert_int_equal(tpu_chip_preset("v5e", &spec, NULL), TPU_OK);
    assert_int_equal(tpu_dtype_parse("i8", &e, NULL), TPU_OK);
    assert_int_equal(e, TPU_DTYPE_I8);
    assert_int_equal(tpu_dtype_size(TPU_DTYPE_BF16), 2);
    assert_string_equal(tpu_dtype_name(TPU_DTYPE_I32), "i32");
    assert_int_equal(tpu_dtype_parse("fp16", &e, &err), TPU_ERR_INVALID);
    assert_string_equal(err.msg, "unknown dtype 'fp16' (known: f32, bf16, i32, i8)");
    assert_int_equal(tpu_vpu_op_parse("reduce-max", &op, NULL), TPU_OK);
    assert_int_equal(op, TPU_VPU_REDUCE_MAX);
    assert_int_equal(tpu_vpu_op_inputs(TPU_VPU_ADD), 2);
    assert_int_equal(tpu_vpu_op_flops(TPU_VPU_GELU), 12);
    assert_int_equal(tpu_vpu_op_flops(TPU_VPU_SOFTMAX), 8);
    assert_null(tpu_vpu_op_name(TPU_VPU_OP_COUNT));
    tpu_vpu_desc_init(&vd, TPU_VPU_TANH, TPU_DTYPE_I8, 1, 10);
    tpu_err_clear(&err);
    assert_int_equal(tpu_vpu_roofline(&spec, &vd, &rl, &err), TPU_ERR_INVALID);
    tpu_vpu_desc_init(&vd, TPU_VPU_ADD, TPU_DTYPE_F32, 0, 10);
    assert_int_equal(tpu_vpu_roofline(&spec, &vd, &rl, NULL), TPU_ERR_INVALID);
    tpu_mxu_desc_init(&md, 4, 4, -1, TPU_DTYPE_BF16);
    assert_int_equal(tpu_mxu_roofline(&spec, &md, &rl, NULL), TPU_ERR_INVALID);
    tpu_mxu_desc_init(&md, 4, 4, 4, TPU_DTYPE_I32);
    assert_int_equal(tpu_mxu_roofline(&spec, &md, &rl, NULL), TPU_ERR_INVALID);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_table),
        cmocka_unit_test(test_hand_table),
        cmocka_unit_test(test_mxu_padding),
        cmocka_unit_test(test_names_and_errors),
    };

    return tpu_test_main(argc, argv, "chip roofline", tests, sizeof tests / sizeof tests[0]);
}
