/*
 * The HBM a chip holds through the transformer's step, item by item, all held
 * at once as the step allocates them (the peak is their sum):
 *   parameters, gradients     the chip's pieces (fsdp: its shards), in the
 *                             parameter dtype;
 *   optimizer state           sgd none; adamw two f32 moments per parameter;
 *   activations               per the remat policy (see transformer_cost.h):
 *     none     per layer h, n1, a, hm, n2, m (the parallel block: h, n1, a),
 *              the norms' statistics, q and o, k and v, the scores (the
 *              compiled step's flash kernel: their log-sum-exp only), u and
 *              act(u) (swiglu: also g and act(u) g); plus the final norm's;
 *     minimal  per layer its input, q, k, v and the outputs of w1 and w3 (the
 *              outputs of wo and w2 are saveable dots too, but no backward
 *              reads them: XLA drops them);
 *     full     per layer its input;
 *   in the compiled step the residual stream's [T, D] tensors are kept
 *   sharded over tensor (MaxText's activation_embed rule), T D / tensor;
 *   remat: one layer's recomputed activations (minimal, full: the backward
 *              of a layer holds what 'none' keeps of one layer);
 *   fsdp's gathered weights (a unit and the next, the prefetch) and a unit's
 *              gradients before their reduce-scatter (compiled: in the matmul
 *              dtype when smaller, as XLA gathers the converted weights; and
 *              per parameter: a unit and the next unit's largest parameter,
 *              whose gather starts first, and the largest parameter's
 *              gradient, each reduce-scattered as the backward makes it);
 *   the logits (f32) and the log-sum-exp, the attention backward's scratch,
 *   the backward's [T, D] scratch, the tokens and targets (int32).
 * Activations are 4 bytes, 2 in the compiled step with bf16.
 */
#include "transformer_hbm.h"

static void item(tpu_xfmr_cost_t *c, const char *what, int64_t elems, int bytes)
{
    c->items[c->nitems].what = what;
    c->items[c->nitems].bytes = (uint64_t)elems * (uint64_t)bytes;
    c->hbm_peak_bytes += c->items[c->nitems].bytes;
    c->nitems++;
}

static int64_t max3(int64_t a, int64_t b, int64_t d)
{
    int64_t m = a > b ? a : b;

    return m > d ? m : d;
}

void tpu__xfmr_cost_hbm(tpu_xfmr_cost_t *c)
{
    const eng_t *e = c->engine;
    const tpu_xfmr_plan_t *pl = &e->plan;
    const int64_t *z = e->z, L = e->m.layers, T = z[Z_T], TD = z[Z_TD];
    const int64_t TDR = pl->compiled ? TD / e->size[A_TENSOR] : TD; /* the residual stream's */
    const int64_t scores = e->plan.compiled ? z[Z_BNHSL] : z[Z_BNHSL] * z[Z_S];
    const int64_t seq = z[Z_DSEQ] > 0;
    const int ab = e->act_bytes, pb = pl->param_bytes;
    /* What 'none' keeps of one layer (see the top). */
    const int64_t layer = (seq ? 6 : 3) * TDR + (seq ? 2 : 1) * T + 2 * T * z[Z_DL] + 2 * z[Z_KV] +
                          scores + 2 * T * z[Z_FL] + 2 * T * z[Z_FG];
    int64_t pair = 0, one = 0, kept = L * layer;
    const char *what = "activations kept for the backward";
    int u;

    for (u = 0; e->size[A_FSDP] > 1 && u <= (int)L + 1; u++) {
        const int big = pl->compiled; /* per parameter (see the top) */
        int64_t a = tpu__xfmr_cost_unit_elems(e, u, 0);
        int64_t b = u <= (int)L ? tpu__xfmr_cost_unit_elems(e, u + 1, big) : 0;
        int64_t g = tpu__xfmr_cost_unit_elems(e, u, big);

        pair = a + b > pair ? a + b : pair;
        one = g > one ? g : one;
    }
    if (pl->remat == TPU_XFMR_REMAT_MINIMAL) {
        kept = L * (TDR + T * (z[Z_DL] + 2 * z[Z_KVL] + z[Z_FL] + z[Z_FG]));
        what = "activations kept (remat minimal: layer inputs, projection outputs)";
    } else if (pl->remat == TPU_XFMR_REMAT_FULL) {
        kept = L * TDR;
        what = "activations kept (remat full: layer inputs)";
    }
    c->nitems = 0;
    c->hbm_peak_bytes = 0;
    item(c, "parameters", z[Z_NPAR], pb);
    item(c, "gradients", z[Z_NPAR], pb);
    if (pl->adamw) {
        item(c, "optimizer state (adamw: two f32 moments)", 2 * z[Z_NPAR], 4);
    } else {
        item(c, "optimizer state (sgd: none)", 0, 4);
    }
    item(c, what, kept + 3 * TDR + T, ab);
    if (pl->remat != TPU_XFMR_REMAT_NONE) {
        item(c, "remat: one layer's recomputed activations", layer, ab);
    }
    item(c, "fsdp: gathered weights (a unit and the next)", pair, e->gather_bytes);
    item(c, "fsdp: a unit's gradients before the reduce-scatter", one, e->gather_bytes);
    item(c, "logits [T, V/tensor] and the log-sum-exp", T * z[Z_VL] + 3 * T, 4);
    item(c, "attention backward: scores' gradient, dq, dk, dv", scores + T * z[Z_DL] + 2 * z[Z_KV],
         ab);
    item(c, "backward scratch [T, D] x3 and [T, max(Dl, Fl, Vl)]",
         3 * TD + T * max3(z[Z_DL], z[Z_FL], z[Z_VL]), ab);
    item(c, "tokens and targets", 2 * T, 4);
}
