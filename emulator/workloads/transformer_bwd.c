/*
 * The transformer's backward pass by hand: every parameter's gradient of the
 * last forward pass's loss (transformer_fwd.c), on the chip's shard view, with
 * the hooks where a sharded run's collectives go.
 *
 * With dX the gradient of the loss with respect to X, N the global token count:
 *
 *   dlogits = (softmax(logits) - onehot(y)) / N
 *   dunembed = af^T dlogits;  daf = dlogits unembed^T     [hook d_final: psum]
 *   rms backward (n = x r, r = 1/sqrt(mean x^2 + eps), out = n g):
 *     dg += sum over tokens of dout n;  dx = r (dn - n mean(dn n)), dn = dout g
 *   per layer, from the last, dh the gradient of the block's output:
 *     dgu = dh w2^T;  dw2 = gu^T dh;  du = dgu gelu'(u)
 *     dw1 = m^T du;  dm = du w1^T                         [hook d_mlp_in: psum]
 *     dhm = dh + rms backward of dm (norm2)
 *     dwo = o^T dhm;  do = dhm wo^T
 *     per sequence and head: dv = p^T do;  dp = do v^T;
 *       ds = p (dp - rowsum(dp p)) / sqrt(Dh);  dq = ds k;  dk = ds^T q
 *                                                         [hook d_kv: reduce-scatter]
 *     dwq = a^T dq, dwk = a^T dk, dwv = a^T dv
 *     da = dq wq^T + dk wk^T + dv wv^T                    [hook d_attn_in: psum]
 *     dh = dhm + rms backward of da (norm1)
 *   dembed[x] += dh (rows of this vocabulary shard), dpos[i] += sum over the batch of dh
 *   [hook grad: every parameter's gradient]
 *
 * With fsdp (transformer_fsdp.c), the last layer is gathered again [hook
 * gather] before the head's backward (whose weights stay from the forward
 * pass), layer l - 1 before layer l's backward, and each unit's gradients
 * are reduced [hook grad] right after its backward: the head's, each layer's,
 * then the embeddings'.
 *
 * Masked scores have p = 0 and so ds = 0: the mask needs no backward of its own.
 */
#include "transformer_fsdp.h"
#include "transformer_ops.h"

#include <math.h>
#include <string.h>

/* The gradients of the logits, into xf->dwide [T,Vl]. */
static tpu_status_t dlogits(tpu_xfmr_t *xf, tpu_err_t *err)
{
    const int64_t T = xf->t, Vl = xf->vl, v0 = xf->cfg.vocab_range.lo;
    const float inv = (float)(1.0 / (double)xf->ntok);
    int64_t t, c;

    for (t = 0; t < T; t++) {
        const float *row = xf->logits + t * Vl;
        float *d = xf->dwide + t * Vl;
        int64_t y = xf->y[t] - v0;

        for (c = 0; c < Vl; c++) {
            d[c] = expf(row[c] - xf->lse[t]) * inv;
        }
        if (y >= 0 && y < Vl) {
            d[y] -= inv;
        }
    }
    return tpu__xfmr_vpu(xf, TPU_VPU_SOFTMAX, T, Vl, err);
}

/* The backward of causal attention: dq (head major) into xf->dq, dk and dv into xf->dk, dv. */
static tpu_status_t attention_bwd(tpu_xfmr_t *xf, const xfmr_layer_act_t *a, const float *dohm,
                                  tpu_err_t *err)
{
    const int64_t B = xf->cfg.batch, S = xf->cfg.seq, Sl = xf->sl, Dh = xf->dh;
    const float scale = sqrtf((float)Dh);
    tpu_status_t status = TPU_OK;
    int64_t bj, i, c;

    for (bj = 0; bj < B * xf->nh && status == TPU_OK; bj++) {
        const float *qb = a->q + bj * Sl * Dh, *kb = a->k + bj * S * Dh, *vb = a->v + bj * S * Dh;
        const float *pb = a->p + bj * Sl * S, *dob = dohm + bj * Sl * Dh;
        float *dpb = xf->dp + bj * Sl * S;

        status = tpu__xfmr_mm(xf, S, Sl, Dh, pb, 1, dob, 0, xf->dv + bj * S * Dh, 0, err);
        status =
            status == TPU_OK ? tpu__xfmr_mm(xf, Sl, Dh, S, dob, 0, vb, 1, dpb, 0, err) : status;
        if (status != TPU_OK) {
            break;
        }
        for (i = 0; i < Sl; i++) {
            const float *pr = pb + i * S;
            float *dr = dpb + i * S, dot = 0;

            for (c = 0; c < S; c++) {
                dot += dr[c] * pr[c];
            }
            for (c = 0; c < S; c++) {
                dr[c] = pr[c] * (dr[c] - dot) / scale;
            }
        }
        status = tpu__xfmr_mm(xf, Sl, S, Dh, dpb, 0, kb, 0, xf->dq + bj * Sl * Dh, 0, err);
        status = status == TPU_OK
                     ? tpu__xfmr_mm(xf, S, Sl, Dh, dpb, 1, qb, 0, xf->dk + bj * S * Dh, 0, err)
                     : status;
    }
    /* dp * p, its row sum, the subtraction and scale: three passes */
    status = status == TPU_OK ? tpu__xfmr_vpu(xf, TPU_VPU_MUL, B * xf->nh * Sl, S, err) : status;
    status = status == TPU_OK ? tpu__xfmr_vpu(xf, TPU_VPU_SUM, B * xf->nh * Sl, S, err) : status;
    return status == TPU_OK ? tpu__xfmr_vpu(xf, TPU_VPU_MUL, B * xf->nh * Sl, S, err) : status;
}

/* The VPU passes of an RMSNorm's backward over [t,d]. */
static tpu_status_t rms_bwd_cost(tpu_xfmr_t *xf, int64_t t, int64_t d, tpu_err_t *err)
{
    tpu_status_t status = tpu__xfmr_vpu(xf, TPU_VPU_MUL, t, d, err); /* dout * n (dgain) */

    status = status == TPU_OK ? tpu__xfmr_vpu(xf, TPU_VPU_SUM, t, d, err) : status;
    status = status == TPU_OK ? tpu__xfmr_vpu(xf, TPU_VPU_MUL, t, d, err) : status; /* dn */
    status = status == TPU_OK ? tpu__xfmr_vpu(xf, TPU_VPU_SUM, t, d, err) : status; /* dn n */
    return status == TPU_OK ? tpu__xfmr_vpu(xf, TPU_VPU_ADD, t, d, err) : status;   /* dx */
}

/* Layer l's backward: xf->gh holds the gradient of its output, and gets its input's. */
static tpu_status_t block_bwd(tpu_xfmr_t *xf, int l, tpu_err_t *err)
{
    const xfmr_layer_act_t *a = &xf->act[l];
    xfmr_param_t *w = &xf->par[XFMR_P_LAYER(l, 0)];
    const int64_t T = xf->t, D = xf->cfg.d_model, Dl = xf->dl, Fl = xf->fl;
    const int64_t B = xf->cfg.batch, S = xf->cfg.seq, Sl = xf->sl, nh = xf->nh, Dh = xf->dh;
    const int64_t s0 = xf->cfg.seq_range.lo, kvn = B * nh * S * Dh;
    float *dh = xf->gh, *wide = xf->dwide, *dt = xf->dt, *dohm = xf->dt2;
    const float *dqkv[3] = {xf->dq, xf->dk, xf->dv};
    tpu_status_t status;
    int j;

    /* The MLP. */
    status = tpu__xfmr_mm(xf, T, D, Fl, dh, 0, w[XFMR_W2].w, 1, wide, 0, err);
    status = status == TPU_OK ? tpu__xfmr_mm(xf, Fl, T, D, a->gu, 1, dh, 0, w[XFMR_W2].g, 0, err)
                              : status;
    if (status != TPU_OK) {
        return status;
    }
    tpu__xfmr_gelu_bwd(a->u, wide, T * Fl, wide);
    status = tpu__xfmr_vpu(xf, TPU_VPU_GELU, T, Fl, err);
    status = status == TPU_OK ? tpu__xfmr_mm(xf, D, T, Fl, a->m, 1, wide, 0, w[XFMR_W1].g, 0, err)
                              : status;
    status = status == TPU_OK ? tpu__xfmr_mm(xf, T, Fl, D, wide, 0, w[XFMR_W1].w, 1, dt, 0, err)
                              : status;
    status =
        status == TPU_OK ? tpu__xfmr_hook(xf, TPU_XFMR_HOOK_D_MLP_IN, l, dt, T * D, err) : status;
    if (status != TPU_OK) {
        return status;
    }
    tpu__xfmr_rms_bwd(dt, w[XFMR_NORM2].w, a->r2, a->n2, T, D, w[XFMR_NORM2].g, dh, 1);
    status = rms_bwd_cost(xf, T, D, err);
    /* The attention's output projection, then the heads. */
    status = status == TPU_OK ? tpu__xfmr_mm(xf, Dl, T, D, a->o, 1, dh, 0, w[XFMR_WO].g, 0, err)
                              : status;
    status = status == TPU_OK ? tpu__xfmr_mm(xf, T, D, Dl, dh, 0, w[XFMR_WO].w, 1, wide, 0, err)
                              : status;
    if (status != TPU_OK) {
        return status;
    }
    tpu__xfmr_to_heads(wide, B, Sl, nh, Dh, Sl, 0, dohm);
    memset(xf->dk, 0, (size_t)kvn * sizeof(float));
    memset(xf->dv, 0, (size_t)kvn * sizeof(float));
    status = attention_bwd(xf, a, dohm, err);
    status =
        status == TPU_OK ? tpu__xfmr_hook(xf, TPU_XFMR_HOOK_D_KV, l, xf->dk, kvn, err) : status;
    status =
        status == TPU_OK ? tpu__xfmr_hook(xf, TPU_XFMR_HOOK_D_KV, l, xf->dv, kvn, err) : status;
    /* q, k, v's weights and da, one projection at a time (token major in 'wide'). */
    for (j = 0; j < 3 && status == TPU_OK; j++) {
        xfmr_param_t *wj = &w[XFMR_WQ + j];

        tpu__xfmr_from_heads(dqkv[j], B, Sl, nh, Dh, j == 0 ? Sl : S, j == 0 ? 0 : s0, wide);
        status = tpu__xfmr_mm(xf, D, T, Dl, a->a, 1, wide, 0, wj->g, 0, err);
        status = status == TPU_OK ? tpu__xfmr_mm(xf, T, Dl, D, wide, 0, wj->w, 1, dt, j > 0, err)
                                  : status;
    }
    status =
        status == TPU_OK ? tpu__xfmr_hook(xf, TPU_XFMR_HOOK_D_ATTN_IN, l, dt, T * D, err) : status;
    if (status != TPU_OK) {
        return status;
    }
    tpu__xfmr_rms_bwd(dt, w[XFMR_NORM1].w, a->r1, a->n1, T, D, w[XFMR_NORM1].g, dh, 1);
    return rms_bwd_cost(xf, T, D, err);
}

/* The embeddings' gradients from xf->gh (the gradient of h0 = embed[x] + pos). */
static void embed_bwd(tpu_xfmr_t *xf)
{
    xfmr_param_t *E = &xf->par[XFMR_P_EMBED], *P = &xf->par[XFMR_P_POS];
    const int64_t D = xf->cfg.d_model;
    int64_t t, j;

    for (t = 0; t < xf->t; t++) {
        const float *d = xf->gh + t * D;
        float *pg = P->g + (t % xf->sl) * D;
        int64_t id = xf->x[t];

        for (j = 0; j < D; j++) {
            pg[j] += d[j];
        }
        if (id >= E->r0 && id < E->r1) {
            float *eg = E->g + (id - E->r0) * D;

            for (j = 0; j < D; j++) {
                eg[j] += d[j];
            }
        }
    }
}

tpu_status_t tpu_xfmr_backward(tpu_xfmr_t *xf, tpu_err_t *err)
{
    const int64_t T = xf->t, D = xf->cfg.d_model, Vl = xf->vl;
    xfmr_param_t *U = &xf->par[xf->nparams - 1], *G = &xf->par[xf->nparams - 2];
    tpu_status_t status;
    int64_t total = 0;
    int l, p, u, units = tpu__xfmr_units(xf);

    if (!xf->have_fwd) {
        return tpu_err_set(err, TPU_ERR_INVALID, "transformer: backward without a forward pass");
    }
    for (p = 0; p < xf->nparams; p++) {
        total += (xf->par[p].r1 - xf->par[p].r0) * (xf->par[p].c1 - xf->par[p].c0);
    }
    memset(xf->gbuf, 0, (size_t)total * sizeof(float));
    /* fsdp: the head's weights are kept from the forward pass; the last layer's are
     * gathered again, before the head's backward */
    status = tpu__xfmr_gather_unit(xf, units - 2, err);
    status = status == TPU_OK ? dlogits(xf, err) : status;
    status = status == TPU_OK ? tpu__xfmr_mm(xf, D, T, Vl, xf->af, 1, xf->dwide, 0, U->g, 0, err)
                              : status;
    status = status == TPU_OK ? tpu__xfmr_mm(xf, T, Vl, D, xf->dwide, 0, U->w, 1, xf->dt, 0, err)
                              : status;
    status = status == TPU_OK ? tpu__xfmr_hook(xf, TPU_XFMR_HOOK_D_FINAL, -1, xf->dt, T * D, err)
                              : status;
    if (status != TPU_OK) {
        return status;
    }
    tpu__xfmr_rms_bwd(xf->dt, G->w, xf->rf, xf->nf, T, D, G->g, xf->gh, 0);
    status = rms_bwd_cost(xf, T, D, err);
    /* fsdp: each unit's gradients reduced right after its backward, the head's first */
    status = status == TPU_OK && xf->fsdp ? tpu__xfmr_reduce_unit(xf, units - 1, err) : status;
    tpu__xfmr_release_unit(xf, units - 1);
    for (l = (int)xf->cfg.layers - 1; l >= 0 && status == TPU_OK; l--) {
        status = l > 0 ? tpu__xfmr_gather_unit(xf, l, err) : TPU_OK; /* layer l - 1 */
        status = status == TPU_OK ? block_bwd(xf, l, err) : status;
        status = status == TPU_OK && xf->fsdp ? tpu__xfmr_reduce_unit(xf, l + 1, err) : status;
        tpu__xfmr_release_unit(xf, l + 1);
    }
    if (status != TPU_OK) {
        return status;
    }
    embed_bwd(xf);
    status = tpu__xfmr_vpu(xf, TPU_VPU_ADD, T, 2 * D, err);
    /* Without fsdp every gradient is reduced here, in parameter order. */
    for (u = 0; u < (xf->fsdp ? 1 : units) && status == TPU_OK; u++) {
        status = tpu__xfmr_reduce_unit(xf, u, err);
    }
    return status;
}
