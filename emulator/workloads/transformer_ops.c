/*
 * The transformer's chip ops: matmuls through the MXU model (bf16 inputs
 * rounded to nearest even, f32 accumulation), the VPU cost of each elementwise
 * pass, the hook call, and the row-wise math (RMSNorm, GELU) with its
 * derivatives, plus the counter-based normal numbers of the random init.
 *
 * The elementwise work runs on the host in f32 and is charged as the VPU
 * passes a compiler would emit (vpu.h's FLOPs per element); transposes the
 * host makes for OpenBLAS are not charged (the MXU takes either orientation).
 */
#include "transformer_ops.h"

#include "tpu/dtype.h"
#include "tpu/mxu.h"
#include "tpu/roofline.h"

#include "alloc.h"
#include "workload_util.h"

#include <math.h>
#include <string.h>

tpu_status_t tpu__xfmr_mm(tpu_xfmr_t *xf, int64_t m, int64_t k, int64_t n, const float *A, int ta,
                          const float *B, int tb, float *C, int acc, tpu_err_t *err)
{
    const int bf16 = xf->cfg.precision == TPU_XFMR_BF16;
    tpu_mxu_desc_t d;
    tpu_roofline_report_t rep;
    tpu_status_t status;
    float *at = NULL, *bt = NULL, *ct = NULL;
    void *a16 = NULL, *b16 = NULL;
    const void *a = A, *b = B;
    int64_t i;

    if (m == 0 || n == 0) {
        return TPU_OK;
    }
    if (k == 0) {
        if (!acc) {
            memset(C, 0, (size_t)(m * n) * sizeof(float));
        }
        return TPU_OK;
    }
    tpu_mxu_desc_init(&d, m, k, n, bf16 ? TPU_DTYPE_BF16 : TPU_DTYPE_F32);
    d.out = TPU_DTYPE_F32;
    at = ta ? tpu__malloc((size_t)(m * k) * sizeof(float)) : NULL;
    bt = tb ? tpu__malloc((size_t)(k * n) * sizeof(float)) : NULL;
    ct = acc ? tpu__malloc((size_t)(m * n) * sizeof(float)) : NULL;
    a16 = bf16 ? tpu__malloc((size_t)(m * k) * 2) : NULL;
    b16 = bf16 ? tpu__malloc((size_t)(k * n) * 2) : NULL;
    if ((ta && at == NULL) || (tb && bt == NULL) || (acc && ct == NULL) ||
        (bf16 && (a16 == NULL || b16 == NULL))) {
        status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "transformer: no host memory for a matmul");
        goto out;
    }
    if (ta) {
        tpu__workload_transpose(A, k, m, at);
        a = at;
    }
    if (tb) {
        tpu__workload_transpose(B, n, k, bt);
        b = bt;
    }
    if (bf16) {
        tpu_dtype_bf16_narrow(a, a16, (size_t)(m * k));
        tpu_dtype_bf16_narrow(b, b16, (size_t)(k * n));
        a = a16;
        b = b16;
    }
    status = tpu_mxu_matmul(xf->vmem, &d, a, b, acc ? ct : C, &rep, err);
    if (status != TPU_OK) {
        goto out;
    }
    for (i = 0; acc && i < m * n; i++) {
        C[i] += ct[i];
    }
    xf->cost.mxu_us += rep.roofline.modeled_us;
    xf->cost.compute_us += rep.roofline.modeled_us;
    xf->cost.matmuls++;
    xf->cost.flops += 2.0 * (double)m * (double)k * (double)n;
out:
    tpu__free(at);
    tpu__free(bt);
    tpu__free(ct);
    tpu__free(a16);
    tpu__free(b16);
    return status;
}

tpu_status_t tpu__xfmr_vpu(tpu_xfmr_t *xf, tpu_vpu_op_t op, int64_t rows, int64_t cols,
                           tpu_err_t *err)
{
    tpu_vpu_desc_t d;
    tpu_roofline_t rl;
    tpu_status_t status;

    if (rows * cols == 0) {
        return TPU_OK;
    }
    tpu_vpu_desc_init(&d, op, TPU_DTYPE_F32, rows, cols);
    status = tpu_vpu_roofline(&xf->chip, &d, &rl, err);
    if (status == TPU_OK) {
        xf->cost.vpu_us += rl.modeled_us;
        xf->cost.compute_us += rl.modeled_us;
    }
    return status;
}

tpu_status_t tpu__xfmr_hook(tpu_xfmr_t *xf, tpu_xfmr_hook_t hook, int index, float *buf,
                            int64_t count, tpu_err_t *err)
{
    if (xf->cfg.hook == NULL) {
        return TPU_OK;
    }
    return xf->cfg.hook(xf->cfg.hook_arg, hook, index, buf, count, err);
}

void tpu__xfmr_rms_fwd(const float *x, const float *gain, int64_t t, int64_t d, float *r, float *n,
                       float *out)
{
    int64_t i, j;

    for (i = 0; i < t; i++) {
        const float *xr = x + i * d;
        float ss = 0, ri;

        for (j = 0; j < d; j++) {
            ss += xr[j] * xr[j];
        }
        ri = 1.0f / sqrtf(ss / (float)d + XFMR_EPS);
        r[i] = ri;
        for (j = 0; j < d; j++) {
            n[i * d + j] = xr[j] * ri;
            out[i * d + j] = n[i * d + j] * gain[j];
        }
    }
}

void tpu__xfmr_rms_bwd(const float *dout, const float *gain, const float *r, const float *n,
                       int64_t t, int64_t d, float *dgain, float *dx, int acc)
{
    int64_t i, j;

    for (i = 0; i < t; i++) {
        const float *dr = dout + i * d, *nr = n + i * d;
        float *dxr = dx + i * d;
        float dot = 0;

        for (j = 0; j < d; j++) {
            dgain[j] += dr[j] * nr[j];
            dot += dr[j] * gain[j] * nr[j];
        }
        dot /= (float)d;
        for (j = 0; j < d; j++) {
            float v = r[i] * (dr[j] * gain[j] - nr[j] * dot);

            dxr[j] = acc ? dxr[j] + v : v;
        }
    }
}

#define GELU_C 0.7978845608028654f /* sqrt(2/pi) */
#define GELU_A 0.044715f

void tpu__xfmr_gelu_fwd(const float *x, int64_t n, float *y)
{
    int64_t i;

    for (i = 0; i < n; i++) {
        float v = x[i];

        y[i] = 0.5f * v * (1.0f + tanhf(GELU_C * (v + GELU_A * v * v * v)));
    }
}

void tpu__xfmr_gelu_bwd(const float *x, const float *dy, int64_t n, float *dx)
{
    int64_t i;

    for (i = 0; i < n; i++) {
        float v = x[i], th = tanhf(GELU_C * (v + GELU_A * v * v * v));
        float d = 0.5f * (1.0f + th) +
                  0.5f * v * (1.0f - th * th) * GELU_C * (1.0f + 3.0f * GELU_A * v * v);

        dx[i] = dy[i] * d;
    }
}

/* Copy between the token-major and head-major layouts ('to': src is token major). */
static void heads_copy(const float *src, int64_t b, int64_t sl, int64_t nh, int64_t dh,
                       int64_t stot, int64_t s0, float *dst, int to)
{
    int64_t bi, i, j;

    for (bi = 0; bi < b; bi++) {
        for (i = 0; i < sl; i++) {
            for (j = 0; j < nh; j++) {
                int64_t tok = (bi * sl + i) * nh * dh + j * dh;
                int64_t head = ((bi * nh + j) * stot + s0 + i) * dh;

                memcpy(dst + (to ? head : tok), src + (to ? tok : head),
                       (size_t)dh * sizeof(float));
            }
        }
    }
}

void tpu__xfmr_to_heads(const float *src, int64_t b, int64_t sl, int64_t nh, int64_t dh,
                        int64_t stot, int64_t s0, float *dst)
{
    heads_copy(src, b, sl, nh, dh, stot, s0, dst, 1);
}

void tpu__xfmr_from_heads(const float *src, int64_t b, int64_t sl, int64_t nh, int64_t dh,
                          int64_t stot, int64_t s0, float *dst)
{
    heads_copy(src, b, sl, nh, dh, stot, s0, dst, 0);
}
