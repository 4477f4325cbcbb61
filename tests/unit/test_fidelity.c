/*
 * The fidelity table: every case of tests/fixtures/fidelity_public.csv (a copy
 * of shared/reference/fidelity_public.csv) must come out of the schedules and the
 * link model within 5% of the published-formula time.  The worst error is printed.
 */
#include "tpu/chip.h"
#include "tpu/coll.h"
#include "tpu/topo.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* Split one CSV line into fields (double quotes protect commas). */
static int split_csv(char *line, char **fields, int max)
{
    int n = 0;
    char *p = line;

    while (n < max) {
        char *out;

        if (*p == '"') {
            p++;
            fields[n++] = p;
            out = p;
            while (*p && *p != '"') {
                *out++ = *p++;
            }
            if (*p == '"') {
                p++;
            }
            *out = '\0';
            if (*p == ',') {
                p++;
            } else {
                break;
            }
            continue;
        }
        fields[n++] = p;
        while (*p && *p != ',' && *p != '\n' && *p != '\r') {
            p++;
        }
        if (*p != ',') {
            *p = '\0';
            break;
        }
        *p++ = '\0';
    }
    return n;
}

/* Model one row; returns the relative error, or -1 on failure. */
static double run_case(char **f, int slices_wanted, double *got_p)
{
    tpu_err_t err = {0};
    tpu_chip_spec_t chip;
    tpu_link_model_t link;
    tpu_topo_t topo;
    tpu_coll_desc_t desc;
    tpu_coll_plan_t *plan = NULL;
    tpu_coll_result_t res;
    int dims[TPU_MAX_AXES], wrap[TPU_MAX_AXES], naxes, is_auto, slices = atoi(f[4]);
    double expected = atof(f[8]);

    if ((slices > 1) != (slices_wanted > 1)) {
        return -2;
    }
    assert_int_equal(tpu_chip_preset(f[1], &chip, &err), TPU_OK);
    tpu_chip_link_model(&chip, &link);
    assert_int_equal(tpu_topo_parse_shape(f[2], dims, &naxes, &err), TPU_OK);
    assert_int_equal(tpu_topo_parse_wrap(f[3], naxes, wrap, &is_auto, &err), TPU_OK);
    if (is_auto) {
        tpu_topo_wrap_auto(chip.wrap_rule, naxes, dims, wrap);
    }
    assert_int_equal(tpu_topo_init(&topo, naxes, dims, wrap, slices, &err), TPU_OK);
    tpu_coll_desc_init(&desc);
    if (strcmp(f[5], "ppermute-shift") == 0) {
        desc.kind = TPU_COLL_PPERMUTE;
        desc.shift = 1;
    } else {
        assert_int_equal(tpu_coll_parse(f[5], &desc.kind, &err), TPU_OK);
    }
    if (desc.kind != TPU_COLL_P2P) {
        assert_int_equal(tpu_topo_parse_axes(&topo, f[6], &desc.axes, &err), TPU_OK);
    }
    desc.bytes = strtoull(f[7], NULL, 10);
    desc.dtype = desc.bytes % 4 == 0 ? TPU_DTYPE_F32 : TPU_DTYPE_BF16;
    if (tpu_coll_plan_create(&topo, &link, &desc, &plan, &err) != TPU_OK) {
        fprintf(stderr, "%s: %s\n", f[0], err.msg);
        return -1;
    }
    assert_int_equal(tpu_coll_plan_model(plan, &res, &err), TPU_OK);
    tpu_coll_plan_destroy(plan);
    *got_p = res.modeled_us;
    printf("%-5s %-4s %-9s %-5s %-15s %-7s %12s  expected %12.3f  got %12.3f  %+6.2f%%  %s\n", f[0],
           f[1], f[2], f[3], f[5], f[6], f[7], expected, res.modeled_us,
           100 * (res.modeled_us - expected) / expected, res.algorithm);
    return fabs(res.modeled_us - expected) / expected;
}

static void run_table(int slices_wanted)
{
    const char *paths[] = {TPU_SOURCE_DIR "/tests/fixtures/fidelity_public.csv",
                           TPU_SOURCE_DIR "/../shared/reference/fidelity_public.csv"};
    FILE *fp = NULL;
    char line[2048];
    double worst = 0;
    int n = 0, bad = 0;
    size_t i;

    for (i = 0; i < 2 && fp == NULL; i++) {
        fp = fopen(paths[i], "r");
    }
    assert_non_null(fp);
    assert_non_null(fgets(line, sizeof(line), fp));
    while (fgets(line, sizeof(line), fp) != NULL) {
        char *f[16];
        double got = 0, e;

        if (split_csv(line, f, 16) < 9) {
            continue;
        }
        e = run_case(f, slices_wanted, &got);
        if (e == -2) {
            continue;
        }
        n++;
        if (e < 0 || e > 0.05) {
            bad++;
        }
        if (e > worst) {
            worst = e;
        }
    }
    fclose(fp);
    printf("fidelity (%s): %d cases, worst error %.2f%%, %d outside 5%%\n",
           slices_wanted > 1 ? "multi-slice" : "single slice", n, 100 * worst, bad);
    assert_true(n > 0);
    assert_int_equal(bad, 0);
}

static void test_single_slice(void **state)
{
    (void)state;
    run_table(1);
}

static void test_multi_slice(void **state)
{
    (void)state;
    run_table(2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_slice),
        cmocka_unit_test(test_multi_slice),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
