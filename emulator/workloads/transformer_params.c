/*
 * The transformer's model object and its parameters: the config and its
 * checks, the parameter table (names, whole shapes, the chip's block of each),
 * create and destroy, the random init from a seed, the named .npy files, the
 * SGD update, and the batching rule and token checks of the data.
 */
#include "tpu/npy.h"

#include "alloc.h"
#include "transformer_ops.h"
#include "workload_util.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define S_PARAM 1000 /* random stream of parameter p: S_PARAM + p */

static const char *const hook_names[TPU_XFMR_HOOK_COUNT] = {
    "embed",   "kv",       "attn_out", "mlp_out",   "vocab_max", "vocab_sum", "loss",
    "d_final", "d_mlp_in", "d_kv",     "d_attn_in", "grad",      "gather"};

const char *tpu_xfmr_hook_name(tpu_xfmr_hook_t hook)
{
    return (unsigned)hook < TPU_XFMR_HOOK_COUNT ? hook_names[hook] : "?";
}

void tpu_xfmr_config_init(tpu_xfmr_config_t *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->layers = 2;
    cfg->d_model = 64;
    cfg->heads = 4;
    cfg->d_ff = 256;
    cfg->vocab = 256;
    cfg->seq = 32;
    cfg->batch = 8;
    cfg->precision = TPU_XFMR_F32;
}

int tpu_xfmr_param_count(const tpu_xfmr_config_t *cfg)
{
    return cfg->layers < 0 || cfg->layers > (INT_MAX - 4) / XFMR_PER_LAYER
               ? 0
               : 4 + XFMR_PER_LAYER * (int)cfg->layers;
}

int tpu_xfmr_param_info(const tpu_xfmr_config_t *cfg, int p, char name[TPU_XFMR_NAME_LEN],
                        int64_t shape[2])
{
    static const char *const per_layer[XFMR_PER_LAYER] = {"norm1", "wq",    "wk", "wv",
                                                          "wo",    "norm2", "w1", "w2"};
    const int64_t D = cfg->d_model;
    int n = tpu_xfmr_param_count(cfg);

    if (p < 0 || p >= n) {
        return 0;
    }
    shape[1] = 1;
    if (p == XFMR_P_EMBED || p == n - 1) {
        snprintf(name, TPU_XFMR_NAME_LEN, "%s", p == 0 ? "embed" : "unembed");
        shape[0] = p == 0 ? cfg->vocab : D;
        shape[1] = p == 0 ? D : cfg->vocab;
        return 2;
    }
    if (p == XFMR_P_POS || p == n - 2) {
        snprintf(name, TPU_XFMR_NAME_LEN, "%s", p == 1 ? "pos" : "norm_f");
        shape[0] = p == 1 ? cfg->seq : D;
        shape[1] = p == 1 ? D : 1;
        return p == 1 ? 2 : 1;
    }
    {
        int l = (p - 2) / XFMR_PER_LAYER, j = (p - 2) % XFMR_PER_LAYER;

        snprintf(name, TPU_XFMR_NAME_LEN, "l%d_%s", l, per_layer[j]);
        shape[0] = j == XFMR_W2 ? cfg->d_ff : D;
        shape[1] = j == XFMR_W1 ? cfg->d_ff : D;
        if (j == XFMR_NORM1 || j == XFMR_NORM2) {
            shape[1] = 1;
            return 1;
        }
        return 2;
    }
}

/* Resolve {0, 0} to [0, size) and check lo < hi <= size. */
static tpu_status_t resolve_range(tpu_xfmr_range_t *r, int64_t size, const char *what,
                                  tpu_err_t *err)
{
    if (r->lo == 0 && r->hi == 0) {
        r->hi = size;
    }
    if (r->lo < 0 || r->hi <= r->lo || r->hi > size) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "transformer: %s range [%lld, %lld) is not inside [0, %lld)", what,
                           (long long)r->lo, (long long)r->hi, (long long)size);
    }
    return TPU_OK;
}

static tpu_status_t check_config(tpu_xfmr_config_t *c, tpu_err_t *err)
{
    const struct {
        const char *name;
        int64_t v;
    } sizes[] = {{"layers", c->layers}, {"d_model", c->d_model}, {"heads", c->heads},
                 {"d_ff", c->d_ff},     {"vocab", c->vocab},     {"seq", c->seq},
                 {"batch", c->batch}};
    size_t i;
    tpu_status_t status;

    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        if (sizes[i].v < 1 || sizes[i].v > (1 << 24)) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "transformer: %s must be between 1 and %d, got %lld", sizes[i].name,
                               1 << 24, (long long)sizes[i].v);
        }
    }
    if (c->d_model % c->heads != 0) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "transformer: d_model %lld is not divisible by heads %lld",
                           (long long)c->d_model, (long long)c->heads);
    }
    if (c->fsdp_parts == 0) {
        c->fsdp_parts = 1;
    }
    if (c->fsdp_parts < 1 || c->fsdp_index < 0 || c->fsdp_index >= c->fsdp_parts) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "transformer: fsdp part %d of %d is not a part (0 <= index < parts)",
                           c->fsdp_index, c->fsdp_parts);
    }
    if (c->precision != TPU_XFMR_F32 && c->precision != TPU_XFMR_BF16) {
        return tpu_err_set(err, TPU_ERR_INVALID, "transformer: unknown precision %d",
                           (int)c->precision);
    }
    if (c->batch_global == 0) {
        c->batch_global = c->batch;
    }
    if (c->batch_global < c->batch) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "transformer: batch_global %lld is smaller than batch %lld",
                           (long long)c->batch_global, (long long)c->batch);
    }
    status = resolve_range(&c->heads_range, c->heads, "heads", err);
    status = status == TPU_OK ? resolve_range(&c->ff_range, c->d_ff, "d_ff", err) : status;
    status = status == TPU_OK ? resolve_range(&c->vocab_range, c->vocab, "vocab", err) : status;
    status = status == TPU_OK ? resolve_range(&c->seq_range, c->seq, "seq", err) : status;
    if (status != TPU_OK) {
        return status;
    }
    if (c->hook == NULL && (c->heads_range.hi - c->heads_range.lo != c->heads ||
                            c->ff_range.hi - c->ff_range.lo != c->d_ff ||
                            c->vocab_range.hi - c->vocab_range.lo != c->vocab ||
                            c->seq_range.hi - c->seq_range.lo != c->seq ||
                            c->batch_global != c->batch || c->fsdp_parts > 1)) {
        return tpu_err_set(
            err, TPU_ERR_INVALID,
            "transformer: a sharded view (heads [%lld,%lld) of %lld, d_ff "
            "[%lld,%lld) of %lld, vocab [%lld,%lld) of %lld, seq [%lld,%lld) of "
            "%lld, batch %lld of %lld, fsdp part %d of %d) needs a hook for its collectives",
            (long long)c->heads_range.lo, (long long)c->heads_range.hi, (long long)c->heads,
            (long long)c->ff_range.lo, (long long)c->ff_range.hi, (long long)c->d_ff,
            (long long)c->vocab_range.lo, (long long)c->vocab_range.hi, (long long)c->vocab,
            (long long)c->seq_range.lo, (long long)c->seq_range.hi, (long long)c->seq,
            (long long)c->batch, (long long)c->batch_global, c->fsdp_index, c->fsdp_parts);
    }
    return TPU_OK;
}

/* The chip's block of parameter p before fsdp (the ranges). */
static void tensor_block(const tpu_xfmr_t *xf, int p, xfmr_param_t *q)
{
    const tpu_xfmr_config_t *c = &xf->cfg;
    int j = (p - 2) % XFMR_PER_LAYER;
    int64_t hd0 = c->heads_range.lo * xf->dh, hd1 = c->heads_range.hi * xf->dh;

    q->r0 = 0;
    q->r1 = q->rows;
    q->c0 = 0;
    q->c1 = q->cols;
    if (p == XFMR_P_EMBED) {
        q->r0 = c->vocab_range.lo;
        q->r1 = c->vocab_range.hi;
    } else if (p == XFMR_P_POS) {
        q->r0 = c->seq_range.lo;
        q->r1 = c->seq_range.hi;
    } else if (p == xf->nparams - 1) {
        q->c0 = c->vocab_range.lo;
        q->c1 = c->vocab_range.hi;
    } else if (p == xf->nparams - 2) {
        return;
    } else if (j == XFMR_WQ || j == XFMR_WK || j == XFMR_WV) {
        q->c0 = hd0;
        q->c1 = hd1;
    } else if (j == XFMR_WO) {
        q->r0 = hd0;
        q->r1 = hd1;
    } else if (j == XFMR_W1) {
        q->c0 = c->ff_range.lo;
        q->c1 = c->ff_range.hi;
    } else if (j == XFMR_W2) {
        q->r0 = c->ff_range.lo;
        q->r1 = c->ff_range.hi;
    }
}

/*
 * The chip's block of parameter p and its owned rows (see the shard view and
 * the fsdp shard in transformer.h); rows that do not divide over the fsdp
 * parts are refused, naming the parameter.
 */
static tpu_status_t param_block(const tpu_xfmr_t *xf, int p, xfmr_param_t *q, tpu_err_t *err)
{
    const int f = xf->cfg.fsdp_parts, k = xf->cfg.fsdp_index;
    int64_t n;

    tensor_block(xf, p, q);
    n = q->r1 - q->r0;
    if (n % f != 0) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "transformer: parameter %s: the %lld rows of its block (its first "
                           "dimension) do not divide into %d fsdp parts",
                           q->name, (long long)n, f);
    }
    q->s0 = q->r0 + k * (n / f);
    q->s1 = q->s0 + n / f;
    return TPU_OK;
}

static int64_t block_count(const xfmr_param_t *q)
{
    return (q->r1 - q->r0) * (q->c1 - q->c0);
}

static int64_t owned_count(const xfmr_param_t *q)
{
    return (q->s1 - q->s0) * (q->c1 - q->c0);
}

/* Allocate every activation and scratch array of a step. */
static tpu_status_t alloc_act(tpu_xfmr_t *xf, tpu_err_t *err)
{
    const int64_t T = xf->t, D = xf->cfg.d_model, B = xf->cfg.batch, S = xf->cfg.seq;
    const int64_t kv = B * xf->nh * S * xf->dh, pp = B * xf->nh * xf->sl * S;
    int64_t wide = xf->dl > xf->fl ? xf->dl : xf->fl, l;
    int ok = 1;

#define XALLOC(ptr, n)                                    \
    do {                                                  \
        (ptr) = tpu__calloc((size_t)(n), sizeof(*(ptr))); \
        ok = ok && (ptr) != NULL;                         \
    } while (0)

    wide = wide > xf->vl ? wide : xf->vl;
    XALLOC(xf->act, xf->cfg.layers);
    for (l = 0; ok && l < xf->cfg.layers; l++) {
        xfmr_layer_act_t *a = &xf->act[l];

        XALLOC(a->h, T * D);
        XALLOC(a->r1, T);
        XALLOC(a->n1, T * D);
        XALLOC(a->a, T * D);
        XALLOC(a->q, T * xf->dl);
        XALLOC(a->k, kv);
        XALLOC(a->v, kv);
        XALLOC(a->p, pp);
        XALLOC(a->o, T * xf->dl);
        XALLOC(a->hm, T * D);
        XALLOC(a->r2, T);
        XALLOC(a->n2, T * D);
        XALLOC(a->m, T * D);
        XALLOC(a->u, T * xf->fl);
        XALLOC(a->gu, T * xf->fl);
    }
    XALLOC(xf->x, T);
    XALLOC(xf->y, T);
    XALLOC(xf->hf, T * D);
    XALLOC(xf->rf, T);
    XALLOC(xf->nf, T * D);
    XALLOC(xf->af, T * D);
    XALLOC(xf->logits, T * xf->vl);
    XALLOC(xf->lse, T);
    XALLOC(xf->red, 2 * T);
    XALLOC(xf->gh, T * D);
    XALLOC(xf->dt, T * D);
    XALLOC(xf->dt2, T * D);
    XALLOC(xf->dwide, T * wide);
    XALLOC(xf->dq, T * xf->dl);
    XALLOC(xf->dk, kv);
    XALLOC(xf->dv, kv);
    XALLOC(xf->dp, pp);
#undef XALLOC
    return ok ? TPU_OK
              : tpu_err_set(err, TPU_ERR_NO_MEMORY,
                            "transformer: no host memory for the "
                            "activations");
}

tpu_status_t tpu_xfmr_create(const tpu_xfmr_config_t *cfg, const tpu_chip_spec_t *chip,
                             tpu_xfmr_t **xf_p, tpu_err_t *err)
{
    tpu_xfmr_t *xf;
    tpu_status_t status;
    int64_t total = 0, owned = 0, off = 0, soff = 0;
    int p;

    if (cfg == NULL || chip == NULL || xf_p == NULL) {
        return tpu_err_set(err, TPU_ERR_INVALID, "transformer: NULL argument");
    }
    xf = tpu__calloc(1, sizeof(*xf));
    if (xf == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "transformer: no memory");
    }
    xf->cfg = *cfg;
    xf->chip = *chip;
    status = check_config(&xf->cfg, err);
    if (status != TPU_OK) {
        goto err_free;
    }
    xf->dh = xf->cfg.d_model / xf->cfg.heads;
    xf->nh = xf->cfg.heads_range.hi - xf->cfg.heads_range.lo;
    xf->dl = xf->nh * xf->dh;
    xf->fl = xf->cfg.ff_range.hi - xf->cfg.ff_range.lo;
    xf->vl = xf->cfg.vocab_range.hi - xf->cfg.vocab_range.lo;
    xf->sl = xf->cfg.seq_range.hi - xf->cfg.seq_range.lo;
    xf->t = xf->cfg.batch * xf->sl;
    xf->ntok = xf->cfg.batch_global * xf->cfg.seq;
    xf->nparams = tpu_xfmr_param_count(&xf->cfg);
    xf->fsdp = xf->cfg.fsdp_parts > 1;
    xf->par = tpu__calloc((size_t)xf->nparams, sizeof(*xf->par));
    if (xf->par == NULL) {
        status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "transformer: no memory");
        goto err_free;
    }
    for (p = 0; p < xf->nparams; p++) {
        xfmr_param_t *q = &xf->par[p];
        int64_t shape[2];

        q->ndim = tpu_xfmr_param_info(&xf->cfg, p, q->name, shape);
        q->rows = shape[0];
        q->cols = shape[1];
        status = param_block(xf, p, q, err);
        if (status != TPU_OK) {
            goto err_free;
        }
        total += block_count(q);
        owned += owned_count(q);
    }
    xf->wbuf = tpu__calloc((size_t)total, sizeof(float));
    xf->gbuf = tpu__calloc((size_t)total, sizeof(float));
    xf->sbuf = xf->fsdp ? tpu__calloc((size_t)owned, sizeof(float)) : xf->wbuf;
    xf->sgbuf = xf->fsdp ? tpu__calloc((size_t)owned, sizeof(float)) : xf->gbuf;
    if (xf->wbuf == NULL || xf->gbuf == NULL || xf->sbuf == NULL || xf->sgbuf == NULL) {
        status = tpu_err_set(err, TPU_ERR_NO_MEMORY,
                             "transformer: no host memory for %lld parameters", (long long)total);
        goto err_free;
    }
    for (p = 0; p < xf->nparams; p++) {
        xf->par[p].w = xf->wbuf + off;
        xf->par[p].g = xf->gbuf + off;
        xf->par[p].ws = xf->sbuf + soff;
        xf->par[p].gs = xf->sgbuf + soff;
        off += block_count(&xf->par[p]);
        soff += owned_count(&xf->par[p]);
    }
    status = alloc_act(xf, err);
    status = status == TPU_OK ? tpu_vmem_create(chip, &xf->vmem, err) : status;
    if (status != TPU_OK) {
        goto err_free;
    }
    *xf_p = xf;
    return TPU_OK;
err_free:
    tpu_xfmr_destroy(xf);
    return status;
}

void tpu_xfmr_destroy(tpu_xfmr_t *xf)
{
    int64_t l;

    if (xf == NULL) {
        return;
    }
    for (l = 0; xf->act != NULL && l < xf->cfg.layers; l++) {
        xfmr_layer_act_t *a = &xf->act[l];
        float *arrs[] = {a->h, a->r1, a->n1, a->a,  a->q, a->k, a->v, a->p,
                         a->o, a->hm, a->r2, a->n2, a->m, a->u, a->gu};
        size_t i;

        for (i = 0; i < sizeof(arrs) / sizeof(arrs[0]); i++) {
            tpu__free(arrs[i]);
        }
    }
    tpu__free(xf->act);
    tpu__free(xf->x);
    tpu__free(xf->y);
    tpu__free(xf->hf);
    tpu__free(xf->rf);
    tpu__free(xf->nf);
    tpu__free(xf->af);
    tpu__free(xf->logits);
    tpu__free(xf->lse);
    tpu__free(xf->red);
    tpu__free(xf->gh);
    tpu__free(xf->dt);
    tpu__free(xf->dt2);
    tpu__free(xf->dwide);
    tpu__free(xf->dq);
    tpu__free(xf->dk);
    tpu__free(xf->dv);
    tpu__free(xf->dp);
    tpu_vmem_destroy(xf->vmem);
    if (xf->fsdp) {
        tpu__free(xf->sbuf);
        tpu__free(xf->sgbuf);
    }
    tpu__free(xf->wbuf);
    tpu__free(xf->gbuf);
    tpu__free(xf->par);
    tpu__free(xf);
}

const tpu_xfmr_config_t *tpu_xfmr_config(const tpu_xfmr_t *xf)
{
    return &xf->cfg;
}

static float *param_array(tpu_xfmr_t *xf, int p, int64_t shape[2], int grad)
{
    if (p < 0 || p >= xf->nparams) {
        return NULL;
    }
    if (shape != NULL) {
        shape[0] = xf->par[p].s1 - xf->par[p].s0;
        shape[1] = xf->par[p].c1 - xf->par[p].c0;
    }
    return grad ? xf->par[p].gs : xf->par[p].ws;
}

float *tpu_xfmr_param(tpu_xfmr_t *xf, int p, int64_t shape[2])
{
    return param_array(xf, p, shape, 0);
}

float *tpu_xfmr_grad(tpu_xfmr_t *xf, int p, int64_t shape[2])
{
    return param_array(xf, p, shape, 1);
}

int tpu_xfmr_param_origin(const tpu_xfmr_t *xf, int p, int64_t origin[2])
{
    if (p < 0 || p >= xf->nparams) {
        return -1;
    }
    origin[0] = xf->par[p].s0;
    origin[1] = xf->par[p].c0;
    return 0;
}

void tpu_xfmr_init_random(tpu_xfmr_t *xf, uint64_t seed)
{
    int p;

    for (p = 0; p < xf->nparams; p++) {
        xfmr_param_t *q = &xf->par[p];
        int j = (p - 2) % XFMR_PER_LAYER;
        int64_t r, c, lc = q->c1 - q->c0;
        double sd;

        if (q->ndim == 1) { /* the norm gains */
            for (r = 0; r < owned_count(q); r++) {
                q->ws[r] = 1.0f;
            }
            continue;
        }
        sd = p <= XFMR_P_POS                       ? 0.02
             : p < xf->nparams - 1 && j == XFMR_W2 ? 1.0 / sqrt((double)xf->cfg.d_ff)
                                                   : 1.0 / sqrt((double)xf->cfg.d_model);
        for (r = q->s0; r < q->s1; r++) {
            for (c = q->c0; c < q->c1; c++) {
                uint64_t g = (uint64_t)(r * q->cols + c);

                q->ws[(r - q->s0) * lc + (c - q->c0)] =
                    (float)(tpu__workload_normal(seed, S_PARAM + (uint64_t)p, g) * sd);
            }
        }
    }
}

tpu_status_t tpu_xfmr_load(tpu_xfmr_t *xf, const char *dir, tpu_err_t *err)
{
    char path[4096];
    int p;

    for (p = 0; p < xf->nparams; p++) {
        xfmr_param_t *q = &xf->par[p];
        int64_t shape[2] = {q->rows, q->cols}, r, lc = q->c1 - q->c0;
        float *data = NULL;
        tpu_status_t status;

        if (snprintf(path, sizeof(path), "%s/%s.npy", dir, q->name) >= (int)sizeof(path)) {
            return tpu_err_set(err, TPU_ERR_INVALID, "transformer: the path %s/%s.npy is too long",
                               dir, q->name);
        }
        status = tpu_npy_read_f32(path, q->name, q->ndim, shape, &data, err);
        if (status != TPU_OK) {
            return status;
        }
        for (r = q->s0; r < q->s1; r++) {
            memcpy(q->ws + (r - q->s0) * lc, data + r * q->cols + q->c0,
                   (size_t)lc * sizeof(float));
        }
        tpu__free(data);
    }
    return TPU_OK;
}

tpu_status_t tpu_xfmr_save(const tpu_xfmr_t *xf, const char *dir, tpu_err_t *err)
{
    char path[4096];
    int p;

    for (p = 0; p < xf->nparams; p++) {
        const xfmr_param_t *q = &xf->par[p];
        int64_t shape[2] = {q->rows, q->cols};
        tpu_status_t status;

        if (owned_count(q) != q->rows * q->cols) {
            return tpu_err_set(err, TPU_ERR_UNSUPPORTED,
                               "transformer: saving %s needs the whole parameter; this chip holds "
                               "a piece",
                               q->name);
        }
        if (snprintf(path, sizeof(path), "%s/%s.npy", dir, q->name) >= (int)sizeof(path)) {
            return tpu_err_set(err, TPU_ERR_INVALID, "transformer: the path %s/%s.npy is too long",
                               dir, q->name);
        }
        status = tpu_npy_write(path, TPU_NPY_F32, q->ndim, shape, q->ws, err);
        if (status != TPU_OK) {
            return status;
        }
    }
    return TPU_OK;
}

void tpu_xfmr_sgd(tpu_xfmr_t *xf, double lr)
{
    const float lrf = (float)lr;
    int64_t i, n = 0;
    int p;

    for (p = 0; p < xf->nparams; p++) {
        n += owned_count(&xf->par[p]);
    }
    for (i = 0; i < n; i++) {
        xf->sbuf[i] -= lrf * xf->sgbuf[i];
    }
    /* One fused pass: reads p and g, writes p. */
    (void)tpu__xfmr_vpu(xf, TPU_VPU_ADD, 1, n, NULL);
}

int64_t tpu_xfmr_batch_row(int64_t rows, int64_t batch, int64_t step)
{
    int64_t nb;

    if (batch < 1 || rows < batch || step < 0) {
        return -1;
    }
    nb = rows / batch;
    return (step % nb) * batch;
}

tpu_status_t tpu_xfmr_check_tokens(const int32_t *tok, int64_t rows, int64_t cols, int64_t vocab,
                                   const char *what, tpu_err_t *err)
{
    int64_t r, c;

    for (r = 0; r < rows; r++) {
        for (c = 0; c < cols; c++) {
            int32_t v = tok[r * cols + c];

            if (v < 0 || v >= vocab) {
                return tpu_err_set(err, TPU_ERR_INVALID,
                                   "%s: token id %d at row %lld, column %lld is outside the "
                                   "vocabulary [0, %lld)",
                                   what, (int)v, (long long)r, (long long)c, (long long)vocab);
            }
        }
    }
    return TPU_OK;
}
