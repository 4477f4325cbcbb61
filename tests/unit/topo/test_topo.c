/*
 * Topology: shapes, wrap rules, ids and coordinates, links, routes.  Exhaustive
 * over every pair of chips of several shapes (with and without wraparound,
 * non-powers of two, 1 to 3 axes).
 */
#include "tpu/topo.h"

#include "test_main.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void make(tpu_topo_t *t, const char *shape, const char *wrap, int slices)
{
    tpu_err_t err = {0};
    int dims[TPU_MAX_AXES], w[TPU_MAX_AXES], naxes, is_auto;

    assert_int_equal(tpu_topo_parse_shape(shape, dims, &naxes, &err), TPU_OK);
    assert_int_equal(tpu_topo_parse_wrap(wrap, naxes, w, &is_auto, &err), TPU_OK);
    assert_false(is_auto);
    assert_int_equal(tpu_topo_init(t, naxes, dims, w, slices, &err), TPU_OK);
    assert_int_equal(tpu_topo_check(t, &err), TPU_OK);
}

static void test_parse_shape(void **state)
{
    static const char *bad[] = {"4x0", "4xx4",    "-3",    "4x4junk", "",    "x4",
                                "4x",  "4x4x4x4", "99999", "0",       "4 x4"};
    tpu_err_t err = {0};
    int dims[TPU_MAX_AXES], naxes;
    size_t i;

    (void)state;
    assert_int_equal(tpu_topo_parse_shape("16x20x28", dims, &naxes, &err), TPU_OK);
    assert_int_equal(naxes, 3);
    assert_int_equal(dims[0] * dims[1] * dims[2], 8960);
    assert_int_equal(tpu_topo_parse_shape("16", dims, &naxes, &err), TPU_OK);
    assert_int_equal(naxes, 1);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        tpu_err_clear(&err);
        assert_int_equal(tpu_topo_parse_shape(bad[i], dims, &naxes, &err), TPU_ERR_INVALID);
        assert_true(strlen(err.msg) > 0);
        if (bad[i][0] != '\0') {
            assert_non_null(strstr(err.msg, bad[i]));
        }
    }
}

static void test_parse_wrap(void **state)
{
    tpu_err_t err = {0};
    int w[TPU_MAX_AXES], is_auto;

    (void)state;
    assert_int_equal(tpu_topo_parse_wrap("x,z", 3, w, &is_auto, &err), TPU_OK);
    assert_true(w[0] && !w[1] && w[2]);
    assert_int_equal(tpu_topo_parse_wrap("z", 2, w, &is_auto, &err), TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "'z'"));
    tpu_err_clear(&err);
    assert_int_equal(tpu_topo_parse_wrap("x,x", 2, w, &is_auto, &err), TPU_ERR_INVALID);
    tpu_err_clear(&err);
    assert_int_equal(tpu_topo_parse_wrap("sometimes", 2, w, &is_auto, &err), TPU_ERR_INVALID);
    assert_int_equal(tpu_topo_parse_wrap("auto", 2, w, &is_auto, &err), TPU_OK);
    assert_true(is_auto);
}

static void test_wrap_auto(void **state)
{
    int w[TPU_MAX_AXES];
    int d1[3] = {16, 4, 1}, d2[3] = {4, 4, 4}, d3[3] = {2, 2, 4}, d4[3] = {16, 16, 1};
    int d5[3] = {16, 20, 28};

    (void)state;
    tpu_topo_wrap_auto(TPU_WRAP_RULE_FULL_AXIS, 2, d1, w);
    assert_true(w[0] && !w[1]);
    tpu_topo_wrap_auto(TPU_WRAP_RULE_FULL_AXIS, 2, d4, w);
    assert_true(w[0] && w[1]);
    tpu_topo_wrap_auto(TPU_WRAP_RULE_CUBES, 3, d2, w);
    assert_true(w[0] && w[1] && w[2]);
    tpu_topo_wrap_auto(TPU_WRAP_RULE_CUBES, 3, d3, w);
    assert_true(!w[0] && !w[1] && !w[2]);
    tpu_topo_wrap_auto(TPU_WRAP_RULE_CUBES, 3, d5, w);
    assert_true(w[0] && w[1] && w[2]);
}

/* Exhaustive checks on one topology. */
static void check_all(const tpu_topo_t *t)
{
    int a, b, ax, d, l;
    int *seen = calloc((size_t)t->nlinks, sizeof(int));

    assert_non_null(seen);
    for (a = 0; a < t->nchips; a++) {
        int c[TPU_MAX_AXES];

        tpu_topo_coords(t, a, c);
        assert_int_equal(tpu_topo_chip(t, tpu_topo_slice_of(t, a), c), a);
        for (ax = 0; ax < TPU_MAX_AXES; ax++) {
            for (d = -1; d <= 1; d += 2) {
                int link = tpu_topo_link(t, a, ax, d);
                int nb = tpu_topo_neighbor(t, a, ax, d);

                assert_int_equal(link < 0, nb < 0);
                if (link >= 0) {
                    assert_true(link < t->nlinks);
                    seen[link]++;
                    assert_int_equal(tpu_topo_hops(t, a, nb), 1);
                }
            }
        }
        for (b = 0; b < t->nchips; b++) {
            tpu_route_t r, routes[TPU_MAX_ROUTES];
            int links[256], n, i, chip = a, nr;

            if (tpu_topo_slice_of(t, a) != tpu_topo_slice_of(t, b)) {
                continue;
            }
            tpu_topo_route(t, a, b, NULL, 1, &r);
            assert_int_equal(r.nhops, tpu_topo_hops(t, a, b));
            n = tpu_topo_route_links(t, &r, links, 256);
            assert_int_equal(n, r.nhops);
            for (i = 0; i < n; i++) {
                int src, axis, dir, dst;

                tpu_topo_link_ends(t, links[i], &src, &axis, &dir, &dst);
                assert_int_equal(src, chip);
                chip = dst;
            }
            assert_int_equal(chip, b);
            nr = tpu_topo_routes_disjoint(t, a, b, routes);
            assert_true(nr >= 1);
            for (i = 0; i < nr; i++) {
                assert_int_equal(routes[i].nhops, r.nhops);
            }
            /* Every pair of kept routes shares no directed link. */
            for (i = 0; i < nr; i++) {
                int j, li[256], ni = tpu_topo_route_links(t, &routes[i], li, 256);

                for (j = i + 1; j < nr; j++) {
                    int lj[256], nj = tpu_topo_route_links(t, &routes[j], lj, 256), x, y;

                    for (x = 0; x < ni; x++) {
                        for (y = 0; y < nj; y++) {
                            assert_int_not_equal(li[x], lj[y]);
                        }
                    }
                }
            }
        }
    }
    for (l = 0; l < t->nlinks; l++) {
        assert_int_equal(seen[l], 1);
    }
    free(seen);
}

static void test_exhaustive(void **state)
{
    static const struct {
        const char *shape, *wrap;
        int slices;
    } cases[] = {
        {"16", "all", 1},    {"5", "none", 1},     {"4x4", "none", 1},  {"4x4", "all", 1},
        {"3x5", "all", 1},   {"3x5", "x", 1},      {"2x3", "none", 1},  {"2x2", "all", 1},
        {"4x4x4", "all", 1}, {"2x2x4", "none", 1}, {"3x3x2", "x,z", 1}, {"4x6", "y", 1},
        {"2x2", "none", 3},  {"1x4", "all", 1},
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        tpu_topo_t t;

        make(&t, cases[i].shape, cases[i].wrap, cases[i].slices);
        check_all(&t);
    }
}

static void test_disjoint_counts(void **state)
{
    tpu_topo_t t;
    tpu_route_t routes[TPU_MAX_ROUTES];
    int c[3] = {3, 3, 0}, c2[3] = {2, 2, 2};

    (void)state;
    make(&t, "4x4", "none", 1);
    assert_int_equal(tpu_topo_routes_disjoint(&t, 0, tpu_topo_chip(&t, 0, c), routes), 2);
    make(&t, "4x4x4", "all", 1);
    assert_int_equal(tpu_topo_routes_disjoint(&t, 0, tpu_topo_chip(&t, 0, c2), routes), 6);
    assert_int_equal(tpu_topo_diameter(&t, 7), 6);
}

static void test_axes_and_groups(void **state)
{
    tpu_topo_t t;
    tpu_err_t err = {0};
    unsigned mask;
    char buf[32];
    int chip;

    (void)state;
    make(&t, "4x4", "all", 2);
    assert_int_equal(tpu_topo_parse_axes(&t, "dcn,y", &mask, &err), TPU_OK);
    tpu_topo_axes_str(mask, buf, sizeof(buf));
    assert_string_equal(buf, "dcn,y");
    assert_int_equal(tpu_topo_group_size(&t, mask), 8);
    for (chip = 0; chip < t.nchips; chip++) {
        int g = tpu_topo_group_index(&t, mask, chip);

        assert_int_equal(tpu_topo_group_member(&t, mask, chip, g), chip);
    }
    assert_int_equal(tpu_topo_parse_axes(&t, "z", &mask, &err), TPU_ERR_INVALID);
    tpu_err_clear(&err);
    assert_int_equal(tpu_topo_parse_axes(&t, "x,x", &mask, &err), TPU_ERR_INVALID);
    make(&t, "4x4", "all", 1);
    tpu_err_clear(&err);
    assert_int_equal(tpu_topo_parse_axes(&t, "dcn", &mask, &err), TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "1 slice"));
}

static void test_hosts(void **state)
{
    tpu_topo_t t;
    int host[3] = {4, 2, 1}, seen[8] = {0}, chip;

    (void)state;
    make(&t, "4x4", "none", 1);
    assert_int_equal(tpu_topo_host_count(&t, host), 2);
    for (chip = 0; chip < 16; chip++) {
        seen[tpu_topo_host_of(&t, host, chip)]++;
    }
    assert_int_equal(seen[0], 8);
    assert_int_equal(seen[1], 8);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_shape),     cmocka_unit_test(test_parse_wrap),
        cmocka_unit_test(test_wrap_auto),       cmocka_unit_test(test_exhaustive),
        cmocka_unit_test(test_disjoint_counts), cmocka_unit_test(test_axes_and_groups),
        cmocka_unit_test(test_hosts),
    };

    return tpu_test_main(argc, argv, "topo", tests, sizeof tests / sizeof tests[0]);
}
