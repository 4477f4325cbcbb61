/*
 * The VMEM executor: user-written Pallas-style kernels (grid, block shapes,
 * index maps, a body on VMEM blocks), the skipping of unchanged blocks, edge
 * blocks, the pipelined time model, and the VMEM plan check.
 */
#include "tpu/chip.h"
#include "tpu/mxu.h"
#include "tpu/roofline.h"
#include "tpu/vmem.h"
#include "tpu/vpu.h"

#include "test_main.h"
#include "test_support.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define MiB (1024.0 * 1024.0)

/* A VMEM executor for a preset chip (the test fails if it cannot be made). */
static tpu_vmem_t *make_vmem(const char *chip)
{
    tpu_vmem_t *vmem = tpu_test_vmem(chip);

    assert_non_null(vmem);
    return vmem;
}

/* A kernel of 'n_in' inputs ops[0 .. n_in) and one output ops[n_in] over the
 * 'grid_rank'-D 'grid' ('name' NULL: none). */
static tpu_vmem_kernel_t kernel(const char *name, int grid_rank, const int64_t *grid,
                                const tpu_vmem_operand_t *ops, int n_in, tpu_vmem_body_fn_t body,
                                void *body_arg)
{
    tpu_vmem_kernel_t k = {.name = name,
                           .grid_rank = grid_rank,
                           .n_in = n_in,
                           .in = ops,
                           .n_out = 1,
                           .out = &ops[n_in],
                           .body = body,
                           .body_arg = body_arg};

    memcpy(k.grid, grid, sizeof(grid[0]) * (size_t)grid_rank);
    return k;
}

/*
 * A scaled add written the Pallas way:
 *
 *   def body(x_ref, y_ref, o_ref): o_ref[...] = alpha * x_ref[...] + y_ref[...]
 *   pallas_call(body, grid=(cdiv(R, 8), cdiv(C, 128)),
 *               in_specs=[BlockSpec((8, 128), lambda i, j: (i, j))] * 2,
 *               out_specs=BlockSpec((8, 128), lambda i, j: (i, j)))
 */
typedef struct saxpy {
    float alpha;
    int64_t steps_seen;
    int edge_zero_ok;
} saxpy_t;

static void map_ij(const int64_t *g, int64_t *b, void *arg)
{
    (void)arg;
    b[0] = g[0];
    b[1] = g[1];
}

static tpu_status_t saxpy_body(tpu_vmem_step_t *step, tpu_vmem_ref_t *refs, void *arg,
                               tpu_err_t *err)
{
    saxpy_t *s = arg;
    const tpu_vmem_ref_t *x = &refs[0];
    const tpu_vmem_ref_t *y = &refs[1];
    tpu_vmem_ref_t *o = &refs[2];
    int64_t r, c;

    (void)err;
    s->steps_seen++;
    step->flops = 2.0 * (double)(x->valid[0] * x->valid[1]);
    step->compute_s = tpu_vpu_seconds(step->spec, x->valid[0] * x->valid[1], 2);
    if (step->model_only) {
        return TPU_OK; /* tpu_vmem_model(): the cost only, no data */
    }
    for (r = 0; r < x->block[0]; r++) {
        for (c = 0; c < x->block[1]; c++) {
            float xv = ((const float *)x->data)[r * x->block[1] + c];

            if ((r >= x->valid[0] || c >= x->valid[1]) && xv != 0.0f) {
                s->edge_zero_ok = 0; /* outside the array must read as 0 */
            }
            ((float *)o->data)[r * o->block[1] + c] =
                s->alpha * xv + ((const float *)y->data)[r * y->block[1] + c];
        }
    }
    return TPU_OK;
}

static void test_user_kernel_scaled_add(void **state)
{
    enum {
        R = 37,
        C = 300
    };
    tpu_vmem_t *vmem = make_vmem("v5e");
    float *x = malloc(sizeof(float) * R * C);
    float *y = malloc(sizeof(float) * R * C);
    float *o = malloc(sizeof(float) * R * C);
    tpu_vmem_operand_t ops[3];
    tpu_vmem_kernel_t k;
    tpu_vmem_stats_t st;
    tpu_err_t err = {0};
    saxpy_t s = {2.5f, 0, 1};
    int i;

    (void)state;
    for (i = 0; i < R * C; i++) {
        x[i] = (float)(i % 97) - 40.0f;
        y[i] = (float)(i % 13) * 0.25f;
        o[i] = -1.0f;
    }
    for (i = 0; i < 3; i++) {
        ops[i] = (tpu_vmem_operand_t){.elem_size = sizeof(float),
                                      .rank = 2,
                                      .shape = {R, C},
                                      .block = {8, 128},
                                      .index_map = map_ij};
    }
    ops[0].data = x;
    ops[1].data = y;
    ops[2].data = o;
    /* The grid: cdiv(37, 8), cdiv(300, 128). */
    k = kernel("saxpy", 2, (const int64_t[]){5, 3}, ops, 2, saxpy_body, &s);
    assert_int_equal(tpu_vmem_run(vmem, &k, &st, &err), TPU_OK);
    for (i = 0; i < R * C; i++) {
        assert_float_equal(o[i], 2.5f * x[i] + y[i], 0.0f);
    }
    assert_true(s.edge_zero_ok);
    assert_int_equal(s.steps_seen, 15);
    assert_int_equal(st.steps, 15);
    assert_int_equal(st.fetches, 30);
    assert_int_equal(st.fetches_skipped, 0);
    assert_int_equal(st.writebacks, 15);
    assert_float_equal(st.bytes_in, 2.0 * R * C * 4, 0);
    assert_float_equal(st.bytes_out, 1.0 * R * C * 4, 0);
    assert_float_equal(st.flops, 2.0 * R * C, 0);
    assert_float_equal(st.vmem_bytes, 2 * 3 * 8 * 128 * 4, 0);
    assert_true(st.modeled_us >= st.dma_us);
    assert_true(tpu_vmem_host_bytes(vmem) >= 2 * 3 * 8 * 128 * 4);

    /* The same kernel modelled without data gives the same time. */
    {
        tpu_vmem_stats_t st2;

        s.steps_seen = 0;
        assert_int_equal(tpu_vmem_model(vmem, &k, &st2, &err), TPU_OK);
        assert_float_equal(st2.modeled_us, st.modeled_us, 1e-12);
        assert_int_equal(st2.fetches, st.fetches);
    }
    free(x);
    free(y);
    free(o);
    tpu_vmem_destroy(vmem);
}

/*
 * A bias add whose bias block only depends on the outer grid dimension: with the
 * grid (column blocks, row blocks), the bias block (0, j) does not change while
 * i runs, so the executor fetches it once per j, as Pallas does.
 */
static void map_x(const int64_t *g, int64_t *b, void *arg)
{
    (void)arg;
    b[0] = g[1];
    b[1] = g[0];
}

static void map_bias(const int64_t *g, int64_t *b, void *arg)
{
    (void)arg;
    b[0] = 0;
    b[1] = g[0];
}

static tpu_status_t bias_body(tpu_vmem_step_t *step, tpu_vmem_ref_t *refs, void *arg,
                              tpu_err_t *err)
{
    int *fetched_bias = arg;
    const tpu_vmem_ref_t *x = &refs[0];
    const tpu_vmem_ref_t *bias = &refs[1];
    tpu_vmem_ref_t *o = &refs[2];
    int64_t r, c;

    (void)err;
    *fetched_bias += bias->first;
    for (r = 0; r < x->valid[0]; r++) {
        for (c = 0; c < x->valid[1]; c++) {
            ((double *)o->data)[r * o->block[1] + c] =
                ((const double *)x->data)[r * x->block[1] + c] + ((const double *)bias->data)[c];
        }
    }
    step->compute_s = 1e-9;
    return TPU_OK;
}

static void test_unchanged_block_not_refetched(void **state)
{
    enum {
        R = 64,
        C = 40
    };
    tpu_vmem_t *vmem = make_vmem("v5p");
    double x[R * C];
    double bias[C];
    double o[R * C];
    tpu_vmem_operand_t ops[3];
    tpu_vmem_kernel_t k;
    tpu_vmem_stats_t st;
    int fetched_bias = 0;
    int i;

    (void)state;
    for (i = 0; i < R * C; i++) {
        x[i] = i;
    }
    for (i = 0; i < C; i++) {
        bias[i] = 1000.0 * i;
    }
    ops[0] = (tpu_vmem_operand_t){.data = x,
                                  .elem_size = 8,
                                  .rank = 2,
                                  .shape = {R, C},
                                  .block = {16, 16},
                                  .index_map = map_x};
    ops[1] = (tpu_vmem_operand_t){.data = bias,
                                  .elem_size = 8,
                                  .rank = 2,
                                  .shape = {1, C},
                                  .block = {1, 16},
                                  .index_map = map_bias};
    ops[2] = ops[0];
    ops[2].data = o;
    /* Column blocks outer, row blocks inner. */
    k = kernel("bias", 2, (const int64_t[]){3, 4}, ops, 2, bias_body, &fetched_bias);
    assert_int_equal(tpu_vmem_run(vmem, &k, &st, NULL), TPU_OK);
    for (i = 0; i < R * C; i++) {
        assert_float_equal(o[i], x[i] + bias[i % C], 0);
    }
    assert_int_equal(fetched_bias, 3);
    assert_int_equal(st.fetches, 12 + 3);
    assert_int_equal(st.fetches_skipped, 3 * 3);
    assert_int_equal(st.writebacks, 12);
    assert_float_equal(st.bytes_in, (R * C + C) * 8.0, 0);
    tpu_vmem_destroy(vmem);
}

/*
 * The pipeline time, by hand: 4 steps, one input and one output block of B
 * bytes each, compute c per step.
 *   prologue B/bw; steps max(c, B/bw), max(c, 2B/bw), max(c, 2B/bw), max(c, B/bw);
 *   epilogue B/bw.
 */
typedef struct fixed_cost {
    double compute_s;
} fixed_cost_t;

static tpu_status_t fixed_body(tpu_vmem_step_t *step, tpu_vmem_ref_t *refs, void *arg,
                               tpu_err_t *err)
{
    const fixed_cost_t *fc = arg;

    (void)err;
    if (!step->model_only) {
        memcpy(refs[1].data, refs[0].data, (size_t)refs[0].valid[0] * refs[0].elem_size);
    }
    step->compute_s = fc->compute_s;
    step->flops = 1;
    return TPU_OK;
}

static double pipeline_by_hand(double bw, double bytes, double c)
{
    double b = bytes / bw;

    return b + fmax(c, b) + fmax(c, 2 * b) + fmax(c, 2 * b) + fmax(c, b) + b;
}

static void test_pipeline_time_model(void **state)
{
    const double compute[] = {0.0, 1e-6, 3e-6, 1e-3};
    tpu_vmem_t *vmem = make_vmem("v5e");
    const double bw = tpu_vmem_spec(vmem)->hbm_bw;
    static float in[4096];
    static float out[4096];
    tpu_vmem_operand_t ops[2];
    tpu_vmem_kernel_t k;
    tpu_vmem_stats_t st;
    fixed_cost_t fc;
    size_t i;

    (void)state;
    for (i = 0; i < 4096; i++) {
        in[i] = (float)i;
    }
    ops[0] = (tpu_vmem_operand_t){
        .data = in, .elem_size = 4, .rank = 1, .shape = {4096}, .block = {1024}};
    ops[1] = ops[0];
    ops[1].data = out;
    k = kernel("copy", 1, (const int64_t[]){4}, ops, 1, fixed_body, &fc);
    for (i = 0; i < sizeof(compute) / sizeof(compute[0]); i++) {
        fc.compute_s = compute[i];
        assert_int_equal(tpu_vmem_run(vmem, &k, &st, NULL), TPU_OK);
        assert_float_equal(st.modeled_us * 1e-6, pipeline_by_hand(bw, 4096.0, compute[i]), 1e-15);
        assert_float_equal(st.prologue_us, 4096.0 / bw * 1e6, 1e-12);
        assert_float_equal(st.epilogue_us, 4096.0 / bw * 1e6, 1e-12);
        assert_float_equal(st.compute_us, 4 * compute[i] * 1e6, 1e-9);
    }
    assert_memory_equal(in, out, sizeof(in));
    tpu_vmem_destroy(vmem);
}

/* A 3-D grid over a 3-D array with partial blocks on every edge: a copy that
 * doubles every element lands every element exactly once. */
static tpu_status_t double_body(tpu_vmem_step_t *step, tpu_vmem_ref_t *refs, void *arg,
                                tpu_err_t *err)
{
    const tpu_vmem_ref_t *x = &refs[0];
    tpu_vmem_ref_t *o = &refs[1];
    int64_t n = x->block[0] * x->block[1] * x->block[2];
    int64_t i;

    (void)arg;
    (void)err;
    (void)step;
    for (i = 0; i < n; i++) {
        ((int32_t *)o->data)[i] = 2 * ((const int32_t *)x->data)[i];
    }
    return TPU_OK;
}

static void test_three_d_grid_edges(void **state)
{
    enum {
        A = 5,
        B = 7,
        C = 9
    };
    tpu_vmem_t *vmem = make_vmem("v4");
    int32_t x[A * B * C];
    int32_t o[A * B * C];
    tpu_vmem_operand_t ops[2];
    tpu_vmem_kernel_t k;
    tpu_vmem_stats_t st;
    int i;

    (void)state;
    for (i = 0; i < A * B * C; i++) {
        x[i] = i + 1;
        o[i] = 0;
    }
    ops[0] = (tpu_vmem_operand_t){
        .data = x, .elem_size = 4, .rank = 3, .shape = {A, B, C}, .block = {2, 3, 4}};
    ops[1] = ops[0];
    ops[1].data = o;
    /* NULL index maps: identity. */
    k = kernel(NULL, 3, (const int64_t[]){3, 3, 3}, ops, 1, double_body, NULL);
    assert_int_equal(tpu_vmem_run(vmem, &k, &st, NULL), TPU_OK);
    for (i = 0; i < A * B * C; i++) {
        assert_int_equal(o[i], 2 * x[i]);
    }
    assert_float_equal(st.bytes_in, A * B * C * 4.0, 0);
    assert_float_equal(st.bytes_out, A * B * C * 4.0, 0);
    tpu_vmem_destroy(vmem);
}

static tpu_status_t noop_body(tpu_vmem_step_t *step, tpu_vmem_ref_t *refs, void *arg,
                              tpu_err_t *err)
{
    (void)step;
    (void)refs;
    (void)arg;
    (void)err;
    return TPU_OK;
}

/* 2 buffers x (32 + 32 + 16 MiB) = 160 MiB does not fit v5e's 128 MiB. */
static void test_vmem_overflow(void **state)
{
    tpu_vmem_t *vmem = make_vmem("v5e");
    tpu_vmem_t *v5p = make_vmem("v5p");
    static float dummy[4];
    tpu_vmem_operand_t ops[3];
    tpu_vmem_kernel_t k;
    tpu_vmem_stats_t st;
    tpu_err_t err = {0};
    uint64_t plan = 0;

    (void)state;
    ops[0] = (tpu_vmem_operand_t){.data = dummy,
                                  .elem_size = 4,
                                  .rank = 2,
                                  .shape = {8192, 8192},
                                  .block = {4096, 2048}}; /* 32 MiB */
    ops[1] = ops[0];
    ops[2] = ops[0];
    ops[2].block[1] = 1024; /* 16 MiB */
    k = kernel("big", 2, (const int64_t[]){2, 4}, ops, 2, noop_body, NULL);
    assert_int_equal(tpu_vmem_plan_bytes(&k, &plan, NULL), TPU_OK);
    assert_int_equal(plan, (uint64_t)(160 * MiB));
    assert_int_equal(tpu_vmem_run(vmem, &k, &st, &err), TPU_ERR_RESOURCE_EXHAUSTED);
    assert_string_equal(err.msg,
                        "big on chip v5e: VMEM plan needs 160.0 MiB (2 x 3 blocks), capacity "
                        "128.0 MiB");
    assert_int_equal(tpu_vmem_host_bytes(vmem), 0); /* nothing was allocated */
    tpu_err_clear(&err);
    assert_int_equal(tpu_vmem_model(vmem, &k, &st, &err), TPU_ERR_RESOURCE_EXHAUSTED);

    /* v5p: 128 MiB per chip, 64 MiB per TensorCore; with a scratch. */
    tpu_err_clear(&err);
    ops[0].block[1] = 512; /* 8 MiB */
    ops[1].block[1] = 512;
    ops[2].block[1] = 512;
    k.scratch_bytes = (size_t)(20 * MiB);
    assert_int_equal(tpu_vmem_capacity(v5p), (uint64_t)(64 * MiB));
    assert_int_equal(tpu_vmem_model(v5p, &k, &st, &err), TPU_ERR_RESOURCE_EXHAUSTED);
    assert_string_equal(err.msg, "big on chip v5p: VMEM plan needs 68.0 MiB (2 x 3 blocks + 20.0 "
                                 "MiB scratch), capacity 64.0 MiB (one of 2 TensorCores)");
    k.scratch_bytes = (size_t)(16 * MiB);
    assert_int_equal(tpu_vmem_model(v5p, &k, &st, NULL), TPU_OK);
    assert_float_equal(st.vmem_bytes, 64 * MiB, 0);
    tpu_vmem_destroy(vmem);
    tpu_vmem_destroy(v5p);
}

static void map_bad(const int64_t *g, int64_t *b, void *arg)
{
    (void)arg;
    b[0] = g[0] + 1; /* one block too far on the last step */
}

static tpu_status_t failing_body(tpu_vmem_step_t *step, tpu_vmem_ref_t *refs, void *arg,
                                 tpu_err_t *err)
{
    (void)refs;
    (void)arg;
    if (step->step == 2) {
        return tpu_err_set(err, TPU_ERR_INTERNAL, "body gave up at step 2");
    }
    return TPU_OK;
}

static void test_bad_kernels(void **state)
{
    tpu_vmem_t *vmem = make_vmem("v6e");
    static float buf[64];
    tpu_vmem_operand_t ops[2];
    tpu_vmem_kernel_t k;
    tpu_err_t err = {0};

    (void)state;
    ops[0] = (tpu_vmem_operand_t){
        .data = buf, .elem_size = 4, .rank = 1, .shape = {64}, .block = {16}, .index_map = map_bad};
    ops[1] = ops[0];
    ops[1].index_map = NULL;
    k = kernel("bad", 1, (const int64_t[]){4}, ops, 1, noop_body, NULL);
    assert_int_equal(tpu_vmem_run(vmem, &k, NULL, &err), TPU_ERR_INVALID);
    assert_string_equal(err.msg, "bad: the index map of input 0 returned block (4) at grid step "
                                 "(3), outside its array of (4) blocks");

    ops[0].index_map = NULL;
    k.body = failing_body;
    tpu_err_clear(&err);
    assert_int_equal(tpu_vmem_run(vmem, &k, NULL, &err), TPU_ERR_INTERNAL);
    assert_string_equal(err.msg, "body gave up at step 2");

    k.body = NULL;
    tpu_err_clear(&err);
    assert_int_equal(tpu_vmem_run(vmem, &k, NULL, &err), TPU_ERR_INVALID);
    k.body = noop_body;
    k.grid_rank = 4;
    assert_int_equal(tpu_vmem_run(vmem, &k, NULL, NULL), TPU_ERR_INVALID);
    k.grid_rank = 1;
    k.grid[0] = 0;
    assert_int_equal(tpu_vmem_run(vmem, &k, NULL, NULL), TPU_ERR_INVALID);
    k.grid[0] = 4;
    ops[1].block[0] = 0;
    tpu_err_clear(&err);
    assert_int_equal(tpu_vmem_run(vmem, &k, NULL, &err), TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "output 0 dimension 0"));
    ops[1].block[0] = 16;
    ops[1].data = NULL;
    assert_int_equal(tpu_vmem_run(vmem, &k, NULL, NULL), TPU_ERR_INVALID);
    assert_int_equal(tpu_vmem_model(vmem, &k, NULL, NULL), TPU_OK);
    tpu_vmem_destroy(vmem);
    tpu_vmem_destroy(NULL);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_user_kernel_scaled_add),
        cmocka_unit_test(test_unchanged_block_not_refetched),
        cmocka_unit_test(test_pipeline_time_model),
        cmocka_unit_test(test_three_d_grid_edges),
        cmocka_unit_test(test_vmem_overflow),
        cmocka_unit_test(test_bad_kernels),
    };

    return tpu_test_main(argc, argv, "chip vmem", tests, sizeof tests / sizeof tests[0]);
}
