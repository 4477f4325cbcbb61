/*
 * Sharded arrays and the runtime around them: placing and gathering specs of
 * 1 to 4 dimensions, resharding between specs, the flat collectives (in place
 * too), shard_map kernels with MXU matmuls and their modeled compute time, HBM
 * accounting, the cost log, and a pod-scale model-only run (v5p 16x20x28, mesh
 * data=64,model=140).
 */
#include "tpu/chip.h"
#include "tpu/coll.h"
#include "tpu/mesh.h"
#include "tpu/mxu.h"
#include "tpu/pod.h"
#include "tpu/spmd.h"
#include "tpu/xport.h"

#include "spmd_env.h"
#include "test_main.h"
#include "test_support.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* Place a 4-D array under several specs; gather gives it back; shards are the blocks. */
static void test_place_gather(void **state)
{
    static const char *const specs[] = {
        "",           "data",         "None,model",     "data,model",
        "model,data", "(data,model)", "_,_,data,model", "None,(model,data)"};
    int64_t shp[4] = {16, 16, 4, 4}, ls[4];
    float *x = malloc(4096 * sizeof(float)), *y = malloc(4096 * sizeof(float));
    tpu_err_t err = {0};
    env_t e;
    size_t k;
    int i;

    (void)state;
    for (i = 0; i < 4096; i++) {
        x[i] = (float)i;
    }
    spmd_env_open(&e, "4x4", 1, "data=4,model=4", NULL, 0);
    for (k = 0; k < sizeof(specs) / sizeof(specs[0]); k++) {
        tpu_array_t *a = NULL;
        char s[64];

        spmd_check(tpu_array_create(e.s, 4, shp, TPU_DTYPE_F32, specs[k], &a, &err), &err);
        spmd_check(tpu_array_place(a, x, &err), &err);
        memset(y, 0, 4096 * sizeof(float));
        spmd_check(tpu_array_gather(a, y, &err), &err);
        assert_memory_equal(x, y, 4096 * sizeof(float));
        tpu_array_spec_str(a, s, sizeof(s));
        tpu_array_local_shape(a, ls);
        if (k == 3) {
            /* data,model: chip 6 (data 1, model 2) holds rows 4-7, columns 8-11. */
            const float *sh = tpu_array_local(a, 6);

            assert_string_equal(s, "data,model,None,None");
            assert_int_equal(ls[0], 4);
            assert_int_equal(ls[1], 4);
            assert_true(sh[0] == x[(4 * 16 + 8) * 16]);
            assert_true(sh[16] == x[(4 * 16 + 9) * 16]);
            assert_true(sh[4 * 16] == x[(5 * 16 + 8) * 16]);
        }
        if (k == 7) {
            assert_string_equal(s, "None,(model,data),None,None");
            assert_int_equal(ls[1], 1);
        }
        tpu_array_destroy(a);
    }
    spmd_env_close(&e);
    free(x);
    free(y);
}

/* Resharding keeps the global values; each move is the collectives it needs. */
static void test_reshard(void **state)
{
    static const char *const path[] = {"data,model",   "model,data", "",
                                       "data",         "None,data",  "(data,model)",
                                       "(model,data)", "data,model"};
    int64_t shp[2] = {16, 8};
    float x[128], y[128];
    tpu_err_t err = {0};
    tpu_array_t *a = NULL, *b = NULL;
    env_t e;
    size_t k;
    int i;

    (void)state;
    for (i = 0; i < 128; i++) {
        x[i] = (float)(i * 3 % 17);
    }
    spmd_env_open(&e, "2x4", 0, "data=2,model=4", NULL, 0);
    spmd_check(tpu_array_create(e.s, 2, shp, TPU_DTYPE_F32, path[0], &a, &err), &err);
    spmd_check(tpu_array_place(a, x, &err), &err);
    for (k = 1; k < sizeof(path) / sizeof(path[0]); k++) {
        char s[64];

        spmd_check(tpu_array_reshard(a, path[k], &b, &err), &err);
        tpu_array_destroy(a);
        a = b;
        memset(y, 0, sizeof(y));
        spmd_check(tpu_array_gather(a, y, &err), &err);
        assert_memory_equal(x, y, sizeof(x));
        tpu_array_spec_str(a, s, sizeof(s));
        if (k == 2) {
            assert_string_equal(s, "None,None");
        }
    }
    /* Going to a replicated spec all-gathers; a finer spec only slices. */
    assert_true(tpu_spmd_call_count(e.s) > 0);
    assert_string_equal(tpu_spmd_call_at(e.s, 0)->name, "all_gather");
    spmd_env_close_arr(&e, a);
}

/* Flat collectives on per-chip buffers, in place and not. */
static void test_flat(void **state)
{
    float buf[16][8], out[16][32];
    void *in_p[16], *out_p[16];
    tpu_err_t err = {0};
    env_t e;
    int c, j, idx, g;

    (void)state;
    spmd_env_open(&e, "4x4", 0, "data=2,model=8", NULL, 0);
    for (c = 0; c < 16; c++) {
        for (j = 0; j < 8; j++) {
            buf[c][j] = (float)(c * 8 + j);
        }
        in_p[c] = buf[c];
        out_p[c] = out[c];
    }
    spmd_check(tpu_spmd_pmean(e.s, "data", TPU_DTYPE_F32, 8, in_p, in_p, &err), &err);
    for (c = 0; c < 16; c++) {
        for (j = 0; j < 8; j++) {
            /* mean of chips c and c^8 (data 0 and 1, same model index) */
            assert_true(buf[c][j] == (float)(((c % 8) * 8 + j) + ((c % 8 + 8) * 8 + j)) / 2);
        }
    }
    spmd_check(tpu_spmd_psum(e.s, "model", TPU_DTYPE_F32, TPU_REDOP_MAX, 8, in_p, in_p, &err),
               &err);
    for (c = 0; c < 16; c++) {
        assert_true(buf[c][0] == buf[7][0]);
    }
    spmd_check(tpu_spmd_all_gather(e.s, "model", TPU_DTYPE_F32, 4, in_p, out_p, &err), &err);
    for (c = 0; c < 16; c++) {
        for (j = 0; j < 8; j++) {
            assert_true(out[c][j * 4] == buf[(c / 8) * 8 + j][0]);
        }
    }
    for (c = 0; c < 16; c++) {
        spmd_check(tpu_spmd_axis_index(e.s, "model", c, &idx, &g, &err), &err);
        assert_int_equal(idx, c % 8);
        assert_int_equal(g, 8);
    }
    assert_int_equal(
        tpu_spmd_psum_scatter(e.s, "model", TPU_DTYPE_F32, TPU_REDOP_SUM, 12, in_p, out_p, &err),
        TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "12 does not divide into 8 chunks"));
    assert_int_equal(tpu_spmd_call_count(e.s), 3);
    assert_string_equal(tpu_spmd_call_at(e.s, 0)->name, "pmean");
    assert_string_equal(tpu_spmd_call_at(e.s, 1)->name, "pmax");
    assert_true(tpu_spmd_comm_us(e.s) > 0);
    spmd_env_close(&e);
    /* An axis of size 1: every collective over it is a local copy of no time. */
    spmd_env_open(&e, "4x4", 0, "one=1,data=16", NULL, 0);
    spmd_check(tpu_spmd_all_gather(e.s, "one", TPU_DTYPE_F32, 8, in_p, out_p, &err), &err);
    for (c = 0; c < 16; c++) {
        assert_memory_equal(out[c], buf[c], 8 * sizeof(float));
    }
    assert_string_equal(tpu_spmd_call_at(e.s, 0)->algorithm, "local");
    assert_true(tpu_spmd_call_at(e.s, 0)->modeled_us == 0);
    spmd_check(tpu_spmd_psum(e.s, "data,one", TPU_DTYPE_F32, TPU_REDOP_SUM, 8, in_p, out_p, &err),
               &err);
    assert_int_equal(tpu_spmd_call_at(e.s, 1)->group_size, 16);
    spmd_env_close(&e);
}

typedef struct mm_arg {
    const tpu_array_t *x, *w;
    tpu_array_t *y;
    int64_t m, k, n;
} mm_arg_t;

static tpu_status_t mm_kernel(tpu_spmd_local_t *loc, void *arg, tpu_err_t *err)
{
    mm_arg_t *a = arg;
    tpu_mxu_desc_t d;

    tpu_mxu_desc_init(&d, a->m, a->k, a->n, TPU_DTYPE_F32);
    return tpu_spmd_matmul(loc, &d, tpu_array_local(a->x, loc->local),
                           tpu_array_local(a->w, loc->local), tpu_array_local(a->y, loc->local),
                           err);
}

/* A data-parallel matmul as a shard_map kernel: rows of x over 'data', w replicated. */
static void test_kernel_matmul(void **state)
{
    int64_t xs[2] = {64, 32}, ws[2] = {32, 16}, ys[2] = {64, 16};
    float x[64 * 32], w[32 * 16], y[64 * 16];
    tpu_mxu_desc_t d;
    tpu_roofline_t rl;
    tpu_err_t err = {0};
    double us[2];
    int t, i, j, k;

    (void)state;
    for (i = 0; i < 64 * 32; i++) {
        x[i] = (float)(i % 7 - 3);
    }
    for (i = 0; i < 32 * 16; i++) {
        w[i] = (float)(i % 5 - 2);
    }
    for (t = 0; t < 2; t++) {
        env_t e;
        mm_arg_t a;
        tpu_array_t *xa, *wa, *ya;

        spmd_env_open(&e, "4", 1, "data=4", NULL, t == 0 ? 0 : 2);
        spmd_check(tpu_array_create(e.s, 2, xs, TPU_DTYPE_F32, "data", &xa, &err), &err);
        spmd_check(tpu_array_create(e.s, 2, ws, TPU_DTYPE_F32, "", &wa, &err), &err);
        spmd_check(tpu_array_create(e.s, 2, ys, TPU_DTYPE_F32, "data", &ya, &err), &err);
        spmd_check(tpu_array_place(xa, x, &err), &err);
        spmd_check(tpu_array_place(wa, w, &err), &err);
        a.x = xa;
        a.w = wa;
        a.y = ya;
        a.m = 16;
        a.k = 32;
        a.n = 16;
        spmd_check(tpu_spmd_run(e.s, "matmul", mm_kernel, &a, &err), &err);
        us[t] = tpu_spmd_compute_us(e.s);
        assert_true(tpu_spmd_flops(e.s) == 2.0 * 16 * 32 * 16);
        if (t == 0) {
            spmd_check(tpu_array_gather(ya, y, &err), &err);
            for (i = 0; i < 64; i++) {
                for (j = 0; j < 16; j++) {
                    float want = 0;

                    for (k = 0; k < 32; k++) {
                        want += x[i * 32 + k] * w[k * 16 + j];
                    }
                    assert_true(fabsf(y[i * 16 + j] - want) <= 1e-4f * (1 + fabsf(want)));
                }
            }
            /* HBM: x and y shards (16x32 and 16x16 f32) and w (32x16) on each chip. */
            assert_int_equal(tpu_hbm_in_use(tpu_spmd_hbm(e.s, 0)),
                             (16 * 32 + 16 * 16 + 32 * 16) * 4);
        }
        assert_string_equal(tpu_spmd_call_at(e.s, 0)->algorithm, "compute");
        tpu_array_destroy(xa);
        tpu_array_destroy(wa);
        tpu_array_destroy(ya);
        assert_int_equal(tpu_hbm_in_use(tpu_spmd_hbm(e.s, 0)), 0);
        spmd_env_close(&e);
    }
    /* The compute time is the chip's roofline of the local matmul, with or without data. */
    {
        tpu_chip_spec_t chip;

        spmd_check(tpu_chip_preset("v5e", &chip, &err), &err);
        tpu_mxu_desc_init(&d, 16, 32, 16, TPU_DTYPE_F32);
        spmd_check(tpu_mxu_roofline(&chip, &d, &rl, &err), &err);
    }
    assert_true(us[0] == rl.modeled_us);
    assert_true(us[1] == rl.modeled_us);
}

/* Pod scale without data: v5p 16x20x28, data=64,model=140 (model is 5 of y and all of z). */
static void test_pod_scale_model_only(void **state)
{
    tpu_err_t err = {0};
    tpu_array_t *a = NULL, *r = NULL;
    int64_t shp[2] = {65536, 16384};
    char buf[64];
    env_t e;
    int dims[TPU_MAX_AXES] = {16, 20, 28}, w[TPU_MAX_AXES];

    (void)state;
    memset(&e, 0, sizeof(e));
    spmd_check(tpu_chip_preset("v5p", &e.chip, &err), &err);
    tpu_topo_wrap_auto(e.chip.wrap_rule, 3, dims, w);
    spmd_check(tpu_topo_init(&e.topo, 3, dims, w, 1, &err), &err);
    tpu_chip_link_model(&e.chip, &e.link);
    spmd_check(tpu_mesh_create(&e.topo, "data=64,model=140", NULL, 0, &e.mesh, &err), &err);
    tpu_mesh_axis_layout(e.mesh, 1, buf, sizeof(buf));
    assert_string_equal(buf, "y[5 of 20]*z");
    spmd_check(tpu_spmd_create(&e.topo, &e.link, &e.chip, e.mesh, NULL, NULL, &e.s, &err), &err);
    assert_int_equal(tpu_spmd_nlocal(e.s), 8960);
    assert_false(tpu_spmd_moves_data(e.s));
    /* A 65536 x 16384 bf16 activation sharded (data, model). */
    shp[1] = 140 * 128;
    spmd_check(tpu_array_create(e.s, 2, shp, TPU_DTYPE_BF16, "data,model", &a, &err), &err);
    spmd_check(tpu_array_all_gather(a, "model", 1, 1, &r, &err), &err);
    tpu_array_destroy(r);
    spmd_check(tpu_array_psum(a, "data", TPU_REDOP_SUM, &r, &err), &err);
    tpu_array_destroy(r);
    tpu_array_destroy(a);
    spmd_check(tpu_array_create(e.s, 2, shp, TPU_DTYPE_BF16, "data", &a, &err), &err);
    spmd_check(tpu_array_psum_scatter(a, "model", 1, 1, &r, &err), &err);
    tpu_array_destroy(r);
    assert_int_equal(tpu_spmd_call_count(e.s), 3);
    assert_non_null(strstr(tpu_spmd_call_at(e.s, 0)->algorithm, "group"));
    assert_true(tpu_spmd_call_at(e.s, 0)->modeled_us > 0);
    assert_int_equal(tpu_spmd_call_at(e.s, 0)->group_size, 140);
    assert_int_equal(tpu_spmd_call_at(e.s, 1)->group_size, 64);
    assert_int_equal(tpu_array_gather(a, NULL, &err), TPU_ERR_UNSUPPORTED);
    spmd_env_close_arr(&e, a);
}

/* A runtime from a pod (tpu/pod.h): v5p 2x2x4, data=4,model=4. */
static void test_from_pod(void **state)
{
    tpu_pod_spec_t spec;
    tpu_pod_t *pod = NULL;
    tpu_mesh_t *mesh = NULL;
    tpu_spmd_t *s = NULL;
    tpu_err_t err = {0};
    float v[16], w[16];
    void *in[16], *out[16];
    int c;

    (void)state;
    tpu_pod_spec_init(&spec);
    spec.chip = "v5p";
    spec.shape = "2x2x4";
    spmd_check(tpu_pod_create(&spec, &pod, &err), &err);
    spmd_check(tpu_mesh_create(tpu_pod_topo(pod), "data=4,model=4", NULL, 0, &mesh, &err), &err);
    spmd_check(tpu_spmd_create_pod(pod, mesh, NULL, NULL, &s, &err), &err);
    assert_string_equal(tpu_spmd_chip(s)->name, "v5p");
    for (c = 0; c < 16; c++) {
        v[c] = (float)c;
        in[c] = &v[c];
        out[c] = &w[c];
    }
    spmd_check(tpu_spmd_psum(s, "data", TPU_DTYPE_F32, TPU_REDOP_SUM, 1, in, out, &err), &err);
    assert_true(tpu_spmd_call_at(s, 0)->modeled_us > 0);
    tpu_spmd_destroy(s);
    tpu_mesh_destroy(mesh);
    tpu_pod_destroy(pod);
}

/* Every allocation failure of a whole SPMD session is a clean TPU_ERR_NO_MEMORY. */
static void test_oom_loop(void **state)
{
    static const float x[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    long budget;
    int done = 0;

    (void)state;
    for (budget = 0; !done && budget < 100000; budget++) {
        tpu_err_t err = {0};
        tpu_topo_t topo;
        tpu_chip_spec_t chip;
        tpu_link_model_t link;
        tpu_mesh_t *mesh = NULL;
        tpu_xport_t *xp = NULL;
        tpu_spmd_t *s = NULL;
        tpu_array_t *a = NULL, *r1 = NULL, *r2 = NULL;
        int dims[TPU_MAX_AXES] = {4, 1, 1}, w[TPU_MAX_AXES] = {0, 0, 0};
        int64_t shp[1] = {16};
        float y[16];
        tpu_status_t status;

        tpu_chip_preset("v5e", &chip, NULL);
        tpu_chip_link_model(&chip, &link);
        tpu_topo_init(&topo, 1, dims, w, 1, NULL);
        tpu_test_alloc_fail_after(budget);
        status = tpu_mesh_create(&topo, "g=2,i=2", NULL, 0, &mesh, &err);
        if (status == TPU_OK) {
            status = tpu_xport_loopback_create(4, &xp, &err);
        }
        if (status == TPU_OK) {
            status = tpu_spmd_create(&topo, &link, &chip, mesh, xp, NULL, &s, &err);
        }
        if (status == TPU_OK) {
            status = tpu_array_create(s, 1, shp, TPU_DTYPE_F32, "(g,i)", &a, &err);
        }
        if (status == TPU_OK) {
            status = tpu_array_place(a, x, &err);
        }
        if (status == TPU_OK) {
            status = tpu_array_psum(a, "i", TPU_REDOP_SUM, &r1, &err);
        }
        if (status == TPU_OK) {
            status = tpu_array_all_gather(a, "g", 0, 1, &r2, &err);
        }
        if (status == TPU_OK) {
            status = tpu_array_gather(r2, y, &err);
        }
        tpu_array_destroy(r2);
        tpu_array_destroy(r1);
        tpu_array_destroy(a);
        tpu_spmd_destroy(s);
        tpu_xport_destroy(xp);
        tpu_mesh_destroy(mesh);
        if (status == TPU_OK) {
            done = !tpu_test_alloc_failed();
        } else {
            if (status != TPU_ERR_NO_MEMORY || strlen(err.msg) == 0) {
                tpu_test_alloc_restore();
                fail_msg("budget %ld: status %d, message '%s'", budget, (int)status, err.msg);
            }
        }
        if (tpu_test_alloc_live() != 0) {
            long live = tpu_test_alloc_live();

            tpu_test_alloc_restore();
            fail_msg("budget %ld: %ld allocations leaked", budget, live);
        }
        tpu_test_alloc_restore();
    }
    assert_true(done);
    printf("oom loop: success after %ld allocations, every failure clean\n", budget - 1);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_place_gather),
        cmocka_unit_test(test_reshard),
        cmocka_unit_test(test_flat),
        cmocka_unit_test(test_kernel_matmul),
        cmocka_unit_test(test_pod_scale_model_only),
        cmocka_unit_test(test_from_pod),
        cmocka_unit_test(test_oom_loop),
    };

    return tpu_test_main(argc, argv, "spmd array", tests, sizeof tests / sizeof tests[0]);
}
