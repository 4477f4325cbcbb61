/*
 * JAX-semantics collectives on sharded arrays over the loopback transport: every
 * worked example of jax_collective_semantics.md (expected values from the JAX
 * docstrings and the docs' *_ref functions, written out here), over whole-axis
 * groups and over groups that are not whole torus axes (part of an axis, strided,
 * listed out of order through an explicit device order), plus modeled-time
 * equality between the sim and loopback transports and bad input.
 */
#include "tpu/chip.h"
#include "tpu/mesh.h"
#include "tpu/spmd.h"
#include "tpu/xport.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

typedef struct env {
    tpu_topo_t topo;
    tpu_chip_spec_t chip;
    tpu_link_model_t link;
    tpu_mesh_t *mesh;
    tpu_xport_t *x;
    tpu_spmd_t *s;
} env_t;

/* A runtime on 'shape' (all axes wrapped when 'wrap'), mesh 'spec' (explicit
 * 'devices' when not NULL), loopback ('sim' 0) or sim transport. */
static void env_open(env_t *e, const char *shape, int wrap, const char *spec,
                     const int32_t *devices, int sim)
{
    tpu_err_t err = {0};
    int dims[TPU_MAX_AXES], w[TPU_MAX_AXES] = {wrap, wrap, wrap}, naxes;

    memset(e, 0, sizeof(*e));
    assert_int_equal(tpu_topo_parse_shape(shape, dims, &naxes, &err), TPU_OK);
    assert_int_equal(tpu_topo_init(&e->topo, naxes, dims, w, 1, &err), TPU_OK);
    assert_int_equal(tpu_chip_preset("v5e", &e->chip, &err), TPU_OK);
    tpu_chip_link_model(&e->chip, &e->link);
    if (tpu_mesh_create(&e->topo, spec, devices, devices ? e->topo.nchips : 0, &e->mesh, &err) !=
        TPU_OK) {
        fail_msg("mesh: %s", err.msg);
    }
    if (sim) {
        assert_int_equal(tpu_xport_sim_create(e->topo.nchips, &e->x, &err), TPU_OK);
    } else {
        assert_int_equal(tpu_xport_loopback_create(e->topo.nchips, &e->x, &err), TPU_OK);
    }
    if (tpu_spmd_create(&e->topo, &e->link, &e->chip, e->mesh, e->x, NULL, &e->s, &err) != TPU_OK) {
        fail_msg("spmd: %s", err.msg);
    }
}

static void env_close(env_t *e)
{
    tpu_spmd_destroy(e->s);
    tpu_xport_destroy(e->x);
    tpu_mesh_destroy(e->mesh);
}

/* An f32 array placed from 'host'. */
static tpu_array_t *arr_f32(env_t *e, int ndims, const int64_t *shape, const char *spec,
                            const float *host)
{
    tpu_err_t err = {0};
    tpu_array_t *a = NULL;

    if (tpu_array_create(e->s, ndims, shape, TPU_DTYPE_F32, spec, &a, &err) != TPU_OK) {
        fail_msg("array: %s", err.msg);
    }
    assert_int_equal(tpu_array_place(a, host, &err), TPU_OK);
    return a;
}

/* The shard of the chip at mesh position 'pos' (loopback: local index = chip). */
static const float *shard_at(env_t *e, const tpu_array_t *a, int pos)
{
    return tpu_array_local(a, tpu_mesh_chip(e->mesh, pos));
}

static void expect_f32(const float *got, const float *want, int n)
{
    int i;

    for (i = 0; i < n; i++) {
        if (got[i] != want[i]) {
            fail_msg("element %d: got %g, want %g", i, (double)got[i], (double)want[i]);
        }
    }
}

static void check(tpu_status_t status, const tpu_err_t *err)
{
    if (status != TPU_OK) {
        fail_msg("%s", err->msg);
    }
}

static const float f16[16] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 1, 2};

/* s2 f1: mesh (i=4), P('i'): every block becomes [22,20,12,17]. */
static void run_psum_f1(const char *shape, int wrap, const char *spec, const char *axes)
{
    static const float want[4] = {22, 20, 12, 17};
    int64_t shp[1] = {16}, got_shape[1];
    float host[4];
    tpu_err_t err = {0};
    tpu_array_t *a, *r = NULL;
    env_t e;
    int p;

    env_open(&e, shape, wrap, spec, NULL, 0);
    a = arr_f32(&e, 1, shp, axes, f16);
    check(tpu_array_psum(a, axes, TPU_REDOP_SUM, &r, &err), &err);
    for (p = 0; p < 4; p++) {
        expect_f32(shard_at(&e, r, p), want, 4);
    }
    tpu_array_shape(r, got_shape);
    assert_int_equal(got_shape[0], 4);
    check(tpu_array_gather(r, host, &err), &err);
    expect_f32(host, want, 4);
    assert_int_equal(tpu_spmd_call_count(e.s), 1);
    assert_true(tpu_spmd_call_at(e.s, 0)->modeled_us > 0);
    tpu_array_destroy(r);
    tpu_array_destroy(a);
    env_close(&e);
}

static void test_psum_f1(void **state)
{
    (void)state;
    run_psum_f1("4", 1, "i=4", "i"); /* a whole ring */
    run_psum_f1("4", 0, "i=4", "i"); /* a whole line */
}

/* s2 f2/f3: mesh (i=2, j=2), x = arange(16).reshape(4,4), P('i','j'). */
static void test_psum_f2_f3(void **state)
{
    static const float want_i[2][4] = {{8, 10, 16, 18}, {12, 14, 20, 22}};
    static const float want_glob[8] = {8, 10, 12, 14, 16, 18, 20, 22};
    static const float want_ij[4] = {20, 24, 36, 40};
    int64_t shp[2] = {4, 4}, gs[2];
    float x[16], host[8];
    tpu_err_t err = {0};
    tpu_array_t *a, *r = NULL;
    char spec[64];
    env_t e;
    int p;

    (void)state;
    for (p = 0; p < 16; p++) {
        x[p] = (float)p;
    }
    env_open(&e, "2x2", 0, "i=2,j=2", NULL, 0);
    a = arr_f32(&e, 2, shp, "i,j", x);
    check(tpu_array_psum(a, "i", TPU_REDOP_SUM, &r, &err), &err);
    for (p = 0; p < 4; p++) {
        expect_f32(shard_at(&e, r, p), want_i[p % 2], 4);
    }
    tpu_array_spec_str(r, spec, sizeof(spec));
    assert_string_equal(spec, "None,j");
    tpu_array_shape(r, gs);
    assert_int_equal(gs[0], 2);
    assert_int_equal(gs[1], 4);
    check(tpu_array_gather(r, host, &err), &err);
    expect_f32(host, want_glob, 8);
    tpu_array_destroy(r);
    check(tpu_array_psum(a, "i,j", TPU_REDOP_SUM, &r, &err), &err);
    for (p = 0; p < 4; p++) {
        expect_f32(shard_at(&e, r, p), want_ij, 4);
    }
    tpu_array_destroy(r);
    tpu_array_destroy(a);
    env_close(&e);
}

/* s2/s3 docstrings: pmap over 4 devices, x = arange(4). */
static void test_psum_pmean_pmap(void **state)
{
    static const float x[4] = {0, 1, 2, 3};
    static const float six[1] = {6}, mean[1] = {1.5f};
    int64_t shp[1] = {4};
    tpu_err_t err = {0};
    tpu_array_t *a, *r = NULL;
    env_t e;
    int p;

    (void)state;
    env_open(&e, "4", 1, "i=4", NULL, 0);
    a = arr_f32(&e, 1, shp, "i", x);
    check(tpu_array_psum(a, "i", TPU_REDOP_SUM, &r, &err), &err);
    for (p = 0; p < 4; p++) {
        expect_f32(shard_at(&e, r, p), six, 1);
    }
    tpu_array_destroy(r);
    check(tpu_array_pmean(a, "i", &r, &err), &err);
    for (p = 0; p < 4; p++) {
        expect_f32(shard_at(&e, r, p), mean, 1);
    }
    assert_string_equal(tpu_spmd_call_at(e.s, 1)->name, "pmean");
    tpu_array_destroy(r);
    tpu_array_destroy(a);
    env_close(&e);
}

/* s4 f4: mesh (i=4), x = [3,9,5,2]: tiled -> [3,9,5,2] everywhere; untiled -> (4,1). */
static void test_all_gather_f4(void **state)
{
    static const float x[4] = {3, 9, 5, 2};
    int64_t shp[1] = {4}, ls[2];
    tpu_err_t err = {0};
    tpu_array_t *a, *r = NULL;
    env_t e;
    int p;

    (void)state;
    env_open(&e, "4", 1, "i=4", NULL, 0);
    a = arr_f32(&e, 1, shp, "i", x);
    check(tpu_array_all_gather(a, "i", 0, 1, &r, &err), &err);
    for (p = 0; p < 4; p++) {
        expect_f32(shard_at(&e, r, p), x, 4);
    }
    tpu_array_destroy(r);
    check(tpu_array_all_gather(a, "i", 0, 0, &r, &err), &err);
    assert_int_equal(tpu_array_ndims(r), 2);
    tpu_array_local_shape(r, ls);
    assert_int_equal(ls[0], 4);
    assert_int_equal(ls[1], 1);
    for (p = 0; p < 4; p++) {
        expect_f32(shard_at(&e, r, p), x, 4);
    }
    tpu_array_destroy(r);
    tpu_array_destroy(a);
    env_close(&e);
}

/* s4: mesh (x=2, y=4), each device holds [pos]. */
static void test_all_gather_xy(void **state)
{
    static const float xy[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    static const float x15[2] = {1, 5};
    int64_t shp[1] = {8};
    tpu_err_t err = {0};
    tpu_array_t *a, *r = NULL;
    env_t e;
    int p;

    (void)state;
    env_open(&e, "2x4", 1, "x=2,y=4", NULL, 0);
    a = arr_f32(&e, 1, shp, "(x,y)", xy);
    check(tpu_array_all_gather(a, "x,y", 0, 1, &r, &err), &err);
    for (p = 0; p < 8; p++) {
        expect_f32(shard_at(&e, r, p), xy, 8);
    }
    tpu_array_destroy(r);
    check(tpu_array_all_gather(a, "x", 0, 1, &r, &err), &err);
    expect_f32(shard_at(&e, r, 1), x15, 2);
    expect_f32(shard_at(&e, r, 5), x15, 2);
    tpu_array_destroy(r);
    tpu_array_destroy(a);
    env_close(&e);
}

/* s5 docstring: pmap, x = arange(16).reshape(4,4), row k on device k. */
static void test_psum_scatter_pmap(void **state)
{
    static const float sums[4] = {24, 28, 32, 36};
    int64_t shp[2] = {4, 4};
    float x[16];
    tpu_err_t err = {0};
    tpu_array_t *a, *r = NULL;
    env_t e;
    int p;

    (void)state;
    for (p = 0; p < 16; p++) {
        x[p] = (float)p;
    }
    env_open(&e, "4", 1, "i=4", NULL, 0);
    a = arr_f32(&e, 2, shp, "i", x); /* shards of shape (1, 4) */
    /* Untiled over dimension 1 (of size 4 = G): device k gets sums[k]. */
    check(tpu_array_psum_scatter(a, "i", 1, 0, &r, &err), &err);
    for (p = 0; p < 4; p++) {
        expect_f32(shard_at(&e, r, p), &sums[p], 1);
    }
    tpu_array_destroy(r);
    check(tpu_array_psum_scatter(a, "i", 1, 1, &r, &err), &err);
    for (p = 0; p < 4; p++) {
        expect_f32(shard_at(&e, r, p), &sums[p], 1);
    }
    tpu_array_destroy(r);
    tpu_array_destroy(a);
    env_close(&e);
}

/* s5 f6: mesh (i=4), the 16-element x, tiled: [22] [20] [12] [17]. */
static void test_psum_scatter_f6(void **state)
{
    static const float want[4] = {22, 20, 12, 17};
    int64_t shp[1] = {16};
    float host[4];
    tpu_err_t err = {0};
    tpu_array_t *a, *r = NULL;
    env_t e;
    int p;

    (void)state;
    env_open(&e, "4", 0, "i=4", NULL, 0);
    a = arr_f32(&e, 1, shp, "i", f16);
    check(tpu_array_psum_scatter(a, "i", 0, 1, &r, &err), &err);
    for (p = 0; p < 4; p++) {
        expect_f32(shard_at(&e, r, p), &want[p], 1);
    }
    check(tpu_array_gather(r, host, &err), &err);
    expect_f32(host, want, 4);
    tpu_array_destroy(r);
    tpu_array_destroy(a);
    env_close(&e);
}

/* s6 f9: mesh (i=4), split_axis = concat_axis = 0, tiled. */
static void test_all_to_all_f9(void **state)
{
    static const float want[16] = {3, 5, 5, 9, 1, 9, 3, 7, 4, 2, 5, 1, 1, 6, 8, 2};
    int64_t shp[1] = {16};
    float host[16];
    tpu_err_t err = {0};
    tpu_array_t *a, *r = NULL;
    env_t e;
    int p;

    (void)state;
    env_open(&e, "4", 1, "i=4", NULL, 0);
    a = arr_f32(&e, 1, shp, "i", f16);
    check(tpu_array_all_to_all(a, "i", 0, 0, 1, &r, &err), &err);
    for (p = 0; p < 4; p++) {
        expect_f32(shard_at(&e, r, p), want + 4 * p, 4);
    }
    check(tpu_array_gather(r, host, &err), &err);
    expect_f32(host, want, 16);
    tpu_array_destroy(r);
    tpu_array_destroy(a);
    env_close(&e);
}

/*
 * s6 (the hlo/03 shape, scaled down): shard (2, 4, 8), all_to_all over 'y' (G=4)
 * with split_axis=2, concat_axis=1, tiled -> (2, 16, 2):
 *   out_me[a][k*4 + b][c] = in_k[a][b][me*2 + c].
 */
static void test_all_to_all_split2_concat1(void **state)
{
    int64_t shp[3] = {4, 4, 8}, ls[3];
    float x[128];
    tpu_err_t err = {0};
    tpu_array_t *a, *r = NULL;
    env_t e;
    int p, k, i, b, c;

    (void)state;
    for (i = 0; i < 128; i++) {
        x[i] = (float)i;
    }
    env_open(&e, "2x4", 1, "z=2,y=4", NULL, 0);
    /* P('z', None, None): shards (2, 4, 8), the same over y. Make them differ by
     * resharding dimension 1 over nothing and giving each its own values. */
    a = arr_f32(&e, 3, shp, "z", x);
    for (p = 0; p < 8; p++) {
        float *sh = (float *)(uintptr_t)shard_at(&e, a, p);

        for (i = 0; i < 64; i++) {
            sh[i] = (float)(p * 100 + i);
        }
    }
    check(tpu_array_all_to_all(a, "y", 2, 1, 1, &r, &err), &err);
    tpu_array_local_shape(r, ls);
    assert_int_equal(ls[0], 2);
    assert_int_equal(ls[1], 16);
    assert_int_equal(ls[2], 2);
    for (p = 0; p < 8; p++) {
        const float *o = shard_at(&e, r, p);
        int zc = p / 4, me = p % 4;

        for (i = 0; i < 2; i++) {
            for (k = 0; k < 4; k++) {
                for (b = 0; b < 4; b++) {
                    for (c = 0; c < 2; c++) {
                        float want = (float)((zc * 4 + k) * 100 + (i * 4 + b) * 8 + me * 2 + c);

                        assert_true(o[(i * 16 + k * 4 + b) * 2 + c] == want);
                    }
                }
            }
        }
    }
    tpu_array_destroy(r);
    tpu_array_destroy(a);
    env_close(&e);
}

/* s8: axis_index on mesh (i=4, j=2). */
static void test_axis_index(void **state)
{
    tpu_err_t err = {0};
    env_t e;
    int c, idx, size;

    (void)state;
    env_open(&e, "4x2", 1, "i=4,j=2", NULL, 0);
    for (c = 0; c < 8; c++) {
        check(tpu_spmd_axis_index(e.s, "i,j", c, &idx, &size, &err), &err);
        assert_int_equal(idx, tpu_mesh_position(e.mesh, c));
        assert_int_equal(size, 8);
        check(tpu_spmd_axis_index(e.s, "j", c, &idx, &size, &err), &err);
        assert_int_equal(idx, tpu_mesh_position(e.mesh, c) % 2);
    }
    env_close(&e);
}

/* The same collectives on the sim transport model the same time, bit for bit. */
static void test_sim_equals_loopback(void **state)
{
    static const char *const axes[] = {"i", "j", "i,j"};
    int64_t shp[2] = {64, 64};
    double t[2][3][3];
    float *x = calloc(64 * 64, sizeof(float));
    int sim, k;

    (void)state;
    for (sim = 0; sim < 2; sim++) {
        tpu_err_t err = {0};
        tpu_array_t *a, *r;
        env_t e;

        env_open(&e, "4x4", 1, "i=4,j=4", NULL, sim);
        a = arr_f32(&e, 2, shp, "i,j", x);
        for (k = 0; k < 3; k++) {
            check(tpu_array_psum(a, axes[k], TPU_REDOP_SUM, &r, &err), &err);
            tpu_array_destroy(r);
            check(tpu_array_all_gather(a, axes[k], 0, 1, &r, &err), &err);
            tpu_array_destroy(r);
            check(tpu_array_all_to_all(a, axes[k], 1, 0, 1, &r, &err), &err);
            tpu_array_destroy(r);
        }
        assert_int_equal(tpu_spmd_call_count(e.s), 9);
        for (k = 0; k < 9; k++) {
            t[sim][k / 3][k % 3] = tpu_spmd_call_at(e.s, k)->modeled_us;
        }
        tpu_array_destroy(a);
        env_close(&e);
    }
    assert_memory_equal(t[0], t[1], sizeof(t[0]));
    free(x);
}

static void test_bad_input(void **state)
{
    int64_t shp[2] = {6, 4};
    tpu_err_t err = {0};
    tpu_array_t *a = NULL, *r = NULL;
    env_t e;

    (void)state;
    env_open(&e, "4x4", 1, "data=4,model=4", NULL, 0);
    assert_int_equal(tpu_array_create(e.s, 2, shp, TPU_DTYPE_F32, "data", &a, &err),
                     TPU_ERR_INVALID);
    assert_string_equal(
        err.msg, "array dimension 0 of size 6 does not divide over mesh axes data of size 4");
    tpu_err_clear(&err);
    assert_int_equal(tpu_array_create(e.s, 2, shp, TPU_DTYPE_F32, "None,data,model", &a, &err),
                     TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "more entries"));
    tpu_err_clear(&err);
    assert_int_equal(tpu_array_create(e.s, 2, shp, TPU_DTYPE_F32, "model,model", &a, &err),
                     TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "uses mesh axis 'model' for dimensions 0 and 1"));
    tpu_err_clear(&err);
    assert_int_equal(tpu_array_create(e.s, 2, shp, TPU_DTYPE_F32, "batch", &a, &err),
                     TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "unknown mesh axis 'batch'"));
    tpu_err_clear(&err);
    check(tpu_array_create(e.s, 2, shp, TPU_DTYPE_F32, "None,model", &a, &err), &err);
    assert_int_equal(tpu_array_psum_scatter(a, "data", 0, 1, &r, &err), TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "size 6, not divisible by the group size 4"));
    tpu_err_clear(&err);
    assert_int_equal(tpu_array_all_to_all(a, "data", 0, 1, 1, &r, &err), TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "size 6, not divisible by the group size 4"));
    tpu_array_destroy(a);
    /* HBM: a v5e holds 16 GB; 5e9 f32 elements per chip do not fit. */
    {
        int64_t big[2] = {50000, 100000};

        tpu_err_clear(&err);
        assert_int_equal(tpu_array_create(e.s, 2, big, TPU_DTYPE_F32, "", &a, &err),
                         TPU_ERR_RESOURCE_EXHAUSTED);
        assert_non_null(strstr(err.msg, "requested"));
        assert_non_null(strstr(err.msg, "capacity"));
    }
    env_close(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_psum_f1),
        cmocka_unit_test(test_psum_f2_f3),
        cmocka_unit_test(test_psum_pmean_pmap),
        cmocka_unit_test(test_all_gather_f4),
        cmocka_unit_test(test_all_gather_xy),
        cmocka_unit_test(test_psum_scatter_pmap),
        cmocka_unit_test(test_psum_scatter_f6),
        cmocka_unit_test(test_all_to_all_f9),
        cmocka_unit_test(test_all_to_all_split2_concat1),
        cmocka_unit_test(test_axis_index),
        cmocka_unit_test(test_sim_equals_loopback),
        cmocka_unit_test(test_bad_input),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
