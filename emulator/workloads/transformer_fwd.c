/*
 * The transformer's forward pass and loss on one chip's shard view (see
 * include/tpu/transformer.h): embeddings, the blocks, the final norm, the
 * logits and the mean cross-entropy, keeping every activation the backward
 * pass (transformer_bwd.c) needs.  The hooks mark where a sharded run's
 * collectives go.
 *
 * Per layer, T tokens, Dl = the chip's heads x Dh, Fl its MLP columns:
 *
 *   a = rms(h) * norm1                              vpu
 *   q, k, v = a @ wq, a @ wk, a @ wv                mm [T,D]x[D,Dl] x3  -> head major
 *   [hook kv: all-gather k, v over sequence]
 *   per sequence b and head j:
 *     s = q k^T / sqrt(Dh), -1e9 above the diagonal mm [Sl,Dh]x[Dh,S]
 *     p = softmax(s)                                vpu
 *     o = p v                                       mm [Sl,S]x[S,Dh]
 *   hm = h + o @ wo     [hook attn_out: psum]       mm [T,Dl]x[Dl,D]
 *   m = rms(hm) * norm2; u = m @ w1; gu = gelu(u)   mm [T,D]x[D,Fl], vpu
 *   h' = hm + gu @ w2   [hook mlp_out: psum]        mm [T,Fl]x[Fl,D]
 *
 * then logits = (rms(h) * norm_f) @ unembed and, per token, the log-sum-exp
 * over the vocabulary ([hook vocab_max], [hook vocab_sum]) and the loss
 * lse - logit[y], summed in double ([hook loss]) and divided by the global
 * token count.  With fsdp, [hook gather] brings each unit's weights
 * (transformer_fsdp.c) one unit ahead of its compute: the embeddings and
 * layer 0 first, then layer l + 1 (the head after the last layer) before
 * layer l.
 */
#include "transformer_fsdp.h"
#include "transformer_ops.h"

#include <math.h>
#include <string.h>

/* The VPU passes of an RMSNorm over [t,d]: square, row sum, scale, gain. */
static tpu_status_t rms_cost(tpu_xfmr_t *xf, int64_t t, int64_t d, tpu_err_t *err)
{
    tpu_status_t status = tpu__xfmr_vpu(xf, TPU_VPU_MUL, t, d, err);

    status = status == TPU_OK ? tpu__xfmr_vpu(xf, TPU_VPU_SUM, t, d, err) : status;
    status = status == TPU_OK ? tpu__xfmr_vpu(xf, TPU_VPU_MUL, t, d, err) : status;
    return status == TPU_OK ? tpu__xfmr_vpu(xf, TPU_VPU_MUL, t, d, err) : status;
}

/* h = embed[x] (+ hook) + pos, for the chip's tokens. */
static tpu_status_t embed(tpu_xfmr_t *xf, float *h, tpu_err_t *err)
{
    const xfmr_param_t *E = &xf->par[XFMR_P_EMBED], *P = &xf->par[XFMR_P_POS];
    const int64_t D = xf->cfg.d_model;
    tpu_status_t status;
    int64_t t, j;

    for (t = 0; t < xf->t; t++) {
        int64_t id = xf->x[t];

        if (id >= E->r0 && id < E->r1) {
            memcpy(h + t * D, E->w + (id - E->r0) * D, (size_t)D * sizeof(float));
        } else {
            memset(h + t * D, 0, (size_t)D * sizeof(float));
        }
    }
    status = tpu__xfmr_hook(xf, TPU_XFMR_HOOK_EMBED, -1, h, xf->t * D, err);
    if (status != TPU_OK) {
        return status;
    }
    for (t = 0; t < xf->t; t++) {
        const float *pr = P->w + (t % xf->sl) * D; /* pos rows are the chip's positions */

        for (j = 0; j < D; j++) {
            h[t * D + j] += pr[j];
        }
    }
    return tpu__xfmr_vpu(xf, TPU_VPU_ADD, xf->t, D, err);
}

/* Causal attention of every sequence and local head: a->p and a->o from q, k, v. */
static tpu_status_t attention(tpu_xfmr_t *xf, xfmr_layer_act_t *a, float *ohm, tpu_err_t *err)
{
    const int64_t B = xf->cfg.batch, S = xf->cfg.seq, Sl = xf->sl, Dh = xf->dh;
    const int64_t s0 = xf->cfg.seq_range.lo;
    const float scale = sqrtf((float)Dh);
    tpu_status_t status = TPU_OK;
    int64_t bj, i, c;

    for (bj = 0; bj < B * xf->nh; bj++) {
        const float *qb = a->q + bj * Sl * Dh, *kb = a->k + bj * S * Dh, *vb = a->v + bj * S * Dh;
        float *pb = a->p + bj * Sl * S;

        status = tpu__xfmr_mm(xf, Sl, Dh, S, qb, 0, kb, 1, pb, 0, err);
        if (status != TPU_OK) {
            return status;
        }
        for (i = 0; i < Sl; i++) {
            float *row = pb + i * S, mx = -INFINITY, sum = 0;

            for (c = 0; c < S; c++) {
                row[c] = c > s0 + i ? XFMR_MASK : row[c] / scale;
                mx = row[c] > mx ? row[c] : mx;
            }
            for (c = 0; c < S; c++) {
                row[c] = expf(row[c] - mx);
                sum += row[c];
            }
            for (c = 0; c < S; c++) {
                row[c] /= sum;
            }
        }
        status = tpu__xfmr_mm(xf, Sl, S, Dh, pb, 0, vb, 0, ohm + bj * Sl * Dh, 0, err);
        if (status != TPU_OK) {
            return status;
        }
    }
    /* scale and mask in one pass, then the softmax */
    status = tpu__xfmr_vpu(xf, TPU_VPU_MUL, B * xf->nh * Sl, S, err);
    return status == TPU_OK ? tpu__xfmr_vpu(xf, TPU_VPU_SOFTMAX, B * xf->nh * Sl, S, err) : status;
}

/* One block: layer l's activations from a->h; the output into 'hout'. */
static tpu_status_t block(tpu_xfmr_t *xf, int l, float *hout, tpu_err_t *err)
{
    xfmr_layer_act_t *a = &xf->act[l];
    const xfmr_param_t *w = &xf->par[XFMR_P_LAYER(l, 0)];
    const int64_t T = xf->t, D = xf->cfg.d_model, Dl = xf->dl, Fl = xf->fl;
    const int64_t B = xf->cfg.batch, S = xf->cfg.seq, Sl = xf->sl, nh = xf->nh, Dh = xf->dh;
    const int64_t s0 = xf->cfg.seq_range.lo, kvn = B * nh * S * Dh;
    float *tmp = xf->dwide, *z = xf->dt;
    tpu_status_t status;
    int64_t i;

    tpu__xfmr_rms_fwd(a->h, w[XFMR_NORM1].w, T, D, a->r1, a->n1, a->a);
    status = rms_cost(xf, T, D, err);
    /* q, k, v: token major into tmp, then head major (k, v at the chip's positions). */
    status = status == TPU_OK ? tpu__xfmr_mm(xf, T, D, Dl, a->a, 0, w[XFMR_WQ].w, 0, tmp, 0, err)
                              : status;
    if (status != TPU_OK) {
        return status;
    }
    tpu__xfmr_to_heads(tmp, B, Sl, nh, Dh, Sl, 0, a->q);
    status = tpu__xfmr_mm(xf, T, D, Dl, a->a, 0, w[XFMR_WK].w, 0, tmp, 0, err);
    if (status != TPU_OK) {
        return status;
    }
    tpu__xfmr_to_heads(tmp, B, Sl, nh, Dh, S, s0, a->k);
    status = tpu__xfmr_mm(xf, T, D, Dl, a->a, 0, w[XFMR_WV].w, 0, tmp, 0, err);
    if (status != TPU_OK) {
        return status;
    }
    tpu__xfmr_to_heads(tmp, B, Sl, nh, Dh, S, s0, a->v);
    status = tpu__xfmr_hook(xf, TPU_XFMR_HOOK_KV, l, a->k, kvn, err);
    status = status == TPU_OK ? tpu__xfmr_hook(xf, TPU_XFMR_HOOK_KV, l, a->v, kvn, err) : status;
    /* The heads' outputs, head major in tmp, then token major in a->o. */
    status = status == TPU_OK ? attention(xf, a, tmp, err) : status;
    if (status != TPU_OK) {
        return status;
    }
    tpu__xfmr_from_heads(tmp, B, Sl, nh, Dh, Sl, 0, a->o);
    status = tpu__xfmr_mm(xf, T, Dl, D, a->o, 0, w[XFMR_WO].w, 0, z, 0, err);
    status =
        status == TPU_OK ? tpu__xfmr_hook(xf, TPU_XFMR_HOOK_ATTN_OUT, l, z, T * D, err) : status;
    if (status != TPU_OK) {
        return status;
    }
    for (i = 0; i < T * D; i++) {
        a->hm[i] = a->h[i] + z[i];
    }
    status = tpu__xfmr_vpu(xf, TPU_VPU_ADD, T, D, err);
    /* The MLP. */
    tpu__xfmr_rms_fwd(a->hm, w[XFMR_NORM2].w, T, D, a->r2, a->n2, a->m);
    status = status == TPU_OK ? rms_cost(xf, T, D, err) : status;
    status = status == TPU_OK ? tpu__xfmr_mm(xf, T, D, Fl, a->m, 0, w[XFMR_W1].w, 0, a->u, 0, err)
                              : status;
    if (status != TPU_OK) {
        return status;
    }
    tpu__xfmr_gelu_fwd(a->u, T * Fl, a->gu);
    status = tpu__xfmr_vpu(xf, TPU_VPU_GELU, T, Fl, err);
    status = status == TPU_OK ? tpu__xfmr_mm(xf, T, Fl, D, a->gu, 0, w[XFMR_W2].w, 0, z, 0, err)
                              : status;
    status =
        status == TPU_OK ? tpu__xfmr_hook(xf, TPU_XFMR_HOOK_MLP_OUT, l, z, T * D, err) : status;
    if (status != TPU_OK) {
        return status;
    }
    for (i = 0; i < T * D; i++) {
        hout[i] = a->hm[i] + z[i];
    }
    return tpu__xfmr_vpu(xf, TPU_VPU_ADD, T, D, err);
}

/* The final norm, the logits, each token's log-sum-exp and the loss. */
static tpu_status_t head_loss(tpu_xfmr_t *xf, tpu_err_t *err)
{
    const int64_t T = xf->t, D = xf->cfg.d_model, Vl = xf->vl, v0 = xf->cfg.vocab_range.lo;
    const xfmr_param_t *U = &xf->par[xf->nparams - 1];
    float *mx = xf->red, *sums = xf->red, two[2];
    tpu_status_t status;
    double total = 0;
    int64_t t, c;

    tpu__xfmr_rms_fwd(xf->hf, xf->par[xf->nparams - 2].w, T, D, xf->rf, xf->nf, xf->af);
    status = rms_cost(xf, T, D, err);
    status = status == TPU_OK ? tpu__xfmr_mm(xf, T, D, Vl, xf->af, 0, U->w, 0, xf->logits, 0, err)
                              : status;
    if (status != TPU_OK) {
        return status;
    }
    for (t = 0; t < T; t++) {
        const float *row = xf->logits + t * Vl;
        float m = -INFINITY;

        for (c = 0; c < Vl; c++) {
            m = row[c] > m ? row[c] : m;
        }
        mx[t] = m;
    }
    status = tpu__xfmr_hook(xf, TPU_XFMR_HOOK_VOCAB_MAX, -1, mx, T, err);
    if (status != TPU_OK) {
        return status;
    }
    for (t = 0; t < T; t++) {
        const float *row = xf->logits + t * Vl;
        int64_t y = xf->y[t] - v0;
        float s = 0;

        xf->lse[t] = mx[t];
        for (c = 0; c < Vl; c++) {
            s += expf(row[c] - mx[t]);
        }
        sums[t] = s;
        sums[T + t] = y >= 0 && y < Vl ? row[y] : 0.0f;
    }
    status = tpu__xfmr_hook(xf, TPU_XFMR_HOOK_VOCAB_SUM, -1, sums, 2 * T, err);
    if (status != TPU_OK) {
        return status;
    }
    for (t = 0; t < T; t++) {
        xf->lse[t] += logf(sums[t]);
        total += (double)xf->lse[t] - (double)sums[T + t];
    }
    /* The sum as a pair of floats (hi + lo), so that a psum keeps most of double's precision. */
    two[0] = (float)total;
    two[1] = (float)(total - (double)two[0]);
    status = tpu__xfmr_hook(xf, TPU_XFMR_HOOK_LOSS, -1, two, 2, err);
    if (status != TPU_OK) {
        return status;
    }
    if (xf->cfg.hook != NULL) {
        total = (double)two[0] + (double)two[1];
    }
    xf->loss = total / (double)xf->ntok;
    /* max, exp and sum, log: one softmax-like pass over the logits */
    return tpu__xfmr_vpu(xf, TPU_VPU_SOFTMAX, T, Vl, err);
}

tpu_status_t tpu_xfmr_forward(tpu_xfmr_t *xf, const int32_t *x, const int32_t *y, double *loss_p,
                              tpu_err_t *err)
{
    const int64_t B = xf->cfg.batch, Sl = xf->sl, V = xf->cfg.vocab;
    tpu_status_t status;
    int l;

    xf->have_fwd = 0;
    if (x == NULL || y == NULL) {
        return tpu_err_set(err, TPU_ERR_INVALID, "transformer: NULL tokens");
    }
    status = tpu_xfmr_check_tokens(x, B, Sl, V, "tokens", err);
    status = status == TPU_OK ? tpu_xfmr_check_tokens(y, B, Sl, V, "targets", err) : status;
    if (status != TPU_OK) {
        return status;
    }
    memcpy(xf->x, x, (size_t)xf->t * sizeof(int32_t));
    memcpy(xf->y, y, (size_t)xf->t * sizeof(int32_t));
    /* fsdp: unit u + 1's weights gathered before unit u's compute (none without fsdp). */
    status = tpu__xfmr_gather_unit(xf, 0, err);
    status = status == TPU_OK ? tpu__xfmr_gather_unit(xf, 1, err) : status;
    status = status == TPU_OK ? embed(xf, xf->act[0].h, err) : status;
    tpu__xfmr_release_unit(xf, 0);
    for (l = 0; status == TPU_OK && l < (int)xf->cfg.layers; l++) {
        status = tpu__xfmr_gather_unit(xf, l + 2, err);
        status = status == TPU_OK
                     ? block(xf, l, l + 1 < (int)xf->cfg.layers ? xf->act[l + 1].h : xf->hf, err)
                     : status;
        tpu__xfmr_release_unit(xf, l + 1);
    }
    status = status == TPU_OK ? head_loss(xf, err) : status;
    if (status != TPU_OK) {
        return status;
    }
    xf->have_fwd = 1;
    if (loss_p != NULL) {
        *loss_p = xf->loss;
    }
    return TPU_OK;
}

const float *tpu_xfmr_logits(const tpu_xfmr_t *xf)
{
    return xf->logits;
}
