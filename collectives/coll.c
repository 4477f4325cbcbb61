/*
 * Collective plans: validation, the registry, selection by the cost model, and
 * the reference results used for verification.
 */
#include "tpu/alloc.h"
#include "tpu/dtype.h"

#include "coll_internal.h"

#include <stdio.h>
#include <string.h>

const tpu_algo_t tpu__algos[] = {
#define TPU_ALGO(kind, name, pipelined, summary) \
    {TPU_COLL_##kind, #name, tpu__algo_##kind##_##name, pipelined, summary},
#include "algorithms.def"
#undef TPU_ALGO
};
const int tpu__nalgos = (int)(sizeof(tpu__algos) / sizeof(tpu__algos[0]));

static const char *const coll_names[] = {
#define X(name, str, mpi) str,
    TPU_COLL_MAP(X)
#undef X
};
static const char *const coll_mpi_names[] = {
#define X(name, str, mpi) mpi,
    TPU_COLL_MAP(X)
#undef X
};
static const char *const dtype_names[] = {"f32", "bf16", "i32"};
static const int dtype_sizes[] = {4, 2, 4};
static const char *const redop_names[] = {"sum", "max", "min"};

void tpu_coll_desc_init(tpu_coll_desc_t *desc)
{
    memset(desc, 0, sizeof(*desc));
    desc->kind = TPU_COLL_PSUM;
    desc->dtype = TPU_DTYPE_F32;
    desc->op = TPU_OP_SUM;
    desc->shift = 1;
    desc->src = -1;
    desc->dst = -1;
}

const char *tpu_coll_name(tpu_coll_kind_t kind)
{
    return kind < TPU_COLL_COUNT ? coll_names[kind] : "?";
}

const char *tpu_coll_mpi_name(tpu_coll_kind_t kind)
{
    return kind < TPU_COLL_COUNT ? coll_mpi_names[kind] : "?";
}

tpu_status_t tpu_coll_parse(const char *text, tpu_coll_kind_t *kind_p, tpu_err_t *err)
{
    int i;

    for (i = 0; i < TPU_COLL_COUNT; i++) {
        if (strcmp(text, coll_names[i]) == 0) {
            *kind_p = (tpu_coll_kind_t)i;
            return TPU_OK;
        }
    }
    /* JAX's names and common spellings. */
    if (strcmp(text, "all-reduce") == 0 || strcmp(text, "allreduce") == 0) {
        *kind_p = TPU_COLL_PSUM;
    } else if (strcmp(text, "allgather") == 0 || strcmp(text, "all_gather") == 0) {
        *kind_p = TPU_COLL_ALL_GATHER;
    } else if (strcmp(text, "reducescatter") == 0 || strcmp(text, "psum_scatter") == 0 ||
               strcmp(text, "psum-scatter") == 0) {
        *kind_p = TPU_COLL_REDUCE_SCATTER;
    } else if (strcmp(text, "alltoall") == 0 || strcmp(text, "all_to_all") == 0) {
        *kind_p = TPU_COLL_ALL_TO_ALL;
    } else {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "unknown collective '%s' (known: psum, all-gather, reduce-scatter, "
                           "all-to-all, ppermute, p2p)",
                           text);
    }
    return TPU_OK;
}

const char *tpu_dtype_name(tpu_dtype_t dtype)
{
    return dtype < TPU_DTYPE_COUNT ? dtype_names[dtype] : "?";
}

int tpu_dtype_size(tpu_dtype_t dtype)
{
    return dtype < TPU_DTYPE_COUNT ? dtype_sizes[dtype] : 1;
}

tpu_status_t tpu_dtype_parse(const char *text, tpu_dtype_t *dtype_p, tpu_err_t *err)
{
    int i;

    for (i = 0; i < TPU_DTYPE_COUNT; i++) {
        if (strcmp(text, dtype_names[i]) == 0) {
            *dtype_p = (tpu_dtype_t)i;
            return TPU_OK;
        }
    }
    if (strcmp(text, "float32") == 0 || strcmp(text, "float") == 0) {
        *dtype_p = TPU_DTYPE_F32;
    } else if (strcmp(text, "bfloat16") == 0) {
        *dtype_p = TPU_DTYPE_BF16;
    } else if (strcmp(text, "int32") == 0 || strcmp(text, "int") == 0) {
        *dtype_p = TPU_DTYPE_I32;
    } else {
        return tpu_err_set(err, TPU_ERR_INVALID, "unknown dtype '%s' (known: f32, bf16, i32)",
                           text);
    }
    return TPU_OK;
}

const char *tpu_redop_name(tpu_redop_t op)
{
    return op < TPU_OP_COUNT ? redop_names[op] : "?";
}

tpu_status_t tpu_redop_parse(const char *text, tpu_redop_t *op_p, tpu_err_t *err)
{
    int i;

    for (i = 0; i < TPU_OP_COUNT; i++) {
        if (strcmp(text, redop_names[i]) == 0) {
            *op_p = (tpu_redop_t)i;
            return TPU_OK;
        }
    }
    return tpu_err_set(err, TPU_ERR_INVALID, "unknown reduction '%s' (known: sum, max, min)", text);
}

int tpu_coll_algo_count(void)
{
    return tpu__nalgos;
}

void tpu_coll_algo_at(int i, tpu_coll_kind_t *kind_p, const char **name_p, const char **summary_p)
{
    *kind_p = tpu__algos[i].kind;
    *name_p = tpu__algos[i].name;
    *summary_p = tpu__algos[i].summary;
}

static int is_reduction(tpu_coll_kind_t kind)
{
    return kind == TPU_COLL_PSUM || kind == TPU_COLL_REDUCE_SCATTER;
}

/* The farthest chip from 'src' in its slice. */
static int farthest(const tpu_topo_t *topo, int src)
{
    int c[TPU_MAX_AXES], a;

    tpu_topo_coords(topo, src, c);
    for (a = 0; a < TPU_MAX_AXES; a++) {
        int n = topo->dims[a];

        if (topo->wrap[a]) {
            c[a] = (c[a] + n / 2) % n;
        } else {
            c[a] = c[a] < n - 1 - c[a] ? n - 1 : 0;
        }
    }
    return tpu_topo_chip(topo, tpu_topo_slice_of(topo, src), c);
}

/* Check the request and work out the group, block and buffer sizes. */
static tpu_status_t validate(tpu_coll_plan_t *p, tpu_err_t *err)
{
    tpu_coll_desc_t *d = &p->desc;
    const tpu_topo_t *topo = &p->topo;
    int64_t elem = tpu_dtype_size(d->dtype);
    char axes[32];
    uint64_t unit;

    tpu_topo_axes_str(d->axes, axes, sizeof(axes));
    if (d->bytes == 0) {
        return tpu_err_set(err, TPU_ERR_INVALID, "%s of 0 bytes: give a positive size",
                           tpu_coll_name(d->kind));
    }
    if (d->kind == TPU_COLL_P2P) {
        d->axes = 0;
        if (d->src < 0) {
            d->src = 0;
        }
        if (d->src >= topo->nchips) {
            return tpu_err_set(err, TPU_ERR_INVALID, "p2p source chip %d is outside the pod",
                               d->src);
        }
        if (d->dst < 0) {
            d->dst = farthest(topo, d->src);
        }
        if (d->dst >= topo->nchips) {
            return tpu_err_set(err, TPU_ERR_INVALID, "p2p destination chip %d is outside the pod",
                               d->dst);
        }
        if (d->dst == d->src) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "p2p source and destination are the same chip %d", d->src);
        }
        p->group = topo->nchips;
        p->shard = (int64_t)d->bytes;
        p->in_bytes = p->out_bytes = d->bytes;
        p->work_bytes = (int64_t)d->bytes;
        if (d->bytes % (uint64_t)elem != 0) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "p2p of %llu bytes is not a whole number of %s elements",
                               (unsigned long long)d->bytes, tpu_dtype_name(d->dtype));
        }
        return TPU_OK;
    }
    if (d->axes == 0) {
        return tpu_err_set(err, TPU_ERR_INVALID, "%s needs axes (e.g. --axes x,y)",
                           tpu_coll_name(d->kind));
    }
    if ((d->axes & TPU_AXIS_MASK_DCN) && topo->slices < 2) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "axis 'dcn' spans slices, and this job has 1 slice (use --slices N)");
    }
    p->group = tpu_topo_group_size(topo, d->axes);
    if (d->kind == TPU_COLL_PPERMUTE) {
        int a, naxes = 0, n = p->group;

        for (a = 0; a <= TPU_AXIS_DCN; a++) {
            naxes += (d->axes >> a) & 1;
        }
        if (naxes != 1) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "ppermute --shift moves along one axis, not '%s'", axes);
        }
        if (d->shift == 0 || d->shift >= n || d->shift <= -n) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "ppermute shift %d on axis %s of %d chips: the shift must be 1 to "
                               "%d (or -1 to -%d)",
                               d->shift, axes, n, n - 1, n - 1);
        }
        p->shard = (int64_t)d->bytes;
        p->in_bytes = p->out_bytes = d->bytes;
        p->work_bytes = (int64_t)d->bytes;
        return TPU_OK;
    }
    if (p->group < 2) {
        return tpu_err_set(err, TPU_ERR_INVALID, "%s over '%s' spans a single chip",
                           tpu_coll_name(d->kind), axes);
    }
    unit = (uint64_t)p->group * (uint64_t)elem;
    if (d->kind == TPU_COLL_PSUM) {
        if (d->bytes % (uint64_t)elem != 0) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "psum of %llu bytes is not a whole number of %s elements (%lld "
                               "bytes each)",
                               (unsigned long long)d->bytes, tpu_dtype_name(d->dtype),
                               (long long)elem);
        }
        /* Blocks of whole elements; the last ones are padding when V does not divide. */
        p->shard = (int64_t)((d->bytes + unit - 1) / unit) * elem;
        p->in_bytes = p->out_bytes = d->bytes;
        p->work_bytes = p->shard * p->group;
        return TPU_OK;
    }
    if (d->bytes % unit != 0) {
        uint64_t lo = d->bytes / unit * unit, hi = lo + unit;

        if (lo == 0) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "%s of %llu bytes over %d chips (%s): the bytes must divide into "
                               "%d blocks of whole %s elements, a multiple of %llu, e.g. %llu",
                               tpu_coll_name(d->kind), (unsigned long long)d->bytes, p->group, axes,
                               p->group, tpu_dtype_name(d->dtype), (unsigned long long)unit,
                               (unsigned long long)hi);
        }
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "%s of %llu bytes over %d chips (%s): the bytes must divide into %d "
                           "blocks of whole %s elements, a multiple of %llu, e.g. %llu or %llu",
                           tpu_coll_name(d->kind), (unsigned long long)d->bytes, p->group, axes,
                           p->group, tpu_dtype_name(d->dtype), (unsigned long long)unit,
                           (unsigned long long)lo, (unsigned long long)hi);
    }
    p->shard = (int64_t)(d->bytes / (uint64_t)p->group);
    p->work_bytes = (int64_t)d->bytes;
    p->in_bytes = d->kind == TPU_COLL_ALL_GATHER ? (uint64_t)p->shard : d->bytes;
    p->out_bytes = d->kind == TPU_COLL_REDUCE_SCATTER ? (uint64_t)p->shard : d->bytes;
    return TPU_OK;
}

/* Index the schedule's steps. */
static tpu_status_t index_steps(tpu_plan_sched_t *ps)
{
    int64_t i;
    int s;

    tpu__free(ps->step_start);
    ps->step_start = tpu__calloc((size_t)ps->s.nsteps + 2, sizeof(int64_t));
    if (ps->step_start == NULL) {
        return TPU_ERR_NO_MEMORY;
    }
    for (i = 0; i < ps->s.nflows; i++) {
        ps->step_start[ps->s.flows[i].step + 1]++;
    }
    for (s = 0; s < ps->s.nsteps; s++) {
        ps->step_start[s + 1] += ps->step_start[s];
    }
    return TPU_OK;
}

static void plan_sched_fini(tpu_plan_sched_t *ps)
{
    tpu__sched_fini(&ps->s);
    tpu__free(ps->step_start);
    ps->step_start = NULL;
    ps->built = 0;
}

/* Build the plan's algorithm into 'ps' ('rep': representative chip or -1). */
static tpu_status_t build_into(tpu_coll_plan_t *p, tpu_plan_sched_t *ps, int rep, tpu_err_t *err)
{
    tpu_status_t status;

    plan_sched_fini(ps);
    tpu__sched_init(&ps->s);
    ps->rep = rep;
    p->args.rep = rep;
    status = p->algo->build(&p->args, &ps->s, err);
    if (status == TPU_OK) {
        status = index_steps(ps);
    }
    if (status == TPU_OK) {
        ps->built = 1;
        snprintf(ps->s.algo, sizeof(ps->s.algo), "%s", p->name);
    } else {
        plan_sched_fini(ps);
    }
    if (status == TPU_ERR_NO_MEMORY) {
        tpu_err_set(err, status, "out of memory building the %s schedule (%s)",
                    tpu_coll_name(p->desc.kind), p->algo->name);
    }
    return status;
}

/*
 * Is the collective the same from every chip?  Then the model times one chip's
 * flows (linkmodel.c, representative mode): every selected axis wraps, nothing
 * crosses DCN, and the algorithm treats every chip alike (all but p2p).
 */
static int translation_invariant(const tpu_coll_plan_t *p)
{
    int a;

    if (p->desc.kind == TPU_COLL_P2P || (p->desc.axes & TPU_AXIS_MASK_DCN)) {
        return 0;
    }
    for (a = 0; a < p->topo.naxes; a++) {
        if ((p->desc.axes & (1u << a)) && p->topo.dims[a] > 1 && !p->topo.wrap[a]) {
            return 0;
        }
    }
    return 1;
}

/* Build the model schedule of algorithm 'algo' with 'chunks'. */
static tpu_status_t build(tpu_coll_plan_t *p, const tpu_algo_t *algo, int chunks, tpu_err_t *err)
{
    p->algo = algo;
    p->args.chunks = chunks;
    if (algo->pipelined && chunks > 1) {
        snprintf(p->name, sizeof(p->name), "%s chunks=%d", algo->name, chunks);
    } else {
        snprintf(p->name, sizeof(p->name), "%s", algo->name);
    }
    plan_sched_fini(&p->full);
    return build_into(p, &p->model, translation_invariant(p) ? 0 : -1, err);
}

tpu_status_t tpu__plan_full(tpu_coll_plan_t *p, tpu_err_t *err)
{
    if (p->model.rep < 0) {
        p->run = &p->model;
        return TPU_OK;
    }
    p->run = &p->full;
    if (p->full.built) {
        return TPU_OK;
    }
    return build_into(p, &p->full, -1, err);
}

/* Flows the torus family would create with 'chunks' chunks: a bound for the selector. */
static double flow_estimate(const tpu_coll_plan_t *p, int chunks)
{
    double steps = 0;
    int a;

    for (a = 0; a < p->topo.naxes; a++) {
        if (p->desc.axes & (1u << a)) {
            steps += 2.0 * p->topo.dims[a];
        }
    }
    return steps * (translation_invariant(p) ? 1 : p->topo.nchips) * TPU_MAX_AXES * chunks * 2;
}

/*
 * Flows the model schedule of the cheapest choice holds (one chip's when the pod
 * is translation-invariant, every chip's otherwise): a guard against requests
 * that would take minutes and gigabytes, such as a direct all-to-all over 8,960
 * chips of an open mesh.
 */
static double model_flows(const tpu_coll_plan_t *p)
{
    double chips = translation_invariant(p) ? 1 : p->topo.nchips;

    switch (p->desc.kind) {
    case TPU_COLL_ALL_TO_ALL:
        return chips * p->group;
    case TPU_COLL_PPERMUTE:
    case TPU_COLL_P2P:
        return chips;
    default:
        return flow_estimate(p, 1);
    }
}

/* Pipeline depths the selector tries. */
static const int chunk_choices[] = {1, 2, 4, 8, 16};
#define TPU_SELECT_MAX_FLOWS 4e6
/* The largest model schedule built, in flows (about 100 bytes each). */
#define TPU_MAX_MODEL_FLOWS 3e7
/* How much modeled time a deeper pipeline must save to be chosen (a fraction). */
#define TPU_SELECT_SLACK 0.01

tpu_status_t tpu_coll_plan_create(const tpu_topo_t *topo, const tpu_link_model_t *link,
                                  const tpu_coll_desc_t *desc, tpu_coll_plan_t **plan_p,
                                  tpu_err_t *err)
{
    tpu_coll_plan_t *p;
    const tpu_algo_t *best = NULL;
    struct {
        const tpu_algo_t *algo;
        int chunks;
        double t;
    } cand[64];
    int best_chunks = 1, i, c, found = 0, ncand = 0;
    double best_t = 0;
    tpu_status_t status;

    p = tpu__calloc(1, sizeof(*p));
    if (p == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for a collective plan");
    }
    p->topo = *topo;
    p->link = *link;
    p->desc = *desc;
    status = validate(p, err);
    if (status != TPU_OK) {
        goto err_free;
    }
    p->data_scale = is_reduction(desc->kind) && desc->dtype == TPU_DTYPE_BF16 ? 2 : 1;
    if (desc->chunks < 0 || desc->chunks > TPU_MAX_CHUNKS) {
        status = tpu_err_set(err, TPU_ERR_INVALID, "chunks must be 1 to %d, got %d", TPU_MAX_CHUNKS,
                             desc->chunks);
        goto err_free;
    }
    if (desc->chunks > 0 &&
        (int64_t)desc->chunks * TPU_MAX_AXES > p->shard / tpu_dtype_size(desc->dtype)) {
        status = tpu_err_set(err, TPU_ERR_INVALID,
                             "%d chunks do not fit a block of %lld elements (at most %lld)",
                             desc->chunks, (long long)(p->shard / tpu_dtype_size(desc->dtype)),
                             (long long)(p->shard / tpu_dtype_size(desc->dtype) / TPU_MAX_AXES));
        goto err_free;
    }
    if (model_flows(p) > TPU_MAX_MODEL_FLOWS) {
        status = tpu_err_set(err, TPU_ERR_UNSUPPORTED,
                             "%s over %d chips without wraparound on every axis needs about "
                             "%.0f million flows, more than the %.0f million this build models; "
                             "use wrapped axes (--wrap all) or fewer chips",
                             tpu_coll_name(desc->kind), p->group, model_flows(p) / 1e6,
                             TPU_MAX_MODEL_FLOWS / 1e6);
        goto err_free;
    }
    p->args.topo = &p->topo;
    p->args.link = &p->link;
    p->args.desc = &p->desc;
    p->args.mask = p->desc.axes;
    p->args.group = p->group;
    p->args.shard = p->shard;
    p->args.elem = tpu_dtype_size(desc->dtype);
    for (i = 0; i < tpu__nalgos; i++) {
        const tpu_algo_t *algo = &tpu__algos[i];
        int nchoices = 1;

        if (algo->kind != desc->kind) {
            continue;
        }
        if (desc->algo[0] != '\0' && strcmp(desc->algo, algo->name) != 0) {
            continue;
        }
        found = 1;
        if (algo->pipelined && desc->chunks == 0) {
            nchoices = (int)(sizeof(chunk_choices) / sizeof(chunk_choices[0]));
        }
        for (c = 0; c < nchoices; c++) {
            int chunks = desc->chunks > 0 ? desc->chunks : chunk_choices[c];
            double t;

            if (!algo->pipelined) {
                chunks = 1;
            }
            /* DCN stages are not pipelined (allgather_torus.c): one depth is enough. */
            if (c > 0 && ((p->desc.axes & TPU_AXIS_MASK_DCN) ||
                          flow_estimate(p, chunks) > TPU_SELECT_MAX_FLOWS ||
                          (int64_t)chunks * TPU_MAX_AXES > p->shard / p->args.elem)) {
                break;
            }
            status = build(p, algo, chunks, err);
            if (status == TPU_OK) {
                status = tpu__plan_model(p, &t, NULL);
                if (status != TPU_OK) {
                    tpu_err_set(err, status, "out of memory timing the %s schedule (%s)",
                                tpu_coll_name(desc->kind), algo->name);
                }
            }
            if (status != TPU_OK) {
                goto err_free;
            }
            if (ncand < (int)(sizeof(cand) / sizeof(cand[0]))) {
                cand[ncand].algo = algo;
                cand[ncand].chunks = chunks;
                cand[ncand++].t = t;
            }
            if (best == NULL || t < best_t) {
                best = algo;
                best_chunks = chunks;
                best_t = t;
            }
        }
    }
    /*
     * The shallowest pipeline within TPU_SELECT_SLACK of the fastest: a deeper one
     * buys less than that in modeled time and costs proportionally more messages,
     * each with a fixed DMA cost on the TPU that the link model leaves out (and a
     * real cost on the host that emulates it).
     */
    for (i = 0; i < ncand; i++) {
        if (cand[i].t <= best_t * (1 + TPU_SELECT_SLACK) &&
            (cand[i].chunks < best_chunks ||
             (cand[i].chunks == best_chunks && cand[i].t < best_t))) {
            best = cand[i].algo;
            best_chunks = cand[i].chunks;
        }
    }
    if (!found) {
        status = tpu_err_set(err, TPU_ERR_INVALID,
                             "unknown algorithm '%s' for %s (see tpuemu info --algorithms)",
                             desc->algo, tpu_coll_name(desc->kind));
        goto err_free;
    }
    if (best != p->algo || best_chunks != p->args.chunks) {
        status = build(p, best, best_chunks, err);
        if (status != TPU_OK) {
            goto err_free;
        }
    }
    *plan_p = p;
    return TPU_OK;
err_free:
    tpu_coll_plan_destroy(p);
    return status;
}

void tpu_coll_plan_destroy(tpu_coll_plan_t *plan)
{
    if (plan == NULL) {
        return;
    }
    plan_sched_fini(&plan->model);
    plan_sched_fini(&plan->full);
    tpu__free(plan->scratch);
    while (plan->nwork > 0) {
        tpu__free(plan->work[--plan->nwork]);
    }
    tpu__free(plan->work);
    tpu__free(plan);
}

void tpu_coll_plan_sizes(const tpu_coll_plan_t *plan, uint64_t *in_bytes_p, uint64_t *out_bytes_p)
{
    *in_bytes_p = plan->in_bytes;
    *out_bytes_p = plan->out_bytes;
}

const tpu_coll_desc_t *tpu_coll_plan_desc(const tpu_coll_plan_t *plan)
{
    return &plan->desc;
}

const char *tpu_coll_plan_algo(const tpu_coll_plan_t *plan)
{
    return plan->name;
}

int tpu_coll_plan_group_size(const tpu_coll_plan_t *plan)
{
    return plan->group;
}

tpu_status_t tpu_coll_plan_model(const tpu_coll_plan_t *plan, tpu_coll_result_t *res_p,
                                 tpu_err_t *err)
{
    tpu_coll_result_t res;
    double t;
    tpu_status_t status;

    memset(&res, 0, sizeof(res));
    status = tpu__plan_model(plan, &t, &res);
    if (status != TPU_OK) {
        return tpu_err_set(err, status, "out of memory modelling %s", plan->name);
    }
    res.modeled_us = t * 1e6;
    snprintf(res.algorithm, sizeof(res.algorithm), "%s", plan->name);
    res.flows = plan->model.s.nflows;
    res.steps = plan->model.s.nsteps;
    *res_p = res;
    return TPU_OK;
}

/* Element 'i' of a buffer of 'dtype' as a double. */
static double get_elem(tpu_dtype_t dtype, const void *buf, size_t i)
{
    switch (dtype) {
    case TPU_DTYPE_BF16:
        return tpu_bf16_to_f32(((const uint16_t *)buf)[i]);
    case TPU_DTYPE_I32:
        return ((const int32_t *)buf)[i];
    default:
        return ((const float *)buf)[i];
    }
}

static void put_elem(tpu_dtype_t dtype, void *buf, size_t i, double v)
{
    switch (dtype) {
    case TPU_DTYPE_BF16:
        ((uint16_t *)buf)[i] = tpu_f32_to_bf16((float)v);
        break;
    case TPU_DTYPE_I32:
        ((int32_t *)buf)[i] = (int32_t)v;
        break;
    default:
        ((float *)buf)[i] = (float)v;
        break;
    }
}

tpu_status_t tpu_coll_reference(const tpu_coll_plan_t *plan, int chip, tpu_coll_fill_fn_t fill,
                                void *arg, void *out, tpu_err_t *err)
{
    const tpu_coll_desc_t *d = &plan->desc;
    const tpu_topo_t *topo = &plan->topo;
    int64_t elem = tpu_dtype_size(d->dtype);
    int me = d->kind == TPU_COLL_P2P ? 0 : tpu_topo_group_index(topo, d->axes, chip);
    unsigned char *in = tpu__malloc(plan->in_bytes);
    double *acc = NULL;
    int j;
    size_t i, n;

    if (in == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for a reference result");
    }
    switch (d->kind) {
    case TPU_COLL_ALL_GATHER:
        for (j = 0; j < plan->group; j++) {
            fill(tpu_topo_group_member(topo, d->axes, chip, j),
                 (unsigned char *)out + j * plan->shard, (uint64_t)plan->shard, arg);
        }
        break;
    case TPU_COLL_PSUM:
    case TPU_COLL_REDUCE_SCATTER:
        n = plan->out_bytes / (size_t)elem;
        acc = tpu__malloc(n * sizeof(double));
        if (acc == NULL) {
            tpu__free(in);
            return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for a reference result");
        }
        for (j = 0; j < plan->group; j++) {
            size_t base = d->kind == TPU_COLL_PSUM ? 0 : (size_t)(me * plan->shard / elem);

            fill(tpu_topo_group_member(topo, d->axes, chip, j), in, plan->in_bytes, arg);
            for (i = 0; i < n; i++) {
                double v = get_elem(d->dtype, in, base + i);

                if (j == 0) {
                    acc[i] = v;
                } else if (d->op == TPU_OP_SUM) {
                    acc[i] += v;
                } else if (d->op == TPU_OP_MAX) {
                    acc[i] = v > acc[i] ? v : acc[i];
                } else {
                    acc[i] = v < acc[i] ? v : acc[i];
                }
            }
        }
        for (i = 0; i < n; i++) {
            put_elem(d->dtype, out, i, acc[i]);
        }
        break;
    case TPU_COLL_ALL_TO_ALL:
        for (j = 0; j < plan->group; j++) {
            fill(tpu_topo_group_member(topo, d->axes, chip, j), in, plan->in_bytes, arg);
            memcpy((unsigned char *)out + j * plan->shard, in + me * plan->shard,
                   (size_t)plan->shard);
        }
        break;
    case TPU_COLL_PPERMUTE: {
        int n_ = plan->group;
        int from = tpu_topo_group_member(topo, d->axes, chip, ((me - d->shift) % n_ + n_) % n_);

        fill(from, out, plan->out_bytes, arg);
        break;
    }
    case TPU_COLL_P2P:
        if (chip == d->dst) {
            fill(d->src, out, plan->out_bytes, arg);
        }
        break;
    default:
        break;
    }
    tpu__free(acc);
    tpu__free(in);
    return TPU_OK;
}
