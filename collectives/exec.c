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
 * modeled time therefore depends only on the schedule and the constants: the
 * model path (time.c) runs the very same timing code with every chip local.
 *
 * A run object (tpu_coll_exec_t) holds what runs of one plan over one transport
 * share: the schedule of every chip (built once when the model used one chip's),
 * the chip maps, and the working and scratch buffers (fresh ones would
 * page-fault on every call).  The plan itself is never changed.
 */
#include "tpu/alloc.h"
#include "tpu/dtype.h"

#include "clock.h"
#include "plan.h"
#include "reduce.h"
#include "timing.h"

#include <stdio.h>
#include <string.h>

typedef struct pending {
    tpu_xport_req_t *req; /* NULL once complete */
    int64_t flow;
    int posted;
    tpu_msg_hdr_t hdr;
    unsigned char *scratch; /* reduce receives land here */
} pending_t;

struct tpu_coll_exec {
    const tpu_coll_plan_t *plan;
    const tpu_plan_sched_t *ps; /* the schedule of every chip: &full or &plan->model */
    tpu_plan_sched_t full;      /* built here when the model schedule is one chip's */
    tpu_xport_t *x;
    int *local_index; /* chip -> index among local chips, or -1 */
    uint8_t *is_local;
    unsigned char **send;   /* per local chip: the buffer flows read */
    unsigned char **recv;   /* per local chip: the buffer flows write */
    unsigned char **work;   /* per local chip: the working buffer, or NULL */
    int nwork;              /* entries of 'work' (the transport's local chips) */
    unsigned char *scratch; /* receive scratch of reducing flows */
    tpu_call_sig_t sig;     /* the current run's call */
    tpu_dtype_t work_dtype;
};

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
static void reduce_into(const tpu_coll_exec_t *ctx, const tpu_region_t *r, const unsigned char *src)
{
    int64_t b, nblocks = tpu_xport_region_blocks(r);
    int esz = tpu_dtype_size(ctx->work_dtype);

    for (b = 0; b < nblocks; b++, src += r->len) {
        tpu__reduce(ctx->work_dtype, ctx->plan->desc.op, tpu_xport_region_block(r, b), src,
                    (size_t)(r->len / esz));
    }
}

/*
 * The dataflow engine.  Every receive of the local chips is posted at once; a send
 * goes out as soon as the flows it depends on have arrived, so a chip never waits
 * for a neighbour whose data it does not need yet (on a node with more ranks than
 * cores, waiting for every neighbour at every step is what costs).  Two orders are
 * kept so that results and modeled times stay deterministic:
 *   - reducing receives are added into the buffer in flow order (the schedule's
 *     step order), whatever order they arrive in: the same rounding every run;
 *   - sends are timed step by step, with the loads of their step and the port
 *     times of the steps before, exactly as tpu__time_schedule() does.
 */
typedef struct engine {
    tpu_coll_exec_t *ctx;
    tpu_timing_t *t;
    const tpu_coll_run_opts_t *opts;
    pending_t *recv; /* receives of the local chips, in flow order */
    int nrecv;
    pending_t *send; /* sends of the local chips, in flow order */
    int nsend;
    uint8_t *state; /* per flow: 1 arrived, 2 arrived and reduced (usable) */
    int rr;         /* next receive (index into recv) to reduce, in order */
    int step;       /* the step whose sends are being timed */
    int step_send;  /* first send of that step */
    int posted;     /* sends posted so far (a prefix of each step's, any order inside) */
    int loaded;     /* the loads of 'step' are counted */
    int recv_left, send_left;
    int recv_open;          /* every receive before it has completed */
    int send_open;          /* every send before it has completed */
    tpu_xport_req_t **reqs; /* scratch for test_many */
    int *which;
    double deadline;
} engine_t;

/*
 * Test the requests of 'pend[open, n)' in one call of the transport (one pass of
 * the MPI progress engine, not one per request: testing hundreds one by one would
 * burn the CPU the other ranks of an oversubscribed node need).  Completed ones
 * get req = NULL; '*ndone_p' counts them.
 */
static tpu_status_t test_pending(engine_t *e, pending_t *pend, int *open_p, int n, int *ndone_p)
{
    int i, k = 0;
    tpu_status_t status;

    while (*open_p < n && pend[*open_p].posted && pend[*open_p].req == NULL) {
        (*open_p)++;
    }
    for (i = *open_p; i < n; i++) {
        if (pend[i].req != NULL) {
            e->reqs[k] = pend[i].req;
            e->which[k++] = i;
        }
    }
    *ndone_p = 0;
    if (k == 0) {
        return TPU_OK;
    }
    status = e->ctx->x->ops->test_many(e->ctx->x, e->reqs, k);
    for (i = 0; i < k; i++) {
        if (e->reqs[i] == NULL) {
            pend[e->which[i]].req = NULL;
            (*ndone_p)++;
        }
    }
    return status;
}

static tpu_status_t fail_transport(engine_t *e, const char *what, tpu_status_t status,
                                   tpu_err_t *err)
{
    char me[64];

    chip_str(&e->ctx->plan->topo, e->ctx->x->local_chips[0], me, sizeof(me));
    return tpu_err_set(err, status, "%s: transport %s failed %s in %s: %s", me,
                       e->ctx->x->ops->name, what, e->ctx->plan->name, e->ctx->x->msg);
}

/* Test the outstanding receives; check headers; reduce in order. */
static tpu_status_t poll_recvs(engine_t *e, int *progress_p, tpu_err_t *err)
{
    tpu_coll_exec_t *ctx = e->ctx;
    const tpu_coll_plan_t *plan = ctx->plan;
    const tpu_sched_t *sc = &ctx->ps->s;
    int i, ndone, first = e->recv_open;
    tpu_status_t status = test_pending(e, e->recv, &e->recv_open, e->nrecv, &ndone);

    if (status != TPU_OK) {
        return fail_transport(e, "receiving", status, err);
    }
    for (i = first; ndone > 0 && i < e->nrecv; i++) {
        pending_t *p = &e->recv[i];
        const tpu_flow_t *f = &sc->flows[p->flow];

        if (p->req != NULL || e->state[p->flow] != 0) {
            continue;
        }
        ndone--;
        e->recv_left--;
        *progress_p = 1;
        if (!sig_equal(&p->hdr.sig, &ctx->sig) || p->hdr.flow != p->flow ||
            p->hdr.bytes != tpu__span_bytes(&f->span)) {
            char a[64], b[64], sa[160], sb[160];

            chip_str(&plan->topo, f->dst, a, sizeof(a));
            chip_str(&plan->topo, f->src, b, sizeof(b));
            sig_str(&ctx->sig, sa, sizeof(sa));
            sig_str(&p->hdr.sig, sb, sizeof(sb));
            return tpu_err_set(err, TPU_ERR_MISMATCH,
                               "collective mismatch: %s is in %s, but %s sent a message of %s", a,
                               sa, b, sb);
        }
        e->t->arrival[p->flow] = p->hdr.arrival;
        e->state[p->flow] = f->reduce && ctx->x->moves_data ? 1 : 2;
    }
    while (e->rr < e->nrecv) {
        pending_t *p = &e->recv[e->rr];
        const tpu_flow_t *f = &sc->flows[p->flow];

        if (e->state[p->flow] == 0) {
            break;
        }
        if (e->state[p->flow] == 1) {
            int li = ctx->local_index[f->dst];
            tpu_region_t r =
                span_region(ctx->recv[li], &f->span, f->span.dst_off, plan->data_scale);

            reduce_into(ctx, &r, p->scratch);
            e->state[p->flow] = 2;
        }
        e->rr++;
    }
    return TPU_OK;
}

/* Time and post the sends whose data is there, step by step. */
static tpu_status_t post_sends(engine_t *e, int *progress_p, tpu_err_t *err)
{
    tpu_coll_exec_t *ctx = e->ctx;
    const tpu_plan_sched_t *ps = ctx->ps;
    const tpu_sched_t *sc = &ps->s;
    tpu_xport_t *x = ctx->x;

    while (e->step < sc->nsteps) {
        int end = e->step_send, i, waiting = 0;

        while (end < e->nsend && sc->flows[e->send[end].flow].step == e->step) {
            end++;
        }
        if (end > e->step_send && !e->loaded) {
            /* The step's loads, once, before its first send is timed. */
            tpu__timing_load(e->t, ps, e->step);
            e->loaded = 1;
        }
        for (i = e->step_send; i < end; i++) {
            pending_t *p = &e->send[i];
            const tpu_flow_t *f = &sc->flows[p->flow];
            int32_t k, ok = 1;
            tpu_region_t r;
            tpu_status_t status;

            if (p->posted) {
                continue;
            }
            for (k = 0; k < f->ndeps && ok; k++) {
                ok = e->state[sc->deps[f->dep_first + k]] == 2;
            }
            if (!ok) {
                waiting = 1;
                continue;
            }
            tpu__timing_flow(e->t, sc, p->flow, ps->step_start[e->step],
                             tpu__timing_ready(e->t, sc, f));
            p->hdr.sig = ctx->sig;
            p->hdr.flow = p->flow;
            p->hdr.arrival = e->t->arrival[p->flow];
            p->hdr.bytes = tpu__span_bytes(&f->span);
            r = span_region(x->moves_data ? ctx->send[ctx->local_index[f->src]] : NULL, &f->span,
                            f->span.off, ctx->plan->data_scale);
            status =
                x->ops->isend(x, f->src, f->dst, (int)(p->flow & 0x3fffff), &p->hdr, &r, &p->req);
            if (status != TPU_OK) {
                return fail_transport(e, "sending", status, err);
            }
            p->posted = 1;
            e->posted++;
            *progress_p = 1;
        }
        if (waiting) {
            return TPU_OK;
        }
        for (i = e->step_send; i < end; i++) {
            tpu__timing_commit(e->t, sc, e->send[i].flow, ps->step_start[e->step]);
        }
        if (end > e->step_send) {
            tpu__timing_end_step(e->t);
        }
        e->step_send = end;
        e->step++;
        e->loaded = 0;
    }
    return TPU_OK;
}

static tpu_status_t poll_sends(engine_t *e, int *progress_p, tpu_err_t *err)
{
    int ndone;
    tpu_status_t status = test_pending(e, e->send, &e->send_open, e->nsend, &ndone);

    if (status != TPU_OK) {
        return fail_transport(e, "sending", status, err);
    }
    e->send_left -= ndone;
    *progress_p |= ndone > 0;
    return TPU_OK;
}

static tpu_status_t watchdog(engine_t *e, tpu_err_t *err)
{
    const tpu_coll_plan_t *plan = e->ctx->plan;
    char me[64], who[512];
    int used = 0, i;

    chip_str(&plan->topo, e->ctx->x->local_chips[0], me, sizeof(me));
    who[0] = '\0';
    for (i = 0; i < e->nrecv && used < (int)sizeof(who) - 64; i++) {
        if (e->recv[i].req != NULL) {
            char c[64];
            int src = e->ctx->ps->s.flows[e->recv[i].flow].src;

            chip_str(&plan->topo, src, c, sizeof(c));
            if (strstr(who, c) == NULL) {
                used +=
                    snprintf(who + used, sizeof(who) - (size_t)used, "%s%s", used ? ", " : "", c);
            }
        }
    }
    return tpu_err_set(err, TPU_ERR_TIMEOUT, "watchdog: %s waited %.0f s in %s (call %llu) for %s",
                       me, e->opts->timeout_s, plan->name, (unsigned long long)e->opts->call,
                       used ? who : "its sends to complete");
}

static tpu_status_t run_engine(engine_t *e, tpu_err_t *err)
{
    int rounds = 0;

    while (e->recv_left > 0 || e->send_left > 0 || e->step < e->ctx->ps->s.nsteps) {
        int progress = 0;
        tpu_status_t status = poll_recvs(e, &progress, err);

        if (status == TPU_OK) {
            status = post_sends(e, &progress, err);
        }
        if (status == TPU_OK) {
            status = poll_sends(e, &progress, err);
        }
        if (status != TPU_OK) {
            return status;
        }
        if (progress) {
            rounds = 0;
            continue;
        }
        if (e->deadline > 0 && tpu__now_s() > e->deadline) {
            return watchdog(e, err);
        }
        if (e->ctx->x->nlocal == e->ctx->x->nchips) {
            /* Every chip is here and none can move: nothing outside can change that. */
            return tpu_err_set(err, TPU_ERR_INTERNAL,
                               "the %s schedule stalled with every chip in this process (%d "
                               "receives and %d sends open)",
                               e->ctx->plan->name, e->recv_left, e->send_left);
        }
        e->ctx->x->ops->idle(e->ctx->x, rounds++);
    }
    return TPU_OK;
}

/* Convert 'n' elements between the user's dtype and the working dtype. */
static void widen(const tpu_coll_exec_t *ctx, void *dst, const void *src, size_t bytes)
{
    if (ctx->plan->data_scale == 2) {
        tpu_dtype_bf16_widen(src, dst, bytes / 2);
    } else {
        memcpy(dst, src, bytes);
    }
}

static void narrow(const tpu_coll_exec_t *ctx, void *dst, const void *src, size_t bytes)
{
    if (ctx->plan->data_scale == 2) {
        tpu_dtype_bf16_narrow(src, dst, bytes / 2);
    } else {
        memcpy(dst, src, bytes);
    }
}

/*
 * Set up the buffers the schedule works on.  The all-gather family works in its
 * working layout (schedule.h): the input is permuted into it here, and out of
 * it in finish().  The others read the input and write the output directly.
 */
static void prepare(tpu_coll_exec_t *ctx, void *const *in, void *const *out)
{
    const tpu_coll_plan_t *p = ctx->plan;
    const tpu_sched_t *sc = &ctx->ps->s;
    tpu_coll_kind_t kind = p->desc.kind;
    int64_t scale = p->data_scale, V = (int64_t)p->desc.bytes;
    int i, k;

    for (i = 0; i < ctx->x->nlocal; i++) {
        int chip = ctx->x->local_chips[i];
        int64_t me =
            kind == TPU_COLL_P2P || p->desc.pairs != NULL ? 0 : tpu__plan_member_index(p, chip);
        unsigned char *w = ctx->work[i];
        int64_t g;

        if (sc->nlayout == 0) {
            ctx->send[i] = in[i];
            ctx->recv[i] = out[i];
            for (k = 0; k < sc->nlocal; k++) {
                const tpu_copy_t *c = &sc->local[k];

                memcpy((unsigned char *)out[i] + c->dst_off + me * sc->local_dst_shift,
                       (unsigned char *)in[i] + c->src_off + me * sc->local_src_shift,
                       (size_t)c->len);
            }
            continue;
        }
        ctx->send[i] = ctx->recv[i] = w;
        for (k = 0; k < sc->nlayout; k++) {
            const tpu_layout_t *l = &sc->layout[k];

            if (kind == TPU_COLL_ALL_GATHER) {
                memcpy(w + tpu__layout_offset(l, me), (unsigned char *)in[i] + l->sub_off,
                       (size_t)l->sub_len);
                continue;
            }
            for (g = 0; g < p->group; g++) {
                int64_t uo = g * p->shard + l->sub_off, lo = tpu__layout_offset(l, g) * scale;
                int64_t n = uo >= V ? 0 : (uo + l->sub_len > V ? V - uo : l->sub_len);

                /* A psum's padding (past V) starts at zero. */
                widen(ctx, w + lo, (unsigned char *)in[i] + uo, (size_t)n);
                memset(w + lo + n * scale, 0, (size_t)((l->sub_len - n) * scale));
            }
        }
    }
}

static void finish(tpu_coll_exec_t *ctx, void *const *out)
{
    const tpu_coll_plan_t *p = ctx->plan;
    const tpu_sched_t *sc = &ctx->ps->s;
    int64_t scale = p->data_scale, V = (int64_t)p->desc.bytes;
    int i, k;

    for (i = 0; i < ctx->x->nlocal && sc->nlayout > 0; i++) {
        int64_t me = tpu__plan_member_index(p, ctx->x->local_chips[i]);
        unsigned char *w = ctx->work[i], *o = out[i];
        int64_t g;

        for (k = 0; k < sc->nlayout; k++) {
            const tpu_layout_t *l = &sc->layout[k];

            if (p->desc.kind == TPU_COLL_REDUCE_SCATTER) {
                narrow(ctx, o + l->sub_off, w + tpu__layout_offset(l, me) * scale,
                       (size_t)l->sub_len);
                continue;
            }
            for (g = 0; g < p->group; g++) {
                int64_t uo = g * p->shard + l->sub_off;
                int64_t n = uo >= V ? 0 : (uo + l->sub_len > V ? V - uo : l->sub_len);

                narrow(ctx, o + uo, w + tpu__layout_offset(l, g) * scale, (size_t)n);
            }
        }
    }
}

static tpu_status_t check_peers(tpu_coll_exec_t *ctx, tpu_err_t *err)
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

/* Scratch bytes all reducing receives of the local chips need (each its own). */
static int64_t scratch_need(const tpu_coll_plan_t *plan, const tpu_plan_sched_t *ps,
                            const uint8_t *is_local)
{
    int64_t sum = 0, i;

    for (i = 0; i < ps->s.nflows; i++) {
        const tpu_flow_t *f = &ps->s.flows[i];

        if (f->reduce && is_local[f->dst]) {
            sum += tpu__span_bytes(&f->span) * plan->data_scale;
        }
    }
    return sum;
}

void tpu_coll_exec_destroy(tpu_coll_exec_t *exec)
{
    int i;

    if (exec == NULL) {
        return;
    }
    for (i = 0; i < exec->nwork; i++) {
        tpu__free(exec->work[i]);
    }
    tpu__free(exec->work);
    tpu__free(exec->scratch);
    tpu__free(exec->recv);
    tpu__free(exec->send);
    tpu__free(exec->is_local);
    tpu__free(exec->local_index);
    tpu__plan_sched_fini(&exec->full);
    tpu__free(exec);
}

tpu_status_t tpu_coll_exec_create(const tpu_coll_plan_t *plan, tpu_xport_t *x,
                                  tpu_coll_exec_t **exec_p, tpu_err_t *err)
{
    tpu_coll_exec_t *e;
    tpu_status_t status;
    int i;

    if (x->nchips != plan->topo.nchips) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "the transport hosts a pod of %d chips, the plan is for %d", x->nchips,
                           plan->topo.nchips);
    }
    e = tpu__calloc(1, sizeof(*e));
    if (e == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory running %s", plan->name);
    }
    e->plan = plan;
    e->x = x;
    e->work_dtype = plan->data_scale == 2 ? TPU_DTYPE_F32 : plan->desc.dtype;
    /* Runs with data need every chip's flows; the model may hold one chip's. */
    e->ps = &plan->model;
    if (plan->model.rep >= 0 || plan->model.orbit) {
        status = tpu__plan_build(plan, plan->algo, plan->args.chunks, -1, 0, &e->full, err);
        if (status != TPU_OK) {
            goto fail;
        }
        e->ps = &e->full;
    }
    e->local_index = tpu__malloc((size_t)x->nchips * sizeof(int));
    e->is_local = tpu__calloc((size_t)x->nchips, 1);
    e->send = tpu__calloc((size_t)x->nlocal, sizeof(void *));
    e->recv = tpu__calloc((size_t)x->nlocal, sizeof(void *));
    e->work = tpu__calloc((size_t)x->nlocal, sizeof(void *));
    if (e->local_index == NULL || e->is_local == NULL || e->send == NULL || e->recv == NULL ||
        e->work == NULL) {
        status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory running %s", plan->name);
        goto fail;
    }
    e->nwork = x->nlocal;
    for (i = 0; i < x->nchips; i++) {
        e->local_index[i] = -1;
    }
    for (i = 0; i < x->nlocal; i++) {
        e->local_index[x->local_chips[i]] = i;
        e->is_local[x->local_chips[i]] = 1;
    }
    if (x->moves_data) {
        size_t work = (size_t)plan->work_bytes * (size_t)plan->data_scale;
        int64_t need = scratch_need(plan, e->ps, e->is_local);

        for (i = 0; i < x->nlocal && e->ps->s.nlayout > 0; i++) {
            e->work[i] = tpu__malloc(work);
            if (e->work[i] == NULL) {
                status = tpu_err_set(err, TPU_ERR_NO_MEMORY,
                                     "out of memory for the working buffers of %s", plan->name);
                goto fail;
            }
        }
        if (need > 0) {
            e->scratch = tpu__malloc((size_t)need);
            if (e->scratch == NULL) {
                status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for receive scratch");
                goto fail;
            }
        }
    }
    *exec_p = e;
    return TPU_OK;
fail:
    tpu_coll_exec_destroy(e);
    return status;
}

tpu_status_t tpu_coll_exec_run(tpu_coll_exec_t *exec, const tpu_coll_run_opts_t *opts,
                               void *const *in, void *const *out, double *modeled_us_p,
                               tpu_err_t *err)
{
    const tpu_coll_plan_t *plan = exec->plan;
    const tpu_plan_sched_t *ps = exec->ps;
    const tpu_sched_t *sc = &ps->s;
    tpu_coll_run_opts_t defaults = {0, 0, 1, 0};
    tpu_coll_exec_t *ctx = exec;
    tpu_xport_t *x = exec->x;
    tpu_timing_t t;
    pending_t *pend = NULL;
    unsigned char *scratch = exec->scratch;
    double local_end = 0, end = 0;
    tpu_status_t status;
    int i;

    if (opts == NULL) {
        opts = &defaults;
    }
    ctx->sig.call = opts->call;
    ctx->sig.bytes = plan->desc.bytes;
    ctx->sig.kind = (int32_t)plan->desc.kind;
    ctx->sig.axes = (int32_t)plan->desc.axes;
    if (plan->desc.groups != NULL || plan->desc.pairs != NULL) {
        /* Groups or pairs: a hash of them, so chips in different sets mismatch. */
        const int32_t *v = plan->desc.groups != NULL ? plan->groups.chips : plan->pairs;
        int64_t n = plan->desc.groups != NULL ? (int64_t)plan->groups.ngroups * plan->groups.size
                                              : 2 * (int64_t)plan->desc.npairs,
                k;
        uint32_t h = 2166136261u;

        for (k = 0; k < n; k++) {
            h = (h ^ (uint32_t)v[k]) * 16777619u;
        }
        ctx->sig.axes = (int32_t)(0x40000000u | (h & 0x3fffffffu));
    }
    ctx->sig.dtype = (int32_t)plan->desc.dtype;
    ctx->sig.op = (int32_t)plan->desc.op;
    status = tpu__timing_init(&t, &plan->topo, &plan->link, ps);
    if (status != TPU_OK) {
        return tpu_err_set(err, status, "out of memory for the timing of %s", plan->name);
    }
    if (opts->check_peers) {
        status = check_peers(ctx, err);
        if (status != TPU_OK) {
            goto out;
        }
    }
    if (x->moves_data) {
        prepare(ctx, in, out);
    }
    {
        engine_t e;
        int64_t f, sused = 0;

        memset(&e, 0, sizeof(e));
        e.ctx = ctx;
        e.t = &t;
        e.opts = opts;
        e.deadline = opts->timeout_s > 0 ? tpu__now_s() + opts->timeout_s : 0;
        for (f = 0; f < sc->nflows; f++) {
            e.nrecv += ctx->is_local[sc->flows[f].dst];
            e.nsend += ctx->is_local[sc->flows[f].src];
        }
        pend = tpu__calloc((size_t)(e.nrecv + e.nsend + 1), sizeof(*pend));
        e.state = tpu__calloc((size_t)sc->nflows + 1, 1);
        e.reqs = tpu__malloc((size_t)(e.nrecv + e.nsend + 1) * sizeof(*e.reqs));
        e.which = tpu__malloc((size_t)(e.nrecv + e.nsend + 1) * sizeof(*e.which));
        if (pend == NULL || e.state == NULL || e.reqs == NULL || e.which == NULL) {
            tpu__free(e.which);
            tpu__free(e.reqs);
            tpu__free(e.state);
            status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for pending requests");
            goto out;
        }
        e.recv = pend;
        e.send = pend + e.nrecv;
        e.nrecv = e.nsend = 0;
        for (f = 0; f < sc->nflows; f++) {
            if (ctx->is_local[sc->flows[f].src]) {
                e.send[e.nsend++].flow = f;
            }
        }
        e.send_left = e.nsend;
        /* Every receive at once, each into its own place. */
        status = TPU_OK;
        for (f = 0; f < sc->nflows && status == TPU_OK; f++) {
            const tpu_flow_t *fl = &sc->flows[f];
            pending_t *p;
            tpu_region_t r;

            if (!ctx->is_local[fl->dst]) {
                continue;
            }
            p = &e.recv[e.nrecv];
            p->flow = f;
            if (x->moves_data && fl->reduce) {
                tpu_span_t flat = fl->span;

                flat.len = tpu__span_bytes(&fl->span);
                flat.count[0] = flat.count[1] = flat.count[2] = 1;
                p->scratch = scratch + sused;
                r = span_region(p->scratch, &flat, 0, plan->data_scale);
                sused += flat.len * plan->data_scale;
            } else {
                r = span_region(x->moves_data ? ctx->recv[ctx->local_index[fl->dst]] : NULL,
                                &fl->span, fl->span.dst_off, plan->data_scale);
            }
            status = x->ops->irecv(x, fl->dst, fl->src, (int)(f & 0x3fffff), &p->hdr, &r, &p->req);
            if (status != TPU_OK) {
                fail_transport(&e, "receiving", status, err);
                break;
            }
            p->posted = 1;
            e.nrecv++;
        }
        e.recv_left = e.nrecv;
        if (status == TPU_OK) {
            status = run_engine(&e, err);
        }
        if (status != TPU_OK) {
            for (i = 0; i < e.nrecv + e.nsend; i++) {
                if (pend[i].req != NULL) {
                    x->ops->cancel(x, pend[i].req);
                }
            }
            tpu__free(e.which);
            tpu__free(e.reqs);
            tpu__free(e.state);
            goto out;
        }
        tpu__free(e.which);
        tpu__free(e.reqs);
        tpu__free(e.state);
    }
    if (x->moves_data) {
        finish(ctx, out);
    }
    local_end = tpu__timing_local_end(&t, sc, ctx->is_local);
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
    tpu__free(pend);
    tpu__timing_fini(&t);
    return status;
}
