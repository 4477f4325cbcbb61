/*
 * Collective plans: the request checked and resolved (validate), the algorithm
 * chosen (select.c) and its model schedule built (build.c); the modeled time of
 * a plan (time.c).  A plan is immutable once tpu_coll_plan_create() returns.
 */
#include "plan.h"

#include "tpu/alloc.h"
#include "tpu/dtype.h"

#include "timing.h"

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
    status = tpu__plan_select(p, err);
    if (status != TPU_OK) {
        goto err_free;
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
    status = tpu__time_schedule(&plan->topo, &plan->link, &plan->model, &t, &res);
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
