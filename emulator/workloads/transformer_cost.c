/*
 * The transformer's step cost on a pod from its sizes and a mesh (see
 * include/tpu/transformer_cost.h for the model): the layout read and checked,
 * the engine's runtime over the mesh, the program of the step built
 * (transformer_cost_prog.c), the schedule walked on one compute and one link
 * stream, the FLOPs and MFU, and the rows a real run's log is matched to.
 */
#include "tpu/transformer_cost.h"

#include "alloc.h"
#include "transformer_cost_prog.h"
#include "transformer_hbm.h"

#include <stdio.h>
#include <string.h>

static const char *const axis_names[A_COUNT] = {"data", "fsdp", "sequence", "tensor", "dcn"};

/* ---- the schedule ---- */

void tpu_xfmr_cost_schedule(tpu_xfmr_cost_t *c)
{
    eng_t *e = c->engine;
    double tc = 0, tl = 0, grads = 0, last_op = 0, async_end = 0;
    int64_t i;
    int u;

    if (e == NULL) {
        return;
    }
    for (u = 0; u < e->nunits; u++) {
        e->ready[u] = 0;
    }
    c->comm_us = 0;
    c->compute_us = 0;
    for (i = 0; i < e->nprog; i++) {
        const prog_t *p = &e->prog[i];

        if (p->kind == P_OP) {
            c->ops[p->idx].start_us = tc;
            last_op = tc;
            tc += c->ops[p->idx].us;
            c->compute_us += c->ops[p->idx].us;
        } else if (p->kind == P_WAIT) {
            tc = e->ready[p->unit] > tc ? e->ready[p->unit] : tc;
        } else if (p->kind == P_WAIT_GRADS) {
            tc = grads > tc ? grads : tc;
        } else if (p->kind == P_JOIN) {
            tc = async_end > tc ? async_end : tc;
        } else {
            tpu_xfmr_cost_call_t *call = &c->calls[p->idx];
            double s = tc > tl ? tc : tl;

            if (p->kind == P_CMM || p->kind == P_CMM_ASYNC) { /* beside its operand's matmul */
                s = last_op > tl ? last_op : tl;
            }

            call->start_us = s;
            tl = s + c->colls[call->coll].modeled_us;
            c->comm_us += c->colls[call->coll].modeled_us;
            if (p->kind == P_SYNC) {
                tc = tl;
            } else if (p->kind == P_CMM) {
                tc = tl > tc ? tl : tc;
            } else if (p->kind == P_CMM_ASYNC) {
                async_end = tl;
            } else if (p->kind == P_GRAD) {
                grads = tl > grads ? tl : grads;
            } else {
                e->ready[p->unit] = tl > e->ready[p->unit] ? tl : e->ready[p->unit];
            }
        }
    }
    c->fixed_us = e->plan.compiled ? e->plan.fixed_us : 0;
    c->step_us = tc + c->fixed_us;
    c->exposed_comm_us = tc - c->compute_us;
    if (c->exposed_comm_us < 0) {
        c->exposed_comm_us = 0; /* rounding */
    }
    c->mfu = c->step_us > 0 ? c->model_flops / (c->step_us * 1e-6 * c->chips * e->peak_flops) : 0;
}

/* ---- the layout ---- */

static tpu_status_t read_mesh(eng_t *e, const char *spec, tpu_err_t *err)
{
    char names[TPU_MESH_MAX_AXES][TPU_MESH_NAME_LEN];
    int sizes[TPU_MESH_MAX_AXES], n = 0, k, a;
    tpu_status_t status = tpu_mesh_parse(spec, names, sizes, &n, err);

    for (a = 0; a < A_COUNT; a++) {
        e->size[a] = 1;
        e->mesh_idx[a] = -1;
        snprintf(e->name[a], sizeof(e->name[a]), "%s", axis_names[a]);
    }
    for (k = 0; k < n && status == TPU_OK; k++) {
        for (a = 0; a < A_COUNT && strcmp(names[k], axis_names[a]) != 0; a++) {
        }
        a = strcmp(names[k], "model") == 0 ? A_TENSOR : a;
        if (a == A_COUNT) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "transformer: unknown mesh axis '%s' (use data, fsdp, sequence, "
                               "tensor, dcn)",
                               names[k]);
        }
        if (e->mesh_idx[a] >= 0) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "transformer: mesh axes %s and %s are the same axis", e->name[a],
                               names[k]);
        }
        e->mesh_idx[a] = k;
        e->size[a] = sizes[k];
        snprintf(e->name[a], sizeof(e->name[a]), "%s", names[k]);
    }
    return status;
}

/* Every dimension the mesh splits divides by its axes. */
static tpu_status_t check_divides(const eng_t *e, tpu_err_t *err)
{
    const tpu_xfmr_config_t *m = &e->m;
    const int batch_ways = e->size[A_DATA] * e->size[A_FSDP] * e->size[A_DCN];
    static const int batch_axes[] = {A_DATA, A_FSDP, A_DCN};
    char bax[128] = "";
    size_t len = 0;
    int i;

    for (i = 0; i < 3; i++) { /* the axes that split the batch: "data=4", "data=2,fsdp=2" */
        int a = batch_axes[i];

        if (e->size[a] > 1 && len < sizeof(bax)) {
            len += (size_t)snprintf(bax + len, sizeof(bax) - len, "%s%s=%d", len ? "," : "",
                                    e->name[a], e->size[a]);
        }
    }
    if (e->plan.head_dim == 0 && m->d_model % m->heads != 0) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "transformer: d_model %lld is not a multiple of heads %lld",
                           (long long)m->d_model, (long long)m->heads);
    }
    if (m->batch % batch_ways != 0) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "transformer: batch %lld does not divide over mesh axis %s",
                           (long long)m->batch, bax);
    }
    {
        const struct {
            const char *dim;
            int64_t n;
            int axis;
        } dims[] = {{"heads", m->heads, A_TENSOR},
                    {"d_ff", m->d_ff, A_TENSOR},
                    {"vocab", m->vocab, A_TENSOR},
                    {"seq", m->seq, A_SEQ}};
        for (i = 0; i < (int)(sizeof(dims) / sizeof(dims[0])); i++) {
            if (dims[i].n % e->size[dims[i].axis] != 0) {
                return tpu_err_set(err, TPU_ERR_INVALID,
                                   "transformer: %s %lld does not divide over mesh axis %s=%d",
                                   dims[i].dim, (long long)dims[i].n, e->name[dims[i].axis],
                                   e->size[dims[i].axis]);
            }
        }
    }
    if (e->plan.kv_heads > 0) {
        const int64_t kv = e->plan.kv_heads, t = e->size[A_TENSOR];

        if (m->heads % kv != 0) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "transformer: heads %lld is not a multiple of kv-heads %lld",
                               (long long)m->heads, (long long)kv);
        }
        if (kv % t != 0 && t % kv != 0) {
            return tpu_err_set(
                err, TPU_ERR_INVALID,
                "transformer: kv-heads %lld neither divides nor is a multiple of mesh "
                "axis %s=%d",
                (long long)kv, e->name[A_TENSOR], (int)t);
        }
    }
    return TPU_OK;
}

/* 6 N B S + 12 L B S^2 H Dh, the attention halved when causal (compiled and not attn_full;
 * see the header). */
static double model_flops(const eng_t *e)
{
    const tpu_xfmr_config_t *m = &e->m;
    const tpu_xfmr_plan_t *p = &e->plan;
    const double L = (double)m->layers, D = (double)m->d_model, F = (double)m->d_ff;
    const double V = (double)m->vocab, B = (double)m->batch, S = (double)m->seq;
    const double dh = (double)e->z[Z_DH], H = (double)m->heads, hd = H * dh;
    const double kv = (double)(p->kv_heads > 0 ? p->kv_heads : m->heads);
    const double mlp = p->mlp == TPU_XFMR_MLP_SWIGLU ? 3 : 2;
    const double n = L * (2 * D * H * dh + 2 * D * kv * dh + mlp * D * F) + D * V;

    return 6.0 * n * B * S + (p->compiled && !p->attn_full ? 6.0 : 12.0) * L * B * S * S * hd;
}

void tpu_xfmr_plan_init(tpu_xfmr_plan_t *p)
{
    memset(p, 0, sizeof(*p));
    p->mlp = TPU_XFMR_MLP_GELU;
    p->remat = TPU_XFMR_REMAT_NONE;
    p->param_bytes = 4;
    p->mxu_fraction = 1;
}

tpu_status_t tpu_xfmr_cost_run(const tpu_pod_t *pod, const tpu_xfmr_config_t *model,
                               const char *mesh, tpu_xfmr_cost_t *cost_p, tpu_err_t *err)
{
    return tpu_xfmr_cost_run_plan(pod, model, NULL, mesh, cost_p, err);
}

tpu_status_t tpu_xfmr_cost_run_plan(const tpu_pod_t *pod, const tpu_xfmr_config_t *model,
                                    const tpu_xfmr_plan_t *plan, const char *mesh,
                                    tpu_xfmr_cost_t *cost_p, tpu_err_t *err)
{
    const tpu_topo_t *topo = tpu_pod_topo(pod);
    tpu_xfmr_cost_t c;
    char spec[128];
    eng_t *e;
    tpu_status_t status;

    memset(&c, 0, sizeof(c));
    if (model->layers < 1 || model->d_model < 1 || model->heads < 1 || model->d_ff < 1 ||
        model->vocab < 1 || model->seq < 1 || model->batch < 1) {
        return tpu_err_set(err, TPU_ERR_INVALID, "transformer: every size must be positive");
    }
    e = tpu__calloc(1, sizeof(*e));
    if (e == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "transformer cost: no memory");
    }
    c.engine = e;
    e->m = *model;
    if (plan != NULL) {
        e->plan = *plan;
    } else {
        tpu_xfmr_plan_init(&e->plan);
    }
    if (e->plan.param_bytes != 2 && e->plan.param_bytes != 4) {
        e->plan.param_bytes = 4;
    }
    if (!(e->plan.mxu_fraction > 0)) {
        e->plan.mxu_fraction = 1;
    }
    e->act_bytes = e->plan.compiled && model->precision == TPU_XFMR_BF16 ? 2 : 4;
    e->per_layer = e->plan.mlp == TPU_XFMR_MLP_SWIGLU ? 9 : 8;
    e->gather_bytes =
        e->plan.compiled && e->act_bytes < e->plan.param_bytes ? e->act_bytes : e->plan.param_bytes;
    e->gather_bytes = e->plan.compiled ? e->gather_bytes : 4;
    e->chip = tpu_pod_chip(pod);
    e->pod = pod;
    e->first = 160 * model->layers + 256;
    e->peak_flops = e->chip->bf16_flops;
    c.chips = topo->nchips;
    snprintf(spec, sizeof(spec), "data=%d", topo->nchips);
    if (mesh != NULL) {
        snprintf(spec, sizeof(spec), "%s", mesh);
    }
    snprintf(e->spec, sizeof(e->spec), "%s", spec);
    status = read_mesh(e, spec, err);
    status = status == TPU_OK ? check_divides(e, err) : status;
    status = status == TPU_OK ? tpu_mesh_create(topo, spec, NULL, 0, &e->mesh, err) : status;
    if (status != TPU_OK) {
        goto fail;
    }
    c.data = e->size[A_DATA];
    c.fsdp = e->size[A_FSDP];
    c.sequence = e->size[A_SEQ];
    c.tensor = e->size[A_TENSOR];
    c.dcn = e->size[A_DCN];
    tpu__xfmr_cost_sizes(&c);
    e->nunits = 2 * (int)model->layers + 2;
    e->ready = tpu__calloc((size_t)e->nunits, sizeof(double));
    if (e->ready == NULL) {
        status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "transformer cost: no memory");
        goto fail;
    }
    status = tpu__xfmr_cost_build(&c, err);
    if (status != TPU_OK) {
        goto fail;
    }
    c.model_flops = model_flops(e);
    tpu__xfmr_cost_hbm(&c);
    tpu_xfmr_cost_schedule(&c);
    *cost_p = c;
    return TPU_OK;
fail:
    tpu_xfmr_cost_fini(&c);
    return status;
}

tpu_status_t tpu__xfmr_cost_spmd(tpu_xfmr_cost_t *c, tpu_err_t *err)
{
    eng_t *e = c->engine;
    tpu_spmd_opts_t opts;

    if (e->spmd != NULL) {
        return TPU_OK;
    }
    tpu_spmd_opts_init(&opts);
    opts.check_peers = 0;
    return tpu_spmd_create_pod(e->pod, e->mesh, NULL, &opts, &e->spmd, err);
}

/* ---- the time cache ---- */

typedef struct centry {
    char key[320];
    char algorithm[64];
    double us;
} centry_t;

struct tpu_xfmr_time_cache {
    centry_t *e;
    int n, cap;
};

tpu_xfmr_time_cache_t *tpu_xfmr_time_cache_create(void)
{
    return tpu__calloc(1, sizeof(tpu_xfmr_time_cache_t));
}

void tpu_xfmr_time_cache_destroy(tpu_xfmr_time_cache_t *cache)
{
    if (cache != NULL) {
        tpu__free(cache->e);
        tpu__free(cache);
    }
}

int tpu__xfmr_cache_get(const tpu_xfmr_time_cache_t *cache, const char *key, double *us_p,
                        char *algorithm, size_t len)
{
    int i;

    for (i = 0; cache != NULL && i < cache->n; i++) {
        if (strcmp(cache->e[i].key, key) == 0) {
            *us_p = cache->e[i].us;
            snprintf(algorithm, len, "%s", cache->e[i].algorithm);
            return 1;
        }
    }
    return 0;
}

void tpu__xfmr_cache_put(tpu_xfmr_time_cache_t *cache, const char *key, double us,
                         const char *algorithm)
{
    if (cache == NULL) {
        return;
    }
    if (cache->n == cache->cap) {
        int cap = cache->cap > 0 ? 2 * cache->cap : 64;
        centry_t *g = tpu__realloc(cache->e, (size_t)cap * sizeof(*g));

        if (g == NULL) {
            return; /* a cache: nothing lost but time */
        }
        cache->e = g;
        cache->cap = cap;
    }
    snprintf(cache->e[cache->n].key, sizeof(cache->e[cache->n].key), "%s", key);
    snprintf(cache->e[cache->n].algorithm, sizeof(cache->e[cache->n].algorithm), "%s", algorithm);
    cache->e[cache->n].us = us;
    cache->n++;
}

void tpu_xfmr_cost_fini(tpu_xfmr_cost_t *c)
{
    if (c->engine != NULL) {
        tpu_spmd_destroy(c->engine->spmd);
        tpu_mesh_destroy(c->engine->mesh);
        tpu__free(c->engine->prog);
        tpu__free(c->engine->ready);
        tpu__free(c->engine);
    }
    tpu__free(c->ops);
    tpu__free(c->colls);
    tpu__free(c->calls);
    memset(c, 0, sizeof(*c));
}

/* The mesh axes of a comma list as a set of A_* bits, by the names 'e' knows; ~0 for a
 * name it does not. */
static unsigned axis_set(const eng_t *e, const char *list)
{
    unsigned set = 0;
    const char *p = list;

    while (p != NULL && *p != '\0') {
        const char *q = strchr(p, ',');
        size_t len = q != NULL ? (size_t)(q - p) : strlen(p);
        int a;

        for (a = 0; a < A_COUNT; a++) {
            if (strlen(e->name[a]) == len && strncmp(e->name[a], p, len) == 0) {
                break;
            }
        }
        if (a == A_COUNT) {
            return ~0u;
        }
        set |= BIT(a);
        p = q != NULL ? q + 1 : NULL;
    }
    return set;
}

int tpu_xfmr_cost_find(const tpu_xfmr_cost_t *c, const char *what, tpu_coll_kind_t kind,
                       tpu_redop_t op, const char *mesh_axis, uint64_t bytes)
{
    unsigned want;
    int k;

    if (c->engine == NULL) {
        return -1;
    }
    want = axis_set(c->engine, mesh_axis);
    for (k = 0; k < c->ncolls; k++) {
        const tpu_xfmr_cost_coll_t *r = &c->colls[k];

        if (strcmp(r->what, what) == 0 && r->kind == kind && r->op == op && r->bytes == bytes &&
            axis_set(c->engine, r->mesh_axis) == want) {
            return k;
        }
    }
    return -1;
}
