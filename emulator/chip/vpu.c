/*
 * VPU ops as Pallas kernels on the VMEM executor: elementwise add, mul, max,
 * relu, exp, tanh, gelu; row softmax; row sum and max reductions.
 *
 * Elementwise ops see their array as one dimension of rows x cols elements:
 *
 *   grid = (cdiv(N, B),)     x, y, out = BlockSpec((B,), lambda i: (i,))
 *
 * with B = 256 Ki elements (1 MiB of f32, 256 whole (8,128) tiles) or N if
 * smaller.  Softmax needs whole rows in VMEM:
 *
 *   grid = (cdiv(rows, R),)  x, out = BlockSpec((R, cols), lambda i: (i, 0))
 *
 * with R the rows of about 1 MiB (a multiple of 8, at least 1); a row larger
 * than VMEM is a RESOURCE_EXHAUSTED plan.  The reductions block both ways and
 * accumulate over the column steps in VMEM:
 *
 *   grid = (cdiv(rows, R), cdiv(cols, C))
 *   x   = BlockSpec((R, C), lambda i, j: (i, j))
 *   out = BlockSpec((R, 1), lambda i, j: (i, 0))     revisited for every j
 *
 * Arithmetic: f32 in f32; bf16 widened to f32 in chunks of 512 and rounded back
 * (to nearest, ties to even) once per result, as the v5e VPU (which has no bf16
 * ALUs) does; a bf16 sum accumulates in f32 (a VMEM scratch row) and rounds
 * once at the end.  int8 add and mul wrap modulo 2^8, int8 sums accumulate in
 * int32 with wraparound.  max and reduce_max propagate NaN (jnp.maximum).
 * gelu is jax.nn.gelu's default tanh form,
 *   0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
 *
 * Modeled compute per step: the block's valid elements (rows padded to whole
 * 128-lane vectors for the row ops), rounded up to whole (8,128) tiles, times
 * the op's FLOPs per element (tpu/vpu.h), at vpu_flops.
 */
#include "tpu/vpu.h"

#include "tpu/dtype.h"
#include "tpu/mxu.h"
#include "tpu/roofline.h"
#include "tpu/vmem.h"

#include "chip_internal.h"

#include <math.h>
#include <string.h>

#define EW_BLOCK  (256 * 1024)        /* elements per elementwise block */
#define ROW_BYTES (1 << 20)           /* target bytes of a softmax / reduction block */
#define RED_COLS  (256 * 1024)        /* columns per reduction block */
#define CHUNK     512                 /* bf16 values widened at a time */
#define GELU_C    0.7978845608028654f /* sqrt(2 / pi) */
#define GELU_A    0.044715f

typedef struct vpu_ctx {
    tpu_vpu_desc_t d;
    float *row; /* softmax: one row in f32 */
} vpu_ctx_t;

static float maxf_nan(float a, float b)
{
    return (a > b || isnan(a)) ? a : b;
}

static float apply1(tpu_vpu_op_t op, float x)
{
    switch (op) {
    case TPU_VPU_RELU:
        return (x > 0.0f || isnan(x)) ? x : 0.0f;
    case TPU_VPU_EXP:
        return expf(x);
    case TPU_VPU_TANH:
        return tanhf(x);
    case TPU_VPU_GELU:
        return 0.5f * x * (1.0f + tanhf(GELU_C * (x + GELU_A * x * x * x)));
    default:
        return x;
    }
}

/* out[i] = op(x[i] (, y[i])) on 'n' f32 values; any of the arrays may alias. */
static void ew_f32(tpu_vpu_op_t op, const float *x, const float *y, float *out, size_t n)
{
    size_t i;

    switch (op) {
    case TPU_VPU_ADD:
        for (i = 0; i < n; i++) {
            out[i] = x[i] + y[i];
        }
        break;
    case TPU_VPU_MUL:
        for (i = 0; i < n; i++) {
            out[i] = x[i] * y[i];
        }
        break;
    case TPU_VPU_MAX:
        for (i = 0; i < n; i++) {
            out[i] = maxf_nan(x[i], y[i]);
        }
        break;
    default:
        for (i = 0; i < n; i++) {
            out[i] = apply1(op, x[i]);
        }
        break;
    }
}

static void ew_bf16(tpu_vpu_op_t op, const uint16_t *x, const uint16_t *y, uint16_t *out, size_t n)
{
    float fx[CHUNK];
    float fy[CHUNK];
    size_t i;
    size_t len;

    for (i = 0; i < n; i += len) {
        len = n - i < CHUNK ? n - i : CHUNK;
        tpu_dtype_bf16_widen(x + i, fx, len);
        if (y != NULL) {
            tpu_dtype_bf16_widen(y + i, fy, len);
        }
        ew_f32(op, fx, y != NULL ? fy : NULL, fx, len);
        tpu_dtype_bf16_narrow(fx, out + i, len);
    }
}

static void ew_int8(tpu_vpu_op_t op, const int8_t *x, const int8_t *y, uint8_t *out, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        switch (op) {
        case TPU_VPU_ADD:
            out[i] = (uint8_t)((unsigned)(uint8_t)x[i] + (unsigned)(uint8_t)y[i]);
            break;
        case TPU_VPU_MUL:
            out[i] = (uint8_t)((unsigned)(uint8_t)x[i] * (unsigned)(uint8_t)y[i]);
            break;
        case TPU_VPU_MAX:
            out[i] = (uint8_t)(x[i] > y[i] ? x[i] : y[i]);
            break;
        default: /* relu */
            out[i] = (uint8_t)(x[i] > 0 ? x[i] : 0);
            break;
        }
    }
}

static tpu_status_t ew_body(tpu_vmem_step_t *step, tpu_vmem_ref_t *refs, void *arg, tpu_err_t *err)
{
    const vpu_ctx_t *ctx = arg;
    const tpu_vpu_op_t op = ctx->d.op;
    const int two = tpu_vpu_op_inputs(op) == 2;
    const tpu_vmem_ref_t *x = &refs[0];
    const tpu_vmem_ref_t *y = two ? &refs[1] : NULL;
    tpu_vmem_ref_t *out = &refs[two ? 2 : 1];
    const size_t n = (size_t)x->valid[0];

    (void)err;
    step->flops = (double)n * tpu_vpu_op_flops(op);
    step->compute_s = tpu_vpu_seconds(step->spec, (int64_t)n, tpu_vpu_op_flops(op));
    if (step->model_only) {
        return TPU_OK;
    }
    switch (ctx->d.dtype) {
    case TPU_DTYPE_F32:
        ew_f32(op, x->data, two ? y->data : NULL, out->data, n);
        break;
    case TPU_DTYPE_BF16:
        ew_bf16(op, x->data, two ? y->data : NULL, out->data, n);
        break;
    default:
        ew_int8(op, x->data, two ? y->data : NULL, out->data, n);
        break;
    }
    return TPU_OK;
}

/* The modeled cost of a (rows x cols) piece of a row op. */
static void row_cost(tpu_vmem_step_t *step, tpu_vpu_op_t op, int64_t rows, int64_t cols)
{
    int64_t padded = tpu__vpu_padded(rows, tpu__round_up(cols, TPU__LANES));

    step->flops = (double)rows * (double)cols * tpu_vpu_op_flops(op);
    step->compute_s = tpu_vpu_seconds(step->spec, padded, tpu_vpu_op_flops(op));
}

static void softmax_row(float *row, size_t n)
{
    float m = row[0];
    float s = 0.0f;
    float inv;
    size_t i;

    for (i = 1; i < n; i++) {
        m = maxf_nan(m, row[i]);
    }
    for (i = 0; i < n; i++) {
        row[i] = expf(row[i] - m);
        s += row[i];
    }
    inv = 1.0f / s;
    for (i = 0; i < n; i++) {
        row[i] *= inv;
    }
}

static tpu_status_t softmax_body(tpu_vmem_step_t *step, tpu_vmem_ref_t *refs, void *arg,
                                 tpu_err_t *err)
{
    const vpu_ctx_t *ctx = arg;
    const tpu_vmem_ref_t *x = &refs[0];
    tpu_vmem_ref_t *out = &refs[1];
    const int64_t rows = x->valid[0];
    const size_t cols = (size_t)x->valid[1];
    const size_t ld = (size_t)x->block[1];
    int64_t r;

    (void)err;
    row_cost(step, TPU_VPU_SOFTMAX, rows, (int64_t)cols);
    if (step->model_only) {
        return TPU_OK;
    }
    for (r = 0; r < rows; r++) {
        if (ctx->d.dtype == TPU_DTYPE_F32) {
            float *o = (float *)out->data + (size_t)r * ld;

            memcpy(o, (const float *)x->data + (size_t)r * ld, cols * sizeof(float));
            softmax_row(o, cols);
        } else {
            tpu_dtype_bf16_widen((const uint16_t *)x->data + (size_t)r * ld, ctx->row, cols);
            softmax_row(ctx->row, cols);
            tpu_dtype_bf16_narrow(ctx->row, (uint16_t *)out->data + (size_t)r * ld, cols);
        }
    }
    return TPU_OK;
}

/* Reduce one row piece of 'n' values of 'x' (of 'dtype') into a double or int. */
static double sum_piece(tpu_dtype_t dtype, const void *x, size_t n)
{
    double s = 0;
    size_t i;

    switch (dtype) {
    case TPU_DTYPE_F32:
        for (i = 0; i < n; i++) {
            s += ((const float *)x)[i];
        }
        break;
    case TPU_DTYPE_BF16:
        for (i = 0; i < n; i++) {
            s += tpu_dtype_bf16_to_f32(((const uint16_t *)x)[i]);
        }
        break;
    default:
        break;
    }
    return s;
}

static float max_piece(tpu_dtype_t dtype, const void *x, size_t n)
{
    float m = -INFINITY;
    size_t i;

    for (i = 0; i < n; i++) {
        m = maxf_nan(m, dtype == TPU_DTYPE_F32 ? ((const float *)x)[i]
                                               : tpu_dtype_bf16_to_f32(((const uint16_t *)x)[i]));
    }
    return m;
}

static tpu_status_t reduce_body(tpu_vmem_step_t *step, tpu_vmem_ref_t *refs, void *arg,
                                tpu_err_t *err)
{
    const vpu_ctx_t *ctx = arg;
    const tpu_dtype_t dt = ctx->d.dtype;
    const int is_sum = ctx->d.op == TPU_VPU_SUM;
    const tpu_vmem_ref_t *x = &refs[0];
    tpu_vmem_ref_t *out = &refs[1];
    const int64_t rows = x->valid[0];
    const size_t cols = (size_t)x->valid[1];
    const size_t ld = (size_t)x->block[1];
    const size_t es = x->elem_size;
    float *acc = step->scratch;
    const unsigned char *xr;
    uint32_t isum;
    int8_t imax;
    float v;
    size_t i;
    int64_t r;

    (void)err;
    row_cost(step, ctx->d.op, rows, (int64_t)cols);
    if (step->model_only) {
        return TPU_OK;
    }
    for (r = 0; r < rows; r++) {
        xr = (const unsigned char *)x->data + (size_t)r * ld * es;
        if (dt == TPU_DTYPE_I8) {
            const int8_t *xi = (const int8_t *)xr;

            if (is_sum) {
                isum = out->first ? 0u : (uint32_t)((int32_t *)out->data)[r];
                for (i = 0; i < cols; i++) {
                    isum += (uint32_t)(int32_t)xi[i];
                }
                memcpy((int32_t *)out->data + r, &isum, sizeof(isum));
            } else {
                imax = out->first ? INT8_MIN : ((int8_t *)out->data)[r];
                for (i = 0; i < cols; i++) {
                    imax = xi[i] > imax ? xi[i] : imax;
                }
                ((int8_t *)out->data)[r] = imax;
            }
            continue;
        }
        if (is_sum) {
            v = (float)sum_piece(dt, xr, cols);
            acc[r] = out->first ? v : acc[r] + v;
        } else {
            v = max_piece(dt, xr, cols);
            acc[r] = out->first ? v : maxf_nan(acc[r], v);
        }
        if (out->last) {
            if (dt == TPU_DTYPE_F32) {
                ((float *)out->data)[r] = acc[r];
            } else {
                ((uint16_t *)out->data)[r] = tpu_dtype_f32_to_bf16(acc[r]);
            }
        }
    }
    return TPU_OK;
}

static void map_row(const int64_t *g, int64_t *b, void *arg)
{
    (void)arg;
    b[0] = g[0];
    b[1] = 0;
}

static void map_rows_cols(const int64_t *g, int64_t *b, void *arg)
{
    (void)arg;
    b[0] = g[0];
    b[1] = g[1];
}

/* Rows per block so that a block of 'cols' x 'es' bytes rows is about ROW_BYTES. */
static int64_t rows_per_block(int64_t rows, int64_t cols, size_t es)
{
    int64_t br = (int64_t)(ROW_BYTES / ((double)cols * (double)es));

    if (br >= rows) {
        return rows;
    }
    if (br >= TPU__SUBLANES) {
        return br / TPU__SUBLANES * TPU__SUBLANES;
    }
    return br >= 1 ? br : 1;
}

static tpu_status_t vpu(tpu_vmem_t *vmem, const tpu_vpu_desc_t *desc, const void *x, const void *y,
                        void *out, int model_only, tpu_roofline_report_t *report_p, tpu_err_t *err)
{
    tpu_status_t status;
    tpu_roofline_report_t rep;
    tpu_vmem_operand_t ops[3];
    tpu_vmem_kernel_t kernel;
    vpu_ctx_t ctx;
    const char *name;
    const size_t es = (size_t)(desc != NULL ? tpu_dtype_size(desc->dtype) : 0);
    const size_t oes = (size_t)(desc != NULL ? tpu_dtype_size(tpu_vpu_out_dtype(desc)) : 0);
    int64_t n;
    int64_t b;
    int64_t bc;
    int two;

    if (vmem == NULL || desc == NULL) {
        return tpu_err_set(err, TPU_ERR_INVALID, "VPU op: NULL argument");
    }
    memset(&rep, 0, sizeof(rep));
    status = tpu_vpu_roofline(tpu_vmem_spec(vmem), desc, &rep.roofline, err);
    if (status != TPU_OK) {
        return status;
    }
    name = tpu_vpu_op_name(desc->op);
    two = tpu_vpu_op_inputs(desc->op) == 2;
    if (desc->block < 0) {
        return tpu_err_set(err, TPU_ERR_INVALID, "%s: block %lld must be 0 (chosen) or positive",
                           name, (long long)desc->block);
    }
    if (!model_only && (x == NULL || out == NULL || (two && y == NULL))) {
        return tpu_err_set(err, TPU_ERR_INVALID, "%s: NULL array", name);
    }
    memset(&ctx, 0, sizeof(ctx));
    ctx.d = *desc;
    memset(ops, 0, sizeof(ops));
    memset(&kernel, 0, sizeof(kernel));
    kernel.name = name;
    kernel.body_arg = &ctx;
    kernel.in = ops;
    n = desc->rows * desc->cols;

    if (!tpu__vpu_is_row_op(desc->op)) {
        b = desc->block > 0 ? desc->block : (n < EW_BLOCK ? n : EW_BLOCK);
        ops[0] = (tpu_vmem_operand_t){
            .data = (void *)(uintptr_t)x, .elem_size = es, .rank = 1, .shape = {n}, .block = {b}};
        ops[1] = ops[0];
        ops[1].data = (void *)(uintptr_t)y;
        ops[two ? 2 : 1] = ops[0];
        ops[two ? 2 : 1].data = out;
        kernel.grid_rank = 1;
        kernel.grid[0] = tpu__cdiv(n, b);
        kernel.n_in = two ? 2 : 1;
        kernel.body = ew_body;
    } else if (desc->op == TPU_VPU_SOFTMAX) {
        b = desc->block > 0 ? desc->block : rows_per_block(desc->rows, desc->cols, es);
        ops[0] = (tpu_vmem_operand_t){.data = (void *)(uintptr_t)x,
                                      .elem_size = es,
                                      .rank = 2,
                                      .shape = {desc->rows, desc->cols},
                                      .block = {b, desc->cols},
                                      .index_map = map_row};
        ops[1] = ops[0];
        ops[1].data = out;
        kernel.grid_rank = 1;
        kernel.grid[0] = tpu__cdiv(desc->rows, b);
        kernel.n_in = 1;
        kernel.body = softmax_body;
    } else {
        bc = desc->cols < RED_COLS ? desc->cols : RED_COLS;
        b = desc->block > 0 ? desc->block : rows_per_block(desc->rows, bc, es);
        ops[0] = (tpu_vmem_operand_t){.data = (void *)(uintptr_t)x,
                                      .elem_size = es,
                                      .rank = 2,
                                      .shape = {desc->rows, desc->cols},
                                      .block = {b, bc},
                                      .index_map = map_rows_cols};
        ops[1] = (tpu_vmem_operand_t){.data = out,
                                      .elem_size = oes,
                                      .rank = 2,
                                      .shape = {desc->rows, 1},
                                      .block = {b, 1},
                                      .index_map = map_row};
        kernel.grid_rank = 2;
        kernel.grid[0] = tpu__cdiv(desc->rows, b);
        kernel.grid[1] = tpu__cdiv(desc->cols, bc);
        kernel.n_in = 1;
        kernel.scratch_bytes = (size_t)b * sizeof(float);
        kernel.body = reduce_body;
    }
    kernel.n_out = 1;
    kernel.out = &ops[kernel.n_in];

    if (model_only) {
        status = tpu_vmem_model(vmem, &kernel, &rep.pipeline, err);
        goto out;
    }
    if (desc->op == TPU_VPU_SOFTMAX && desc->dtype == TPU_DTYPE_BF16) {
        ctx.row = tpu__vmem_host_scratch(vmem, (size_t)desc->cols * sizeof(float));
        if (ctx.row == NULL) {
            status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "softmax: no host memory for a row");
            goto out;
        }
    }
    status = tpu_vmem_run(vmem, &kernel, &rep.pipeline, err);

out:
    if (status == TPU_OK && report_p != NULL) {
        rep.block[0] = b;
        *report_p = rep;
    }
    return status;
}

tpu_status_t tpu_vpu_run(tpu_vmem_t *vmem, const tpu_vpu_desc_t *desc, const void *x, const void *y,
                         void *out, tpu_roofline_report_t *report_p, tpu_err_t *err)
{
    return vpu(vmem, desc, x, y, out, 0, report_p, err);
}

tpu_status_t tpu_vpu_model(tpu_vmem_t *vmem, const tpu_vpu_desc_t *desc,
                           tpu_roofline_report_t *report_p, tpu_err_t *err)
{
    return vpu(vmem, desc, NULL, NULL, NULL, 1, report_p, err);
}
