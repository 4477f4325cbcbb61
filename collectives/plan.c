/*
 * Collective plans: the request checked and resolved (validate), the algorithm
 * chosen (select.c) and its model schedule built (build.c); the modeled time of
 * a plan (timing.c).  A plan is immutable once tpu_coll_plan_create() returns.
 */
#include "plan.h"

#include "tpu/dtype.h"

#include "alloc.h"
#include "build.h"
#include "lines.h"
#include "select.h"
#include "timing.h"
#include "timing_repeat.h"

#include <stdio.h>
#include <string.h>

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

/*
 * The period of the orbit timing of the group algorithms over 'g' (linkmodel.h),
 * given its chip -> group and member tables: tpu_groups_period() on the wrapped
 * axes; on the open ones the smallest q whose shift maps the groups onto
 * groups, each within one window [k q, (k + 1) q) of the axis (a route between
 * members then runs inside its window, and its images under the shifts never
 * cross the axis' ends, where an open axis has no link).  An axis no group spans
 * has q = 1: its planes are alike and apart.  Returns the number of translations
 * (1: none; always 1 across slices).
 */
static int orbit_period(const tpu_topo_t *topo, const tpu_groups_t *g, const int32_t *group_of,
                        const int32_t *index_of, int *period)
{
    int count = tpu_groups_period(topo, g, period), a, q;

    for (a = 0; a < topo->naxes && topo->slices == 1; a++) {
        int n = topo->dims[a];

        if (n < 2 || topo->wrap[a]) {
            continue;
        }
        for (q = 1; q < n; q++) {
            if (n % q == 0 && tpu_groups_shift_maps(topo, g, group_of, index_of, a, q, 1)) {
                period[a] = q;
                count *= n / q;
                break;
            }
        }
    }
    return count;
}

/*
 * A group algorithm named for a request over whole torus axes works on the groups
 * of the axes (group_args.c): their orbit period, as for groups given.
 */
static tpu_status_t axes_orbit(tpu_coll_plan_t *p, tpu_err_t *err)
{
    tpu_groups_t g;
    int32_t *group_of = NULL, *index_of = NULL;
    const tpu_algo_t *algo = tpu__algo_named(&p->desc);
    tpu_status_t status;

    if (algo == NULL || !algo->groups || p->desc.groups != NULL || p->desc.pairs != NULL ||
        tpu__plan_faulty(p) || p->desc.axes == 0 || p->topo.slices > 1) {
        return TPU_OK;
    }
    status = tpu_groups_of_axes(&p->topo, p->desc.axes, &g, err);
    if (status != TPU_OK) {
        return status;
    }
    group_of = tpu__malloc((size_t)p->topo.nchips * sizeof(int32_t));
    index_of = tpu__malloc((size_t)p->topo.nchips * sizeof(int32_t));
    if (group_of == NULL || index_of == NULL) {
        status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for the groups of a plan");
    } else {
        tpu_groups_index(&g, p->topo.nchips, group_of, index_of);
        p->orbit = orbit_period(&p->topo, &g, group_of, index_of, p->period) > 1;
    }
    tpu__free(group_of);
    tpu__free(index_of);
    tpu_groups_fini(&g);
    return status;
}

/*
 * Resolve desc->groups: checked, copied into the plan; groups equal to the groups
 * of whole torus axes become that axis mask (the torus algorithms), any other
 * set stays groups (the group algorithms), with per-chip member tables.
 */
static tpu_status_t resolve_groups(tpu_coll_plan_t *p, tpu_err_t *err)
{
    tpu_coll_desc_t *d = &p->desc;
    const tpu_groups_t *g = d->groups;
    unsigned mask;
    tpu_status_t status;

    d->groups = NULL;
    if (d->kind == TPU_COLL_P2P || d->kind == TPU_COLL_PPERMUTE) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "%s takes no groups (ppermute takes pairs, p2p its two chips)",
                           tpu_coll_name(d->kind));
    }
    status = tpu_groups_check(g, p->topo.nchips, err);
    if (status != TPU_OK) {
        return status;
    }
    if (tpu_groups_axes_mask(&p->topo, g, &mask) && mask != 0) {
        d->axes = mask;
        return TPU_OK;
    }
    if (g->size < 2) {
        return tpu_err_set(err, TPU_ERR_INVALID, "%s over groups of one chip moves nothing",
                           tpu_coll_name(d->kind));
    }
    status = tpu_groups_copy(&p->groups, g, err);
    if (status != TPU_OK) {
        return status;
    }
    p->member = tpu__malloc((size_t)p->topo.nchips * sizeof(int32_t));
    p->group_of = tpu__malloc((size_t)p->topo.nchips * sizeof(int32_t));
    if (p->member == NULL || p->group_of == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for the groups of a plan");
    }
    tpu_groups_index(&p->groups, p->topo.nchips, p->group_of, p->member);
    /* Symmetric groups are timed from the chips of one domain (linkmodel.h). */
    p->orbit = !tpu__plan_faulty(p) &&
               orbit_period(&p->topo, &p->groups, p->group_of, p->member, p->period) > 1;
    d->groups = &p->groups;
    d->axes = 0;
    return TPU_OK;
}

/* Resolve desc->pairs: chips in range, sources and targets unique; copied. */
static tpu_status_t resolve_pairs(tpu_coll_plan_t *p, tpu_err_t *err)
{
    tpu_coll_desc_t *d = &p->desc;
    int n = p->topo.nchips, k;
    uint8_t *seen = NULL;
    tpu_status_t status = TPU_OK;

    if (d->kind != TPU_COLL_PPERMUTE) {
        return tpu_err_set(err, TPU_ERR_INVALID, "%s takes no pairs (only ppermute does)",
                           tpu_coll_name(d->kind));
    }
    if (d->npairs < 1 || d->npairs > n) {
        return tpu_err_set(err, TPU_ERR_INVALID, "ppermute needs 1 to %d pairs, got %d", n,
                           d->npairs);
    }
    seen = tpu__calloc((size_t)n, 2);
    p->pairs = tpu__malloc((size_t)d->npairs * 2 * sizeof(int32_t));
    if (seen == NULL || p->pairs == NULL) {
        tpu__free(seen);
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for ppermute pairs");
    }
    for (k = 0; k < d->npairs && status == TPU_OK; k++) {
        int s = d->pairs[2 * k], t = d->pairs[2 * k + 1];

        if (s < 0 || s >= n || t < 0 || t >= n) {
            status =
                tpu_err_set(err, TPU_ERR_INVALID,
                            "ppermute pair (%d, %d) names a chip outside the pod of %d", s, t, n);
        } else if (seen[2 * s]++) {
            status = tpu_err_set(err, TPU_ERR_INVALID,
                                 "ppermute: chip %d is the source of two "
                                 "pairs",
                                 s);
        } else if (seen[2 * t + 1]++) {
            status = tpu_err_set(err, TPU_ERR_INVALID,
                                 "ppermute: chip %d is the target of two "
                                 "pairs",
                                 t);
        }
        p->pairs[2 * k] = s;
        p->pairs[2 * k + 1] = t;
    }
    tpu__free(seen);
    d->pairs = p->pairs;
    d->axes = 0;
    return status;
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
    if ((unsigned)d->kind >= TPU_COLL_COUNT || (unsigned)d->dtype >= TPU_DTYPE_COUNT ||
        (unsigned)d->op >= TPU_REDOP_COUNT) {
        return tpu_err_set(err, TPU_ERR_INVALID, "bad request: collective %d, dtype %d, op %d",
                           (int)d->kind, (int)d->dtype, (int)d->op);
    }
    if (d->dtype == TPU_DTYPE_I8) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "%s of i8: the collectives take f32, bf16 or i32 (i8 is a chip type)",
                           tpu_coll_name(d->kind));
    }
    if (d->bytes == 0) {
        return tpu_err_set(err, TPU_ERR_INVALID, "%s of 0 bytes: give a positive size",
                           tpu_coll_name(d->kind));
    }
    if (d->bytes > TPU_COLL_MAX_BYTES) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "%s of %llu bytes is more than the model represents (at most %llu "
                           "bytes, 256 TiB, per chip)",
                           tpu_coll_name(d->kind), (unsigned long long)d->bytes,
                           (unsigned long long)TPU_COLL_MAX_BYTES);
    }
    if (d->groups != NULL) {
        tpu_status_t status = resolve_groups(p, err);

        if (status != TPU_OK) {
            return status;
        }
    }
    if (d->pairs != NULL) {
        tpu_status_t status = resolve_pairs(p, err);

        if (status != TPU_OK) {
            return status;
        }
        if (d->bytes % (uint64_t)elem != 0) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "ppermute of %llu bytes is not a whole number of %s elements",
                               (unsigned long long)d->bytes, tpu_dtype_name(d->dtype));
        }
        p->group = 2;
        p->shard = (int64_t)d->bytes;
        p->in_bytes = p->out_bytes = d->bytes;
        p->work_bytes = (int64_t)d->bytes;
        return TPU_OK;
    }
    tpu_topo_axes_str(d->axes, axes, sizeof(axes));
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
    if (d->groups != NULL) {
        snprintf(axes, sizeof(axes), "groups of %d", d->groups->size);
        p->group = d->groups->size;
    } else if (d->axes == 0) {
        return tpu_err_set(err, TPU_ERR_INVALID, "%s needs axes (e.g. --axes x,y)",
                           tpu_coll_name(d->kind));
    }
    if ((d->axes & TPU_AXIS_MASK_DCN) && topo->slices < 2) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "axis 'dcn' spans slices, and this job has 1 slice (use --slices N)");
    }
    if (d->groups == NULL) {
        p->group = tpu_topo_group_size(topo, d->axes);
    }
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
        if (d->bytes % (uint64_t)elem != 0) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "ppermute of %llu bytes is not a whole number of %s elements (%lld "
                               "bytes each)",
                               (unsigned long long)d->bytes, tpu_dtype_name(d->dtype),
                               (long long)elem);
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

tpu_status_t tpu_coll_plan_create(const tpu_topo_t *topo, const tpu_link_model_t *link,
                                  const tpu_coll_desc_t *desc, tpu_coll_plan_t **plan_p,
                                  tpu_err_t *err)
{
    tpu_coll_plan_t *p;
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
    p->args.topo = &p->topo;
    p->args.link = &p->link;
    p->args.desc = &p->desc;
    p->args.mask = p->desc.axes;
    p->args.group = p->group;
    p->args.shard = p->shard;
    p->args.elem = tpu_dtype_size(desc->dtype);
    p->args.groups = p->desc.groups;
    p->args.member = p->member;
    status = axes_orbit(p, err);
    if (status != TPU_OK) {
        goto err_free;
    }
    status = tpu__plan_select(p, err);
    if (status != TPU_OK) {
        goto err_free;
    }
    if (p->model.ends != NULL && (!p->model.ends->filled || !p->model_cached)) {
        /* Not walked with the plan's constants (rebuilt after the choice): no table,
         * so that no later walk with other constants fills it (schedule.h). */
        tpu__free(p->model.ends);
        p->model.ends = NULL;
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
    tpu__plan_sched_fini(&plan->model);
    tpu_groups_fini(&plan->groups);
    tpu__free(plan->member);
    tpu__free(plan->group_of);
    tpu__free(plan->pairs);
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

int64_t tpu_coll_plan_model_flows(const tpu_coll_plan_t *plan)
{
    return plan->model.lines || plan->model.bound ? 0 : plan->model.s.nflows;
}

/* The walk's time 't' (seconds) and statistics 'res' into the caller's result. */
static void result_out(const tpu_coll_plan_t *plan, double t, tpu_coll_result_t *res,
                       tpu_coll_result_t *res_p)
{
    res->modeled_us = t * 1e6;
    snprintf(res->algorithm, sizeof(res->algorithm), "%s", plan->name);
    res->flows = tpu__plan_sched_pod_flows(&plan->topo, &plan->model);
    res->steps = (int)tpu__repeat_steps(&plan->model);
    *res_p = *res;
}

tpu_status_t tpu_coll_plan_model(const tpu_coll_plan_t *plan, tpu_coll_result_t *res_p,
                                 tpu_err_t *err)
{
    return tpu_coll_plan_model_observed(plan, NULL, res_p, err);
}

/*
 * Does an observer of the plan's model see the schedule of every chip, built
 * again?  Yes for the shortcuts that hold no flow of their own (the tree's bound
 * form), a ring's repeated steps, line timing within its budget (past it, the
 * lines' own flows), and when every chip's flows are asked for.
 */
static int observe_every_chip(const tpu_coll_plan_t *plan, const tpu_coll_observer_t *obs)
{
    const tpu_plan_sched_t *ps = &plan->model;

    if (ps->bound || ps->repeat != NULL) {
        return 1;
    }
    if (ps->lines) {
        return obs->every_chip ||
               (double)tpu__plan_sched_pod_flows(&plan->topo, ps) <= TPU_LINES_OBSERVE_EVERY;
    }
    return obs->every_chip && (ps->rep >= 0 || ps->orbit);
}

tpu_status_t tpu_coll_plan_model_observed(const tpu_coll_plan_t *plan,
                                          const tpu_coll_observer_t *obs, tpu_coll_result_t *res_p,
                                          tpu_err_t *err)
{
    tpu_coll_result_t res;
    tpu_plan_sched_t full;
    const tpu_plan_sched_t *ps = &plan->model;
    double t;
    tpu_status_t status;

    memset(&res, 0, sizeof(res));
    memset(&full, 0, sizeof(full));
    if (obs != NULL && observe_every_chip(plan, obs)) {
        /* The schedule of every chip: the same modeled time, flow by flow (line
         * timing past its budget: the lines' own flows, lines.h). */
        status = tpu__plan_build(plan, plan->algo, plan->args.chunks, -1, 0, &full, err);
        if (status != TPU_OK) {
            return status;
        }
        ps = &full;
    }
    if (obs == NULL && plan->model_cached) {
        /* The walk is a pure function of the plan: the selector's is the same. */
        t = plan->model_s;
        res = plan->model_res;
        status = TPU_OK;
    } else {
        status = tpu__time_schedule_observed(&plan->topo, &plan->link, ps, obs, &t, &res);
    }
    tpu__plan_sched_fini(&full);
    if (status != TPU_OK) {
        return tpu_err_set(err, status, "out of memory modelling %s", plan->name);
    }
    result_out(plan, t, &res, res_p);
    return TPU_OK;
}

tpu_status_t tpu_coll_plan_model_link(const tpu_coll_plan_t *plan, const tpu_link_model_t *link,
                                      tpu_coll_result_t *res_p, tpu_err_t *err)
{
    tpu_coll_result_t res;
    double t;
    tpu_status_t status;

    if (link->faults != plan->link.faults) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "modelling %s with other link constants: the faults must be the "
                           "plan's own",
                           plan->name);
    }
    memset(&res, 0, sizeof(res));
    /* The plan's own schedule as built with its constants (the torus split too),
     * one chip's, a domain's or line tables as chosen, walked with 'link'. */
    status = tpu__time_schedule(&plan->topo, link, &plan->model, &t, &res);
    if (status != TPU_OK) {
        return tpu_err_set(err, status, "out of memory modelling %s", plan->name);
    }
    result_out(plan, t, &res, res_p);
    return TPU_OK;
}
