/*
 * The transformer's private state (struct tpu_xfmr, shared by its files) and
 * the chip ops of transformer_ops.c: the MXU matmul, the VPU cost of an
 * elementwise pass, and the row-wise math (RMSNorm, softmax, GELU) forward and
 * backward.
 */
#ifndef TPU_WORKLOADS_TRANSFORMER_OPS_H
#define TPU_WORKLOADS_TRANSFORMER_OPS_H

#include "tpu/transformer.h"
#include "tpu/vmem.h"
#include "tpu/vpu.h"

#include <stdint.h>

#define XFMR_EPS  1e-6f /* inside the rms's sqrt */
#define XFMR_MASK -1e9f /* the causal mask's score */

/*
 * One parameter: its whole shape, the chip's block of it (what the passes
 * compute with), its values and gradient, and the chip's fsdp part of the
 * block (the rows it owns and updates; the whole block without fsdp, where
 * ws and gs are w and g).
 */
typedef struct xfmr_param {
    char name[TPU_XFMR_NAME_LEN];
    int ndim;
    int64_t rows, cols;     /* whole shape (cols 1 for a vector) */
    int64_t r0, r1, c0, c1; /* the chip's block: rows [r0,r1), columns [c0,c1) */
    float *w, *g;           /* (r1-r0) x (c1-c0), C order */
    int64_t s0, s1;         /* the owned rows [s0,s1) of the block (fsdp) */
    float *ws, *gs;         /* (s1-s0) x (c1-c0): the owned values and gradient */
} xfmr_param_t;

/* The activations of one layer, kept for the backward pass (T tokens, Dl, Fl local). */
typedef struct xfmr_layer_act {
    float *h;           /* [T,D] the block's input */
    float *r1, *n1;     /* [T] 1/rms, [T,D] h * r1 */
    float *a;           /* [T,D] n1 * norm1 */
    float *q, *k, *v;   /* head major: q [B,nh,Sl,Dh], k and v [B,nh,S,Dh] */
    float *p;           /* [B,nh,Sl,S] the attention probabilities */
    float *o;           /* [T,Dl] the heads' outputs, token major */
    float *hm;          /* [T,D] h after attention */
    float *r2, *n2, *m; /* as r1, n1, a for norm2 */
    float *u, *gu;      /* [T,Fl] m @ w1 and gelu(u) */
} xfmr_layer_act_t;

/* Parameter numbers: embed 0, pos 1, layer l's 2 + 8l + XFMR_*, then norm_f, unembed. */
enum {
    XFMR_NORM1,
    XFMR_WQ,
    XFMR_WK,
    XFMR_WV,
    XFMR_WO,
    XFMR_NORM2,
    XFMR_W1,
    XFMR_W2,
    XFMR_PER_LAYER
};
#define XFMR_P_EMBED       0
#define XFMR_P_POS         1
#define XFMR_P_LAYER(l, j) (2 + XFMR_PER_LAYER * (l) + (j))

struct tpu_xfmr {
    tpu_xfmr_config_t cfg; /* ranges resolved */
    tpu_chip_spec_t chip;
    tpu_vmem_t *vmem;
    int nparams;
    xfmr_param_t *par;
    float *wbuf, *gbuf;  /* every parameter's values and gradients, one block each */
    float *sbuf, *sgbuf; /* the owned parts (fsdp; else wbuf and gbuf) */
    int fsdp;            /* fsdp_parts > 1: the weights move by units (transformer_fsdp.c) */
    /* Sizes: Dh, local heads, Dl = nh*Dh, Fl, Vl, Sl, T = B*Sl tokens, global tokens. */
    int64_t dh, nh, dl, fl, vl, sl, t, ntok;
    /* The last forward pass. */
    int have_fwd;
    int32_t *x, *y;           /* [T] */
    xfmr_layer_act_t *act;    /* [L] */
    float *hf, *rf, *nf, *af; /* [T,D], [T], [T,D], [T,D]: the final norm */
    float *logits;            /* [T,Vl] */
    float *lse;               /* [T] log-sum-exp of each token's logits */
    float *red;               /* [2T] the vocabulary reductions (hooks vocab_max, vocab_sum) */
    double loss;
    /* Backward scratch. */
    float *gh, *dt, *dt2;     /* [T,D]: gh the gradient of the residual stream */
    float *dwide;             /* [T, max(Dl, Fl, Vl)] */
    float *dq, *dk, *dv, *dp; /* like q, k, v, p */
    /* Modeled compute since the last reset. */
    tpu_xfmr_report_t cost;
};

/*
 * C[m,n] (+)= op(A) @ op(B) on the chip's MXU: A is [m,k] (or [k,m] with 'ta'),
 * B [k,n] (or [n,k] with 'tb'), all row major; 'acc' adds to C instead of
 * replacing it.  bf16: both inputs rounded to bf16, f32 accumulation.
 */
tpu_status_t tpu__xfmr_mm(tpu_xfmr_t *xf, int64_t m, int64_t k, int64_t n, const float *A, int ta,
                          const float *B, int tb, float *C, int acc, tpu_err_t *err);

/* Charge one VPU pass of 'op' over rows x cols f32 elements. */
tpu_status_t tpu__xfmr_vpu(tpu_xfmr_t *xf, tpu_vpu_op_t op, int64_t rows, int64_t cols,
                           tpu_err_t *err);

/* Call the config's hook, if any. */
tpu_status_t tpu__xfmr_hook(tpu_xfmr_t *xf, tpu_xfmr_hook_t hook, int index, float *buf,
                            int64_t count, tpu_err_t *err);

/* Per row of x [t,d]: r = 1/sqrt(mean(x^2) + eps), n = x r, out = n * gain. */
void tpu__xfmr_rms_fwd(const float *x, const float *gain, int64_t t, int64_t d, float *r, float *n,
                       float *out);
/*
 * The backward of tpu__xfmr_rms_fwd for dout [t,d]: dgain += sum_rows dout * n,
 * dx (+)= r (dn - n mean(dn n)) with dn = dout * gain ('acc': add into dx).
 */
void tpu__xfmr_rms_bwd(const float *dout, const float *gain, const float *r, const float *n,
                       int64_t t, int64_t d, float *dgain, float *dx, int acc);

/* gelu (tanh form) of n elements, and dx = dy * gelu'(x). */
void tpu__xfmr_gelu_fwd(const float *x, int64_t n, float *y);
void tpu__xfmr_gelu_bwd(const float *x, const float *dy, int64_t n, float *dx);

/*
 * Head layouts: token major [B*Sl, nh*Dh] (row b*Sl + i) and head major
 * [B, nh, stot, Dh] where the chip's Sl positions are rows [s0, s0 + Sl).
 * to_heads copies src (token major) into dst's rows; from_heads copies back.
 */
void tpu__xfmr_to_heads(const float *src, int64_t b, int64_t sl, int64_t nh, int64_t dh,
                        int64_t stot, int64_t s0, float *dst);
void tpu__xfmr_from_heads(const float *src, int64_t b, int64_t sl, int64_t nh, int64_t dh,
                          int64_t stot, int64_t s0, float *dst);

#endif /* TPU_WORKLOADS_TRANSFORMER_OPS_H */
