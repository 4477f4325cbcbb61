/*
 * The SPMD runtime (include/tpu/spmd.h): mesh axes to groups, cached collective
 * plans, flat collectives over the transport, the cost log, and local kernels.
 *
 * A collective over mesh axes becomes a tpu_coll_desc_t: when the groups of the
 * axes are the groups of whole torus axes (same members, same order) the plan
 * gets that axis mask and the torus algorithms; otherwise it gets the groups and
 * the general group algorithm.  Plans are cached per (kind, axes, bytes, dtype,
 * op, pairs), so a training loop builds each schedule once.  Without data (sim
 * or no transport) a collective is timed by tpu_coll_plan_model(), which gives
 * the modeled time every transport gets, bit for bit.
 */
#include "tpu/dtype.h"

#include "alloc.h"
#include "clock.h"
#include "spmd_internal.h"

#include <stdio.h>
#include <string.h>

void tpu_spmd_opts_init(tpu_spmd_opts_t *opts)
{
    memset(opts, 0, sizeof(*opts));
    opts->check_peers = 1;
}

tpu_status_t tpu_spmd_create(const tpu_topo_t *topo, const tpu_link_model_t *link,
                             const tpu_chip_spec_t *chip, const tpu_mesh_t *mesh, tpu_xport_t *x,
                             const tpu_spmd_opts_t *opts, tpu_spmd_t **spmd_p, tpu_err_t *err)
{
    tpu_spmd_t *s;
    tpu_status_t status;
    int i;

    if (topo == NULL || link == NULL || chip == NULL || mesh == NULL) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "spmd runtime needs a topology, link model, chip "
                           "and mesh");
    }
    if (tpu_mesh_size(mesh) != topo->nchips) {
        return tpu_err_set(err, TPU_ERR_INVALID, "the mesh has %d positions, the topology %d chips",
                           tpu_mesh_size(mesh), topo->nchips);
    }
    if (x != NULL && x->nchips != topo->nchips) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "the transport hosts a pod of %d chips, the topology has %d", x->nchips,
                           topo->nchips);
    }
    s = tpu__calloc(1, sizeof(*s));
    if (s == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for an spmd runtime");
    }
    s->topo = *topo;
    s->link = *link;
    s->chip = *chip;
    s->mesh = mesh;
    s->x = x;
    if (opts != NULL) {
        s->opts = *opts;
    } else {
        tpu_spmd_opts_init(&s->opts);
    }
    s->nlocal = x != NULL ? x->nlocal : topo->nchips;
    s->moves_data = x != NULL && x->moves_data;
    s->local_chips = tpu__malloc((size_t)s->nlocal * sizeof(int));
    s->hbm = tpu__calloc((size_t)s->nlocal, sizeof(*s->hbm));
    s->vmem = tpu__calloc((size_t)s->nlocal, sizeof(*s->vmem));
    if (s->local_chips == NULL || s->hbm == NULL || s->vmem == NULL) {
        status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for an spmd runtime");
        goto err_free;
    }
    for (i = 0; i < s->nlocal; i++) {
        s->local_chips[i] = x != NULL ? x->local_chips[i] : i;
        status = tpu_hbm_create(chip, &s->hbm[i], err);
        if (status != TPU_OK) {
            goto err_free;
        }
    }
    *spmd_p = s;
    return TPU_OK;
err_free:
    tpu_spmd_destroy(s);
    return status;
}

tpu_status_t tpu_spmd_create_pod(const tpu_pod_t *pod, const tpu_mesh_t *mesh, tpu_xport_t *x,
                                 const tpu_spmd_opts_t *opts, tpu_spmd_t **spmd_p, tpu_err_t *err)
{
    if (pod == NULL) {
        return tpu_err_set(err, TPU_ERR_INVALID, "spmd runtime needs a pod");
    }
    return tpu_spmd_create(tpu_pod_topo(pod), tpu_pod_link(pod), tpu_pod_chip(pod), mesh, x, opts,
                           spmd_p, err);
}

void tpu_spmd_destroy(tpu_spmd_t *s)
{
    int i;

    if (s == NULL) {
        return;
    }
    for (i = 0; i < s->nplans; i++) {
        tpu_coll_exec_destroy(s->plans[i].exec);
        tpu_coll_plan_destroy(s->plans[i].plan);
        tpu__free(s->plans[i].pairs);
    }
    tpu__free(s->plans);
    for (i = 0; i < s->naxes; i++) {
        tpu_groups_fini(&s->axes[i].groups);
        tpu__free(s->axes[i].index_of);
    }
    tpu__free(s->axes);
    for (i = 0; i < s->nlocal && s->hbm != NULL; i++) {
        tpu_hbm_destroy(s->hbm[i]);
        if (s->vmem != NULL) {
            tpu_vmem_destroy(s->vmem[i]);
        }
    }
    tpu__free(s->hbm);
    tpu__free(s->vmem);
    tpu__free(s->local_chips);
    tpu__free(s->calls);
    tpu__free(s);
}

const tpu_mesh_t *tpu_spmd_mesh(const tpu_spmd_t *s)
{
    return s->mesh;
}

const tpu_topo_t *tpu_spmd_topo(const tpu_spmd_t *s)
{
    return &s->topo;
}

const tpu_chip_spec_t *tpu_spmd_chip(const tpu_spmd_t *s)
{
    return &s->chip;
}

const tpu_link_model_t *tpu_spmd_link(const tpu_spmd_t *s)
{
    return &s->link;
}

int tpu_spmd_moves_data(const tpu_spmd_t *s)
{
    return s->moves_data;
}

int tpu_spmd_nlocal(const tpu_spmd_t *s)
{
    return s->nlocal;
}

int tpu_spmd_local_chip(const tpu_spmd_t *s, int i)
{
    return i >= 0 && i < s->nlocal ? s->local_chips[i] : -1;
}

tpu_hbm_t *tpu_spmd_hbm(const tpu_spmd_t *s, int i)
{
    return i >= 0 && i < s->nlocal ? s->hbm[i] : NULL;
}

uint64_t tpu_spmd_hbm_peak(const tpu_spmd_t *s)
{
    uint64_t peak = 0;
    int i;

    for (i = 0; i < s->nlocal; i++) {
        uint64_t p = tpu_hbm_peak(s->hbm[i]);

        peak = p > peak ? p : peak;
    }
    return peak;
}

tpu_status_t tpu__spmd_axes(tpu_spmd_t *s, const char *axes, const spmd_axes_t **ax_p,
                            tpu_err_t *err)
{
    spmd_axes_t *ax;
    tpu_status_t status;
    int i;

    for (i = 0; i < s->naxes; i++) {
        if (strcmp(s->axes[i].text, axes) == 0) {
            *ax_p = &s->axes[i];
            return TPU_OK;
        }
    }
    if (strlen(axes) >= sizeof(s->axes[0].text)) {
        return tpu_err_set(err, TPU_ERR_INVALID, "mesh axes '%.40s...' are too long", axes);
    }
    if (s->naxes == s->cap_axes) {
        int cap = s->cap_axes ? 2 * s->cap_axes : 8;
        spmd_axes_t *na = tpu__realloc(s->axes, (size_t)cap * sizeof(*na));

        if (na == NULL) {
            return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for mesh axes");
        }
        s->axes = na;
        s->cap_axes = cap;
    }
    ax = &s->axes[s->naxes];
    memset(ax, 0, sizeof(*ax));
    snprintf(ax->text, sizeof(ax->text), "%s", axes);
    status = tpu_mesh_groups(s->mesh, axes, &ax->groups, err);
    if (status != TPU_OK) {
        return status;
    }
    ax->index_of = tpu__malloc((size_t)s->topo.nchips * sizeof(int32_t));
    if (ax->index_of == NULL) {
        tpu_groups_fini(&ax->groups);
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for mesh axes");
    }
    tpu_groups_index(&ax->groups, s->topo.nchips, NULL, ax->index_of);
    ax->whole = tpu_groups_axes_mask(&s->topo, &ax->groups, &ax->mask);
    s->naxes++;
    *ax_p = ax;
    return TPU_OK;
}

tpu_status_t tpu_spmd_axis_index(const tpu_spmd_t *s, const char *axes, int i, int *index_p,
                                 int *size_p, tpu_err_t *err)
{
    if (i < 0 || i >= s->nlocal) {
        return tpu_err_set(err, TPU_ERR_INVALID, "local chip %d: this process hosts %d", i,
                           s->nlocal);
    }
    return tpu_mesh_axes_index(s->mesh, axes, s->local_chips[i], index_p, size_p, err);
}

static tpu_status_t log_call(tpu_spmd_t *s, const tpu_spmd_call_t *c, tpu_err_t *err)
{
    if (s->ncalls == s->cap_calls) {
        int64_t cap = s->cap_calls ? 2 * s->cap_calls : 64;
        tpu_spmd_call_t *nc = tpu__realloc(s->calls, (size_t)cap * sizeof(*nc));

        if (nc == NULL) {
            return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for the cost log");
        }
        s->calls = nc;
        s->cap_calls = cap;
    }
    s->calls[s->ncalls++] = *c;
    return TPU_OK;
}

int64_t tpu_spmd_call_count(const tpu_spmd_t *s)
{
    return s->ncalls;
}

const tpu_spmd_call_t *tpu_spmd_call_at(const tpu_spmd_t *s, int64_t i)
{
    return i >= 0 && i < s->ncalls ? &s->calls[i] : NULL;
}

double tpu_spmd_comm_us(const tpu_spmd_t *s)
{
    return s->comm_us;
}

double tpu_spmd_compute_us(const tpu_spmd_t *s)
{
    return s->compute_us;
}

double tpu_spmd_flops(const tpu_spmd_t *s)
{
    return s->flops;
}

void tpu_spmd_log_clear(tpu_spmd_t *s)
{
    s->ncalls = 0;
    s->comm_us = 0;
    s->compute_us = 0;
    s->flops = 0;
}

/* The max of 'v' over every chip of the pod. */
static tpu_status_t max_over_chips(tpu_spmd_t *s, double v, double *max_p, tpu_err_t *err)
{
    tpu_xport_wait_t w;
    tpu_status_t status;

    if (s->x == NULL || s->nlocal == s->topo.nchips) {
        *max_p = v;
        return TPU_OK;
    }
    w.timeout_s = s->opts.timeout_s;
    w.on_wait = s->opts.on_wait;
    w.on_wait_arg = s->opts.on_wait_arg;
    status = s->x->ops->max_time(s->x, v, max_p, &w);
    if (status != TPU_OK) {
        return tpu_err_set(err, status, "transport %s: max over chips failed: %s", s->x->ops->name,
                           s->x->msg);
    }
    return TPU_OK;
}

/* Find or build the plan of a collective. */
static tpu_status_t get_plan(tpu_spmd_t *s, tpu_coll_kind_t kind, const spmd_axes_t *ax,
                             tpu_dtype_t dtype, tpu_redop_t op, uint64_t bytes,
                             const int32_t *pairs, int npairs, spmd_plan_t **plan_p, tpu_err_t *err)
{
    tpu_coll_desc_t desc;
    spmd_plan_t *sp;
    tpu_status_t status;
    int i;

    for (i = 0; i < s->nplans; i++) {
        sp = &s->plans[i];
        if (sp->kind == kind && sp->axes == ax && sp->bytes == bytes && sp->dtype == dtype &&
            sp->op == op && sp->npairs == npairs &&
            (npairs == 0 || memcmp(sp->pairs, pairs, (size_t)npairs * 2 * sizeof(int32_t)) == 0)) {
            *plan_p = sp;
            return TPU_OK;
        }
    }
    tpu_coll_desc_init(&desc);
    desc.kind = kind;
    desc.bytes = bytes;
    desc.dtype = dtype;
    desc.op = op;
    if (kind == TPU_COLL_PPERMUTE) {
        desc.pairs = pairs;
        desc.npairs = npairs;
    } else if (ax->whole) {
        desc.axes = ax->mask;
    } else {
        desc.groups = &ax->groups;
    }
    if (s->nplans == s->cap_plans) {
        int cap = s->cap_plans ? 2 * s->cap_plans : 16;
        spmd_plan_t *np_ = tpu__realloc(s->plans, (size_t)cap * sizeof(*np_));

        if (np_ == NULL) {
            return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for collective plans");
        }
        s->plans = np_;
        s->cap_plans = cap;
    }
    sp = &s->plans[s->nplans];
    memset(sp, 0, sizeof(*sp));
    if (npairs > 0) {
        sp->pairs = tpu__malloc((size_t)npairs * 2 * sizeof(int32_t));
        if (sp->pairs == NULL) {
            return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for ppermute pairs");
        }
        memcpy(sp->pairs, pairs, (size_t)npairs * 2 * sizeof(int32_t));
    }
    status = tpu_coll_plan_create(&s->topo, &s->link, &desc, &sp->plan, err);
    if (status != TPU_OK) {
        tpu__free(sp->pairs);
        return status;
    }
    sp->model_us = -1;
    sp->kind = kind;
    sp->axes = ax;
    sp->bytes = bytes;
    sp->dtype = dtype;
    sp->op = op;
    sp->npairs = npairs;
    s->nplans++;
    *plan_p = sp;
    return TPU_OK;
}

static uint64_t in_bytes_of(tpu_coll_kind_t kind, uint64_t bytes, int g)
{
    return kind == TPU_COLL_ALL_GATHER ? bytes / (uint64_t)g : bytes;
}

static uint64_t out_bytes_of(tpu_coll_kind_t kind, uint64_t bytes, int g)
{
    return kind == TPU_COLL_REDUCE_SCATTER ? bytes / (uint64_t)g : bytes;
}

tpu_status_t tpu__spmd_coll(tpu_spmd_t *s, const char *name, tpu_coll_kind_t kind, const char *axes,
                            tpu_dtype_t dtype, tpu_redop_t op, uint64_t bytes, const int *perm,
                            int npairs, void *const *in, void *const *out, tpu_err_t *err)
{
    const spmd_axes_t *ax;
    tpu_spmd_call_t call;
    spmd_plan_t *sp = NULL;
    int32_t *pairs = NULL;
    void **tmp = NULL;
    double t0 = tpu__now_s(), modeled_us = 0;
    tpu_status_t status;
    int g, i, k;

    status = tpu__spmd_axes(s, axes, &ax, err);
    if (status != TPU_OK) {
        return status;
    }
    g = ax->groups.size;
    memset(&call, 0, sizeof(call));
    call.kind = kind;
    snprintf(call.name, sizeof(call.name), "%s", name != NULL ? name : "");
    snprintf(call.axes, sizeof(call.axes), "%s", axes);
    call.group_size = g;
    call.bytes = bytes;
    if (kind == TPU_COLL_PPERMUTE) {
        /* Validate the perm (indices along the axes) and expand it to chip pairs. */
        int *seen_src = tpu__calloc((size_t)g, sizeof(int)), *seen_dst;

        seen_dst = tpu__calloc((size_t)g, sizeof(int));
        pairs = tpu__malloc((size_t)(npairs > 0 ? npairs : 1) * (size_t)ax->groups.ngroups * 2 *
                            sizeof(int32_t));
        if (seen_src == NULL || seen_dst == NULL || pairs == NULL) {
            tpu__free(seen_src);
            tpu__free(seen_dst);
            tpu__free(pairs);
            return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for ppermute pairs");
        }
        for (k = 0; k < npairs && status == TPU_OK; k++) {
            int a = perm[2 * k], b = perm[2 * k + 1];

            if (a < 0 || a >= g || b < 0 || b >= g) {
                status = tpu_err_set(err, TPU_ERR_INVALID,
                                     "ppermute pair (%d, %d) over '%s': indices must be 0 to %d", a,
                                     b, axes, g - 1);
            } else if (seen_src[a]++ || seen_dst[b]++) {
                status = tpu_err_set(
                    err, TPU_ERR_INVALID, "ppermute over '%s' has index %d twice as a %s", axes,
                    seen_src[a] > 1 ? a : b, seen_src[a] > 1 ? "source" : "target");
            }
        }
        tpu__free(seen_src);
        tpu__free(seen_dst);
        if (status != TPU_OK) {
            tpu__free(pairs);
            return status;
        }
        for (i = 0; i < ax->groups.ngroups; i++) {
            const int32_t *m = ax->groups.chips + (int64_t)i * g;

            for (k = 0; k < npairs; k++) {
                int64_t o = ((int64_t)i * npairs + k) * 2;

                pairs[o] = m[perm[2 * k]];
                pairs[o + 1] = m[perm[2 * k + 1]];
            }
        }
    }
    if (g == 1 || (kind == TPU_COLL_PPERMUTE && npairs == 0)) {
        /* Nothing crosses a link: every collective over one chip is a copy. */
        for (i = 0; s->moves_data && i < s->nlocal; i++) {
            if (kind == TPU_COLL_PPERMUTE) {
                int me = ax->index_of[s->local_chips[i]];

                for (k = 0; k < npairs; k++) {
                    if (perm[2 * k + 1] == me) {
                        memmove(out[i], in[i], (size_t)bytes);
                    }
                }
            } else if (out[i] != in[i]) {
                memmove(out[i], in[i], (size_t)out_bytes_of(kind, bytes, g));
            }
        }
        snprintf(call.algorithm, sizeof(call.algorithm), "local");
        goto log;
    }
    status = get_plan(s, kind, ax, dtype, op, bytes, pairs,
                      kind == TPU_COLL_PPERMUTE ? npairs * ax->groups.ngroups : 0, &sp, err);
    if (status != TPU_OK) {
        goto out;
    }
    snprintf(call.algorithm, sizeof(call.algorithm), "%s", tpu_coll_plan_algo(sp->plan));
    call.plan = sp->plan;
    if (!s->moves_data) {
        tpu_coll_result_t res;

        if (sp->model_us < 0) {
            status = tpu_coll_plan_model(sp->plan, &res, err);
            if (status != TPU_OK) {
                goto out;
            }
            sp->model_us = res.modeled_us;
        }
        modeled_us = sp->model_us;
    } else {
        tpu_coll_run_opts_t ro;
        uint64_t ib = in_bytes_of(kind, bytes, g);

        /* An output that is its own input: run from a copy (the schedules read and
         * write different buffers). */
        for (i = 0; i < s->nlocal; i++) {
            if (in[i] == out[i] && tmp == NULL) {
                tmp = tpu__calloc((size_t)s->nlocal, sizeof(void *));
                if (tmp == NULL) {
                    status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for a copy");
                    goto out;
                }
            }
        }
        for (i = 0; tmp != NULL && i < s->nlocal; i++) {
            tmp[i] = tpu__malloc((size_t)ib);
            if (tmp[i] == NULL) {
                status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for a copy");
                goto out;
            }
            memcpy(tmp[i], in[i], (size_t)ib);
        }
        memset(&ro, 0, sizeof(ro));
        ro.call = s->ncoll;
        ro.timeout_s = s->opts.timeout_s;
        ro.check_peers = s->opts.check_peers;
        ro.on_wait = s->opts.on_wait;
        ro.on_wait_arg = s->opts.on_wait_arg;
        if (sp->exec == NULL) {
            status = tpu_coll_exec_create(sp->plan, s->x, &sp->exec, err);
            if (status != TPU_OK) {
                goto out;
            }
        }
        status = tpu_coll_exec_run(sp->exec, &ro, tmp != NULL ? tmp : in, out, &modeled_us, err);
        if (status != TPU_OK) {
            goto out;
        }
    }
log:
    if (kind == TPU_COLL_PPERMUTE && s->moves_data) {
        /* Chips that are no target get zeros. */
        for (i = 0; i < s->nlocal; i++) {
            int me = ax->index_of[s->local_chips[i]], hit = 0;

            for (k = 0; k < npairs; k++) {
                hit |= perm[2 * k + 1] == me;
            }
            if (!hit) {
                memset(out[i], 0, (size_t)bytes);
            }
        }
    }
    s->ncoll++;
    call.modeled_us = modeled_us;
    call.measured_us = (tpu__now_s() - t0) * 1e6;
    if (name != NULL) {
        s->comm_us += modeled_us;
        status = log_call(s, &call, err);
    }
out:
    for (i = 0; tmp != NULL && i < s->nlocal; i++) {
        tpu__free(tmp[i]);
    }
    tpu__free(tmp);
    tpu__free(pairs);
    return status;
}

static tpu_status_t check_dtype(tpu_dtype_t dtype, tpu_err_t *err)
{
    if ((int)dtype < 0 || dtype >= TPU_DTYPE_COUNT) {
        return tpu_err_set(err, TPU_ERR_INVALID, "unknown dtype %d", (int)dtype);
    }
    return TPU_OK;
}

tpu_status_t tpu_spmd_psum(tpu_spmd_t *s, const char *axes, tpu_dtype_t dtype, tpu_redop_t op,
                           uint64_t count, void *const *in, void *const *out, tpu_err_t *err)
{
    static const char *const names[] = {"psum", "pmax", "pmin"};

    if (check_dtype(dtype, err) != TPU_OK) {
        return TPU_ERR_INVALID;
    }
    return tpu__spmd_coll(s, (int)op >= 0 && op < TPU_REDOP_COUNT ? names[op] : "psum",
                          TPU_COLL_PSUM, axes, dtype, op, count * (uint64_t)tpu_dtype_size(dtype),
                          NULL, 0, in, out, err);
}

tpu_status_t tpu_spmd_pmean(tpu_spmd_t *s, const char *axes, tpu_dtype_t dtype, uint64_t count,
                            void *const *in, void *const *out, tpu_err_t *err)
{
    const spmd_axes_t *ax;
    tpu_status_t status;
    uint64_t j;
    int i;

    if (dtype != TPU_DTYPE_F32 && dtype != TPU_DTYPE_BF16) {
        return tpu_err_set(err, TPU_ERR_INVALID, "pmean of %s: use f32 or bf16",
                           tpu_dtype_name(dtype));
    }
    status = tpu__spmd_axes(s, axes, &ax, err);
    if (status == TPU_OK) {
        status = tpu__spmd_coll(s, "pmean", TPU_COLL_PSUM, axes, dtype, TPU_REDOP_SUM,
                                count * (uint64_t)tpu_dtype_size(dtype), NULL, 0, in, out, err);
    }
    if (status != TPU_OK || !s->moves_data) {
        return status;
    }
    /* The division happens after the all-reduce, in the program (JAX's pmean). */
    for (i = 0; i < s->nlocal; i++) {
        for (j = 0; j < count; j++) {
            if (dtype == TPU_DTYPE_F32) {
                ((float *)out[i])[j] /= (float)ax->groups.size;
            } else {
                uint16_t *p = (uint16_t *)out[i] + j;

                *p = tpu_dtype_f32_to_bf16(tpu_dtype_bf16_to_f32(*p) / (float)ax->groups.size);
            }
        }
    }
    return TPU_OK;
}

tpu_status_t tpu_spmd_all_gather(tpu_spmd_t *s, const char *axes, tpu_dtype_t dtype, uint64_t count,
                                 void *const *in, void *const *out, tpu_err_t *err)
{
    const spmd_axes_t *ax;
    tpu_status_t status = check_dtype(dtype, err);

    if (status == TPU_OK) {
        status = tpu__spmd_axes(s, axes, &ax, err);
    }
    if (status != TPU_OK) {
        return status;
    }
    return tpu__spmd_coll(s, "all_gather", TPU_COLL_ALL_GATHER, axes, dtype, TPU_REDOP_SUM,
                          count * (uint64_t)tpu_dtype_size(dtype) * (uint64_t)ax->groups.size, NULL,
                          0, in, out, err);
}

/* 'count' must split into G chunks. */
static tpu_status_t check_split(tpu_spmd_t *s, const char *what, const char *axes, uint64_t count,
                                tpu_err_t *err)
{
    const spmd_axes_t *ax;
    tpu_status_t status = tpu__spmd_axes(s, axes, &ax, err);

    if (status == TPU_OK && count % (uint64_t)ax->groups.size != 0) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "%s of %llu elements over '%s': %llu does not divide into %d chunks",
                           what, (unsigned long long)count, axes, (unsigned long long)count,
                           ax->groups.size);
    }
    return status;
}

tpu_status_t tpu_spmd_psum_scatter(tpu_spmd_t *s, const char *axes, tpu_dtype_t dtype,
                                   tpu_redop_t op, uint64_t count, void *const *in,
                                   void *const *out, tpu_err_t *err)
{
    tpu_status_t status = check_dtype(dtype, err);

    if (status == TPU_OK) {
        status = check_split(s, "psum_scatter", axes, count, err);
    }
    if (status != TPU_OK) {
        return status;
    }
    return tpu__spmd_coll(s, "psum_scatter", TPU_COLL_REDUCE_SCATTER, axes, dtype, op,
                          count * (uint64_t)tpu_dtype_size(dtype), NULL, 0, in, out, err);
}

tpu_status_t tpu_spmd_all_to_all(tpu_spmd_t *s, const char *axes, tpu_dtype_t dtype, uint64_t count,
                                 void *const *in, void *const *out, tpu_err_t *err)
{
    tpu_status_t status = check_dtype(dtype, err);

    if (status == TPU_OK) {
        status = check_split(s, "all_to_all", axes, count, err);
    }
    if (status != TPU_OK) {
        return status;
    }
    return tpu__spmd_coll(s, "all_to_all", TPU_COLL_ALL_TO_ALL, axes, dtype, TPU_REDOP_SUM,
                          count * (uint64_t)tpu_dtype_size(dtype), NULL, 0, in, out, err);
}

tpu_status_t tpu_spmd_ppermute(tpu_spmd_t *s, const char *axes, tpu_dtype_t dtype, uint64_t count,
                               const int *perm, int npairs, void *const *in, void *const *out,
                               tpu_err_t *err)
{
    tpu_status_t status = check_dtype(dtype, err);

    if (status != TPU_OK) {
        return status;
    }
    if (npairs < 0 || (npairs > 0 && perm == NULL)) {
        return tpu_err_set(err, TPU_ERR_INVALID, "ppermute needs its pairs");
    }
    return tpu__spmd_coll(s, "ppermute", TPU_COLL_PPERMUTE, axes, dtype, TPU_REDOP_SUM,
                          count * (uint64_t)tpu_dtype_size(dtype), perm, npairs, in, out, err);
}

/* ---- kernels ---- */

tpu_status_t tpu_spmd_run(tpu_spmd_t *s, const char *name, tpu_spmd_kernel_fn_t fn, void *arg,
                          tpu_err_t *err)
{
    double t0 = tpu__now_s(), us = 0, flops = 0, max_us, max_flops;
    tpu_spmd_call_t call;
    tpu_status_t status;
    int i;

    for (i = 0; i < s->nlocal; i++) {
        tpu_spmd_local_t loc;

        memset(&loc, 0, sizeof(loc));
        loc.spmd = s;
        loc.local = i;
        loc.chip = s->local_chips[i];
        loc.pos = tpu_mesh_position(s->mesh, loc.chip);
        status = fn(&loc, arg, err);
        if (status != TPU_OK) {
            return status;
        }
        us = loc.compute_us > us ? loc.compute_us : us;
        flops = loc.flops > flops ? loc.flops : flops;
    }
    status = max_over_chips(s, us, &max_us, err);
    if (status == TPU_OK) {
        status = max_over_chips(s, flops, &max_flops, err);
    }
    if (status != TPU_OK) {
        return status;
    }
    s->compute_us += max_us;
    s->flops += max_flops;
    memset(&call, 0, sizeof(call));
    call.kind = TPU_COLL_COUNT;
    snprintf(call.name, sizeof(call.name), "%s", name != NULL ? name : "kernel");
    snprintf(call.algorithm, sizeof(call.algorithm), "compute");
    call.group_size = 1;
    call.modeled_us = max_us;
    call.measured_us = (tpu__now_s() - t0) * 1e6;
    return log_call(s, &call, err);
}

void tpu_spmd_local_add_seconds(tpu_spmd_local_t *loc, double seconds)
{
    loc->compute_us += seconds * 1e6;
}

tpu_status_t tpu_spmd_matmul(tpu_spmd_local_t *loc, const tpu_mxu_desc_t *desc, const void *a,
                             const void *b, void *c, tpu_err_t *err)
{
    tpu_spmd_t *s = loc->spmd;
    tpu_roofline_t rl;
    tpu_status_t status = tpu_mxu_roofline(&s->chip, desc, &rl, err);

    if (status != TPU_OK) {
        return status;
    }
    if (s->moves_data) {
        if (s->vmem[loc->local] == NULL) {
            status = tpu_vmem_create(&s->chip, &s->vmem[loc->local], err);
            if (status != TPU_OK) {
                return status;
            }
        }
        status = tpu_mxu_matmul(s->vmem[loc->local], desc, a, b, c, NULL, err);
        if (status != TPU_OK) {
            return status;
        }
    }
    loc->compute_us += rl.modeled_us;
    loc->flops += rl.flops;
    return TPU_OK;
}
