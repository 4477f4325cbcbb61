/*
 * The link model's fast paths against their plain definitions (issue 30 item 5):
 * the orbit table built from counted coordinates equals the one built link by
 * link from tpu_topo_link_ends() and tpu_topo_link() (open, mixed and wrapped
 * pods, translations and reflections); a nearly sorted group merged by its runs
 * equals qsort's order; the dense end of each resource's last busy interval and
 * the interval searches equal a linear scan of the list; ppermute pairs named
 * over an axis (the pairs of a domain) time as the same pairs given one by one.
 * So the speed-ups cannot change a modeled figure without failing here (the
 * modeled times themselves are compared with every chip's walk in
 * test_coll_classes).
 */
#include "tpu/chip.h"
#include "tpu/coll.h"
#include "tpu/topo.h"

#include "linkmodel.h"
#include "linkmodel_busy.h"
#include "linkmodel_share.h"
#include "test_main.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* The link model of a real chip (its constants do not matter here). */
static tpu_link_model_t plain_link(void)
{
    tpu_chip_spec_t chip;
    tpu_link_model_t l;

    assert_int_equal(tpu_chip_preset("v5p", &chip, NULL), TPU_OK);
    tpu_chip_link_model(&chip, &l);
    return l;
}

/* The chip standing for 'ch' by the definition (linkmodel.h, orbit mode). */
static int image_chip(const tpu_topo_t *t, int ch, const int *period, unsigned reflect,
                      unsigned *flip)
{
    int c[TPU_MAX_AXES], a;

    *flip = 0;
    tpu_topo_coords(t, ch, c);
    for (a = 0; a < TPU_MAX_AXES; a++) {
        if ((reflect & (1u << a)) && c[a] >= t->dims[a] / 2) {
            c[a] = t->dims[a] - 1 - c[a];
            *flip |= 1u << a;
        } else {
            c[a] %= period[a];
        }
    }
    return tpu_topo_chip(t, tpu_topo_slice_of(t, ch), c);
}

/* The orbit table of one pod and symmetry == the link-by-link definition. */
static void check_orbits(const int *dims, const int *wrap, int slices, const int *period,
                         unsigned reflect)
{
    tpu_link_model_t link = plain_link();
    tpu_linkmodel_t lm;
    tpu_topo_t t;
    int l, ch;
    unsigned flip;

    assert_int_equal(tpu_topo_init(&t, 3, dims, wrap, slices, NULL), TPU_OK);
    assert_int_equal(tpu__linkmodel_init(&lm, &t, &link, 0), TPU_OK);
    assert_int_equal(tpu__linkmodel_set_orbits(&lm, period, reflect), TPU_OK);
    for (ch = 0; ch < t.nchips; ch++) {
        assert_int_equal(lm.orbit_chip[ch], image_chip(&t, ch, period, reflect, &flip));
    }
    for (l = 0; l < t.nlinks; l++) {
        int src, axis, dir, dst, img, want;

        tpu_topo_link_ends(&t, l, &src, &axis, &dir, &dst);
        img = image_chip(&t, src, period, reflect, &flip);
        want = tpu_topo_link(&t, img, axis, (flip & (1u << axis)) ? -dir : dir);
        assert_int_equal(lm.orbit[l], want >= 0 ? want : l);
    }
    tpu__linkmodel_fini(&lm);
}

static void test_orbit_table(void **state)
{
    static const int shapes[][3] = {{4, 4, 4}, {4, 6, 8}, {5, 4, 6}, {2, 3, 4}, {6, 1, 4}};
    static const int wraps[][3] = {{0, 0, 0}, {1, 0, 1}, {1, 1, 1}, {0, 1, 0}};
    size_t s, w;
    int a;

    (void)state;
    for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
        for (w = 0; w < sizeof(wraps) / sizeof(wraps[0]); w++) {
            const int *d = shapes[s];
            int one[3] = {1, 1, 1}, half[3], whole[3];
            unsigned even = 0;

            for (a = 0; a < 3; a++) {
                half[a] = d[a] % 2 == 0 && d[a] >= 2 ? d[a] / 2 : d[a];
                whole[a] = d[a];
                even |= d[a] % 2 == 0 && !wraps[w][a] ? 1u << a : 0;
            }
            /* Translations by one, by half the axis, none; reflections of the open
             * even axes with the others translated; two slices. */
            check_orbits(d, wraps[w], 1, one, 0);
            check_orbits(d, wraps[w], 1, half, 0);
            check_orbits(d, wraps[w], 1, whole, even);
            check_orbits(d, wraps[w], 1, one, even);
            check_orbits(d, wraps[w], 2, one, even);
        }
    }
}

/* Any total order will do: later starts first, then flows by index. */
static int rec_cmp(const void *pa, const void *pb)
{
    const tpu_lm_entry_t *a = pa, *b = pb;

    return a->st != b->st ? (a->st > b->st ? -1 : 1) : (a->k > b->k) - (a->k < b->k);
}

/* Groups of every length around the insertion-sort cut, with few and many runs. */
static void test_sort_group_is_a_sort(void **state)
{
    tpu_link_model_t link = plain_link();
    tpu_linkmodel_t lm;
    tpu_topo_t t;
    int dims[3] = {2, 1, 1}, wrap[3] = {0, 0, 0};
    int64_t len, i;
    unsigned seed = 12345;
    int runs;

    (void)state;
    assert_int_equal(tpu_topo_init(&t, 1, dims, wrap, 1, NULL), TPU_OK);
    assert_int_equal(tpu__linkmodel_init(&lm, &t, &link, 0), TPU_OK);
    for (len = 1; len <= 700; len += len < 40 ? 1 : 37) {
        for (runs = 1; runs <= 64; runs *= 4) {
            tpu_lm_entry_t *v = malloc((size_t)len * sizeof(*v)),
                           *w = malloc((size_t)len * sizeof(*w));

            assert_non_null(v);
            assert_non_null(w);
            memset(v, 0, (size_t)len * sizeof(*v));
            for (i = 0; i < len; i++) {
                seed = seed * 1103515245u + 12345u;
                v[i].res = 7;
                v[i].k = (int32_t)i;
                /* 'runs' ascending runs of starts, with ties broken by k. */
                v[i].st = (double)((i * runs) % len / runs) + (double)((seed >> 16) % 3);
                v[i].m = (double)i;
            }
            memcpy(w, v, (size_t)len * sizeof(*v));
            qsort(w, (size_t)len, sizeof(*w), rec_cmp);
            assert_int_equal(tpu__linkmodel_sort_group(&lm, v, len, sizeof(*v), rec_cmp), TPU_OK);
            assert_memory_equal(v, w, (size_t)len * sizeof(*v));
            free(v);
            free(w);
        }
    }
    tpu__linkmodel_fini(&lm);
}

/* The list's first interval that ends after t, by a scan. */
static int scan_first_after(const tpu_linkmodel_t *lm, int r, double t)
{
    const double *iv = tpu__linkmodel_busy_list(lm, r);
    int i;

    for (i = 0; i < lm->niv[r] && iv[2 * i + 1] <= t; i++) {
    }
    return i;
}

/* Random intervals, merged and inserted out of order: the dense last end and the
 * searches agree with the list itself. */
static void test_busy_last_end(void **state)
{
    tpu_link_model_t link = plain_link();
    tpu_linkmodel_t lm;
    tpu_topo_t t;
    int dims[3] = {4, 1, 1}, wrap[3] = {1, 0, 0}, n, r;
    unsigned seed = 99;

    (void)state;
    assert_int_equal(tpu_topo_init(&t, 1, dims, wrap, 1, NULL), TPU_OK);
    assert_int_equal(tpu__linkmodel_init(&lm, &t, &link, 0), TPU_OK);
    for (n = 0; n < 3000; n++) {
        double a, q;

        seed = seed * 1103515245u + 12345u;
        r = (int)((seed >> 8) % 3);
        a = (double)((seed >> 12) % 400);
        assert_int_equal(tpu__linkmodel_busy_add(&lm, r, a, a + 1 + (double)((seed >> 20) % 3)),
                         TPU_OK);
        assert_true(lm.niv[r] > 0);
        assert_true(lm.ivend[r] == tpu__linkmodel_busy_list(&lm, r)[2 * (lm.niv[r] - 1) + 1]);
        q = (double)((seed >> 4) % 420);
        assert_int_equal(tpu__linkmodel_busy_first_after(&lm, r, q), scan_first_after(&lm, r, q));
    }
    tpu__linkmodel_fini(&lm);
}

/* The modeled time of ppermute along 'axis' by 'shift' with 'algo', over the shift's
 * pairs listed one by one (every chip built) when 'explicit'. */
static double ppermute_us(const tpu_topo_t *t, int axis, int shift, int explicit)
{
    tpu_chip_spec_t chip;
    tpu_link_model_t link;
    tpu_coll_desc_t d;
    tpu_coll_plan_t *p = NULL;
    tpu_coll_result_t r;
    int32_t *pairs = malloc((size_t)t->nchips * 2 * sizeof(int32_t));
    int c, n = t->dims[axis];

    assert_non_null(pairs);
    assert_int_equal(tpu_chip_preset("v5p", &chip, NULL), TPU_OK);
    tpu_chip_link_model(&chip, &link);
    for (c = 0; c < t->nchips; c++) {
        int co[TPU_MAX_AXES];

        tpu_topo_coords(t, c, co);
        co[axis] = ((co[axis] + shift) % n + n) % n;
        pairs[2 * c] = c;
        pairs[2 * c + 1] = tpu_topo_chip(t, 0, co);
    }
    tpu_coll_desc_init(&d);
    d.kind = TPU_COLL_PPERMUTE;
    d.bytes = 1 << 20;
    d.axes = 1u << axis;
    d.shift = shift;
    strcpy(d.algo, "pairs");
    if (explicit) {
        d.pairs = pairs;
        d.npairs = t->nchips;
    }
    assert_int_equal(tpu_coll_plan_create(t, &link, &d, &p, NULL), TPU_OK);
    assert_int_equal(tpu_coll_plan_model(p, &r, NULL), TPU_OK);
    tpu_coll_plan_destroy(p);
    free(pairs);
    return r.modeled_us;
}

/* ppermute pairs named over an axis (orbit timing: the pairs of a domain) == the
 * same pairs given one by one (every chip), on open, mixed and wrapped pods. */
static void test_ppermute_pairs_domain(void **state)
{
    static const int wraps[][3] = {{0, 0, 0}, {1, 0, 1}, {1, 1, 1}};
    int dims[3] = {4, 6, 8}, axis, shift;
    size_t w;

    (void)state;
    for (w = 0; w < sizeof(wraps) / sizeof(wraps[0]); w++) {
        tpu_topo_t t;

        assert_int_equal(tpu_topo_init(&t, 3, dims, wraps[w], 1, NULL), TPU_OK);
        for (axis = 0; axis < 3; axis++) {
            for (shift = -1; shift <= 2; shift += 3) {
                assert_true(ppermute_us(&t, axis, shift, 0) == ppermute_us(&t, axis, shift, 1));
            }
        }
    }
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_orbit_table),
        cmocka_unit_test(test_sort_group_is_a_sort),
        cmocka_unit_test(test_busy_last_end),
        cmocka_unit_test(test_ppermute_pairs_domain),
    };

    return tpu_test_main(argc, argv, "linkmodel_fast", tests, sizeof tests / sizeof tests[0]);
}
