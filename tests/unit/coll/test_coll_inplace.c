/*
 * In-place runs over loopback equal out-of-place runs, bit for bit: for every
 * collective, every algorithm of the registry (forced) and the cost model's
 * choice, on open and wrapped shapes of 1 to 3 axes and two slices, every axis
 * subset, psum in every dtype at sizes on both sides of the host plans' one-round
 * limit.  Each case runs three ways on one run object, twice each (the copies
 * of an aliased input are kept across runs): out of place; in NCCL's in-place
 * form (tpu_coll_in_place_offsets: all-gather's input at its block of the
 * output, reduce-scatter's output at its block of the input, the others input ==
 * output); and with the input and the output at the start of one buffer (an
 * overlap NCCL does not define).  Each result is compared with
 * tpu_coll_reference(), and the offsets with NCCL's, computed here by hand.
 */
#include "tpu/chip.h"
#include "tpu/coll.h"
#include "tpu/xport.h"

#include "test_coll.h"
#include "test_main.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

enum {
    OUT_OF_PLACE,
    NCCL_IN_PLACE,
    SAME_START
};

/* One way of running 'plan' twice on every chip; fails on a result that differs
 * from the reference. */
static void run_way(const tpu_coll_plan_t *plan, const tpu_topo_t *topo, tpu_coll_exec_t *exec,
                    int way, const char *label)
{
    tpu_err_t err = {0};
    const tpu_coll_desc_t *d = tpu_coll_plan_desc(plan);
    tpu_dtype_t dtype = d->dtype;
    uint64_t inb, outb, ioff, ooff, size;
    int n = topo->nchips, c, r;
    void **in = calloc((size_t)n, sizeof(void *)), **out = calloc((size_t)n, sizeof(void *));
    unsigned char **buf = calloc((size_t)n, sizeof(unsigned char *));
    unsigned char *ref;
    double us;

    tpu_coll_plan_sizes(plan, &inb, &outb);
    ref = calloc(1, outb + 1);
    for (r = 0; r < 2; r++) {
        for (c = 0; c < n; c++) {
            assert_int_equal(tpu_coll_in_place_offsets(plan, c, &ioff, &ooff, &size, &err), TPU_OK);
            /* NCCL's offsets, by hand: the chip's rank in its group times the block. */
            if (d->kind == TPU_COLL_ALL_GATHER) {
                assert_true(ioff % inb == 0 &&
                            ioff / inb < (uint64_t)tpu_coll_plan_group_size(plan));
                assert_int_equal(ooff, 0);
                assert_int_equal(size, outb);
            } else if (d->kind == TPU_COLL_REDUCE_SCATTER) {
                assert_true(ooff % outb == 0 &&
                            ooff / outb < (uint64_t)tpu_coll_plan_group_size(plan));
                assert_int_equal(ioff, 0);
                assert_int_equal(size, inb);
            } else {
                assert_int_equal(ioff, 0);
                assert_int_equal(ooff, 0);
            }
            if (way != NCCL_IN_PLACE) {
                ioff = ooff = 0;
            }
            if (r == 0) {
                buf[c] = malloc(way == OUT_OF_PLACE ? inb + outb + 1 : size + 1);
            }
            in[c] = buf[c] + ioff;
            out[c] = way == OUT_OF_PLACE ? buf[c] + inb : buf[c] + ooff;
            memset(buf[c], 0x5a, way == OUT_OF_PLACE ? inb + outb : size);
            tpu_coll_fill_exact(c, in[c], inb, &dtype);
        }
        if (tpu_coll_exec_run(exec, NULL, in, out, &us, &err) != TPU_OK) {
            fail_msg("%s: run: %s", label, err.msg);
        }
        for (c = 0; c < n; c++) {
            if (d->kind == TPU_COLL_P2P && c != d->dst) {
                continue;
            }
            memset(ref, 0, outb);
            assert_int_equal(tpu_coll_reference(plan, c, tpu_coll_fill_exact, &dtype, ref, &err),
                             TPU_OK);
            if (memcmp(ref, out[c], outb) != 0) {
                fail_msg("%s (%s), %s, run %d: chip %d differs from the reference", label,
                         tpu_coll_plan_algo(plan),
                         way == OUT_OF_PLACE    ? "out of place"
                         : way == NCCL_IN_PLACE ? "in place"
                                                : "input and output at one start",
                         r, c);
            }
        }
    }
    for (c = 0; c < n; c++) {
        free(buf[c]);
    }
    free(buf);
    free(in);
    free(out);
    free(ref);
}

static int check_case(const tpu_topo_t *topo, const tpu_link_model_t *link,
                      const tpu_coll_desc_t *d0, const char *algo, const char *label)
{
    tpu_err_t err = {0};
    tpu_coll_desc_t d = *d0;
    tpu_coll_plan_t *plan = NULL;
    tpu_coll_exec_t *exec = NULL;
    tpu_xport_t *x = NULL;
    int way;

    if (algo != NULL) {
        snprintf(d.algo, sizeof(d.algo), "%s", algo);
    }
    if (tpu_coll_plan_create(topo, link, &d, &plan, &err) != TPU_OK) {
        if (algo != NULL && err.status == TPU_ERR_UNSUPPORTED) {
            return 0;
        }
        fail_msg("%s %s: plan: %s", label, algo ? algo : "(auto)", err.msg);
    }
    assert_int_equal(tpu_xport_loopback_create(topo->nchips, &x, &err), TPU_OK);
    assert_int_equal(tpu_coll_exec_create(plan, x, &exec, &err), TPU_OK);
    for (way = OUT_OF_PLACE; way <= SAME_START; way++) {
        run_way(plan, topo, exec, way, label);
    }
    tpu_coll_exec_destroy(exec);
    tpu_xport_destroy(x);
    tpu_coll_plan_destroy(plan);
    return 1;
}

/* One request of kind 'k' over 'mask' (group 'g'), size 's' of its list. */
static void request(tpu_coll_desc_t *d, int k, unsigned mask, int g, int s)
{
    static const uint64_t psum_bytes[] = {12, 4096 + 6, 64 * 1024 + 8};

    tpu_coll_desc_init(d);
    d->kind = (tpu_coll_kind_t)k;
    d->axes = mask;
    d->dtype = k == TPU_COLL_PSUM ? (tpu_dtype_t)(s % TPU_DTYPE_COUNT) : TPU_DTYPE_F32;
    d->shift = g > 2 ? 2 : 1;
    d->bytes = k == TPU_COLL_PSUM ? psum_bytes[s] / (uint64_t)tpu_dtype_size(d->dtype) *
                                        (uint64_t)tpu_dtype_size(d->dtype)
                                  : (uint64_t)g * 12 * 4;
}

/* Every collective over every axis subset of a shape, the cost model's algorithm and
 * every one of the registry; returns the cases run. */
static int check_shape(const char *shape, const char *wrap, int slices)
{
    tpu_err_t err = {0};
    tpu_topo_t topo;
    tpu_chip_spec_t chip;
    tpu_link_model_t link;
    unsigned masks[32];
    int naxes[32], nmasks, m, k, s, i, cases = 0;

    tpu_test_topo(&topo, shape, wrap, slices);
    assert_int_equal(tpu_chip_preset("v5p", &chip, &err), TPU_OK);
    tpu_chip_link_model(&chip, &link);
    nmasks = tpu_test_axis_masks(&topo, masks, naxes);
    for (m = 0; m < nmasks; m++) {
        for (k = 0; k < TPU_COLL_COUNT; k++) {
            if ((k == TPU_COLL_PPERMUTE && naxes[m] != 1) || (k == TPU_COLL_P2P && masks[m] != 1)) {
                continue;
            }
            for (s = 0; s < (k == TPU_COLL_PSUM ? 3 : 1); s++) {
                tpu_coll_desc_t d;
                char label[160];

                request(&d, k, masks[m], tpu_topo_group_size(&topo, masks[m]), s);
                snprintf(label, sizeof(label), "%s wrap %s slices %d %s axes %u %s %llu B", shape,
                         wrap, slices, tpu_coll_name(d.kind), masks[m], tpu_dtype_name(d.dtype),
                         (unsigned long long)d.bytes);
                cases += check_case(&topo, &link, &d, NULL, label);
                for (i = 0; i < tpu_coll_algo_count(); i++) {
                    tpu_coll_kind_t kind;
                    const char *name, *summary;

                    tpu_coll_algo_at(i, &kind, &name, &summary);
                    if (kind == d.kind) {
                        cases += check_case(&topo, &link, &d, name, label);
                    }
                }
            }
        }
    }
    printf("%s wrap %s slices %d: %d cases, in place == out of place\n", shape, wrap, slices,
           cases);
    return cases;
}

static void test_in_place(void **state)
{
    static const struct {
        const char *shape, *wrap;
        int slices;
    } shapes[] = {
        {"2", "none", 1},   {"5", "none", 1},     {"2x3", "all", 1},
        {"4x4", "none", 1}, {"2x2x2", "none", 1}, {"2x2", "none", 2},
    };
    size_t i;
    int cases = 0;

    (void)state;
    for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        cases += check_shape(shapes[i].shape, shapes[i].wrap, shapes[i].slices);
    }
    assert_true(cases > 100);
}

/* A chip outside the pod is refused with a message. */
static void test_bad_chip(void **state)
{
    tpu_err_t err = {0};
    tpu_topo_t topo;
    tpu_chip_spec_t chip;
    tpu_link_model_t link;
    tpu_coll_desc_t d;
    tpu_coll_plan_t *plan = NULL;
    uint64_t a, b, n;

    (void)state;
    tpu_test_topo(&topo, "2x2", "none", 1);
    tpu_chip_preset("v5e", &chip, &err);
    tpu_chip_link_model(&chip, &link);
    tpu_coll_desc_init(&d);
    d.kind = TPU_COLL_ALL_GATHER;
    d.axes = 3;
    d.bytes = 64;
    assert_int_equal(tpu_coll_plan_create(&topo, &link, &d, &plan, &err), TPU_OK);
    assert_int_equal(tpu_coll_in_place_offsets(plan, 4, &a, &b, &n, &err), TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "chip 4"));
    assert_int_equal(tpu_coll_in_place_offsets(plan, 3, &a, &b, &n, &err), TPU_OK);
    /* Chip 3 of a 2x2 is member 3 of the all-gather over x,y: its input at 3 * 16. */
    assert_int_equal(a, 48);
    assert_int_equal(b, 0);
    assert_int_equal(n, 64);
    tpu_coll_plan_destroy(plan);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_in_place),
                                       cmocka_unit_test(test_bad_chip)};

    return tpu_test_main(argc, argv, "coll in place", tests, sizeof(tests) / sizeof(tests[0]));
}
