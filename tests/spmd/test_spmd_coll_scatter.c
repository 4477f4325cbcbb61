/*
 * JAX-semantics collectives on sharded arrays, the second half: psum_scatter and
 * all_to_all (the worked examples of jax_collective_semantics.md, tiled and
 * untiled), axis_index, meshes over slices, groups that are refused, modeled-time
 * equality between the sim and loopback transports, and bad input (the first half
 * is test_spmd_coll.c; the runtime both open is spmd_env.c).
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

/*
 * Groups across slices: on two slices of 2x2, psum and all_gather over every
 * axis and pair of axes of "dcn=2,data=2,model=2" and of "data=4,model=2" (data
 * spans the slices without a dcn axis), checked against the blocks of the group
 * members (tpu_mesh_groups), and the same modeled time on sim and loopback.
 */
static void run_slices_mesh(const char *spec)
{
    float x[8 * 4];
    int64_t shp[1] = {8 * 4};
    tpu_err_t err = {0};
    env_t e[2];
    int a, b, p, t, k, j, naxes;

    for (p = 0; p < 32; p++) {
        x[p] = (float)(p * 5 % 11);
    }
    spmd_env_open_slices(&e[0], "2x2", 0, 2, spec, NULL, 0);
    spmd_env_open_slices(&e[1], "2x2", 0, 2, spec, NULL, 1);
    naxes = tpu_mesh_naxes(e[0].mesh);
    for (a = 0; a < naxes; a++) {
        for (b = -1; b < naxes; b++) {
            char axes[64], all[64];
            tpu_groups_t g;
            double us[2][2];

            if (a == b) {
                continue;
            }
            snprintf(axes, sizeof(axes), "%s%s%s", tpu_mesh_axis_name(e[0].mesh, a),
                     b >= 0 ? "," : "", b >= 0 ? tpu_mesh_axis_name(e[0].mesh, b) : "");
            tpu_mesh_str(e[0].mesh, all, sizeof(all));
            spmd_check(tpu_mesh_groups(e[0].mesh, axes, &g, &err), &err);
            for (t = 0; t < 2; t++) {
                tpu_array_t *arr, *r1, *r2;
                char full[64];
                int n = 0, i;

                full[0] = '\0';
                for (i = 0; i < naxes; i++) {
                    n += snprintf(full + n, sizeof(full) - (size_t)n, "%s%s", i ? "," : "(",
                                  tpu_mesh_axis_name(e[t].mesh, i));
                }
                snprintf(full + n, sizeof(full) - (size_t)n, ")");
                arr = spmd_arr_f32(&e[t], 1, shp, full, x); /* position p holds x[4p, 4p+4) */
                spmd_check(tpu_array_psum(arr, axes, TPU_REDOP_SUM, &r1, &err), &err);
                spmd_check(tpu_array_all_gather(arr, axes, 0, 1, &r2, &err), &err);
                us[t][0] = tpu_spmd_call_at(e[t].s, tpu_spmd_call_count(e[t].s) - 2)->modeled_us;
                us[t][1] = tpu_spmd_call_at(e[t].s, tpu_spmd_call_count(e[t].s) - 1)->modeled_us;
                for (k = 0; t == 0 && k < g.ngroups * g.size; k++) {
                    int chip = g.chips[k];
                    const int32_t *m = g.chips + (k / g.size) * g.size;
                    const float *s1 = tpu_array_local(r1, chip), *s2 = tpu_array_local(r2, chip);

                    for (j = 0; j < 4; j++) {
                        float want = 0;

                        for (i = 0; i < g.size; i++) {
                            want += x[tpu_mesh_position(e[t].mesh, m[i]) * 4 + j];
                        }
                        spmd_expect_f32(s1 + j, &want, 1);
                    }
                    for (i = 0; i < g.size; i++) {
                        spmd_expect_f32(s2 + 4 * i, x + tpu_mesh_position(e[t].mesh, m[i]) * 4, 4);
                    }
                }
                tpu_array_destroy(r1);
                tpu_array_destroy(r2);
                tpu_array_destroy(arr);
            }
            if (us[0][0] != us[1][0] || us[0][1] != us[1][1]) {
                fail_msg("%s over %s: loopback %.17g %.17g, sim %.17g %.17g", all, axes, us[0][0],
                         us[0][1], us[1][0], us[1][1]);
            }
            tpu_groups_fini(&g);
        }
    }
    spmd_env_close(&e[0]);
    spmd_env_close(&e[1]);
}

static void test_slices(void **state)
{
    (void)state;
    run_slices_mesh("dcn=2,data=2,model=2");
    run_slices_mesh("data=4,model=2");
    run_slices_mesh("model=2,dcn=2,data=2");
}

/* Groups handed to the collectives directly: bad sets are one clear error. */
static void test_bad_groups(void **state)
{
    static const int32_t overlap[4] = {0, 1, 1, 2};
    static const int32_t ids[6] = {0, 1, 2, 3, 0, 1};
    static const int sizes[2] = {4, 2};
    static const int32_t pairs_dup[4] = {0, 1, 2, 1};
    tpu_groups_t g = {2, 2, (int32_t *)(uintptr_t)overlap}, g2;
    tpu_coll_desc_t d;
    tpu_coll_plan_t *plan = NULL;
    tpu_err_t err = {0};
    env_t e;

    (void)state;
    spmd_env_open(&e, "4", 1, "i=4", NULL, 1);
    tpu_coll_desc_init(&d);
    d.kind = TPU_COLL_ALL_GATHER;
    d.bytes = 64;
    d.groups = &g;
    assert_int_equal(tpu_coll_plan_create(&e.topo, &e.link, &d, &plan, &err), TPU_ERR_INVALID);
    assert_string_equal(err.msg, "chip 1 is in group 0 and group 1");
    tpu_err_clear(&err);
    assert_int_equal(tpu_groups_from_lists(ids, sizes, 2, &g2, &err), TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "group 0 has 4 chips, group 1 has 2"));
    tpu_err_clear(&err);
    d.kind = TPU_COLL_PPERMUTE;
    d.groups = NULL;
    d.pairs = pairs_dup;
    d.npairs = 2;
    assert_int_equal(tpu_coll_plan_create(&e.topo, &e.link, &d, &plan, &err), TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "chip 1 is the target of two pairs"));
    tpu_err_clear(&err);
    /* A group set that is a whole axis runs on the torus algorithms. */
    spmd_check(tpu_mesh_groups(e.mesh, "i", &g2, &err), &err);
    d.kind = TPU_COLL_PSUM;
    d.pairs = NULL;
    d.npairs = 0;
    d.groups = &g2;
    spmd_check(tpu_coll_plan_create(&e.topo, &e.link, &d, &plan, &err), &err);
    assert_null(strstr(tpu_coll_plan_algo(plan), "group"));
    assert_int_equal(tpu_coll_plan_desc(plan)->axes, 1u);
    tpu_coll_plan_destroy(plan);
    tpu_groups_fini(&g2);
    spmd_env_close(&e);
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

    (void)state;
    spmd_iota(x, 16);
    a = spmd_env_open_arr(&e, "4", 1, "i=4", 2, shp, "i", x); /* shards of shape (1, 4) */
    /* Untiled over dimension 1 (of size 4 = G): device k gets sums[k]. */
    spmd_check(tpu_array_psum_scatter(a, "i", 1, 0, &r, &err), &err);
    spmd_expect_shards(&e, r, 4, sums, 1, 1);
    tpu_array_destroy(r);
    spmd_check(tpu_array_psum_scatter(a, "i", 1, 1, &r, &err), &err);
    spmd_expect_shards(&e, r, 4, sums, 1, 1);
    tpu_array_destroy(r);
    spmd_env_close_arr(&e, a);
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

    (void)state;
    a = spmd_env_open_arr(&e, "4", 0, "i=4", 1, shp, "i", spmd_f16);
    spmd_check(tpu_array_psum_scatter(a, "i", 0, 1, &r, &err), &err);
    spmd_expect_shards(&e, r, 4, want, 1, 1);
    spmd_check(tpu_array_gather(r, host, &err), &err);
    spmd_expect_f32(host, want, 4);
    tpu_array_destroy(r);
    spmd_env_close_arr(&e, a);
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

    (void)state;
    a = spmd_env_open_arr(&e, "4", 1, "i=4", 1, shp, "i", spmd_f16);
    spmd_check(tpu_array_all_to_all(a, "i", 0, 0, 1, &r, &err), &err);
    spmd_expect_shards(&e, r, 4, want, 4, 4);
    spmd_check(tpu_array_gather(r, host, &err), &err);
    spmd_expect_f32(host, want, 16);
    tpu_array_destroy(r);
    spmd_env_close_arr(&e, a);
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
    spmd_iota(x, 128);
    /* P('z', None, None): shards (2, 4, 8), the same over y. Make them differ by
     * resharding dimension 1 over nothing and giving each its own values. */
    a = spmd_env_open_arr(&e, "2x4", 1, "z=2,y=4", 3, shp, "z", x);
    for (p = 0; p < 8; p++) {
        float *sh = (float *)(uintptr_t)spmd_shard_at(&e, a, p);

        for (i = 0; i < 64; i++) {
            sh[i] = (float)(p * 100 + i);
        }
    }
    spmd_check(tpu_array_all_to_all(a, "y", 2, 1, 1, &r, &err), &err);
    tpu_array_local_shape(r, ls);
    assert_int_equal(ls[0], 2);
    assert_int_equal(ls[1], 16);
    assert_int_equal(ls[2], 2);
    for (p = 0; p < 8; p++) {
        const float *o = spmd_shard_at(&e, r, p);
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
    spmd_env_close_arr(&e, a);
}

/*
 * s6, tiled=False: shards (4, 3) over i=4, split_axis=0, concat_axis=1 give shards
 * of shape insert(delete((4,3), 0), 1, 4) = (3, 4): out_me[j][k] = in_k[me][j].
 */
static void test_all_to_all_untiled(void **state)
{
    int64_t shp[2] = {16, 3}, ls[2];
    float x[48];
    tpu_err_t err = {0};
    tpu_array_t *a, *r = NULL;
    env_t e;
    int p, j, k;

    (void)state;
    spmd_iota(x, 48);
    a = spmd_env_open_arr(&e, "4", 1, "i=4", 2, shp, "i", x); /* chip k holds rows 4k..4k+3 */
    spmd_check(tpu_array_all_to_all(a, "i", 0, 1, 0, &r, &err), &err);
    assert_int_equal(tpu_array_ndims(r), 2);
    tpu_array_local_shape(r, ls);
    assert_int_equal(ls[0], 3);
    assert_int_equal(ls[1], 4);
    for (p = 0; p < 4; p++) {
        const float *o = spmd_shard_at(&e, r, p);

        for (j = 0; j < 3; j++) {
            for (k = 0; k < 4; k++) {
                assert_true(o[j * 4 + k] == x[(4 * k + p) * 3 + j]);
            }
        }
    }
    tpu_array_destroy(r);
    assert_int_equal(tpu_array_all_to_all(a, "i", 1, 0, 0, &r, &err), TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "size 3, it must equal the group size 4"));
    spmd_env_close_arr(&e, a);
}

/* s8: axis_index on mesh (i=4, j=2). */
static void test_axis_index(void **state)
{
    tpu_err_t err = {0};
    env_t e;
    int c, idx, size;

    (void)state;
    spmd_env_open(&e, "4x2", 1, "i=4,j=2", NULL, 0);
    for (c = 0; c < 8; c++) {
        spmd_check(tpu_spmd_axis_index(e.s, "i,j", c, &idx, &size, &err), &err);
        assert_int_equal(idx, tpu_mesh_position(e.mesh, c));
        assert_int_equal(size, 8);
        spmd_check(tpu_spmd_axis_index(e.s, "j", c, &idx, &size, &err), &err);
        assert_int_equal(idx, tpu_mesh_position(e.mesh, c) % 2);
    }
    spmd_env_close(&e);
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

        spmd_env_open(&e, "4x4", 1, "i=4,j=4", NULL, sim);
        a = spmd_arr_f32(&e, 2, shp, "i,j", x);
        for (k = 0; k < 3; k++) {
            spmd_check(tpu_array_psum(a, axes[k], TPU_REDOP_SUM, &r, &err), &err);
            tpu_array_destroy(r);
            spmd_check(tpu_array_all_gather(a, axes[k], 0, 1, &r, &err), &err);
            tpu_array_destroy(r);
            spmd_check(tpu_array_all_to_all(a, axes[k], 1, 0, 1, &r, &err), &err);
            tpu_array_destroy(r);
        }
        assert_int_equal(tpu_spmd_call_count(e.s), 9);
        for (k = 0; k < 9; k++) {
            t[sim][k / 3][k % 3] = tpu_spmd_call_at(e.s, k)->modeled_us;
        }
        spmd_env_close_arr(&e, a);
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
    spmd_env_open(&e, "4x4", 1, "data=4,model=4", NULL, 0);
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
    spmd_check(tpu_array_create(e.s, 2, shp, TPU_DTYPE_F32, "None,model", &a, &err), &err);
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
    spmd_env_close(&e);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slices),
        cmocka_unit_test(test_bad_groups),
        cmocka_unit_test(test_psum_scatter_pmap),
        cmocka_unit_test(test_psum_scatter_f6),
        cmocka_unit_test(test_all_to_all_f9),
        cmocka_unit_test(test_all_to_all_split2_concat1),
        cmocka_unit_test(test_all_to_all_untiled),
        cmocka_unit_test(test_axis_index),
        cmocka_unit_test(test_sim_equals_loopback),
        cmocka_unit_test(test_bad_input),
    };

    return tpu_test_main(argc, argv, "spmd coll scatter", tests, sizeof tests / sizeof tests[0]);
}
