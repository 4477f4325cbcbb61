/*
 * JAX-semantics collectives on sharded arrays over the loopback transport: every
 * worked example of jax_collective_semantics.md (expected values from the JAX
 * docstrings and the docs' *_ref functions, written out here), over whole-axis
 * groups and over groups that are not whole torus axes (part of an axis, strided,
 * listed out of order through an explicit device order), the group ring cost and
 * the orbit matrix: psum, all_gather and ppermute (psum_scatter, all_to_all and
 * the rest are test_spmd_coll_scatter.c).
 */
#include "tpu/chip.h"
#include "tpu/coll.h"
#include "tpu/mesh.h"
#include "tpu/spmd.h"
#include "tpu/xport.h"

#include "spmd_env.h"
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


/* s2 f1: mesh (i=4), P('i'): every block becomes [22,20,12,17]. */
static void run_psum_f1(const char *shape, int wrap, const char *spec, const char *axes)
{
    static const float want[4] = {22, 20, 12, 17};
    int64_t shp[1] = {16}, got_shape[1];
    float host[4];
    tpu_err_t err = {0};
    tpu_array_t *a, *r = NULL;
    env_t e;

    a = spmd_env_open_arr(&e, shape, wrap, spec, 1, shp, axes, spmd_f16);
    spmd_check(tpu_array_psum(a, axes, TPU_REDOP_SUM, &r, &err), &err);
    spmd_expect_shards(&e, r, 4, want, 0, 4);
    tpu_array_shape(r, got_shape);
    assert_int_equal(got_shape[0], 4);
    spmd_check(tpu_array_gather(r, host, &err), &err);
    spmd_expect_f32(host, want, 4);
    assert_int_equal(tpu_spmd_call_count(e.s), 1);
    assert_true(tpu_spmd_call_at(e.s, 0)->modeled_us > 0);
    tpu_array_destroy(r);
    spmd_env_close_arr(&e, a);
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
    spmd_iota(x, 16);
    a = spmd_env_open_arr(&e, "2x2", 0, "i=2,j=2", 2, shp, "i,j", x);
    spmd_check(tpu_array_psum(a, "i", TPU_REDOP_SUM, &r, &err), &err);
    for (p = 0; p < 4; p++) {
        spmd_expect_f32(spmd_shard_at(&e, r, p), want_i[p % 2], 4);
    }
    tpu_array_spec_str(r, spec, sizeof(spec));
    assert_string_equal(spec, "None,j");
    tpu_array_shape(r, gs);
    assert_int_equal(gs[0], 2);
    assert_int_equal(gs[1], 4);
    spmd_check(tpu_array_gather(r, host, &err), &err);
    spmd_expect_f32(host, want_glob, 8);
    tpu_array_destroy(r);
    spmd_check(tpu_array_psum(a, "i,j", TPU_REDOP_SUM, &r, &err), &err);
    spmd_expect_shards(&e, r, 4, want_ij, 0, 4);
    tpu_array_destroy(r);
    spmd_env_close_arr(&e, a);
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

    (void)state;
    a = spmd_env_open_arr(&e, "4", 1, "i=4", 1, shp, "i", x);
    spmd_check(tpu_array_psum(a, "i", TPU_REDOP_SUM, &r, &err), &err);
    spmd_expect_shards(&e, r, 4, six, 0, 1);
    tpu_array_destroy(r);
    spmd_check(tpu_array_pmean(a, "i", &r, &err), &err);
    spmd_expect_shards(&e, r, 4, mean, 0, 1);
    assert_string_equal(tpu_spmd_call_at(e.s, 1)->name, "pmean");
    tpu_array_destroy(r);
    spmd_env_close_arr(&e, a);
}

/* s4 f4: mesh (i=4), x = [3,9,5,2]: tiled -> [3,9,5,2] everywhere; untiled -> (4,1). */
static void test_all_gather_f4(void **state)
{
    static const float x[4] = {3, 9, 5, 2};
    int64_t shp[1] = {4}, ls[2];
    tpu_err_t err = {0};
    tpu_array_t *a, *r = NULL;
    env_t e;

    (void)state;
    a = spmd_env_open_arr(&e, "4", 1, "i=4", 1, shp, "i", x);
    spmd_check(tpu_array_all_gather(a, "i", 0, 1, &r, &err), &err);
    spmd_expect_shards(&e, r, 4, x, 0, 4);
    tpu_array_destroy(r);
    spmd_check(tpu_array_all_gather(a, "i", 0, 0, &r, &err), &err);
    assert_int_equal(tpu_array_ndims(r), 2);
    tpu_array_local_shape(r, ls);
    assert_int_equal(ls[0], 4);
    assert_int_equal(ls[1], 1);
    spmd_expect_shards(&e, r, 4, x, 0, 4);
    tpu_array_destroy(r);
    spmd_env_close_arr(&e, a);
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

    (void)state;
    a = spmd_env_open_arr(&e, "2x4", 1, "x=2,y=4", 1, shp, "(x,y)", xy);
    spmd_check(tpu_array_all_gather(a, "x,y", 0, 1, &r, &err), &err);
    spmd_expect_shards(&e, r, 8, xy, 0, 8);
    tpu_array_destroy(r);
    spmd_check(tpu_array_all_gather(a, "x", 0, 1, &r, &err), &err);
    spmd_expect_f32(spmd_shard_at(&e, r, 1), x15, 2);
    spmd_expect_f32(spmd_shard_at(&e, r, 5), x15, 2);
    tpu_array_destroy(r);
    spmd_env_close_arr(&e, a);
}

/* s4: ('y','x') is not the torus order of the mesh (x=2, y=4): the group algorithms. */
static void test_all_gather_yx(void **state)
{
    static const float xy[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    static const float yx[8] = {0, 4, 1, 5, 2, 6, 3, 7};
    int64_t shp[1] = {8};
    tpu_err_t err = {0};
    tpu_array_t *a, *r = NULL;
    env_t e;

    (void)state;
    a = spmd_env_open_arr(&e, "2x4", 1, "x=2,y=4", 1, shp, "(x,y)", xy);
    spmd_check(tpu_array_all_gather(a, "y,x", 0, 1, &r, &err), &err);
    spmd_expect_shards(&e, r, 8, yx, 0, 8);
    assert_non_null(strstr(tpu_spmd_call_at(e.s, 0)->algorithm, "group"));
    tpu_array_destroy(r);
    spmd_env_close_arr(&e, a);
}

/*
 * The docstrings' axis_index_groups=[[0,2],[3,1]] on 4 devices, x =
 * arange(16).reshape(4,4) with row k on device k: an explicit device order
 * [0,2,3,1] makes the groups of mesh axis 'm' of (g=2, m=2) exactly {0,2} and
 * {3,1}, in that order.  On a line of 4, {0,2} is strided: the group algorithms.
 */
static void test_docstring_groups_0231(void **state)
{
    static const int32_t devices[4] = {0, 2, 3, 1};
    static const float g02[8] = {0, 1, 2, 3, 8, 9, 10, 11};
    static const float g31[8] = {12, 13, 14, 15, 4, 5, 6, 7};
    static const float rs[4][2] = {{8, 10}, {20, 22}, {12, 14}, {16, 18}};
    int64_t shp[2] = {4, 4};
    float x[16];
    tpu_err_t err = {0};
    tpu_array_t *a, *r = NULL;
    env_t e;
    int p, c, wrap;

    (void)state;
    for (wrap = 0; wrap < 2; wrap++) {
        spmd_env_open(&e, "4", wrap, "g=2,m=2", devices, 0);
        /* Mesh position p holds row devices[p], so chip k holds row k. */
        for (p = 0; p < 4; p++) {
            for (c = 0; c < 4; c++) {
                x[p * 4 + c] = (float)(devices[p] * 4 + c);
            }
        }
        a = spmd_arr_f32(&e, 2, shp, "(g,m)", x);
        spmd_check(tpu_array_all_gather(a, "m", 0, 1, &r, &err), &err);
        spmd_expect_f32(tpu_array_local(r, 0), g02, 8);
        spmd_expect_f32(tpu_array_local(r, 2), g02, 8);
        spmd_expect_f32(tpu_array_local(r, 3), g31, 8);
        spmd_expect_f32(tpu_array_local(r, 1), g31, 8);
        tpu_array_destroy(r);
        spmd_check(tpu_array_psum_scatter(a, "m", 1, 1, &r, &err), &err);
        for (c = 0; c < 4; c++) {
            spmd_expect_f32(tpu_array_local(r, c), rs[c], 2);
        }
        tpu_array_destroy(r);
        spmd_env_close_arr(&e, a);
    }
}

/*
 * psum docstrings with axis_index_groups=[[0,1],[2,3]]: mesh (g=2, i=2) on a line
 * of 4, groups of 'i' are {0,1} and {2,3}, half of the axis each.
 */
static void test_psum_groups_0123(void **state)
{
    static const float x4[4] = {0, 1, 2, 3};
    static const float want4[4] = {1, 1, 5, 5};
    static const float want16[4][4] = {
        {4, 6, 8, 10}, {4, 6, 8, 10}, {20, 22, 24, 26}, {20, 22, 24, 26}};
    int64_t shp1[1] = {4}, shp2[2] = {4, 4};
    float x16[16];
    tpu_err_t err = {0};
    tpu_array_t *a, *r = NULL;
    env_t e;
    int p;

    (void)state;
    spmd_iota(x16, 16);
    a = spmd_env_open_arr(&e, "4", 0, "g=2,i=2", 1, shp1, "(g,i)", x4);
    spmd_check(tpu_array_psum(a, "i", TPU_REDOP_SUM, &r, &err), &err);
    for (p = 0; p < 4; p++) {
        spmd_expect_f32(tpu_array_local(r, p), &want4[p], 1);
    }
    tpu_array_destroy(r);
    tpu_array_destroy(a);
    a = spmd_arr_f32(&e, 2, shp2, "(g,i)", x16);
    spmd_check(tpu_array_psum(a, "i", TPU_REDOP_SUM, &r, &err), &err);
    for (p = 0; p < 4; p++) {
        spmd_expect_f32(tpu_array_local(r, p), want16[p], 4);
    }
    assert_non_null(strstr(tpu_spmd_call_at(e.s, 1)->algorithm, "group"));
    tpu_array_destroy(r);
    spmd_env_close_arr(&e, a);
}

/* s7 f7: mesh (i=4), x = arange(8), perm [(i, (i+1)%4)]: [6,7] [0,1] [2,3] [4,5]. */
static void test_ppermute_f7(void **state)
{
    static const float x[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    static const float want[8] = {6, 7, 0, 1, 2, 3, 4, 5};
    static const int perm[8] = {0, 1, 1, 2, 2, 3, 3, 0};
    int64_t shp[1] = {8};
    tpu_err_t err = {0};
    tpu_array_t *a, *r = NULL;
    env_t e;

    (void)state;
    a = spmd_env_open_arr(&e, "4", 1, "i=4", 1, shp, "i", x);
    spmd_check(tpu_array_ppermute(a, "i", perm, 4, &r, &err), &err);
    spmd_expect_shards(&e, r, 4, want, 2, 2);
    tpu_array_destroy(r);
    {
        /* A pair of a member with itself, and members that are no target: zeros. */
        static const int self[4] = {0, 0, 1, 2};
        static const float want2[8] = {0, 1, 0, 0, 2, 3, 0, 0};
        double us;

        spmd_check(tpu_array_ppermute(a, "i", self, 2, &r, &err), &err);
        spmd_expect_shards(&e, r, 4, want2, 2, 2);
        tpu_array_destroy(r);
        us = tpu_spmd_call_at(e.s, 1)->modeled_us;
        /* 8 bytes over one hop on v5e: alpha + 8 / (W/2) */
        assert_true(fabs(us - (e.link.ici_latency + 8 / (e.link.ici_bw / 2)) * 1e6) <= 1e-9);
    }
    spmd_env_close_arr(&e, a);
}

/* s7: mesh (x=2, y=4): ppermute over 'y' by one, and over 'x' with [(0,1)] only. */
static void test_ppermute_xy(void **state)
{
    static const float v[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    static const int py[8] = {0, 1, 1, 2, 2, 3, 3, 0};
    static const int px[2] = {0, 1};
    int64_t shp[1] = {8};
    tpu_err_t err = {0};
    tpu_array_t *a, *r = NULL;
    env_t e;
    int p;

    (void)state;
    a = spmd_env_open_arr(&e, "2x4", 0, "x=2,y=4", 1, shp, "(x,y)", v);
    spmd_check(tpu_array_ppermute(a, "y", py, 4, &r, &err), &err);
    for (p = 0; p < 8; p++) {
        float want = (float)((p / 4) * 4 + (p % 4 + 3) % 4);

        spmd_expect_f32(spmd_shard_at(&e, r, p), &want, 1);
    }
    tpu_array_destroy(r);
    spmd_check(tpu_array_ppermute(a, "x", px, 1, &r, &err), &err);
    for (p = 0; p < 8; p++) {
        float want = p < 4 ? 0.0f : (float)(p - 4);

        spmd_expect_f32(spmd_shard_at(&e, r, p), &want, 1);
    }
    tpu_array_destroy(r);
    {
        static const int dup[4] = {0, 1, 1, 1};

        assert_int_equal(tpu_array_ppermute(a, "y", dup, 2, &r, &err), TPU_ERR_INVALID);
        assert_non_null(strstr(err.msg, "index 1 twice as a target"));
    }
    spmd_env_close_arr(&e, a);
}

/*
 * data=2,model=8 on a 4x4: 'model' is y and half of x.  Every collective over
 * 'model' and over ('model','data') against the result computed here from the
 * blocks (member k of a group is the chip at model index k).
 */
static void run_data2_model8(int wrap)
{
    int64_t shp[1] = {16 * 8};
    float x[128];
    tpu_err_t err = {0};
    tpu_array_t *a, *r = NULL;
    env_t e;
    int p, k, j;

    for (p = 0; p < 128; p++) {
        x[p] = (float)((p * 7) % 23);
    }
    a = spmd_env_open_arr(&e, "4x4", wrap, "data=2,model=8", 1, shp, "(data,model)",
                          x); /* position p holds x[8p, 8p+8) */
    spmd_check(tpu_array_psum(a, "model", TPU_REDOP_SUM, &r, &err), &err);
    for (p = 0; p < 16; p++) {
        for (j = 0; j < 8; j++) {
            float want = 0;

            for (k = 0; k < 8; k++) {
                want += x[((p / 8) * 8 + k) * 8 + j];
            }
            spmd_expect_f32((const float *)spmd_shard_at(&e, r, p) + j, &want, 1);
        }
    }
    tpu_array_destroy(r);
    spmd_check(tpu_array_all_gather(a, "model", 0, 1, &r, &err), &err);
    for (p = 0; p < 16; p++) {
        spmd_expect_f32(spmd_shard_at(&e, r, p), x + (p / 8) * 64, 64);
    }
    tpu_array_destroy(r);
    spmd_check(tpu_array_psum_scatter(a, "model", 0, 1, &r, &err), &err);
    for (p = 0; p < 16; p++) {
        float want = 0;

        for (k = 0; k < 8; k++) {
            want += x[((p / 8) * 8 + k) * 8 + p % 8];
        }
        spmd_expect_f32(spmd_shard_at(&e, r, p), &want, 1);
    }
    tpu_array_destroy(r);
    spmd_check(tpu_array_all_to_all(a, "model", 0, 0, 1, &r, &err), &err);
    for (p = 0; p < 16; p++) {
        for (k = 0; k < 8; k++) {
            /* chunk k of the result: chunk (p%8) of member k's block */
            spmd_expect_f32((const float *)spmd_shard_at(&e, r, p) + k,
                            &x[((p / 8) * 8 + k) * 8 + p % 8], 1);
        }
    }
    tpu_array_destroy(r);
    /* ('model','data'): all 16 chips, member order model-major. */
    spmd_check(tpu_array_all_gather(a, "model,data", 0, 1, &r, &err), &err);
    for (p = 0; p < 16; p++) {
        for (k = 0; k < 16; k++) {
            int src = (k % 2) * 8 + k / 2;

            spmd_expect_f32((const float *)spmd_shard_at(&e, r, p) + k * 8, x + src * 8, 8);
        }
    }
    tpu_array_destroy(r);
    spmd_env_close_arr(&e, a);
}

static void test_data2_model8(void **state)
{
    (void)state;
    run_data2_model8(0);
    run_data2_model8(1);
}

/* A plan of 'kind' over the groups 'g' ('bytes'; 'algo' "" lets the cost
 * model choose) on e's pod, and its modeled result. */
static tpu_coll_plan_t *group_plan(const env_t *e, tpu_coll_kind_t kind, const tpu_groups_t *g,
                                   uint64_t bytes, const char *algo, tpu_coll_result_t *res)
{
    tpu_err_t err = {0};
    tpu_coll_desc_t d;
    tpu_coll_plan_t *plan = NULL;

    tpu_coll_desc_init(&d);
    d.kind = kind;
    d.groups = g;
    d.bytes = bytes;
    snprintf(d.algo, sizeof(d.algo), "%s", algo);
    spmd_check(tpu_coll_plan_create(&e->topo, &e->link, &d, &plan, &err), &err);
    spmd_check(tpu_coll_plan_model(plan, res, &err), &err);
    return plan;
}

/* The time one run of 'plan' takes on transport 'x' (in, out: each chip's buffers). */
static double run_us(const tpu_coll_plan_t *plan, tpu_xport_t *x, void **in, void **out)
{
    tpu_err_t err = {0};
    tpu_coll_exec_t *ex = NULL;
    double us;

    spmd_check(tpu_coll_exec_create(plan, x, &ex, &err), &err);
    spmd_check(tpu_coll_exec_run(ex, NULL, in, out, &us, &err), &err);
    tpu_coll_exec_destroy(ex);
    return us;
}

/* The modeled time of an all-gather over 'axes' with the group ring (forced). */
static double ring_us(const char *shape, int wrap, const char *spec, const char *axes,
                      uint64_t bytes, const char *algo)
{
    tpu_err_t err = {0};
    tpu_groups_t g;
    tpu_coll_result_t res;
    env_t e;

    spmd_env_open(&e, shape, wrap, spec, NULL, 1);
    spmd_check(tpu_mesh_groups(e.mesh, axes, &g, &err), &err);
    tpu_coll_plan_destroy(group_plan(&e, TPU_COLL_ALL_GATHER, &g, bytes, algo, &res));
    tpu_groups_fini(&g);
    spmd_env_close(&e);
    return res.modeled_us;
}

/*
 * The group ring against the cost worked out by hand (allgather_group_ring.c):
 * groups of 4 (B bytes per block) that are 4 consecutive chips of an open line of
 * 8, or every other chip of a wrapped ring of 8, take 4 alpha + 6 B / W; a whole
 * wrapped ring of 4 takes the torus time 2 alpha + 3 B / W.
 */
static void test_group_ring_cost(void **state)
{
    tpu_chip_spec_t chip;
    tpu_link_model_t link;
    tpu_err_t err = {0};
    const double B = 4096;
    double a, W, want, got;

    (void)state;
    assert_int_equal(tpu_chip_preset("v5e", &chip, &err), TPU_OK);
    tpu_chip_link_model(&chip, &link);
    a = link.ici_latency;
    W = link.ici_bw;
    want = (4 * a + 6 * B / W) * 1e6;
    got = ring_us("8", 0, "data=2,model=4", "model", 4 * (uint64_t)B, "group_ring");
    assert_true(fabs(got - want) <= 1e-9 * want);
    got = ring_us("8", 1, "m=4,d=2", "m", 4 * (uint64_t)B, "group_ring");
    assert_true(fabs(got - want) <= 1e-9 * want);
    want = (2 * a + 3 * B / W) * 1e6;
    got = ring_us("4", 1, "m=4", "m", 4 * (uint64_t)B, "group_ring");
    assert_true(fabs(got - want) <= 1e-9 * want);
}

/*
 * Non-axis groups: the model (timed from one domain of the symmetric groups)
 * equals the loopback and sim runs (every chip's flows), bit for bit, on a pod of
 * 512 chips with data=16,model=32 (model: half of y and all of z).
 */
/*
 * More symmetric group sets, every group algorithm forced: 6x6 with b=9 (3 of x
 * times 3 of y), a ring of 12 with b=4 strided by 3, 4x4x4 with a=8 (x and half
 * of y), 16x16 with data=32: the model (one domain) equals the sim run (every
 * chip), bit for bit, wrapped and open (where the groups lie in windows of the
 * open axes: 6x6 and 4x4x4; the others stride over an open axis).
 */
static void test_orbit_matrix(void **state)
{
    static const struct {
        const char *shape, *mesh, *axes;
        int open; /* 1: the groups repeat on the open pod too (each within a window) */
    } cases[] = {{"6x6", "a=4,b=9", "b", 1},
                 {"12", "a=3,b=4", "a", 0},
                 {"4x4x4", "a=8,b=8", "a", 1},
                 {"16x16", "data=32,model=8", "data", 0}};
    static const struct {
        tpu_coll_kind_t kind;
        const char *algo;
    } algos[] = {{TPU_COLL_ALL_GATHER, "group_ring"},     {TPU_COLL_ALL_GATHER, "group_direct"},
                 {TPU_COLL_REDUCE_SCATTER, "group_ring"}, {TPU_COLL_PSUM, "group_rs_ag"},
                 {TPU_COLL_PSUM, "group_direct"},         {TPU_COLL_ALL_TO_ALL, "group_direct"}};
    size_t c, k, i;
    int w;

    (void)state;
    for (i = 0; i < 2 * sizeof(cases) / sizeof(cases[0]); i++) {
        tpu_err_t err = {0};
        tpu_groups_t g;
        int period[TPU_MAX_AXES];
        env_t e;

        /* Wrapped, then open: the same groups repeat along open axes too, each within
         * one window of the period (collectives/plan.c, orbit_period()). */
        w = i < sizeof(cases) / sizeof(cases[0]);
        c = i % (sizeof(cases) / sizeof(cases[0]));
        spmd_env_open(&e, cases[c].shape, w, cases[c].mesh, NULL, 1);
        spmd_check(tpu_mesh_groups(e.mesh, cases[c].axes, &g, &err), &err);
        assert_true(!w || tpu_groups_period(&e.topo, &g, period) > 1);
        for (k = 0; k < sizeof(algos) / sizeof(algos[0]); k++) {
            tpu_coll_result_t res;
            tpu_coll_plan_t *plan =
                group_plan(&e, algos[k].kind, &g, (uint64_t)g.size * 24, algos[k].algo, &res);
            void **in = calloc((size_t)e.topo.nchips, sizeof(void *));
            void **out = calloc((size_t)e.topo.nchips, sizeof(void *));
            double us;
            /* Built and timed from one domain: fewer flows than the pod's. */
            if ((w || cases[c].open) && tpu_coll_plan_model_flows(plan) >= res.flows) {
                fail_msg("%s %s over %s, wrap %d, %s %s: %lld flows built, %lld in the pod",
                         cases[c].shape, cases[c].mesh, cases[c].axes, w,
                         tpu_coll_name(algos[k].kind), algos[k].algo,
                         (long long)tpu_coll_plan_model_flows(plan), (long long)res.flows);
            }
            us = run_us(plan, e.x, in, out);
            if (us != res.modeled_us) {
                fail_msg("%s %s over %s, %s %s: model %.17g, every chip %.17g", cases[c].shape,
                         cases[c].mesh, cases[c].axes, tpu_coll_name(algos[k].kind), algos[k].algo,
                         res.modeled_us, us);
            }
            tpu_coll_plan_destroy(plan);
            free(in);
            free(out);
        }
        tpu_groups_fini(&g);
        spmd_env_close(&e);
    }
}

static void test_orbit_equals_full(void **state)
{
    static const tpu_coll_kind_t kinds[] = {TPU_COLL_PSUM, TPU_COLL_ALL_GATHER,
                                            TPU_COLL_REDUCE_SCATTER, TPU_COLL_ALL_TO_ALL};
    tpu_err_t err = {0};
    tpu_groups_t g;
    tpu_xport_t *xs[2];
    env_t e;
    size_t k;
    int t, i;

    (void)state;
    spmd_env_open(&e, "8x8x8", 1, "data=16,model=32", NULL, 1);
    spmd_check(tpu_mesh_groups(e.mesh, "model", &g, &err), &err);
    spmd_check(tpu_xport_sim_create(512, &xs[0], &err), &err);
    spmd_check(tpu_xport_loopback_create(512, &xs[1], &err), &err);
    for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        tpu_coll_result_t res;
        tpu_coll_plan_t *plan = group_plan(&e, kinds[k], &g, 32 * 64, "", &res);
        uint64_t in_b, out_b;

        assert_true(res.flows < 512 * 64); /* one domain of the 16 groups, not all */
        tpu_coll_plan_sizes(plan, &in_b, &out_b);
        for (t = 0; t < 2; t++) {
            void **in = calloc(512, sizeof(void *)), **out = calloc(512, sizeof(void *));
            double us;

            for (i = 0; i < 512; i++) {
                in[i] = calloc(1, in_b);
                out[i] = calloc(1, out_b);
            }
            us = run_us(plan, xs[t], in, out);
            if (us != res.modeled_us) {
                fail_msg("%s: model %.17g, %s %.17g", tpu_coll_name(kinds[k]), res.modeled_us,
                         t ? "loopback" : "sim", us);
            }
            for (i = 0; i < 512; i++) {
                free(in[i]);
                free(out[i]);
            }
            free(in);
            free(out);
        }
        tpu_coll_plan_destroy(plan);
    }
    tpu_xport_destroy(xs[0]);
    tpu_xport_destroy(xs[1]);
    tpu_groups_fini(&g);
    spmd_env_close(&e);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_psum_f1),
        cmocka_unit_test(test_psum_f2_f3),
        cmocka_unit_test(test_psum_pmean_pmap),
        cmocka_unit_test(test_all_gather_f4),
        cmocka_unit_test(test_all_gather_xy),
        cmocka_unit_test(test_all_gather_yx),
        cmocka_unit_test(test_docstring_groups_0231),
        cmocka_unit_test(test_psum_groups_0123),
        cmocka_unit_test(test_ppermute_f7),
        cmocka_unit_test(test_ppermute_xy),
        cmocka_unit_test(test_data2_model8),
        cmocka_unit_test(test_group_ring_cost),
        cmocka_unit_test(test_orbit_equals_full),
        cmocka_unit_test(test_orbit_matrix),
    };

    return tpu_test_main(argc, argv, "spmd coll", tests, sizeof tests / sizeof tests[0]);
}
