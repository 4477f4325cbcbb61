/*
 * The transformer's step as tables and the program built from them (see transformer_cost_prog.h,
 * and include/tpu/transformer_cost.h for the model): each section of the step (embeddings, a
 * layer, the head, forward and backward, the update) is a table of rows over named sizes, as
 * transformer_fwd.c and transformer_bwd.c charge their ops; the parameters are a table; building
 * walks them into compute ops timed on the chip's rooflines and collective calls timed by the
 * engine (once per distinct row), with the fsdp gathers one unit ahead and the gradient reductions
 * after each unit's backward.  The plan's rows carry a condition (C_*); remat re-walks a layer's
 * forward.  A new size is a Z_* entry and a line of tpu__xfmr_cost_sizes().
 */
#include "transformer_cost_prog.h"

#include "tpu/mxu.h"
#include "tpu/vpu.h"

#include "alloc.h"
#include "transformer_cost_time.h"

#include <stdio.h>
#include <string.h>

/* ---- the collectives (the hooks of transformer.h, and fsdp's gather) ---- */

enum {
    H_EMBED,
    H_KV,
    H_ATTN_OUT,
    H_MLP_OUT,
    H_VOCAB_MAX,
    H_VOCAB_SUM,
    H_LOSS,
    H_D_FINAL,
    H_D_MLP_IN,
    H_D_KV,
    H_D_ATTN_IN,
    H_GRAD,   /* psum of a gradient over the data axes (and its fsdp reduce-scatter) */
    H_GATHER, /* fsdp's all-gather of a parameter */
    H_COUNT
};

static const struct {
    const char *name;
    tpu_coll_kind_t kind;
    tpu_redop_t op;
    unsigned axes;
} hooks[H_COUNT] = {
    [H_EMBED] = {"embed", TPU_COLL_PSUM, TPU_REDOP_SUM, BIT(A_TENSOR)},
    [H_KV] = {"kv", TPU_COLL_ALL_GATHER, TPU_REDOP_SUM, BIT(A_SEQ)},
    [H_ATTN_OUT] = {"attn_out", TPU_COLL_PSUM, TPU_REDOP_SUM, BIT(A_TENSOR)},
    [H_MLP_OUT] = {"mlp_out", TPU_COLL_PSUM, TPU_REDOP_SUM, BIT(A_TENSOR)},
    [H_VOCAB_MAX] = {"vocab_max", TPU_COLL_PSUM, TPU_REDOP_MAX, BIT(A_TENSOR)},
    [H_VOCAB_SUM] = {"vocab_sum", TPU_COLL_PSUM, TPU_REDOP_SUM, BIT(A_TENSOR)},
    [H_LOSS] = {"loss", TPU_COLL_PSUM, TPU_REDOP_SUM,
                BIT(A_DATA) | BIT(A_FSDP) | BIT(A_SEQ) | BIT(A_DCN)},
    [H_D_FINAL] = {"d_final", TPU_COLL_PSUM, TPU_REDOP_SUM, BIT(A_TENSOR)},
    [H_D_MLP_IN] = {"d_mlp_in", TPU_COLL_PSUM, TPU_REDOP_SUM, BIT(A_TENSOR)},
    [H_D_KV] = {"d_kv", TPU_COLL_REDUCE_SCATTER, TPU_REDOP_SUM, BIT(A_SEQ)},
    [H_D_ATTN_IN] = {"d_attn_in", TPU_COLL_PSUM, TPU_REDOP_SUM, BIT(A_TENSOR)},
    [H_GRAD] = {"grad", TPU_COLL_PSUM, TPU_REDOP_SUM, BIT(A_DATA) | BIT(A_SEQ) | BIT(A_DCN)},
    [H_GATHER] = {"gather", TPU_COLL_ALL_GATHER, TPU_REDOP_SUM, BIT(A_FSDP)},
};

/* ---- the step as tables ---- */

typedef enum {
    R_MM,       /* a matmul m x k x n, 'count' times */
    R_ACT,      /* the MLP's activation (the plan's) over m x n; its derivative in the backward */
    R_VPU,      /* a VPU pass over m x n */
    R_NORM,     /* an RMSNorm over m x n: square, row sum, scale, gain (4 passes) */
    R_NORM_BWD, /* its backward: 5 passes (dgain's product and sum, dn, dn n, dx) */
    R_COLL      /* collective 'hook' of 'm' f32 elements (the engine's count) */
} row_kind_t;

/* When a row applies (0: always). */
enum {
    C_SEQ = 1,   /* the sequential block only */
    C_GLU = 2,   /* swiglu only */
    C_FLASH = 4, /* the compiled step's flash attention only */
    C_SGD = 8,   /* sgd only */
    C_ADAM = 16, /* adamw only */
    C_VMEM = 32, /* a pass over the scores: compiled (flash, in VMEM) VPU time only */
    /* The backward never reads the row's output (a projection's input is what its gradients
     * need, not its product), so a compiled remat does not recompute it: JAX's checkpoint
     * recomputes only the residuals the backward uses (the dead-code rule of remat_p in
     * jax/_src/ad_checkpoint.py), and XLA removes what nothing reads. */
    C_DEAD = 64,
    C_DEAD_PAR = 128, /* the same in the parallel block only (there the sum goes to the residual) */
    C_WGRAD = 256     /* a weight gradient: nothing of the layer's backward reads it */
};

typedef struct row {
    row_kind_t kind;
    const char *what;
    int m, k, n, count; /* Z_* */
    int op;             /* R_VPU: tpu_vpu_op_t; R_COLL: H_* */
    int cond;           /* C_* */
} row_t;

#define MMC(w, m, k, n, c, cond)                 \
    {                                            \
        R_MM, (w), (m), (k), (n), (c), 0, (cond) \
    }
#define MM(w, m, k, n, c) MMC(w, m, k, n, c, 0)
#define VPUC(w, op, r, c, cond)                              \
    {                                                        \
        R_VPU, (w), (r), Z_1, (c), Z_1, TPU_VPU_##op, (cond) \
    }
#define VPU(w, op, r, c) VPUC(w, op, r, c, 0)
#define ACT(w)                                \
    {                                         \
        R_ACT, (w), Z_T, Z_1, Z_FL, Z_1, 0, 0 \
    }
#define NORMC(w, cond)                              \
    {                                               \
        R_NORM, (w), Z_T, Z_1, Z_DR, Z_1, 0, (cond) \
    }
#define NORM(w) NORMC(w, 0)
#define NORM_BWDC(w, cond)                              \
    {                                                   \
        R_NORM_BWD, (w), Z_T, Z_1, Z_DR, Z_1, 0, (cond) \
    }
#define NORM_BWD(w) NORM_BWDC(w, 0)
#define COLLC(h, z, cond)                             \
    {                                                 \
        R_COLL, NULL, (z), Z_1, Z_1, Z_1, (h), (cond) \
    }
#define COLL(h, z) COLLC(h, z, 0)

/* As transformer_fwd.c charges them. */
static const row_t embed_fwd[] = {
    COLL(H_EMBED, Z_TD),
    VPU("h = embed[x] + pos", ADD, Z_T, Z_D),
};
static const row_t layer_fwd[] = {
    NORM("a = rms(h) * norm1"),
    MM("q = a @ wq", Z_T, Z_D, Z_DL, Z_1),
    MM("k = a @ wk", Z_T, Z_D, Z_KVL, Z_1),
    MM("v = a @ wv", Z_T, Z_D, Z_KVL, Z_1),
    COLL(H_KV, Z_KV),
    COLL(H_KV, Z_KV),
    MM("s = q k^T (per head)", Z_SL, Z_DH, Z_SA, Z_BNH),
    MM("o = p v (per head)", Z_SL, Z_SA, Z_DH, Z_BNH),
    VPUC("scale and mask", MUL, Z_BNHSL, Z_SA, C_VMEM),
    VPUC("softmax", SOFTMAX, Z_BNHSL, Z_SA, C_VMEM),
    MMC("o @ wo", Z_T, Z_DL, Z_D, Z_1, C_DEAD_PAR),
    COLLC(H_ATTN_OUT, Z_TD, C_SEQ),
    VPUC("residual", ADD, Z_T, Z_DR, C_SEQ),
    NORMC("m = rms(h) * norm2", C_SEQ),
    MM("u = m @ w1", Z_T, Z_D, Z_FL, Z_1),
    MMC("g = m @ w3", Z_T, Z_D, Z_FG, Z_1, C_GLU),
    ACT("act(u)"),
    VPUC("act(u) * g", MUL, Z_T, Z_FG, C_GLU),
    MMC("act(u) @ w2", Z_T, Z_FL, Z_D, Z_1, C_DEAD),
    COLLC(H_MLP_OUT, Z_TD, C_DEAD),
    VPUC("residual", ADD, Z_T, Z_DR, C_DEAD),
};
static const row_t head_fwd[] = {
    NORM("rms(h) * norm_f"), MM("logits = . @ unembed", Z_T, Z_D, Z_VL, Z_1),
    COLL(H_VOCAB_MAX, Z_T),  COLL(H_VOCAB_SUM, Z_T2),
    COLL(H_LOSS, Z_2),       VPU("log-sum-exp", SOFTMAX, Z_T, Z_VL),
};
/* As transformer_bwd.c charges them. */
static const row_t head_bwd[] = {
    VPU("dlogits", SOFTMAX, Z_T, Z_VL),
    MMC("dunembed", Z_D, Z_T, Z_VL, Z_1, C_WGRAD),
    MM("dlogits @ unembed^T", Z_T, Z_VL, Z_D, Z_1),
    COLL(H_D_FINAL, Z_TD),
    NORM_BWD("norm_f backward"),
};
static const row_t layer_bwd[] = {
    MM("dgu = dh @ w2^T", Z_T, Z_D, Z_FL, Z_1),
    MMC("dw2", Z_FL, Z_T, Z_D, Z_1, C_WGRAD),
    ACT("act'(u)"),
    VPUC("d(act(u) g)", MUL, Z_T, Z_FG, C_GLU),
    MMC("dw1", Z_D, Z_T, Z_FL, Z_1, C_WGRAD),
    MMC("dw3", Z_D, Z_T, Z_FG, Z_1, C_GLU | C_WGRAD),
    MM("du @ w1^T", Z_T, Z_FL, Z_D, Z_1),
    MMC("dg @ w3^T", Z_T, Z_FG, Z_D, Z_1, C_GLU),
    COLLC(H_D_MLP_IN, Z_TD, C_SEQ),
    NORM_BWDC("norm2 backward", C_SEQ),
    MMC("dwo", Z_DL, Z_T, Z_D, Z_1, C_WGRAD),
    MM("do = dh @ wo^T", Z_T, Z_D, Z_DL, Z_1),
    MMC("s = q k^T again (flash)", Z_SL, Z_DH, Z_SA, Z_BNH, C_FLASH),
    VPUC("softmax again (flash)", SOFTMAX, Z_BNHSL, Z_SA, C_FLASH | C_VMEM),
    MM("dv = p^T do (per head)", Z_SA, Z_SL, Z_DH, Z_BNH),
    MM("dp = do v^T (per head)", Z_SL, Z_DH, Z_SA, Z_BNH),
    MM("dq = ds k (per head)", Z_SL, Z_SA, Z_DH, Z_BNH),
    MM("dk = ds^T q (per head)", Z_SA, Z_SL, Z_DH, Z_BNH),
    VPUC("softmax backward: dp p", MUL, Z_BNHSL, Z_SA, C_VMEM),
    VPUC("softmax backward: row sum", SUM, Z_BNHSL, Z_SA, C_VMEM),
    VPUC("softmax backward: ds", MUL, Z_BNHSL, Z_SA, C_VMEM),
    COLL(H_D_KV, Z_KV),
    COLL(H_D_KV, Z_KV),
    MMC("dwq", Z_D, Z_T, Z_DL, Z_1, C_WGRAD),
    MM("dq @ wq^T", Z_T, Z_DL, Z_D, Z_1),
    MMC("dwk", Z_D, Z_T, Z_KVL, Z_1, C_WGRAD),
    MM("dk @ wk^T", Z_T, Z_KVL, Z_D, Z_1),
    MMC("dwv", Z_D, Z_T, Z_KVL, Z_1, C_WGRAD),
    MM("dv @ wv^T", Z_T, Z_KVL, Z_D, Z_1),
    COLL(H_D_ATTN_IN, Z_TD),
    NORM_BWD("norm1 backward"),
};
static const row_t embed_bwd[] = {
    VPU("dembed, dpos", ADD, Z_T, Z_D2),
};
static const row_t update[] = {
    VPUC("sgd: p -= lr g", ADD, Z_1, Z_NPAR, C_SGD),
    VPUC("clip: sum of g^2", SUM, Z_1, Z_NPAR, C_ADAM),
    VPUC("clip: g *= c", MUL, Z_1, Z_NPAR, C_ADAM),
    VPUC("adamw: m = b1 m + (1 - b1) g", ADD, Z_1, Z_NPAR, C_ADAM),
    VPUC("adamw: g^2", MUL, Z_1, Z_NPAR, C_ADAM),
    VPUC("adamw: v = b2 v + (1 - b2) g^2", ADD, Z_1, Z_NPAR, C_ADAM),
    VPUC("adamw: sqrt(v) + eps", EXP, Z_1, Z_NPAR, C_ADAM),
    VPUC("adamw: m / (sqrt(v) + eps)", MUL, Z_1, Z_NPAR, C_ADAM),
    VPUC("adamw: p -= lr (u + wd p)", ADD, Z_1, Z_NPAR, C_ADAM),
};

#define N(t) ((int)(sizeof(t) / sizeof((t)[0])))

/* The parameters (tpu_xfmr_param_info's order), their local piece, and whether pos-like
 * (split over sequence: its gradient is not summed over it). */
typedef struct prow {
    int r, c; /* Z_* of the chip's piece */
    int seq_split;
} prow_t;

static const prow_t embed_params[] = {{Z_VL, Z_D, 0}, {Z_SL, Z_D, 1}}; /* embed, pos */
static const prow_t layer_params[] = {
    {Z_1, Z_D, 0},  {Z_D, Z_DL, 0},   {Z_D, Z_KVL, 0}, {Z_D, Z_KVL, 0}, /* norm1 wq wk wv */
    {Z_DL, Z_D, 0}, {Z_1, Z_DSEQ, 0}, {Z_D, Z_FL, 0},  {Z_FL, Z_D, 0},  /* wo norm2 w1 w2 */
    {Z_D, Z_FG, 0},                                                     /* w3 (swiglu) */
};
static const prow_t head_params[] = {{Z_1, Z_D, 0}, {Z_UNEMB, Z_VL, 0}}; /* norm_f, unembed */

/* Room for element n; the first allocation sized for the whole step (few reallocations). */
static tpu_status_t grow(void **p, int64_t *cap, int64_t n, size_t elem, int64_t first,
                         tpu_err_t *err)
{
    int64_t c = *cap > 0 ? 2 * *cap : first;
    void *q;

    if (n < *cap) {
        return TPU_OK;
    }
    q = tpu__realloc(*p, (size_t)c * elem);

    if (q == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "transformer cost: no memory");
    }
    *p = q;
    *cap = c;
    return TPU_OK;
}

static tpu_status_t emit(tpu_xfmr_cost_t *c, pkind_t kind, int64_t idx, int unit, tpu_err_t *err)
{
    eng_t *e = c->engine;
    tpu_status_t status =
        grow((void **)&e->prog, &e->cap_prog, e->nprog, sizeof(prog_t), e->first, err);

    if (status == TPU_OK) {
        e->prog[e->nprog++] = (prog_t){kind, idx, unit};
    }
    return status;
}

/* ---- compute ---- */

enum {
    V_ACT = 1,
    V_VMEM = 2
}; /* a VPU pass over activations; over VMEM-resident scores */

/* "a: b" into dst (cap bytes), cut short; no printf (it runs for every op). */
static void join(char *dst, size_t cap, const char *a, const char *b)
{
    const char *parts[3] = {a, ": ", b};
    size_t n = 0;
    int i;

    for (i = 0; i < 3; i++) {
        for (const char *q = parts[i]; *q != '\0' && n + 1 < cap; q++) {
            dst[n++] = *q;
        }
    }
    dst[n] = '\0';
}

static tpu_status_t add_op(tpu_xfmr_cost_t *c, const char *sect, const char *what, int mxu, int vop,
                           int64_t m, int64_t k, int64_t n, int64_t count, int vpu_flags,
                           tpu_err_t *err)
{
    eng_t *e = c->engine;
    tpu_xfmr_cost_op_t *op;
    tpu_status_t status;
    tpu_roofline_t rl = {0};
    double us = 0;

    if (m * n * count == 0 || (mxu && k == 0)) {
        return TPU_OK;
    }
    if (mxu) {
        tpu_mxu_desc_t d;

        tpu_mxu_desc_init(&d, m, k, n,
                          e->m.precision == TPU_XFMR_BF16 ? TPU_DTYPE_BF16 : TPU_DTYPE_F32);
        d.out = TPU_DTYPE_F32;
        status = tpu_mxu_roofline(e->chip, &d, &rl, err);
        us = rl.modeled_us;
        if (e->plan.compiled) { /* the shape's calibrated time at the generation's fraction */
            us = 1e6 * tpu_mxu_seconds_calibrated(e->chip, m, k, n, d.in) / e->plan.mxu_fraction;
        }
    } else {
        tpu_vpu_desc_t d;

        /* compiled: activations in bf16 (not the update's f32 state); flash's scores in VMEM */
        tpu_vpu_desc_init(&d, (tpu_vpu_op_t)vop,
                          (vpu_flags & V_ACT) && e->act_bytes == 2 ? TPU_DTYPE_BF16 : TPU_DTYPE_F32,
                          m, n);
        status = tpu_vpu_roofline(e->chip, &d, &rl, err);
        us = rl.modeled_us;
        if ((vpu_flags & V_VMEM) && e->plan.compiled) {
            us = 1e6 * tpu_vpu_seconds(e->chip, m * n, tpu_vpu_op_flops((tpu_vpu_op_t)vop));
        }
    }
    status = status == TPU_OK
                 ? grow((void **)&c->ops, &e->cap_ops, c->nops, sizeof(*op), e->first, err)
                 : status;
    if (status != TPU_OK) {
        return status;
    }
    op = &c->ops[c->nops];
    memset(op, 0, sizeof(*op));
    join(op->what, sizeof(op->what), sect, what);
    op->mxu = mxu;
    op->vpu_op = mxu ? -1 : vop;
    op->m = m;
    op->k = mxu ? k : 0;
    op->n = n;
    op->count = count;
    op->flops = mxu ? 2.0 * (double)m * (double)k * (double)n * (double)count : 0;
    op->us = us * (double)count;
    op->hbm_bytes = rl.hbm_bytes * (double)count; /* the roofline's, not the calibrated one */
    op->bound = rl.bound;
    c->mxu_us += mxu ? op->us : 0;
    c->vpu_us += mxu ? 0 : op->us;
    c->chip_flops += op->flops;
    return emit(c, P_OP, c->nops++, 0, err);
}

/* ---- collectives ---- */

/*
 * One call of collective 'hook' over the axes 'mask' (dropping those of size 1)
 * of 'count' f32 elements, at 'index', scheduled as 'pk' (for 'unit').  Calls of
 * the same hook, axes, size and schedule share a row, timed once.
 */
static tpu_status_t add_call(tpu_xfmr_cost_t *c, int hook, tpu_coll_kind_t kind, unsigned mask,
                             uint64_t count, int index, pkind_t pk, int unit, int exposed,
                             tpu_err_t *err)
{
    eng_t *e = c->engine;
    char names[64], layout[64];
    tpu_xfmr_cost_coll_t *row = NULL;
    tpu_status_t status;
    int g, k;

    if (tpu__xfmr_axes_of(e, mask, names, layout, sizeof(names), &g) == 0 || count == 0) {
        return TPU_OK; /* every group is one chip */
    }
    for (k = 0; k < c->ncolls; k++) {
        row = &c->colls[k];
        if (row->bytes == count * sizeof(float) && row->kind == kind && row->group_size == g &&
            row->exposed == exposed && row->op == hooks[hook].op &&
            strcmp(row->what, hooks[hook].name) == 0 && strcmp(row->mesh_axis, names) == 0) {
            break;
        }
    }
    if (k == c->ncolls) {
        int64_t cap = e->cap_colls;

        status = grow((void **)&c->colls, &cap, c->ncolls, sizeof(*row), 64, err);
        e->cap_colls = (int)cap;
        if (status != TPU_OK) {
            return status;
        }
        row = &c->colls[c->ncolls];
        memset(row, 0, sizeof(*row));
        snprintf(row->what, sizeof(row->what), "%s", hooks[hook].name);
        row->kind = kind;
        row->op = hooks[hook].op;
        snprintf(row->mesh_axis, sizeof(row->mesh_axis), "%s", names);
        snprintf(row->axes, sizeof(row->axes), "%s", layout);
        row->group_size = g;
        row->groups = c->chips / g;
        if (e->plan.bound_only) { /* untimed: 0 us */
            row->bytes = count * sizeof(float);
            c->ncolls++;
            goto called;
        }
        row->exposed = exposed;
        status = tpu__xfmr_row_time(c, row, count, err);
        if (status != TPU_OK) {
            return status;
        }
        row->bytes = count * sizeof(float); /* the key (the engine agrees: f32 elements) */
        c->ncolls++;
    }
called:
    c->colls[k].count++;
    status = grow((void **)&c->calls, &e->cap_calls, c->ncalls, sizeof(*c->calls), e->first, err);
    if (status != TPU_OK) {
        return status;
    }
    c->calls[c->ncalls] = (tpu_xfmr_cost_call_t){k, index, 0};
    return emit(c, pk, c->ncalls++, unit, err);
}

/* ---- parameters, fsdp units ---- */

/* Parameter p's local piece (elements), its table row, its unit (0 embeddings,
 * 1 + l layer l, L + 1 the head). */
static const prow_t *param_row(const eng_t *e, int p, int *unit_p)
{
    const int L = (int)e->m.layers;

    if (p < 2) {
        *unit_p = 0;
        return &embed_params[p];
    }
    if (p < 2 + e->per_layer * L) {
        *unit_p = 1 + (p - 2) / e->per_layer;
        return &layer_params[(p - 2) % e->per_layer];
    }
    *unit_p = L + 1;
    return &head_params[p - 2 - e->per_layer * L];
}

static int64_t piece(const eng_t *e, int p)
{
    int u;
    const prow_t *r = param_row(e, p, &u);

    return e->z[r->r] * e->z[r->c];
}

/* The fsdp shard of a piece (padded up to a multiple of fsdp, as XLA pads). */
static int64_t shard(const eng_t *e, int p)
{
    const int64_t f = e->size[A_FSDP];

    return (piece(e, p) + f - 1) / f;
}

/* The f32 elements (the engine's count) of parameter p's fsdp gather or reduce-scatter in
 * the gathered dtype: each shard's bytes rounded up to 4, so that it divides over fsdp. */
static uint64_t fsdp_count(const eng_t *e, int p)
{
    return (uint64_t)((shard(e, p) * e->gather_bytes + 3) / 4 * e->size[A_FSDP]);
}

static int first_param(const eng_t *e, int unit)
{
    return unit == 0 ? 0 : 2 + e->per_layer * (unit - 1);
}

static int unit_params(const eng_t *e, int unit)
{
    return unit == 0 || unit == (int)e->m.layers + 1 ? 2 : e->per_layer;
}

/* fsdp: all-gather the parameters of 'unit' (forward units 0..L+1) for slot 'slot'. */
static tpu_status_t gather_unit(tpu_xfmr_cost_t *c, int unit, int slot, tpu_err_t *err)
{
    eng_t *e = c->engine;
    tpu_status_t status = TPU_OK;
    int p;

    if (e->size[A_FSDP] == 1 || unit < 0 || unit > (int)e->m.layers + 1) {
        return TPU_OK;
    }
    for (p = first_param(e, unit); p < first_param(e, unit) + unit_params(e, unit); p++) {
        status = add_call(c, H_GATHER, TPU_COLL_ALL_GATHER, BIT(A_FSDP), fsdp_count(e, p), p,
                          P_GATHER, slot, slot == 0, err);
        if (status != TPU_OK) {
            break;
        }
    }
    return status;
}

/* The gradient reductions of the parameters of 'unit', overlapped. */
/* The gradient reductions of 'unit', overlapped; compiled over slices, the psums over dcn
 * after the backward ('tail': those alone, exposed), as MaxText's scan reduces them. */
static tpu_status_t grads_unit_of(tpu_xfmr_cost_t *c, int unit, int tail, tpu_err_t *err)
{
    eng_t *e = c->engine;
    tpu_status_t status = TPU_OK;
    const int late = e->plan.compiled && e->size[A_DCN] > 1;
    int p, u;

    for (p = first_param(e, unit);
         status == TPU_OK && p < first_param(e, unit) + unit_params(e, unit); p++) {
        const prow_t *r = param_row(e, p, &u);
        unsigned mask = hooks[H_GRAD].axes & ~(r->seq_split ? BIT(A_SEQ) : 0u);

        if (e->size[A_FSDP] > 1 && !tail) {
            status = add_call(c, H_GRAD, TPU_COLL_REDUCE_SCATTER, BIT(A_FSDP), fsdp_count(e, p), p,
                              P_GRAD, 0, 0, err);
        }
        if (status == TPU_OK && late == tail) {
            status = add_call(c, H_GRAD, TPU_COLL_PSUM, mask,
                              (uint64_t)(shard(e, p) * e->plan.param_bytes / 4), p,
                              tail ? P_SYNC : P_GRAD, 0, tail, err);
        }
    }
    return status;
}

static tpu_status_t grads_unit(tpu_xfmr_cost_t *c, int unit, tpu_err_t *err)
{
    return grads_unit_of(c, unit, 0, err);
}

/* The late dcn reductions of every unit. */
static tpu_status_t grads_tail(tpu_xfmr_cost_t *c, tpu_err_t *err)
{
    tpu_status_t status = TPU_OK;
    int u;

    for (u = (int)c->engine->m.layers + 1;
         c->engine->plan.compiled && c->engine->size[A_DCN] > 1 && u >= 0 && status == TPU_OK;
         u--) {
        status = grads_unit_of(c, u, 1, err);
    }
    return status;
}

/* Does row 'r' apply under the plan?  The VPU op of the MLP (swiglu: silu, an exp). */
static int applies(const eng_t *e, const row_t *r)
{
    const tpu_xfmr_plan_t *p = &e->plan;

    return !((r->cond & C_SEQ) && p->parallel_block) &&
           !((r->cond & C_GLU) && p->mlp != TPU_XFMR_MLP_SWIGLU) &&
           !((r->cond & C_FLASH) && !p->compiled) && !((r->cond & C_SGD) && p->adamw) &&
           !((r->cond & C_ADAM) && !p->adamw);
}

static int act_op(const eng_t *e)
{
    return e->plan.mlp == TPU_XFMR_MLP_RELU     ? TPU_VPU_RELU
           : e->plan.mlp == TPU_XFMR_MLP_SWIGLU ? TPU_VPU_SOFTMAX
                                                : TPU_VPU_GELU;
}

/* Is row 'r' left out of remat's recomputation of the forward?  Minimal keeps the projections
 * and the collectives (it recomputes neither); compiled, no policy recomputes what the backward
 * never reads (C_DEAD). */
static int not_recomputed(const eng_t *e, const row_t *r, tpu_xfmr_remat_t policy)
{
    return (policy == TPU_XFMR_REMAT_MINIMAL &&
            (r->kind == R_COLL || (r->kind == R_MM && r->count == Z_1))) ||
           (e->plan.compiled &&
            ((r->cond & C_DEAD) || ((r->cond & C_DEAD_PAR) && e->plan.parallel_block)));
}

/* Does collective row i run beside the matmul before it (compiled: XLA's collective matmul)? */
static int is_cmm(const eng_t *e, const row_t *rows, int i)
{
    return e->plan.compiled && i > 0 && rows[i - 1].kind == R_MM;
}

/* Row i of a section table as ops or a call; 'async': a collective matmul whose compute does
 * not wait (see section_of). */
static tpu_status_t row_emit(tpu_xfmr_cost_t *c, const char *sect, const row_t *rows, int i,
                             int async, int index, tpu_err_t *err)
{
    static const tpu_vpu_op_t norm[] = {TPU_VPU_MUL, TPU_VPU_SUM, TPU_VPU_MUL, TPU_VPU_MUL};
    static const tpu_vpu_op_t norm_bwd[] = {TPU_VPU_MUL, TPU_VPU_SUM, TPU_VPU_MUL, TPU_VPU_SUM,
                                            TPU_VPU_ADD};
    eng_t *e = c->engine;
    const row_t *r = &rows[i];
    const int64_t *z = e->z;
    tpu_status_t status = TPU_OK;
    int j;

    switch (r->kind) {
    case R_ACT:
        return add_op(c, sect, r->what, 0, act_op(e), z[r->m], 0, z[r->n], 1, V_ACT, err);
    case R_MM:
        return add_op(c, sect, r->what, 1, 0, z[r->m], z[r->k], z[r->n], z[r->count], 0, err);
    case R_VPU:
        return add_op(c, sect, r->what, 0, r->op, z[r->m], 0, z[r->n], 1,
                      (r->n == Z_NPAR ? 0 : V_ACT) | ((r->cond & C_VMEM) ? V_VMEM : 0), err);
    case R_NORM:
    case R_NORM_BWD:
        /* compiled: one fused pass forward, two backward */
        for (j = 0; status == TPU_OK && j < (r->kind == R_NORM ? 4 : 5) &&
                    !(e->plan.compiled && j >= (r->kind == R_NORM ? 1 : 2));
             j++) {
            char w[48];

            snprintf(w, sizeof(w), "%s (%s)", r->what,
                     tpu_vpu_op_name(r->kind == R_NORM ? norm[j] : norm_bwd[j]));
            status = add_op(c, sect, w, 0, r->kind == R_NORM ? norm[j] : norm_bwd[j], z[r->m], 0,
                            z[r->n], 1, V_ACT, err);
        }
        return status;
    case R_COLL: {
        /* f32 elements of the engine; bf16 activations are half as many bytes.  Compiled:
         * a psum after a matmul runs beside it (XLA's collective matmul). */
        const int cmm = is_cmm(e, rows, i);

        return add_call(c, r->op, hooks[r->op].kind, hooks[r->op].axes,
                        (uint64_t)(z[r->m] * e->act_bytes / 4), index,
                        cmm ? (async ? P_CMM_ASYNC : P_CMM) : P_SYNC, 0, !cmm, err);
    }
    }
    return status;
}

/* The rows of a section table, at 'index' (the layer, or -1); 'recompute' (a remat policy, or
 * TPU_XFMR_REMAT_NONE for the step's own rows) leaves out what the recomputation skips.
 * Compiled, the weight gradients (C_WGRAD: nothing of the layer's backward reads them) wait
 * for the next collective matmul and run while it is on the links, as XLA's latency-hiding
 * scheduler orders independent work after an async collective's start; the compute waits
 * for the collective after them (P_JOIN). */
static tpu_status_t section_of(tpu_xfmr_cost_t *c, const char *sect, const row_t *rows, int n,
                               int index, tpu_xfmr_remat_t recompute, tpu_err_t *err)
{
    eng_t *e = c->engine;
    tpu_status_t status = TPU_OK;
    int held[8], nheld = 0, i, j;

    for (i = 0; i < n && status == TPU_OK; i++) {
        const row_t *r = &rows[i];

        if (!applies(e, r) ||
            (recompute != TPU_XFMR_REMAT_NONE && not_recomputed(e, r, recompute))) {
            continue;
        }
        if (e->plan.compiled && (r->cond & C_WGRAD) && nheld < N(held)) {
            held[nheld++] = i;
        } else if (r->kind == R_COLL && nheld > 0 && is_cmm(e, rows, i)) {
            status = row_emit(c, sect, rows, i, 1, index, err);
            for (j = 0; j < nheld && status == TPU_OK; j++) {
                status = row_emit(c, sect, rows, held[j], 0, index, err);
            }
            nheld = 0;
            status = status == TPU_OK ? emit(c, P_JOIN, 0, 0, err) : status;
        } else {
            status = row_emit(c, sect, rows, i, 0, index, err);
        }
    }
    for (j = 0; j < nheld && status == TPU_OK; j++) { /* none came: in place, at the end */
        status = row_emit(c, sect, rows, held[j], 0, index, err);
    }
    return status;
}

/* The recomputation of layer l's forward before its backward (remat). */
static tpu_status_t remat(tpu_xfmr_cost_t *c, int l, tpu_err_t *err)
{
    const tpu_xfmr_remat_t policy = c->engine->plan.remat;
    char sect[32];

    snprintf(sect, sizeof(sect), "l%d remat", l);
    return policy == TPU_XFMR_REMAT_NONE
               ? TPU_OK
               : section_of(c, sect, layer_fwd, N(layer_fwd), l, policy, err);
}

/* The whole step: forward, backward, update, with fsdp's gathers one unit ahead. */
tpu_status_t tpu__xfmr_cost_build(tpu_xfmr_cost_t *c, tpu_err_t *err)
{
    eng_t *e = c->engine;
    const int L = (int)e->m.layers;
    tpu_status_t status;
    char sect[32];
    int l;

    /* Forward slots 0..L+1 are the units; backward slot L+2+l is layer l again. */
    status = gather_unit(c, 0, 0, err);
    status = status == TPU_OK ? gather_unit(c, 1, 1, err) : status;
    status = status == TPU_OK ? emit(c, P_WAIT, 0, 0, err) : status;
    status = status == TPU_OK
                 ? section_of(c, "embed", embed_fwd, N(embed_fwd), -1, TPU_XFMR_REMAT_NONE, err)
                 : status;
    for (l = 0; l < L && status == TPU_OK; l++) {
        snprintf(sect, sizeof(sect), "l%d fwd", l);
        status = gather_unit(c, l + 2, l + 2, err);
        status = status == TPU_OK ? emit(c, P_WAIT, 0, l + 1, err) : status;
        status = status == TPU_OK
                     ? section_of(c, sect, layer_fwd, N(layer_fwd), l, TPU_XFMR_REMAT_NONE, err)
                     : status;
    }
    status = status == TPU_OK ? emit(c, P_WAIT, 0, L + 1, err) : status;
    status = status == TPU_OK
                 ? section_of(c, "head fwd", head_fwd, N(head_fwd), -1, TPU_XFMR_REMAT_NONE, err)
                 : status;
    /* Backward: the head's weights are still there; each layer's are gathered again. */
    status = status == TPU_OK ? gather_unit(c, L, L + 2 + L - 1, err) : status;
    status = status == TPU_OK
                 ? section_of(c, "head bwd", head_bwd, N(head_bwd), -1, TPU_XFMR_REMAT_NONE, err)
                 : status;
    status = status == TPU_OK ? grads_unit(c, L + 1, err) : status;
    for (l = L - 1; l >= 0 && status == TPU_OK; l--) {
        snprintf(sect, sizeof(sect), "l%d bwd", l);
        status = l > 0 ? gather_unit(c, l, L + 2 + l - 1, err) : TPU_OK;
        status = status == TPU_OK ? emit(c, P_WAIT, 0, L + 2 + l, err) : status;
        status = status == TPU_OK ? remat(c, l, err) : status;
        status = status == TPU_OK
                     ? section_of(c, sect, layer_bwd, N(layer_bwd), l, TPU_XFMR_REMAT_NONE, err)
                     : status;
        status = status == TPU_OK ? grads_unit(c, l + 1, err) : status;
    }
    status = status == TPU_OK
                 ? section_of(c, "embed bwd", embed_bwd, N(embed_bwd), -1, TPU_XFMR_REMAT_NONE, err)
                 : status;
    status = status == TPU_OK ? grads_unit(c, 0, err) : status;
    status = status == TPU_OK ? emit(c, P_WAIT_GRADS, 0, 0, err) : status;
    status = status == TPU_OK ? grads_tail(c, err) : status;
    return status == TPU_OK
               ? section_of(c, "update", update, N(update), -1, TPU_XFMR_REMAT_NONE, err)
               : status;
}

/* ---- sizes ---- */

int64_t tpu__xfmr_cost_unit_elems(const eng_t *e, int unit, int largest)
{
    int64_t n = 0;
    int p;

    for (p = first_param(e, unit); p < first_param(e, unit) + unit_params(e, unit); p++) {
        n = largest ? (piece(e, p) > n ? piece(e, p) : n) : n + piece(e, p);
    }
    return n;
}

void tpu__xfmr_cost_sizes(tpu_xfmr_cost_t *c)
{
    eng_t *e = c->engine;
    const tpu_xfmr_config_t *m = &e->m;
    const tpu_xfmr_plan_t *pl = &e->plan;
    int64_t *z = e->z, b = m->batch / (e->size[A_DATA] * e->size[A_FSDP] * e->size[A_DCN]);
    int64_t nh = m->heads / e->size[A_TENSOR], np = 0;
    int64_t kv = pl->kv_heads > 0 ? pl->kv_heads : m->heads;
    int64_t nkv = kv >= e->size[A_TENSOR] ? kv / e->size[A_TENSOR] : 1; /* replicated below */
    int p;

    z[Z_1] = 1;
    z[Z_2] = 2;
    z[Z_D] = m->d_model;
    z[Z_D2] = 2 * m->d_model;
    z[Z_DH] = pl->head_dim > 0 ? pl->head_dim : m->d_model / m->heads;
    z[Z_DL] = nh * z[Z_DH];
    z[Z_FL] = m->d_ff / e->size[A_TENSOR];
    z[Z_VL] = m->vocab / e->size[A_TENSOR];
    z[Z_S] = m->seq;
    z[Z_SL] = m->seq / e->size[A_SEQ];
    z[Z_T] = b * z[Z_SL];
    z[Z_T2] = 2 * z[Z_T];
    z[Z_BNH] = b * nh;
    z[Z_BNHSL] = b * nh * z[Z_SL];
    z[Z_KV] = b * nkv * z[Z_S] * z[Z_DH];
    z[Z_KVL] = nkv * z[Z_DH];
    z[Z_SA] = pl->compiled && !pl->attn_full ? (z[Z_S] + 1) / 2 : z[Z_S];
    z[Z_FG] = pl->mlp == TPU_XFMR_MLP_SWIGLU ? z[Z_FL] : 0;
    z[Z_UNEMB] = pl->tied ? 0 : m->d_model;
    z[Z_DSEQ] = pl->parallel_block ? 0 : m->d_model;
    z[Z_DR] = pl->compiled ? m->d_model / e->size[A_TENSOR] : m->d_model;
    z[Z_TD] = z[Z_T] * z[Z_D];
    for (p = 0; p < 2 + e->per_layer * (int)m->layers + 2; p++) {
        np += shard(e, p);
    }
    z[Z_NPAR] = np;
    c->batch_chip = b;
    c->seq_chip = z[Z_SL];
    c->tokens_chip = z[Z_T];
}
