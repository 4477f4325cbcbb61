/*
 * The schedule executor: walks a plan's schedule over a transport, moving and
 * reducing real bytes, and advances every local chip's virtual clock through the
 * link model.
 *
 * Steps run in order.  In each step a chip posts the receives of the flows bound
 * for it, times the flows it sends (from the arrival times of the flows they
 * depend on, which came in the headers of earlier messages, and from the loads of
 * the step, which every chip computes from the schedule), sends them with their
 * arrival time in the header, and waits for its receives without spinning.  The
 * modeled time therefore depends only on the schedule and the constants: the sim
 * path (tpu__plan_model) runs the very same timing code with every chip local.
 */
#include "tpu/alloc.h"
#include "tpu/dtype.h"

#include "coll_internal.h"
#include "linkmodel.h"
#include "reduce.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

typedef struct timing {
    tpu_linkmodel_t lm;
    double *arrival; /* per flow */
    double *start;   /* per flow of the current step */
} timing_t;

static tpu_status_t timing_init(timing_t *t, const tpu_coll_plan_t *plan)
{
    int64_t maxstep = 1;
    int s;

    memset(t, 0, sizeof(*t));
    for (s = 0; s < plan->sched.nsteps; s++) {
        int64_t n = plan->step_start[s + 1] - plan->step_start[s];

        if (n > maxstep) {
            maxstep = n;
        }
    }
    if (tpu__linkmodel_init(&t->lm, &plan->topo, &plan->link) != TPU_OK) {
        return TPU_ERR_NO_MEMORY;
    }
    t->arrival = tpu__calloc((size_t)plan->sched.nflows + 1, sizeof(double));
    t->start = tpu__calloc((size_t)maxstep, sizeof(double));
    if (t->arrival == NULL || t->start == NULL) {
        tpu__free(t->arrival);
        tpu__free(t->start);
        tpu__linkmodel_fini(&t->lm);
        return TPU_ERR_NO_MEMORY;
    }
    return TPU_OK;
}

static void timing_fini(timing_t *t)
{
    tpu__free(t->arrival);
    tpu__free(t->start);
    tpu__linkmodel_fini(&t->lm);
}

/*
 * Load step 's' and time the flows whose source is local ('local' NULL: all).
 * This is the one place modeled time is computed, for every transport.
 */
static void time_step(timing_t *t, const tpu_coll_plan_t *plan, int s, const uint8_t *local)
{
    const tpu_sched_t *sc = &plan->sched;
    int64_t first = plan->step_start[s], last = plan->step_start[s + 1], i;

    tpu__linkmodel_load_step(&t->lm, sc, first, last);
    for (i = first; i < last; i++) {
        const tpu_flow_t *f = &sc->flows[i];
        double ready = 0;
        int32_t k;

        if (local != NULL && !local[f->src]) {
            continue;
        }
        for (k = 0; k < f->ndeps; k++) {
            double a = t->arrival[sc->deps[f->dep_first + k]];

            if (a > ready) {
                ready = a;
            }
        }
        tpu__linkmodel_time_flow(&t->lm, f, ready, &t->start[i - first], &t->arrival[i]);
    }
    for (i = first; i < last; i++) {
        if (local == NULL || local[sc->flows[i].src]) {
            tpu__linkmodel_commit_flow(&t->lm, &sc->flows[i], t->start[i - first]);
        }
    }
}

tpu_status_t tpu__plan_model(const tpu_coll_plan_t *plan, double *seconds_p, tpu_coll_result_t *res)
{
    timing_t t;
    double end = 0;
    int64_t i;
    int s;

    if (timing_init(&t, plan) != TPU_OK) {
        return TPU_ERR_NO_MEMORY;
    }
    for (s = 0; s < plan->sched.nsteps; s++) {
        time_step(&t, plan, s, NULL);
        tpu__linkmodel_end_step(&t.lm);
    }
    for (i = 0; i < plan->sched.nflows; i++) {
        if (t.arrival[i] > end) {
            end = t.arrival[i];
        }
    }
    if (res != NULL) {
        tpu__linkmodel_stats(&t.lm, end, res);
    }
    timing_fini(&t);
    *seconds_p = end;
    return TPU_OK;
}

/* ---- execution with data ---- */

typedef struct pending {
    tpu_xport_req_t *req;
    int64_t flow;
    int is_recv;
    tpu_msg_hdr_t hdr;
    unsigned char *scratch; /* reduce receives land here */
} pending_t;

typedef struct run_ctx {
    const tpu_coll_plan_t *plan;
    tpu_xport_t *x;
    int *local_index; /* chip -> index among local chips, or -1 */
    uint8_t *is_local;
    unsigned char **send; /* per local chip: the buffer flows read */
    unsigned char **recv; /* per local chip: the buffer flows write */
    unsigned char **work; /* per local chip: owned working buffer, or NULL */
    tpu_call_sig_t sig;
    tpu_dtype_t work_dtype;
} run_ctx_t;

/* "chip 5 (1,1)" or "chip 17 (slice 1, 0,1)". */
static void chip_str(const tpu_topo_t *topo, int chip, char *buf, size_t len)
{
    int c[TPU_MAX_AXES], a, used;

    tpu_topo_coords(topo, chip, c);
    used = topo->slices > 1
               ? snprintf(buf, len, "chip %d (slice %d, ", chip, tpu_topo_slice_of(topo, chip))
               : snprintf(buf, len, "chip %d (", chip);
    for (a = 0; a < topo->naxes && used < (int)len; a++) {
        used += snprintf(buf + used, len - (size_t)used, "%s%d", a ? "," : "", c[a]);
    }
    if (used < (int)len) {
        snprintf(buf + used, len - (size_t)used, ")");
    }
}

static void sig_str(const tpu_call_sig_t *s, char *buf, size_t len)
{
    char axes[32];

    tpu_topo_axes_str((unsigned)s->axes, axes, sizeof(axes));
    snprintf(buf, len, "call %llu: %s over %s of %llu bytes %s %s", (unsigned long long)s->call,
             tpu_coll_name((tpu_coll_kind_t)s->kind), s->kind == TPU_COLL_P2P ? "-" : axes,
             (unsigned long long)s->bytes, tpu_dtype_name((tpu_dtype_t)s->dtype),
             tpu_redop_name((tpu_redop_t)s->op));
}

static int sig_equal(const tpu_call_sig_t *a, const tpu_call_sig_t *b)
{
    return a->call == b->call && a->bytes == b->bytes && a->kind == b->kind && a->axes == b->axes &&
           a->dtype == b->dtype && a->op == b->op;
}

static tpu_region_t span_region(void *base, const tpu_span_t *sp, int64_t off, int scale)
{
    tpu_region_t r;
    int i;

    r.base = base;
    r.off = off * scale;
    r.len = sp->len * scale;
    for (i = 0; i < 3; i++) {
        r.stride[i] = sp->stride[i] * scale;
        r.count[i] = sp->count[i];
    }
    return r;
}

/* Add the contiguous 'src' into the strided region 'r' (same byte count). */
static void reduce_into(const run_ctx_t *ctx, const tpu_region_t *r, const unsigned char *src)
{
    int i, j, k;
    int esz = tpu_dtype_size(ctx->work_dtype);

    for (i = 0; i < r->count[0]; i++) {
        for (j = 0; j < r->count[1]; j++) {
            for (k = 0; k < r->count[2]; k++) {
                unsigned char *d = (unsigned char *)r->base + r->off + i * r->stride[0] +
                                   j * r->stride[1] + k * r->stride[2];

                tpu__reduce(ctx->work_dtype, ctx->plan->desc.op, d, src, (size_t)(r->len / esz));
                src += r->len;
            }
        }
    }
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Wait for every pending request; handle receives as they complete. */
static tpu_status_t wait_all(run_ctx_t *ctx, timing_t *t, pending_t *pend, int npend,
                             const tpu_coll_run_opts_t *opts, tpu_err_t *err)
{
    const tpu_coll_plan_t *plan = ctx->plan;
    const tpu_sched_t *sc = &plan->sched;
    double deadline = opts->timeout_s > 0 ? now_s() + opts->timeout_s : 0;
    int left = npend, rounds = 0, i;

    while (left > 0) {
        int progressed = 0;

        for (i = 0; i < npend; i++) {
            pending_t *p = &pend[i];
            const tpu_flow_t *f;
            int done = 0;
            tpu_status_t status;

            if (p->req == NULL) {
                continue;
            }
            status = ctx->x->ops->test(ctx->x, p->req, &done);
            if (status != TPU_OK) {
                char me[64];

                chip_str(&plan->topo, ctx->x->local_chips[0], me, sizeof(me));
                return tpu_err_set(err, status, "%s: transport %s failed in %s: %s", me,
                                   ctx->x->ops->name, plan->name, ctx->x->msg);
            }
            if (!done) {
                continue;
            }
            p->req = NULL;
            left--;
            progressed = 1;
            if (!p->is_recv) {
                continue;
            }
            f = &sc->flows[p->flow];
            if (!sig_equal(&p->hdr.sig, &ctx->sig) || p->hdr.flow != p->flow ||
                p->hdr.bytes != tpu__span_bytes(&f->span)) {
                char a[64], b[64], sa[160], sb[160];

                chip_str(&plan->topo, f->dst, a, sizeof(a));
                chip_str(&plan->topo, f->src, b, sizeof(b));
                sig_str(&ctx->sig, sa, sizeof(sa));
                sig_str(&p->hdr.sig, sb, sizeof(sb));
                return tpu_err_set(err, TPU_ERR_MISMATCH,
                                   "collective mismatch: %s is in %s, but %s sent a message of "
                                   "%s",
                                   a, sa, b, sb);
            }
            t->arrival[p->flow] = p->hdr.arrival;
            if (f->reduce && ctx->x->moves_data) {
                int li = ctx->local_index[f->dst];
                tpu_region_t r =
                    span_region(ctx->recv[li], &f->span, f->span.dst_off, plan->data_scale);

                reduce_into(ctx, &r, p->scratch);
            }
        }
        if (left == 0) {
            break;
        }
        if (deadline > 0 && now_s() > deadline) {
            char me[64], who[512];
            int used = 0;

            chip_str(&plan->topo, ctx->x->local_chips[0], me, sizeof(me));
            who[0] = '\0';
            for (i = 0; i < npend && used < (int)sizeof(who) - 64; i++) {
                if (pend[i].req != NULL && pend[i].is_recv) {
                    char c[64];

                    chip_str(&plan->topo, sc->flows[pend[i].flow].src, c, sizeof(c));
                    used += snprintf(who + used, sizeof(who) - (size_t)used, "%s%s",
                                     used ? ", " : "", c);
                }
            }
            return tpu_err_set(err, TPU_ERR_TIMEOUT,
                               "watchdog: %s waited %.0f s in %s (call %llu) for %s", me,
                               opts->timeout_s, plan->name, (unsigned long long)opts->call,
                               used ? who : "its sends to complete");
        }
        if (!progressed) {
            ctx->x->ops->idle(ctx->x, rounds++);
        } else {
            rounds = 0;
        }
    }
    return TPU_OK;
}

/* Convert 'n' elements between the user's dtype and the working dtype. */
static void widen(const run_ctx_t *ctx, void *dst, const void *src, size_t bytes)
{
    if (ctx->plan->data_scale == 2) {
        size_t i, n = bytes / 2;

        for (i = 0; i < n; i++) {
            ((float *)dst)[i] = tpu_bf16_to_f32(((const uint16_t *)src)[i]);
        }
    } else {
        memcpy(dst, src, bytes);
    }
}

static void narrow(const run_ctx_t *ctx, void *dst, const void *src, size_t bytes)
{
    if (ctx->plan->data_scale == 2) {
        size_t i, n = bytes / 2;

        for (i = 0; i < n; i++) {
            ((uint16_t *)dst)[i] = tpu_f32_to_bf16(((const float *)src)[i]);
        }
    } else {
        memcpy(dst, src, bytes);
    }
}

/* Set up the buffers the schedule works on, per collective. */
static tpu_status_t prepare(run_ctx_t *ctx, void *const *in, void *const *out)
{
    const tpu_coll_plan_t *p = ctx->plan;
    tpu_coll_kind_t kind = p->desc.kind;
    int i;

    for (i = 0; i < ctx->x->nlocal; i++) {
        int chip = ctx->x->local_chips[i];
        int64_t g = kind == TPU_COLL_P2P ? 0 : tpu_topo_group_index(&p->topo, p->desc.axes, chip);
        int owned = kind == TPU_COLL_REDUCE_SCATTER ||
                    (kind == TPU_COLL_PSUM &&
                     (p->data_scale == 2 || (uint64_t)p->work_bytes != p->desc.bytes));

        ctx->work[i] = NULL;
        if (owned) {
            ctx->work[i] = tpu__calloc(1, (size_t)p->work_bytes * (size_t)p->data_scale);
            if (ctx->work[i] == NULL) {
                return TPU_ERR_NO_MEMORY;
            }
        }
        switch (kind) {
        case TPU_COLL_ALL_GATHER:
            ctx->send[i] = ctx->recv[i] = out[i];
            memcpy((unsigned char *)out[i] + g * p->shard, in[i], (size_t)p->shard);
            break;
        case TPU_COLL_REDUCE_SCATTER:
        case TPU_COLL_PSUM:
            ctx->send[i] = ctx->recv[i] = owned ? ctx->work[i] : out[i];
            widen(ctx, ctx->send[i], in[i], (size_t)p->desc.bytes);
            break;
        default:
            ctx->send[i] = in[i];
            ctx->recv[i] = out[i];
            if (p->sched.nlocal > 0) {
                int k;

                for (k = 0; k < p->sched.nlocal; k++) {
                    const tpu_copy_t *c = &p->sched.local[k];

                    memcpy((unsigned char *)out[i] + c->dst_off + g * p->sched.local_dst_shift,
                           (unsigned char *)in[i] + c->src_off + g * p->sched.local_src_shift,
                           (size_t)c->len);
                }
            }
            break;
        }
    }
    return TPU_OK;
}

static void finish(run_ctx_t *ctx, void *const *out)
{
    const tpu_coll_plan_t *p = ctx->plan;
    int i;

    for (i = 0; i < ctx->x->nlocal; i++) {
        int chip = ctx->x->local_chips[i];

        if (p->desc.kind == TPU_COLL_REDUCE_SCATTER) {
            int64_t g = tpu_topo_group_index(&p->topo, p->desc.axes, chip);

            narrow(ctx, out[i], ctx->work[i] + g * p->shard * p->data_scale, (size_t)p->shard);
        } else if (p->desc.kind == TPU_COLL_PSUM && ctx->work[i] != NULL) {
            narrow(ctx, out[i], ctx->work[i], (size_t)p->desc.bytes);
        }
    }
}

static tpu_status_t check_peers(run_ctx_t *ctx, tpu_err_t *err)
{
    tpu_xport_t *x = ctx->x;
    tpu_call_sig_t *mine = NULL, *all = NULL;
    tpu_status_t status = TPU_OK;
    int i;

    mine = tpu__malloc((size_t)x->nlocal * sizeof(*mine));
    all = tpu__malloc((size_t)x->nchips * sizeof(*all));
    if (mine == NULL || all == NULL) {
        status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory checking peers");
        goto out;
    }
    for (i = 0; i < x->nlocal; i++) {
        mine[i] = ctx->sig;
    }
    status = x->ops->gather_sigs(x, mine, all);
    if (status != TPU_OK) {
        status = tpu_err_set(err, status, "transport %s failed comparing calls: %s", x->ops->name,
                             x->msg);
        goto out;
    }
    for (i = 0; i < x->nchips; i++) {
        if (!sig_equal(&all[i], &all[0])) {
            char a[64], b[64], sa[160], sb[160];

            chip_str(&ctx->plan->topo, 0, a, sizeof(a));
            chip_str(&ctx->plan->topo, i, b, sizeof(b));
            sig_str(&all[0], sa, sizeof(sa));
            sig_str(&all[i], sb, sizeof(sb));
            status = tpu_err_set(err, TPU_ERR_MISMATCH,
                                 "collective mismatch: %s is in %s, but %s is in %s", a, sa, b, sb);
            goto out;
        }
    }
out:
    tpu__free(all);
    tpu__free(mine);
    return status;
}

/* Scratch bytes the largest step's reducing receives need on the local chips. */
static int64_t scratch_need(const tpu_coll_plan_t *plan, const uint8_t *is_local)
{
    int64_t best = 0;
    int s;

    for (s = 0; s < plan->sched.nsteps; s++) {
        int64_t sum = 0, i;

        for (i = plan->step_start[s]; i < plan->step_start[s + 1]; i++) {
            const tpu_flow_t *f = &plan->sched.flows[i];

            if (f->reduce && is_local[f->dst]) {
                sum += tpu__span_bytes(&f->span) * plan->data_scale;
            }
        }
        if (sum > best) {
            best = sum;
        }
    }
    return best;
}

tpu_status_t tpu_coll_run(const tpu_coll_plan_t *plan, tpu_xport_t *x,
                          const tpu_coll_run_opts_t *opts, void *const *in, void *const *out,
                          double *modeled_us_p, tpu_err_t *err)
{
    const tpu_sched_t *sc = &plan->sched;
    tpu_coll_run_opts_t defaults = {0, 0, 1, 0};
    run_ctx_t ctx;
    timing_t t;
    pending_t *pend = NULL;
    unsigned char *scratch = NULL;
    int64_t maxstep = 0;
    double local_end = 0, end = 0;
    tpu_status_t status;
    int s, i;

    if (opts == NULL) {
        opts = &defaults;
    }
    if (x->nchips != plan->topo.nchips) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "the transport hosts a pod of %d chips, the plan is for %d", x->nchips,
                           plan->topo.nchips);
    }
    memset(&ctx, 0, sizeof(ctx));
    ctx.plan = plan;
    ctx.x = x;
    ctx.work_dtype = plan->data_scale == 2 ? TPU_DTYPE_F32 : plan->desc.dtype;
    ctx.sig.call = opts->call;
    ctx.sig.bytes = plan->desc.bytes;
    ctx.sig.kind = (int32_t)plan->desc.kind;
    ctx.sig.axes = (int32_t)plan->desc.axes;
    ctx.sig.dtype = (int32_t)plan->desc.dtype;
    ctx.sig.op = (int32_t)plan->desc.op;
    status = timing_init(&t, plan);
    if (status != TPU_OK) {
        return tpu_err_set(err, status, "out of memory for the timing of %s", plan->name);
    }
    ctx.local_index = tpu__malloc((size_t)x->nchips * sizeof(int));
    ctx.is_local = tpu__calloc((size_t)x->nchips, 1);
    ctx.send = tpu__calloc((size_t)x->nlocal, sizeof(void *));
    ctx.recv = tpu__calloc((size_t)x->nlocal, sizeof(void *));
    ctx.work = tpu__calloc((size_t)x->nlocal, sizeof(void *));
    if (ctx.local_index == NULL || ctx.is_local == NULL || ctx.send == NULL || ctx.recv == NULL ||
        ctx.work == NULL) {
        status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory running %s", plan->name);
        goto out;
    }
    for (i = 0; i < x->nchips; i++) {
        ctx.local_index[i] = -1;
    }
    for (i = 0; i < x->nlocal; i++) {
        ctx.local_index[x->local_chips[i]] = i;
        ctx.is_local[x->local_chips[i]] = 1;
    }
    if (opts->check_peers) {
        status = check_peers(&ctx, err);
        if (status != TPU_OK) {
            goto out;
        }
    }
    if (x->moves_data) {
        status = prepare(&ctx, in, out);
        if (status != TPU_OK) {
            tpu_err_set(err, status, "out of memory for the working buffers of %s", plan->name);
            goto out;
        }
        scratch = tpu__malloc((size_t)scratch_need(plan, ctx.is_local) + 1);
        if (scratch == NULL) {
            status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for receive scratch");
            goto out;
        }
    }
    for (s = 0; s < sc->nsteps; s++) {
        int64_t n = plan->step_start[s + 1] - plan->step_start[s];

        if (n > maxstep) {
            maxstep = n;
        }
    }
    pend = tpu__calloc((size_t)(2 * maxstep + 1), sizeof(*pend));
    if (pend == NULL) {
        status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for pending requests");
        goto out;
    }
    for (s = 0; s < sc->nsteps; s++) {
        int64_t first = plan->step_start[s], last = plan->step_start[s + 1], f;
        int npend = 0;
        int64_t sused = 0;

        /* Receives first, so that every send of the step finds its receive posted. */
        for (f = first; f < last; f++) {
            const tpu_flow_t *fl = &sc->flows[f];
            pending_t *p;
            tpu_region_t r;

            if (!ctx.is_local[fl->dst]) {
                continue;
            }
            p = &pend[npend];
            memset(p, 0, sizeof(*p));
            p->flow = f;
            p->is_recv = 1;
            if (x->moves_data && fl->reduce) {
                tpu_span_t flat = fl->span;

                flat.len = tpu__span_bytes(&fl->span);
                flat.count[0] = flat.count[1] = flat.count[2] = 1;
                p->scratch = scratch + sused;
                r = span_region(p->scratch, &flat, 0, plan->data_scale);
                sused += flat.len * plan->data_scale;
            } else {
                r = span_region(x->moves_data ? ctx.recv[ctx.local_index[fl->dst]] : NULL,
                                &fl->span, fl->span.dst_off, plan->data_scale);
            }
            status = x->ops->irecv(x, fl->dst, fl->src, (int)(f & 0x3fffff), &p->hdr, &r, &p->req);
            if (status != TPU_OK) {
                tpu_err_set(err, status, "transport %s: receive failed: %s", x->ops->name, x->msg);
                goto out_cancel;
            }
            npend++;
        }
        time_step(&t, plan, s, ctx.is_local);
        for (f = first; f < last; f++) {
            const tpu_flow_t *fl = &sc->flows[f];
            pending_t *p;
            tpu_region_t r;

            if (!ctx.is_local[fl->src]) {
                continue;
            }
            p = &pend[npend];
            memset(p, 0, sizeof(*p));
            p->flow = f;
            p->hdr.sig = ctx.sig;
            p->hdr.flow = f;
            p->hdr.arrival = t.arrival[f];
            p->hdr.bytes = tpu__span_bytes(&fl->span);
            r = span_region(x->moves_data ? ctx.send[ctx.local_index[fl->src]] : NULL, &fl->span,
                            fl->span.off, plan->data_scale);
            status = x->ops->isend(x, fl->src, fl->dst, (int)(f & 0x3fffff), &p->hdr, &r, &p->req);
            if (status != TPU_OK) {
                tpu_err_set(err, status, "transport %s: send failed: %s", x->ops->name, x->msg);
                goto out_cancel;
            }
            npend++;
        }
        status = wait_all(&ctx, &t, pend, npend, opts, err);
        if (status != TPU_OK) {
            goto out_cancel;
        }
        tpu__linkmodel_end_step(&t.lm);
        continue;
out_cancel:
        for (i = 0; i < npend; i++) {
            if (pend[i].req != NULL) {
                x->ops->cancel(x, pend[i].req);
            }
        }
        goto out;
    }
    if (x->moves_data) {
        finish(&ctx, out);
    }
    for (i = 0; i < sc->nflows; i++) {
        const tpu_flow_t *fl = &sc->flows[i];

        if ((ctx.is_local[fl->dst] || ctx.is_local[fl->src]) && t.arrival[i] > local_end) {
            local_end = t.arrival[i];
        }
    }
    end = local_end;
    if (!opts->local_time) {
        status = x->ops->max_time(x, local_end, &end);
        if (status != TPU_OK) {
            tpu_err_set(err, status, "transport %s: max over chips failed: %s", x->ops->name,
                        x->msg);
            goto out;
        }
    }
    *modeled_us_p = end * 1e6;
    status = TPU_OK;
out:
    if (ctx.work != NULL) {
        for (i = 0; i < x->nlocal; i++) {
            tpu__free(ctx.work[i]);
        }
    }
    tpu__free(pend);
    tpu__free(scratch);
    tpu__free(ctx.work);
    tpu__free(ctx.recv);
    tpu__free(ctx.send);
    tpu__free(ctx.is_local);
    tpu__free(ctx.local_index);
    timing_fini(&t);
    return status;
}
