/*
 * Meshes and groups: the default device assignment on 4x4, 16, 2x2x4, two
 * slices and shapes where it is not the identity (chip lists worked out by hand
 * in the comments), explicit device orders, bad meshes, and JAX's group tables
 * (jax_collective_semantics.md s1) with the whole-torus-axes test.
 */
#include "tpu/groups.h"
#include "tpu/mesh.h"

#include "test_main.h"
#include "test_support.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void make_topo(tpu_topo_t *t, int naxes, int d0, int d1, int d2, int wrap, int slices)
{
    tpu_err_t err = {0};
    int dims[TPU_MAX_AXES] = {d0, d1, d2}, w[TPU_MAX_AXES] = {wrap, wrap, wrap};

    assert_int_equal(tpu_topo_init(t, naxes, dims, w, slices, &err), TPU_OK);
}

static tpu_mesh_t *mesh_of(const tpu_topo_t *t, const char *spec)
{
    tpu_err_t err = {0};
    tpu_mesh_t *m = NULL;

    if (tpu_mesh_create(t, spec, NULL, 0, &m, &err) != TPU_OK) {
        fail_msg("mesh %s: %s", spec, err.msg);
    }
    return m;
}

static void expect_chips(const tpu_mesh_t *m, const int *chips, int n)
{
    int i;

    assert_int_equal(tpu_mesh_size(m), n);
    for (i = 0; i < n; i++) {
        assert_int_equal(tpu_mesh_chip(m, i), chips[i]);
        assert_int_equal(tpu_mesh_position(m, chips[i]), i);
    }
}

static void expect_identity(const tpu_mesh_t *m)
{
    int i;

    for (i = 0; i < tpu_mesh_size(m); i++) {
        assert_int_equal(tpu_mesh_chip(m, i), i);
    }
}

/* Mesh axis 'axis' of m lies on the torus axes 'want' ("x[2 of 4]*y"). */
static void expect_layout(const tpu_mesh_t *m, int axis, const char *want)
{
    char buf[64];

    tpu_mesh_axis_layout(m, axis, buf, sizeof(buf));
    assert_string_equal(buf, want);
}

static void test_parse(void **state)
{
    static const char *bad[] = {"",        "data",    "data=0",  "data=x",  "=4",     "data=4,",
                                "4data=4", "da-ta=4", "a=1,a=2", "data=4x", "data=-1"};
    char names[TPU_MESH_MAX_AXES][TPU_MESH_NAME_LEN];
    int sizes[TPU_MESH_MAX_AXES], n;
    tpu_err_t err = {0};
    size_t i;

    (void)state;
    assert_int_equal(tpu_mesh_parse("dcn=2,data=4,model=4", names, sizes, &n, &err), TPU_OK);
    assert_int_equal(n, 3);
    assert_string_equal(names[0], "dcn");
    assert_string_equal(names[2], "model");
    assert_int_equal(sizes[1], 4);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        tpu_err_clear(&err);
        assert_int_equal(tpu_mesh_parse(bad[i], names, sizes, &n, &err), TPU_ERR_INVALID);
        assert_true(strlen(err.msg) > 0);
    }
}

/* On a 4x4 (x slow, y fast; chip = 4x + y) every mesh below is the identity. */
static void test_default_4x4(void **state)
{
    tpu_topo_t t;
    tpu_mesh_t *m;

    (void)state;
    make_topo(&t, 2, 4, 4, 1, 0, 1);
    /* model takes y (the fastest axis of size 4), data takes x. */
    m = mesh_of(&t, "data=4,model=4");
    expect_identity(m);
    expect_layout(m, 0, "x");
    expect_layout(m, 1, "y");
    assert_int_equal(tpu_mesh_axis_index(m, 6, 0), 1);
    assert_int_equal(tpu_mesh_axis_index(m, 6, 1), 2);
    tpu_mesh_destroy(m);
    m = mesh_of(&t, "data=16");
    expect_identity(m);
    expect_layout(m, 0, "x*y");
    tpu_mesh_destroy(m);
    /* model=8: all of y, then the inner 2 of x; data: the outer 2 of x.
     * chip = 4 * (2d + m/4) + m%4 = 8d + m. */
    m = mesh_of(&t, "data=2,model=8");
    expect_identity(m);
    expect_layout(m, 1, "x[2 of 4]*y");
    tpu_mesh_destroy(m);
}

static void test_default_16_and_2x2x4(void **state)
{
    tpu_topo_t t;
    tpu_mesh_t *m;

    (void)state;
    make_topo(&t, 1, 16, 1, 1, 1, 1);
    m = mesh_of(&t, "data=16");
    expect_identity(m);
    tpu_mesh_destroy(m);
    /* data=4,model=4 on a line of 16: model is the inner 4, data the outer 4. */
    m = mesh_of(&t, "data=4,model=4");
    expect_identity(m);
    expect_layout(m, 1, "x[4 of 16]");
    tpu_mesh_destroy(m);
    /* 2x2x4 (chip = 8x + 4y + z): model = z; data = x*y (y fast): identity. */
    make_topo(&t, 3, 2, 2, 4, 0, 1);
    m = mesh_of(&t, "data=4,model=4");
    expect_identity(m);
    expect_layout(m, 0, "x*y");
    tpu_mesh_destroy(m);
}

/* Meshes where the default is not the identity. */
static void test_default_permuted(void **state)
{
    /* 4x2 (chip = 2x + y), data=2,model=4: model takes x (size 4, one axis), data
     * takes y: chip(d, m) = 2m + d; positions d*4+m. */
    static const int c4x2[8] = {0, 2, 4, 6, 1, 3, 5, 7};
    /* 8x2, data=2,model=8: model = x, data = y: chip = 2m + d. */
    static const int c8x2[16] = {0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15};
    /* 2x2x4 (chip = 8x + 4y + z), a=4,b=2,c=2: c = y (the fastest axis of size 2),
     * b = x, a = z: chip(a, b, c) = 8b + 4c + a. */
    int c224[16], a, b, c;
    tpu_topo_t t;
    tpu_mesh_t *m;

    (void)state;
    make_topo(&t, 2, 4, 2, 1, 0, 1);
    m = mesh_of(&t, "data=2,model=4");
    expect_chips(m, c4x2, 8);
    tpu_mesh_destroy(m);
    make_topo(&t, 2, 8, 2, 1, 0, 1);
    m = mesh_of(&t, "data=2,model=8");
    expect_chips(m, c8x2, 16);
    tpu_mesh_destroy(m);
    for (a = 0; a < 4; a++) {
        for (b = 0; b < 2; b++) {
            for (c = 0; c < 2; c++) {
                c224[a * 4 + b * 2 + c] = 8 * b + 4 * c + a;
            }
        }
    }
    make_topo(&t, 3, 2, 2, 4, 0, 1);
    m = mesh_of(&t, "a=4,b=2,c=2");
    expect_chips(m, c224, 16);
    tpu_mesh_destroy(m);
}

static void test_default_slices(void **state)
{
    tpu_topo_t t;
    tpu_mesh_t *m;
    tpu_err_t err = {0};

    (void)state;
    /* Two slices of 4x4: chip = 16s + 4x + y. */
    make_topo(&t, 2, 4, 4, 1, 0, 2);
    m = mesh_of(&t, "dcn=2,data=4,model=4");
    expect_identity(m);
    expect_layout(m, 0, "dcn");
    tpu_mesh_destroy(m);
    /* Without a dcn axis the slices are the slowest physical axis: data=8 takes
     * x and the slices (x fast): chip = 16 (d/4) + 4 (d%4) + m = 4d + m. */
    m = mesh_of(&t, "data=8,model=4");
    expect_identity(m);
    expect_layout(m, 0, "dcn*x");
    tpu_mesh_destroy(m);
    /* dcn first is not required: model=4 on y, dcn on the slices, data on x:
     * position (d, s, m) = 8d + 4s + m is chip 16s + 4d + m. */
    m = mesh_of(&t, "data=4,dcn=2,model=4");
    assert_int_equal(tpu_mesh_chip(m, 4), 16);
    assert_int_equal(tpu_mesh_chip(m, 8 + 4 + 3), 16 + 4 + 3);
    tpu_mesh_destroy(m);
    assert_int_equal(tpu_mesh_create(&t, "dcn=4,data=2,model=4", NULL, 0, &m, &err),
                     TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "number of slices, 2, not 4"));
}

static void test_explicit_and_errors(void **state)
{
    int32_t order[16], dup[16];
    tpu_topo_t t;
    tpu_mesh_t *m = NULL;
    tpu_err_t err = {0};
    int i;

    (void)state;
    make_topo(&t, 2, 4, 4, 1, 0, 1);
    for (i = 0; i < 16; i++) {
        order[i] = 15 - i;
        dup[i] = i;
    }
    dup[3] = 5;
    assert_int_equal(tpu_mesh_create(&t, "data=4,model=4", order, 16, &m, &err), TPU_OK);
    assert_int_equal(tpu_mesh_chip(m, 0), 15);
    assert_int_equal(tpu_mesh_position(m, 15), 0);
    assert_int_equal(tpu_mesh_axis_index(m, 15, 1), 0);
    assert_int_equal(tpu_mesh_axis_index(m, 14, 1), 1);
    tpu_mesh_destroy(m);
    assert_int_equal(tpu_mesh_create(&t, "data=4,model=4", dup, 16, &m, &err), TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "chip 5 twice"));
    tpu_err_clear(&err);
    assert_int_equal(tpu_mesh_create(&t, "data=4,model=4", order, 8, &m, &err), TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "8 chips"));
    tpu_err_clear(&err);
    assert_int_equal(tpu_mesh_create(&t, "data=4,model=8", NULL, 0, &m, &err), TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "32 positions"));
    assert_non_null(strstr(err.msg, "4x4 has 16 chips"));
    tpu_err_clear(&err);
    assert_int_equal(tpu_mesh_create(&t, "data=3,model=5", NULL, 0, &m, &err), TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "15 positions"));
    tpu_err_clear(&err);
    assert_int_equal(tpu_mesh_create(&t, "data=4,data=4", NULL, 0, &m, &err), TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "named twice"));
}

static void expect_groups(const tpu_groups_t *g, int ngroups, int size, const int *chips)
{
    int i;

    assert_int_equal(g->ngroups, ngroups);
    assert_int_equal(g->size, size);
    for (i = 0; i < ngroups * size; i++) {
        assert_int_equal(g->chips[i], chips[i]);
    }
}

static void groups_of(const tpu_mesh_t *m, const char *axes, tpu_groups_t *g)
{
    tpu_err_t err = {0};

    if (tpu_mesh_groups(m, axes, g, &err) != TPU_OK) {
        fail_msg("groups %s: %s", axes, err.msg);
    }
    assert_int_equal(tpu_groups_check(g, tpu_mesh_size(m), &err), TPU_OK);
}

/*
 * The groups of 'axes' on m: 'ngroups' groups of 'size', chips 'chips' in order;
 * 'mask' the torus axes they are whole of (0: they are not whole torus axes; -1:
 * not checked).
 */
static void expect_axes_groups(const tpu_topo_t *t, const tpu_mesh_t *m, const char *axes,
                               int ngroups, int size, const int *chips, int mask)
{
    tpu_groups_t g;
    unsigned got;

    groups_of(m, axes, &g);
    expect_groups(&g, ngroups, size, chips);
    if (mask > 0) {
        assert_true(tpu_groups_axes_mask(t, &g, &got));
        assert_int_equal(got, (unsigned)mask);
    } else if (mask == 0) {
        assert_false(tpu_groups_axes_mask(t, &g, &got));
    }
    tpu_groups_fini(&g);
}

/* The group tables of jax_collective_semantics.md s1. */
static void test_jax_group_tables(void **state)
{
    static const int y[] = {0, 1, 2, 3, 4, 5, 6, 7};
    static const int x[] = {0, 4, 1, 5, 2, 6, 3, 7};
    static const int ac[] = {0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15};
    static const int ca[] = {0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15};
    static const int iota16[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    tpu_topo_t t;
    tpu_mesh_t *m;

    (void)state;
    make_topo(&t, 2, 2, 4, 1, 0, 1);
    m = mesh_of(&t, "x=2,y=4");
    expect_identity(m);
    expect_axes_groups(&t, m, "y", 2, 4, y, 2);
    expect_axes_groups(&t, m, "x", 4, 2, x, 1);
    expect_axes_groups(&t, m, "x,y", 1, 8, y, 3);
    /* ('y','x'): the same chips in another order: not the torus order. */
    expect_axes_groups(&t, m, "(y,x)", 1, 8, x, 0);
    tpu_mesh_destroy(m);

    make_topo(&t, 2, 4, 4, 1, 0, 1);
    m = mesh_of(&t, "a=2,b=2,c=4");
    expect_axes_groups(&t, m, "a,c", 2, 8, ac, 0); /* half of x, strided */
    expect_axes_groups(&t, m, "c,a", 2, 8, ca, -1);
    tpu_mesh_destroy(m);

    /* data=2,model=8 on 4x4: 'model' is y and half of x: not whole axes. */
    m = mesh_of(&t, "data=2,model=8");
    expect_axes_groups(&t, m, "model", 2, 8, iota16, 0);
    tpu_mesh_destroy(m);
}

static void test_axes_index(void **state)
{
    /* mesh (i=4, j=2): axis_index(('i','j')) = [[0,1],[2,3],[4,5],[6,7]] (docstring). */
    tpu_topo_t t;
    tpu_mesh_t *m;
    tpu_err_t err = {0};
    int c, idx, size;

    (void)state;
    make_topo(&t, 2, 4, 2, 1, 0, 1);
    assert_int_equal(tpu_mesh_create(&t, "i=4,j=2", NULL, 0, &m, &err), TPU_OK);
    for (c = 0; c < 8; c++) {
        int pos = tpu_mesh_position(m, c);

        assert_int_equal(tpu_mesh_axes_index(m, "i,j", c, &idx, &size, &err), TPU_OK);
        assert_int_equal(idx, pos);
        assert_int_equal(size, 8);
        assert_int_equal(tpu_mesh_axes_index(m, "j,i", c, &idx, &size, &err), TPU_OK);
        assert_int_equal(idx, (pos % 2) * 4 + pos / 2);
    }
    assert_int_equal(tpu_mesh_axes_index(m, "k", 0, &idx, &size, &err), TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "unknown mesh axis 'k'"));
    tpu_mesh_destroy(m);
}

static void test_groups_check(void **state)
{
    static const int32_t overlap[] = {0, 1, 1, 2};
    static const int32_t missing[] = {0, 1, 2, 0};
    static const int32_t outside[] = {0, 1, 2, 9};
    static const int32_t lists[] = {0, 1, 2, 3, 4, 5};
    static const int sizes[] = {2, 4};
    tpu_groups_t g = {2, 2, (int32_t *)(uintptr_t)overlap};
    tpu_groups_t out;
    tpu_err_t err = {0};
    char buf[64];

    (void)state;
    assert_int_equal(tpu_groups_check(&g, 4, &err), TPU_ERR_INVALID);
    assert_string_equal(err.msg, "chip 1 is in group 0 and group 1");
    tpu_err_clear(&err);
    g.chips = (int32_t *)(uintptr_t)missing;
    assert_int_equal(tpu_groups_check(&g, 4, &err), TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "chip 0 is in group 0 and group 1"));
    tpu_err_clear(&err);
    g.chips = (int32_t *)(uintptr_t)outside;
    assert_int_equal(tpu_groups_check(&g, 4, &err), TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "chip 9 in group 1 is outside the pod of 4 chips"));
    tpu_err_clear(&err);
    g.ngroups = 1;
    g.chips = (int32_t *)(uintptr_t)lists;
    assert_int_equal(tpu_groups_check(&g, 4, &err), TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "chip 2 is in no group"));
    tpu_err_clear(&err);
    assert_int_equal(tpu_groups_from_lists(lists, sizes, 2, &out, &err), TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "group 0 has 2 chips, group 1 has 4"));
    tpu_groups_str(&g, buf, sizeof(buf));
    assert_string_equal(buf, "{0,1}");
}

/*
 * The mesh parser and builder under allocation failure: meshes of 1 to 3 axes,
 * default and explicit device orders, their groups over one and two axes.  For
 * every n, failing allocation n on is TPU_ERR_NO_MEMORY with a message and
 * leaks nothing; some n lets every call succeed.
 */
static void test_oom_loop(void **state)
{
    static const struct {
        int naxes, dims[3];
        const char *spec, *axes;
        int explicit_order;
    } cases[] = {
        {2, {4, 4, 1}, "data=4,model=4", "model", 0},
        {2, {4, 4, 1}, "data=2,fsdp=2,model=4", "data,model", 0},
        {3, {2, 2, 4}, "a=4,b=4", "b,a", 1},
        {1, {16, 1, 1}, "x=16", "x", 1},
    };
    size_t c;

    (void)state;
    for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        long budget;
        int done = 0;

        for (budget = 0; !done && budget < 100000; budget++) {
            tpu_err_t err = {0};
            tpu_topo_t topo;
            tpu_mesh_t *mesh = NULL;
            tpu_groups_t g;
            int w[TPU_MAX_AXES] = {1, 1, 1}, i, idx[TPU_MESH_MAX_AXES], n = 0;
            int32_t order[16];
            tpu_status_t status;

            memset(&g, 0, sizeof(g));
            assert_int_equal(tpu_topo_init(&topo, cases[c].naxes, cases[c].dims, w, 1, NULL),
                             TPU_OK);
            for (i = 0; i < 16; i++) {
                order[i] = (int32_t)((i * 5) % 16); /* a permutation of 0..15 */
            }
            tpu_test_alloc_fail_after(budget);
            status = tpu_mesh_create(&topo, cases[c].spec, cases[c].explicit_order ? order : NULL,
                                     cases[c].explicit_order ? 16 : 0, &mesh, &err);
            if (status == TPU_OK) {
                status = tpu_mesh_groups(mesh, cases[c].axes, &g, &err);
            }
            if (status == TPU_OK) {
                status = tpu_mesh_parse_axes(mesh, cases[c].axes, idx, &n, &err);
            }
            tpu_groups_fini(&g);
            tpu_mesh_destroy(mesh);
            if (status == TPU_OK) {
                done = !tpu_test_alloc_failed();
            } else if (status != TPU_ERR_NO_MEMORY || strlen(err.msg) == 0) {
                tpu_test_alloc_restore();
                fail_msg("%s, budget %ld: status %d, message '%s'", cases[c].spec, budget,
                         (int)status, err.msg);
            }
            if (tpu_test_alloc_live() != 0) {
                long live = tpu_test_alloc_live();

                tpu_test_alloc_restore();
                fail_msg("%s, budget %ld: %ld allocations leaked", cases[c].spec, budget, live);
            }
            tpu_test_alloc_restore();
        }
        assert_true(done);
        printf("oom %s: success after %ld allocations\n", cases[c].spec, budget - 1);
    }
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_default_4x4),
        cmocka_unit_test(test_default_16_and_2x2x4),
        cmocka_unit_test(test_default_permuted),
        cmocka_unit_test(test_default_slices),
        cmocka_unit_test(test_explicit_and_errors),
        cmocka_unit_test(test_jax_group_tables),
        cmocka_unit_test(test_axes_index),
        cmocka_unit_test(test_groups_check),
        cmocka_unit_test(test_oom_loop),
    };

    return tpu_test_main(argc, argv, "spmd mesh", tests, sizeof tests / sizeof tests[0]);
}
