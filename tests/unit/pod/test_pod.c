/*
 * The library pod (include/tpu/pod.h): defaults, shape by text or dims, wrap,
 * slices, link overrides, a custom chip, and every error with the message the
 * CLI gives.  Expected values come from the chip tables (v5e: 2D torus, at most
 * 16x16; v5p: 3D), not from the code under test.
 */
#include "tpu/pod.h"

#include "test_main.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

static void test_defaults(void **state)
{
    tpu_pod_spec_t spec;
    tpu_pod_t *pod = NULL;
    tpu_err_t err = {0};

    (void)state;
    tpu_pod_spec_init(&spec);
    assert_int_equal(tpu_pod_create(&spec, &pod, &err), TPU_OK);
    assert_string_equal(tpu_pod_chip(pod)->name, "v5e");
    assert_string_equal(tpu_pod_shape(pod), "4x4");
    assert_int_equal(tpu_pod_topo(pod)->nchips, 16);
    assert_int_equal(tpu_pod_topo(pod)->slices, 1);
    assert_true(tpu_pod_wrap_auto(pod));
    assert_true(tpu_pod_link(pod)->ici_bw > 0);
    tpu_pod_destroy(pod);
}

static void test_dims_wrap_slices_overrides(void **state)
{
    tpu_pod_spec_t spec;
    tpu_pod_t *pod = NULL;
    tpu_err_t err = {0};

    (void)state;
    tpu_pod_spec_init(&spec);
    spec.chip = "v5p";
    spec.naxes = 3;
    spec.dims[0] = 2;
    spec.dims[1] = 2;
    spec.dims[2] = 4;
    spec.wrap = "none";
    spec.slices = 2;
    spec.ici_bw = 1e9;
    spec.dcn_latency = 2e-5;
    assert_int_equal(tpu_pod_create(&spec, &pod, &err), TPU_OK);
    assert_string_equal(tpu_pod_shape(pod), "2x2x4");
    assert_string_equal(tpu_pod_wrap(pod), "none");
    assert_int_equal(tpu_pod_topo(pod)->nchips, 32);
    assert_true(tpu_pod_chip(pod)->ici_bw == 1e9);
    assert_true(tpu_pod_link(pod)->ici_bw == 1e9);
    assert_true(tpu_pod_chip(pod)->dcn_latency == 2e-5);
    tpu_pod_destroy(pod);
}

static void test_custom_chip(void **state)
{
    tpu_pod_spec_t spec;
    tpu_pod_t *pod = NULL, *ref = NULL;
    tpu_err_t err = {0};
    tpu_chip_spec_t chip;

    (void)state;
    tpu_pod_spec_init(&spec);
    spec.chip = "v4";
    spec.shape = "4x4x4";
    assert_int_equal(tpu_pod_create(&spec, &ref, &err), TPU_OK);
    chip = *tpu_pod_chip(ref);
    snprintf(chip.name, sizeof(chip.name), "my\"chip");
    spec.chip = "v5e"; /* the custom chip wins */
    spec.chip_spec = &chip;
    assert_int_equal(tpu_pod_create(&spec, &pod, &err), TPU_OK);
    assert_string_equal(tpu_pod_chip(pod)->name, "my\"chip");
    assert_int_equal(tpu_pod_topo(pod)->nchips, 64);
    tpu_pod_destroy(pod);
    tpu_pod_destroy(ref);
}

/* Each bad spec: an error, no pod, and the CLI's message. */
static void test_errors(void **state)
{
    static const struct {
        const char *chip, *shape, *wrap;
        double ici_bw;
        const char *needle;
    } cases[] = {
        {"v9", "4x4", NULL, -1, "unknown chip 'v9'"},
        {"v5e", "4x4x4", NULL, -1, "topology 4x4x4 has 3 axes, but v5e chips form a 2D torus"},
        {"v5e", "32x4", NULL, -1, "topology 32x4 does not fit a v5e pod"},
        {"v5e", "4xx4", NULL, -1, "4xx4"},
        {"v5e", "4x4", "x,z", -1, "axis 'z'"},
        {"v5e", "4x4", NULL, 0, "ici"},
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        tpu_pod_spec_t spec;
        tpu_pod_t *pod = (tpu_pod_t *)&spec;
        tpu_err_t err = {0};

        tpu_pod_spec_init(&spec);
        spec.chip = cases[i].chip;
        spec.shape = cases[i].shape;
        spec.wrap = cases[i].wrap;
        spec.ici_bw = cases[i].ici_bw;
        assert_int_not_equal(tpu_pod_create(&spec, &pod, &err), TPU_OK);
        assert_null(pod);
        if (strstr(err.msg, cases[i].needle) == NULL) {
            fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, cases[i].needle);
        }
    }
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_dims_wrap_slices_overrides),
        cmocka_unit_test(test_custom_chip),
        cmocka_unit_test(test_errors),
    };

    return tpu_test_main(argc, argv, "pod", tests, sizeof tests / sizeof tests[0]);
}
