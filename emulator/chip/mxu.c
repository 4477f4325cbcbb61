/*
 * MXU matmul, C[m,n] = A[m,k] @ B[k,n], as a Pallas kernel on the VMEM executor.
 *
 * The kernel is the blocked matmul of the Pallas documentation (seed 002):
 *
 *   grid  = (cdiv(m, bm), cdiv(n, bn), cdiv(k, bk))     k innermost
 *   A     = BlockSpec((bm, bk), lambda i, j, k: (i, k))
 *   B     = BlockSpec((bk, bn), lambda i, j, k: (k, j))
 *   C     = BlockSpec((bm, bn), lambda i, j, k: (i, j))
 *   body:   acc = 0 on the first k step; acc += A_blk @ B_blk; C_blk = acc on
 *           the last k step
 *
 * so C's block stays in VMEM across the k steps and is written back once.  The
 * accumulator is f32 (a VMEM scratch block for a bf16 output, the output block
 * itself for f32) or int32 (the output block, for int8).
 *
 * Host arithmetic, per step, on the valid part of the blocks:
 * - bf16: the blocks are widened to f32 (exact) into host shadows, kept while
 *   the VMEM slot they came from is unchanged (A's block survives the j loop when
 *   k has one block), then cblas_sgemm accumulates into the f32 accumulator.  A
 *   product of two bf16 values is exact in f32; the sums are f32 sums, in
 *   OpenBLAS' order (fine within bf16 tolerance).  The last k step rounds the
 *   accumulator to bf16, to nearest, ties to even.
 * - f32: cblas_sgemm on the VMEM blocks directly.
 * - int8: widened to f32, and cblas_sgemm over chunks of at most 1024 along k.
 *   Every product is at most 128 x 128 = 2^14 in magnitude, so every partial sum
 *   of a chunk is an integer of magnitude at most 1024 x 2^14 = 2^24, which f32
 *   represents exactly, whatever order and FMA use OpenBLAS picks: the chunk's
 *   result is exact.  Chunks are added into the int32 accumulator with 32-bit
 *   wraparound, as a hardware int32 accumulator does.  (dgemm would be exact for
 *   k up to 2^53 / 2^14 = 2^39 in one call, at half sgemm's speed; chunks of
 *   sgemm are faster and just as exact.)
 *
 * Block choice: each dimension takes the whole array up to 2048, then the
 * largest of bm, bn, bk is halved (to a multiple of 128) until the plan, 2 x
 * (A + B + C blocks) + the f32 accumulator, fits one TensorCore's VMEM.  Big
 * blocks mean fewer re-fetches (HBM traffic) and few, large sgemm calls on the
 * host; on v5e an 8192^3 bf16 matmul gets 2048^3 blocks, 64 MiB of VMEM and a
 * pipelined time within 1% of the roofline.
 *
 * Modeled compute per step: tpu_mxu_seconds() of the block's valid
 * dimensions, each padded to the MXU edge.
 */
#include "tpu/mxu.h"

#include "tpu/roofline.h"
#include "tpu/vmem.h"
#include "tpu/vpu.h"

#include "chip_internal.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

#define BLOCK_CAP   2048
#define BLOCK_ALIGN 128
#define INT8_CHUNK  1024

typedef struct mm_ctx {
    tpu_mxu_desc_t d;
    float *wa;  /* A block widened to f32 (bf16, int8) */
    float *wb;  /* B block widened to f32 */
    float *tmp; /* int8: one chunk's f32 result */
    uint64_t wa_ver;
    uint64_t wb_ver;
} mm_ctx_t;

static void map_a(const int64_t *g, int64_t *b, void *arg)
{
    (void)arg;
    b[0] = g[0];
    b[1] = g[2];
}

static void map_b(const int64_t *g, int64_t *b, void *arg)
{
    (void)arg;
    b[0] = g[2];
    b[1] = g[1];
}

static void map_c(const int64_t *g, int64_t *b, void *arg)
{
    (void)arg;
    b[0] = g[0];
    b[1] = g[1];
}

static void widen_int8(const int8_t *src, float *dst, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        dst[i] = (float)src[i];
    }
}

static void widen_block(const tpu_mxu_desc_t *d, const tpu_vmem_ref_t *ref, float *dst)
{
    size_t n = (size_t)(ref->block[0] * ref->block[1]);

    if (d->in == TPU_DTYPE_BF16) {
        tpu_dtype_bf16_widen(ref->data, dst, n);
    } else {
        widen_int8(ref->data, dst, n);
    }
}

/* Widen the A and B blocks to f32 in the context, unless they are already there. */
static void widen_inputs(mm_ctx_t *ctx, const tpu_vmem_ref_t *a, const tpu_vmem_ref_t *b)
{
    if (ctx->wa_ver != a->version) {
        widen_block(&ctx->d, a, ctx->wa);
        ctx->wa_ver = a->version;
    }
    if (ctx->wb_ver != b->version) {
        widen_block(&ctx->d, b, ctx->wb);
        ctx->wb_ver = b->version;
    }
}

/* C_int32 (+)= the exact integer results in 'tmp', with 32-bit wraparound. */
static void add_int32(int32_t *c, const float *tmp, int64_t rows, int64_t cols, int64_t ld,
                      int assign)
{
    int64_t r;
    int64_t j;
    uint32_t v;

    for (r = 0; r < rows; r++) {
        int32_t *crow = c + r * ld;
        const float *trow = tmp + r * ld;

        if (assign) {
            for (j = 0; j < cols; j++) {
                crow[j] = (int32_t)trow[j];
            }
        } else {
            for (j = 0; j < cols; j++) {
                v = (uint32_t)crow[j] + (uint32_t)(int32_t)trow[j];
                memcpy(&crow[j], &v, sizeof(v));
            }
        }
    }
}

static tpu_status_t mm_body(tpu_vmem_step_t *step, tpu_vmem_ref_t *refs, void *arg, tpu_err_t *err)
{
    mm_ctx_t *ctx = arg;
    const tpu_mxu_desc_t *d = &ctx->d;
    tpu_vmem_ref_t *a = &refs[0];
    tpu_vmem_ref_t *b = &refs[1];
    tpu_vmem_ref_t *c = &refs[2];
    const int64_t mv = c->valid[0];
    const int64_t nv = c->valid[1];
    const int64_t kv = a->valid[1];
    const int lda = (int)a->block[1];
    const int ldb = (int)b->block[1];
    const int ldc = (int)c->block[1];
    float *acc;
    int64_t kc;
    int64_t klen;
    int64_t r;

    (void)err;
    step->flops = 2.0 * (double)mv * (double)kv * (double)nv;
    step->compute_s = tpu_mxu_seconds(step->spec, mv, kv, nv, d->in);
    if (step->model_only) {
        return TPU_OK;
    }
    switch (d->in) {
    case TPU_DTYPE_F32:
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)mv, (int)nv, (int)kv, 1.0f,
                    a->data, lda, b->data, ldb, c->first ? 0.0f : 1.0f, c->data, ldc);
        break;
    case TPU_DTYPE_BF16:
        widen_inputs(ctx, a, b);
        acc = d->out == TPU_DTYPE_F32 ? c->data : step->scratch;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)mv, (int)nv, (int)kv, 1.0f,
                    ctx->wa, lda, ctx->wb, ldb, c->first ? 0.0f : 1.0f, acc, ldc);
        if (c->last && d->out == TPU_DTYPE_BF16) {
            for (r = 0; r < mv; r++) {
                tpu_dtype_bf16_narrow(acc + r * ldc, (uint16_t *)c->data + r * ldc, (size_t)nv);
            }
        }
        break;
    case TPU_DTYPE_I8:
        widen_inputs(ctx, a, b);
        for (kc = 0; kc < kv; kc += INT8_CHUNK) {
            klen = kv - kc < INT8_CHUNK ? kv - kc : INT8_CHUNK;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)mv, (int)nv, (int)klen,
                        1.0f, ctx->wa + kc, lda, ctx->wb + kc * ldb, ldb, 0.0f, ctx->tmp, ldc);
            add_int32(c->data, ctx->tmp, mv, nv, ldc, c->first && kc == 0);
        }
        break;
    default:
        break;
    }
    return TPU_OK;
}

/* A VMEM buffer of 'bytes', rounded up to the executor's 64-byte slots. */
static double slot(double bytes)
{
    return ceil(bytes / 64) * 64;
}

/* The executor's plan for these blocks: 2 x (A + B + C) + the accumulator. */
static double plan_bytes(const tpu_mxu_desc_t *d, int64_t bm, int64_t bk, int64_t bn)
{
    double in = tpu_dtype_size(d->in);
    double out = tpu_dtype_size(d->out);
    double acc = (d->in == TPU_DTYPE_BF16 && d->out == TPU_DTYPE_BF16) ? 4.0 * bm * bn : 0;

    return 2.0 * (slot((double)bm * bk * in) + slot((double)bk * bn * in) +
                  slot((double)bm * bn * out)) +
           slot(acc);
}

static int64_t halve(int64_t b)
{
    return tpu__round_up(b / 2 > 0 ? b / 2 : 1, BLOCK_ALIGN);
}

/* Choose the blocks of 'd' that are not given, to fit 'capacity' bytes. */
static void choose_blocks(tpu_mxu_desc_t *d, double capacity)
{
    int fix_m = d->bm > 0;
    int fix_k = d->bk > 0;
    int fix_n = d->bn > 0;
    int64_t *big;

    if (!fix_m) {
        d->bm = d->m < BLOCK_CAP ? d->m : BLOCK_CAP;
    }
    if (!fix_k) {
        d->bk = d->k < BLOCK_CAP ? d->k : BLOCK_CAP;
    }
    if (!fix_n) {
        d->bn = d->n < BLOCK_CAP ? d->n : BLOCK_CAP;
    }
    while (plan_bytes(d, d->bm, d->bk, d->bn) > capacity) {
        big = NULL;
        if (!fix_m && d->bm > BLOCK_ALIGN) {
            big = &d->bm;
        }
        if (!fix_n && d->bn > BLOCK_ALIGN && (big == NULL || d->bn > *big)) {
            big = &d->bn;
        }
        if (!fix_k && d->bk > BLOCK_ALIGN && (big == NULL || d->bk > *big)) {
            big = &d->bk;
        }
        if (big == NULL) {
            return; /* the executor reports the plan that does not fit */
        }
        *big = halve(*big);
    }
}

static tpu_status_t check_blocks(const tpu_mxu_desc_t *d, tpu_err_t *err)
{
    if (d->bm < 0 || d->bk < 0 || d->bn < 0 || d->bm > INT32_MAX || d->bk > INT32_MAX ||
        d->bn > INT32_MAX) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "matmul: blocks bm %lld, bk %lld, bn %lld must be 0 (chosen) or 1 to "
                           "2^31-1",
                           (long long)d->bm, (long long)d->bk, (long long)d->bn);
    }
    return TPU_OK;
}

static tpu_status_t matmul(tpu_vmem_t *vmem, const tpu_mxu_desc_t *desc, const void *a,
                           const void *b, void *c, int model_only, tpu_roofline_report_t *report_p,
                           tpu_err_t *err)
{
    tpu_status_t status;
    tpu_roofline_report_t rep;
    tpu_vmem_operand_t ops[3];
    tpu_vmem_kernel_t kernel;
    mm_ctx_t ctx;
    const tpu_chip_spec_t *spec;
    size_t in_size;

    if (vmem == NULL || desc == NULL) {
        return tpu_err_set(err, TPU_ERR_INVALID, "matmul: NULL argument");
    }
    spec = tpu_vmem_spec(vmem);
    memset(&rep, 0, sizeof(rep));
    status = tpu_mxu_roofline(spec, desc, &rep.roofline, err);
    if (status != TPU_OK) {
        return status;
    }
    status = check_blocks(desc, err);
    if (status != TPU_OK) {
        return status;
    }
    if (!model_only && (a == NULL || b == NULL || c == NULL)) {
        return tpu_err_set(err, TPU_ERR_INVALID, "matmul: NULL array");
    }
    memset(&ctx, 0, sizeof(ctx));
    ctx.d = *desc;
    choose_blocks(&ctx.d, (double)tpu_vmem_capacity(vmem));

    in_size = (size_t)tpu_dtype_size(desc->in);
    memset(ops, 0, sizeof(ops));
    ops[0] = (tpu_vmem_operand_t){.data = (void *)(uintptr_t)a,
                                  .elem_size = in_size,
                                  .rank = 2,
                                  .shape = {desc->m, desc->k},
                                  .block = {ctx.d.bm, ctx.d.bk},
                                  .index_map = map_a};
    ops[1] = (tpu_vmem_operand_t){.data = (void *)(uintptr_t)b,
                                  .elem_size = in_size,
                                  .rank = 2,
                                  .shape = {desc->k, desc->n},
                                  .block = {ctx.d.bk, ctx.d.bn},
                                  .index_map = map_b};
    ops[2] = (tpu_vmem_operand_t){.data = c,
                                  .elem_size = (size_t)tpu_dtype_size(desc->out),
                                  .rank = 2,
                                  .shape = {desc->m, desc->n},
                                  .block = {ctx.d.bm, ctx.d.bn},
                                  .index_map = map_c};
    memset(&kernel, 0, sizeof(kernel));
    kernel.name = "matmul";
    kernel.grid_rank = 3;
    kernel.grid[0] = tpu__cdiv(desc->m, ctx.d.bm);
    kernel.grid[1] = tpu__cdiv(desc->n, ctx.d.bn);
    kernel.grid[2] = tpu__cdiv(desc->k, ctx.d.bk);
    kernel.n_in = 2;
    kernel.in = &ops[0];
    kernel.n_out = 1;
    kernel.out = &ops[2];
    if (desc->in == TPU_DTYPE_BF16 && desc->out == TPU_DTYPE_BF16) {
        kernel.scratch_bytes = (size_t)(ctx.d.bm * ctx.d.bn) * sizeof(float);
    }
    kernel.body = mm_body;
    kernel.body_arg = &ctx;

    if (model_only) {
        status = tpu_vmem_model(vmem, &kernel, &rep.pipeline, err);
        goto out;
    }
    if (desc->in != TPU_DTYPE_F32) {
        size_t na = (size_t)(ctx.d.bm * ctx.d.bk);
        size_t nb = (size_t)(ctx.d.bk * ctx.d.bn);
        size_t nt = desc->in == TPU_DTYPE_I8 ? (size_t)(ctx.d.bm * ctx.d.bn) : 0;

        ctx.wa = tpu__vmem_host_scratch(vmem, (na + nb + nt) * sizeof(float));
        if (ctx.wa == NULL) {
            status =
                tpu_err_set(err, TPU_ERR_NO_MEMORY, "matmul: no host memory to widen the blocks");
            goto out;
        }
        ctx.wb = ctx.wa + na;
        ctx.tmp = nt > 0 ? ctx.wb + nb : NULL;
    }
    status = tpu_vmem_run(vmem, &kernel, &rep.pipeline, err);

out:
    if (status == TPU_OK && report_p != NULL) {
        rep.block[0] = ctx.d.bm;
        rep.block[1] = ctx.d.bk;
        rep.block[2] = ctx.d.bn;
        *report_p = rep;
    }
    return status;
}

tpu_status_t tpu_mxu_matmul(tpu_vmem_t *vmem, const tpu_mxu_desc_t *desc, const void *a,
                            const void *b, void *c, tpu_roofline_report_t *report_p, tpu_err_t *err)
{
    return matmul(vmem, desc, a, b, c, 0, report_p, err);
}

tpu_status_t tpu_mxu_matmul_model(tpu_vmem_t *vmem, const tpu_mxu_desc_t *desc,
                                  tpu_roofline_report_t *report_p, tpu_err_t *err)
{
    return matmul(vmem, desc, NULL, NULL, NULL, 1, report_p, err);
}
