/*
 * The roofline cost model of the chip's ops (conventions at the top of
 * include/tpu/roofline.h and at the bottom of shared/reference/fidelity.md).
 *
 *   modeled = max(hw_flops / peak, hbm_bytes / hbm_bw)
 *
 * Matmul [m,k] @ [k,n]:
 *   flops     = 2 m k n
 *   hw_flops  = 2 pad(m) pad(k) pad(n), pad = round up to mxu_dim (128 or 256)
 *   hbm_bytes = (m k + k n) x in-size + m n x out-size
 *   peak      = bf16_flops (bf16), int8_ops (int8), f32_flops (f32)
 *
 * VPU op on rows x cols:
 *   flops     = rows x cols x FLOPs per element (TPU_VPU_OP_MAP)
 *   hw_flops  = the same on the array padded to whole (8,128) tiles: the
 *               element count rounded up to 1024; for a row op (softmax, sum,
 *               reduce_max) each row is first padded to whole 128-lane vectors
 *   hbm_bytes = inputs + output (a reduction writes one element per row)
 *   peak      = vpu_flops
 *
 * Worked examples from the reference table (roofline_public.csv):
 *   R08 v5e matmul 8192^3 bf16: 2 x 8192^3 / 1.97e14 = 5581.277 us, compute
 *       (memory: 3 x 8192^2 x 2 B / 8.1e11 = 497.1 us).
 *   R14 v5e add of 67108864 bf16: 3 x 2 B x 2^26 / 8.1e11 = 497.103 us, memory
 *       (compute: 2^26 / 6.14e12 = 10.9 us).
 */
#include "tpu/roofline.h"

#include "tpu/calibration.h"
#include "tpu/mxu.h"
#include "tpu/vpu.h"

#include "chip_internal.h"

#include <string.h>

static const struct {
    const char *name;
    int inputs;
    int flops;
} vpu_ops[TPU_VPU_OP_COUNT] = {
#define X(name, str, inputs, flops) [TPU_VPU_##name] = {str, inputs, flops},
    TPU_VPU_OP_MAP(X)
#undef X
};

const char *tpu_vpu_op_name(tpu_vpu_op_t op)
{
    return ((unsigned)op < TPU_VPU_OP_COUNT) ? vpu_ops[op].name : NULL;
}

int tpu_vpu_op_inputs(tpu_vpu_op_t op)
{
    return ((unsigned)op < TPU_VPU_OP_COUNT) ? vpu_ops[op].inputs : 0;
}

int tpu_vpu_op_flops(tpu_vpu_op_t op)
{
    return ((unsigned)op < TPU_VPU_OP_COUNT) ? vpu_ops[op].flops : 0;
}

tpu_status_t tpu_vpu_op_parse(const char *text, tpu_vpu_op_t *op_p, tpu_err_t *err)
{
    int i;

    if (text != NULL && op_p != NULL) {
        for (i = 0; i < TPU_VPU_OP_COUNT; i++) {
            if (strcmp(text, vpu_ops[i].name) == 0) {
                *op_p = (tpu_vpu_op_t)i;
                return TPU_OK;
            }
        }
        if (strcmp(text, "reduce-max") == 0) {
            *op_p = TPU_VPU_REDUCE_MAX;
            return TPU_OK;
        }
    }
    return tpu_err_set(err, TPU_ERR_INVALID,
                       "unknown op '%s' (known: add, mul, max, relu, exp, tanh, gelu, softmax, "
                       "sum, reduce_max)",
                       text != NULL ? text : "");
}

const char *tpu_roofline_bound_name(tpu_roofline_bound_t bound)
{
    return bound == TPU_ROOFLINE_COMPUTE ? "compute" : "memory";
}

void tpu_mxu_desc_init(tpu_mxu_desc_t *desc, int64_t m, int64_t k, int64_t n, tpu_dtype_t in)
{
    memset(desc, 0, sizeof(*desc));
    desc->m = m;
    desc->k = k;
    desc->n = n;
    desc->in = in;
    desc->out = in == TPU_DTYPE_I8 ? TPU_DTYPE_I32 : in;
}

void tpu_vpu_desc_init(tpu_vpu_desc_t *desc, tpu_vpu_op_t op, tpu_dtype_t dtype, int64_t rows,
                       int64_t cols)
{
    memset(desc, 0, sizeof(*desc));
    desc->op = op;
    desc->dtype = dtype;
    desc->rows = rows;
    desc->cols = cols;
}

tpu_dtype_t tpu_vpu_out_dtype(const tpu_vpu_desc_t *desc)
{
    if (desc->op == TPU_VPU_SUM && desc->dtype == TPU_DTYPE_I8) {
        return TPU_DTYPE_I32;
    }
    return desc->dtype;
}

double tpu__mxu_peak(const tpu_chip_spec_t *spec, tpu_dtype_t in)
{
    switch (in) {
    case TPU_DTYPE_BF16:
        return spec->bf16_flops;
    case TPU_DTYPE_I8:
        return spec->int8_ops;
    case TPU_DTYPE_F32:
        return spec->f32_flops;
    default:
        return 0;
    }
}

static double mxu_hw_flops(const tpu_chip_spec_t *spec, int64_t m, int64_t k, int64_t n)
{
    int64_t d = spec->mxu_dim > 0 ? spec->mxu_dim : 1;

    return 2.0 * (double)tpu__round_up(m, d) * (double)tpu__round_up(k, d) *
           (double)tpu__round_up(n, d);
}

double tpu_mxu_seconds(const tpu_chip_spec_t *spec, int64_t m, int64_t k, int64_t n, tpu_dtype_t in)
{
    double peak = tpu__mxu_peak(spec, in);

    if (!(peak > 0) || m <= 0 || k <= 0 || n <= 0) {
        return 0;
    }
    return mxu_hw_flops(spec, m, k, n) / peak;
}

/*
 * The calibrated matmul (tpu/mxu.h): the chip's TensorCores split the rows (m),
 * each with its share of the peak and of the HBM rate; on one TensorCore
 *   t = launch + max(hw_flops / (peak x mxu_efficiency), bytes / hbm) + fill,
 *   hbm  = the TensorCore's share of hbm_bw x hbm_efficiency,
 *   fill = (first A and B blocks + last C block) / hbm, blocks of edge at most
 *          mxu_block: the pipeline's prologue and epilogue, not overlapped.
 * The constants are the chip's calibration profile (tpu/calibration.h).
 */
double tpu_mxu_seconds_calibrated(const tpu_chip_spec_t *spec, int64_t m, int64_t k, int64_t n,
                                  tpu_dtype_t in)
{
    const tpu_chip_calibration_t *cal = tpu_chip_calibration(spec->name);
    double peak = tpu__mxu_peak(spec, in), tc = spec->tensorcores > 0 ? spec->tensorcores : 1;
    double si = tpu_dtype_size(in), so, hbm, bytes, fill, bm, bk, bn, mt, compute;

    if (!(peak > 0) || !(spec->hbm_bw > 0) || m <= 0 || k <= 0 || n <= 0) {
        return 0;
    }
    so = in == TPU_DTYPE_BF16 ? si : 4; /* bf16 out; f32 and int32 are 4 bytes */
    mt = (double)((m + (int64_t)tc - 1) / (int64_t)tc);
    hbm = spec->hbm_bw / tc * cal->hbm_efficiency;
    bytes = (mt * (double)k + (double)k * (double)n) * si + mt * (double)n * so;
    bm = mt < cal->mxu_block ? mt : cal->mxu_block;
    bk = (double)k < cal->mxu_block ? (double)k : cal->mxu_block;
    bn = (double)n < cal->mxu_block ? (double)n : cal->mxu_block;
    fill = ((bm * bk + bk * bn) * si + bm * bn * so) / hbm;
    compute = mxu_hw_flops(spec, (int64_t)mt, k, n) / (peak / tc * cal->mxu_efficiency);
    return cal->mxu_launch + (compute > bytes / hbm ? compute : bytes / hbm) + fill;
}

double tpu_mxu_efficiency(const tpu_chip_spec_t *spec, int64_t m, int64_t k, int64_t n,
                          tpu_dtype_t in)
{
    double t = tpu_mxu_seconds_calibrated(spec, m, k, n, in);

    return t > 0 ? 2.0 * (double)m * (double)k * (double)n / (t * tpu__mxu_peak(spec, in)) : 0;
}

int64_t tpu__vpu_padded(int64_t rows, int64_t cols)
{
    return tpu__round_up(rows * cols, TPU__SUBLANES * TPU__LANES);
}

double tpu_vpu_seconds(const tpu_chip_spec_t *spec, int64_t elements, double flops_per_elem)
{
    const int64_t tile = TPU__SUBLANES * TPU__LANES;

    if (!(spec->vpu_flops > 0) || elements <= 0) {
        return 0;
    }
    return (double)tpu__round_up(elements, tile) * flops_per_elem / spec->vpu_flops;
}

static void finish(const tpu_chip_spec_t *spec, tpu_roofline_t *rl)
{
    rl->intensity = rl->hbm_bytes > 0 ? rl->flops / rl->hbm_bytes : 0;
    rl->compute_us = rl->hw_flops / rl->peak * 1e6;
    rl->memory_us = rl->hbm_bytes / spec->hbm_bw * 1e6;
    rl->bound = rl->compute_us > rl->memory_us ? TPU_ROOFLINE_COMPUTE : TPU_ROOFLINE_MEMORY;
    rl->modeled_us = rl->bound == TPU_ROOFLINE_COMPUTE ? rl->compute_us : rl->memory_us;
}

static int matmul_types_ok(tpu_dtype_t in, tpu_dtype_t out)
{
    switch (in) {
    case TPU_DTYPE_BF16:
        return out == TPU_DTYPE_BF16 || out == TPU_DTYPE_F32;
    case TPU_DTYPE_F32:
        return out == TPU_DTYPE_F32;
    case TPU_DTYPE_I8:
        return out == TPU_DTYPE_I32;
    default:
        return 0;
    }
}

tpu_status_t tpu_mxu_roofline(const tpu_chip_spec_t *spec, const tpu_mxu_desc_t *desc,
                              tpu_roofline_t *rl_p, tpu_err_t *err)
{
    tpu_roofline_t rl;
    double m, k, n;

    if (spec == NULL || desc == NULL || rl_p == NULL) {
        return tpu_err_set(err, TPU_ERR_INVALID, "tpu_mxu_roofline: NULL argument");
    }
    if (desc->m <= 0 || desc->k <= 0 || desc->n <= 0) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "matmul: dimensions must be positive, got m %lld, k %lld, n %lld",
                           (long long)desc->m, (long long)desc->k, (long long)desc->n);
    }
    if (!matmul_types_ok(desc->in, desc->out)) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "matmul: %s inputs with %s output is not supported (bf16 -> bf16 or "
                           "f32, f32 -> f32, i8 -> i32)",
                           tpu_dtype_name(desc->in), tpu_dtype_name(desc->out));
    }
    if (!(tpu__mxu_peak(spec, desc->in) > 0) || !(spec->hbm_bw > 0) || spec->mxu_dim <= 0) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "chip %s: the %s matmul rate, hbm_bw and mxu_dim must be positive",
                           spec->name, tpu_dtype_name(desc->in));
    }
    m = (double)desc->m;
    k = (double)desc->k;
    n = (double)desc->n;
    memset(&rl, 0, sizeof(rl));
    rl.flops = 2.0 * m * k * n;
    rl.hw_flops = mxu_hw_flops(spec, desc->m, desc->k, desc->n);
    rl.hbm_bytes = (m * k + k * n) * tpu_dtype_size(desc->in) + m * n * tpu_dtype_size(desc->out);
    rl.peak = tpu__mxu_peak(spec, desc->in);
    finish(spec, &rl);
    *rl_p = rl;
    return TPU_OK;
}

tpu_status_t tpu__vpu_check(const tpu_vpu_desc_t *desc, tpu_err_t *err)
{
    const char *name = tpu_vpu_op_name(desc->op);

    if (name == NULL) {
        return tpu_err_set(err, TPU_ERR_INVALID, "unknown VPU op %d", (int)desc->op);
    }
    if (desc->rows <= 0 || desc->cols <= 0) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "%s: rows and cols must be positive, got %lld x %lld", name,
                           (long long)desc->rows, (long long)desc->cols);
    }
    if (desc->rows > ((int64_t)1 << 56) / desc->cols) {
        return tpu_err_set(err, TPU_ERR_INVALID, "%s: %lld x %lld elements overflow", name,
                           (long long)desc->rows, (long long)desc->cols);
    }
    switch (desc->dtype) {
    case TPU_DTYPE_BF16:
    case TPU_DTYPE_F32:
        return TPU_OK;
    case TPU_DTYPE_I8:
        switch (desc->op) {
        case TPU_VPU_ADD:
        case TPU_VPU_MUL:
        case TPU_VPU_MAX:
        case TPU_VPU_RELU:
        case TPU_VPU_SUM:
        case TPU_VPU_REDUCE_MAX:
            return TPU_OK;
        default:
            break;
        }
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "%s does not take i8 (i8: add, mul, max, relu, sum, reduce_max)", name);
    default:
        return tpu_err_set(err, TPU_ERR_INVALID, "%s does not take %s (bf16, f32, i8)", name,
                           tpu_dtype_name(desc->dtype));
    }
}

int tpu__vpu_is_row_op(tpu_vpu_op_t op)
{
    return op == TPU_VPU_SOFTMAX || op == TPU_VPU_SUM || op == TPU_VPU_REDUCE_MAX;
}

tpu_status_t tpu_vpu_roofline(const tpu_chip_spec_t *spec, const tpu_vpu_desc_t *desc,
                              tpu_roofline_t *rl_p, tpu_err_t *err)
{
    tpu_status_t status;
    tpu_roofline_t rl;
    double elems;
    double padded;
    double out_elems;
    int fpe;

    if (spec == NULL || desc == NULL || rl_p == NULL) {
        return tpu_err_set(err, TPU_ERR_INVALID, "tpu_vpu_roofline: NULL argument");
    }
    status = tpu__vpu_check(desc, err);
    if (status != TPU_OK) {
        return status;
    }
    if (!(spec->vpu_flops > 0) || !(spec->hbm_bw > 0)) {
        return tpu_err_set(err, TPU_ERR_INVALID, "chip %s: vpu_flops and hbm_bw must be positive",
                           spec->name);
    }
    fpe = tpu_vpu_op_flops(desc->op);
    elems = (double)desc->rows * (double)desc->cols;
    padded = (double)tpu__vpu_padded(desc->rows, tpu__vpu_is_row_op(desc->op)
                                                     ? tpu__round_up(desc->cols, TPU__LANES)
                                                     : desc->cols);
    out_elems =
        (desc->op == TPU_VPU_SUM || desc->op == TPU_VPU_REDUCE_MAX) ? (double)desc->rows : elems;
    memset(&rl, 0, sizeof(rl));
    rl.flops = elems * fpe;
    rl.hw_flops = padded * fpe;
    rl.hbm_bytes = elems * tpu_vpu_op_inputs(desc->op) * tpu_dtype_size(desc->dtype) +
                   out_elems * tpu_dtype_size(tpu_vpu_out_dtype(desc));
    rl.peak = spec->vpu_flops;
    finish(spec, &rl);
    *rl_p = rl;
    return TPU_OK;
}
