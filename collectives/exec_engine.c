/*
 * The message engine of a run: the receives and sends of the local chips' flows
 * over the transport.  Every receive is posted at once; a send goes out as soon
 * as the flows it depends on have arrived (and, when reducing, been added, in
 * flow order); every arrival's header is checked against the run's call
 * signature; a watchdog names the chips still awaited.  See exec.c for the run
 * object this works on.
 */
#include "exec_engine.h"

#include "tpu/dtype.h"

#include "alloc.h"
#include "clock.h"
#include "exec_sig.h"
#include "reduce.h"

#include <stdio.h>
#include <string.h>

typedef struct pending {
    tpu_xport_req_t *req; /* NULL once complete */
    int64_t flow;
    int posted;
    tpu_msg_hdr_t hdr;
    unsigned char *scratch; /* reduce receives land here */
} pending_t;

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
 * Wide mode (a bf16 reduction on a host plan): the bf16 words of flow 'f' ('src')
 * into local chip 'li''s f32 accumulator, the first of them copied (direct: member
 * 0's) unless the accumulator starts from the chip's input; after the chip's last
 * reducing receive, the accumulator is rounded once into the output, so the
 * chip's sends of it (direct2) carry the rounded bf16 words.
 */
static void wide_reduce(tpu_coll_exec_t *ctx, int li, const tpu_flow_t *f, const unsigned char *src)
{
    float *acc = ctx->acc[li] + (f->span.dst_off - ctx->acc_off[li]) / 2;
    size_t n = (size_t)(f->span.len / 2);

    if (ctx->acc_seen[li] == 0 && !ctx->acc_from_input) {
        tpu_dtype_bf16_widen((const uint16_t *)src, acc, n);
    } else {
        tpu__reduce_bf16(ctx->plan->desc.op, acc, (const uint16_t *)src, n);
    }
    if (++ctx->acc_seen[li] == ctx->acc_nred[li]) {
        tpu_dtype_bf16_narrow(ctx->acc[li], (uint16_t *)(ctx->recv[li] + ctx->acc_off[li]),
                              (size_t)(ctx->acc_len[li] / 2));
    }
}

/* The state of one run. */
typedef struct engine {
    tpu_coll_exec_t *ctx;
    const tpu_coll_run_opts_t *opts;
    pending_t *recv; /* receives of the local chips, in flow order */
    int nrecv;
    pending_t *send; /* sends of the local chips, in flow order */
    int nsend;
    uint8_t *state; /* per flow: 1 arrived, 2 arrived and reduced (usable) */
    int rr;         /* next receive (index into recv) to reduce, in order */
    int send_first; /* every send before it is posted */
    int recv_left, send_left, send_unposted;
    int recv_open;          /* every receive before it has completed */
    int send_open;          /* every send before it has completed */
    tpu_xport_req_t **reqs; /* scratch for test_many */
    int *which;
    double deadline;
    int tag_base; /* this run's epoch, shifted into place */
} engine_t;

/* The id that names flow 'f' in its messages (its tag and header). */
static int64_t msg_id(const tpu_coll_exec_t *ctx, int64_t f)
{
    return ctx->msg_id != NULL ? ctx->msg_id[f] : f;
}

/* The tag of flow 'f' in this run: even, unique per pair of chips modulo 2^flow_bits. */
static int flow_tag(const engine_t *e, int64_t f)
{
    return e->tag_base | (int)((msg_id(e->ctx, f) & ((1 << e->ctx->flow_bits) - 1)) << 1);
}

/* Move 'open' past the requests of 'pend[open, n)' that are posted and complete. */
static void skip_done(const pending_t *pend, int *open_p, int n)
{
    while (*open_p < n && pend[*open_p].posted && pend[*open_p].req == NULL) {
        (*open_p)++;
    }
}

/*
 * Test every open receive and send in one call of the transport: one pass of
 * the MPI progress engine per pass of the engine, not one per request (testing
 * hundreds one by one would burn the CPU the other ranks of an oversubscribed
 * node need) nor one per kind (an MPI library that yields the CPU when a pass
 * finds nothing yields once per test, and on 16 ranks on 2 cores each yield
 * waits a turn of every other process).  Completed ones get req = NULL, also
 * when the transport reports an error; '*nrecv_p' and '*nsend_p' count them.
 */
static tpu_status_t test_open(engine_t *e, int *nrecv_p, int *nsend_p)
{
    int i, k = 0;
    tpu_status_t status;

    skip_done(e->recv, &e->recv_open, e->nrecv);
    skip_done(e->send, &e->send_open, e->nsend);
    for (i = e->recv_open; i < e->nrecv; i++) {
        if (e->recv[i].req != NULL) {
            e->reqs[k] = e->recv[i].req;
            e->which[k++] = i;
        }
    }
    for (i = e->send_open; i < e->nsend; i++) {
        if (e->send[i].req != NULL) {
            e->reqs[k] = e->send[i].req;
            e->which[k++] = e->nrecv + i;
        }
    }
    *nrecv_p = *nsend_p = 0;
    if (k == 0) {
        return TPU_OK;
    }
    status = e->ctx->x->ops->test_many(e->ctx->x, e->reqs, k);
    for (i = 0; i < k; i++) {
        if (e->reqs[i] == NULL) {
            if (e->which[i] < e->nrecv) {
                e->recv[e->which[i]].req = NULL;
                (*nrecv_p)++;
            } else {
                e->send[e->which[i] - e->nrecv].req = NULL;
                (*nsend_p)++;
            }
        }
    }
    return status;
}

static tpu_status_t fail_transport(engine_t *e, const char *what, tpu_status_t status,
                                   tpu_err_t *err)
{
    char me[64];

    tpu__exec_chip_str(&e->ctx->plan->topo, e->ctx->x->local_chips[0], me, sizeof(me));
    return tpu_err_set(err, status, "%s: transport %s failed %s in %s: %s", me,
                       e->ctx->x->ops->name, what, e->ctx->plan->name, e->ctx->x->msg);
}

/* A message that does not belong to this chip's call: name both chips and the field. */
static tpu_status_t fail_header(engine_t *e, const pending_t *p, const tpu_flow_t *f,
                                tpu_err_t *err)
{
    const tpu_coll_exec_t *ctx = e->ctx;
    char a[64], b[64], sa[192], sb[192], diff[128];

    tpu__exec_chip_str(&ctx->plan->topo, f->dst, a, sizeof(a));
    tpu__exec_chip_str(&ctx->plan->topo, f->src, b, sizeof(b));
    tpu__exec_sig_str(&ctx->sig, sa, sizeof(sa));
    tpu__exec_sig_str(&p->hdr.sig, sb, sizeof(sb));
    if (!tpu__exec_sig_diff(&ctx->sig, &p->hdr.sig, diff, sizeof(diff))) {
        snprintf(diff, sizeof(diff), "%s (flow %lld of %lld bytes vs flow %lld of %lld bytes)",
                 "the message", (long long)msg_id(ctx, p->flow),
                 (long long)(tpu__span_bytes(&f->span) * ctx->scale), (long long)p->hdr.flow,
                 (long long)p->hdr.bytes);
    }
    return tpu_err_set(err, TPU_ERR_MISMATCH,
                       "collective mismatch: %s is in %s, but %s sent a message of %s; they "
                       "differ in %s",
                       a, sa, b, sb, diff);
}

/* The 'ndone' receives test_open completed (from 'first' on): check their headers;
 * then reduce in order. */
static tpu_status_t poll_recvs(engine_t *e, int first, int ndone, int *progress_p, tpu_err_t *err)
{
    tpu_coll_exec_t *ctx = e->ctx;
    const tpu_sched_t *sc = &ctx->ps->s;
    int i;

    for (i = first; ndone > 0 && i < e->nrecv; i++) {
        pending_t *p = &e->recv[i];
        const tpu_flow_t *f = &sc->flows[p->flow];

        if (p->req != NULL || e->state[p->flow] != 0) {
            continue;
        }
        ndone--;
        e->recv_left--;
        *progress_p = 1;
        if (p->hdr.flow != msg_id(ctx, p->flow) ||
            p->hdr.bytes != tpu__span_bytes(&f->span) * ctx->scale ||
            tpu__exec_sig_diff(&ctx->sig, &p->hdr.sig, NULL, 0)) {
            return fail_header(e, p, f, err);
        }
        e->state[p->flow] = f->reduce && ctx->x->moves_data ? 1 : 2;
    }
    while (e->rr < e->nrecv) {
        pending_t *p = &e->recv[e->rr];
        const tpu_flow_t *f = &sc->flows[p->flow];

        if (e->state[p->flow] == 0) {
            break;
        }
        if (e->state[p->flow] == 1 && ctx->wide) {
            wide_reduce(ctx, ctx->local_index[f->dst], f, p->scratch);
            e->state[p->flow] = 2;
        } else if (e->state[p->flow] == 1) {
            int li = ctx->local_index[f->dst];
            tpu_region_t r = span_region(ctx->recv[li], &f->span, f->span.dst_off, ctx->scale);

            reduce_into(ctx, &r, p->scratch);
            e->state[p->flow] = 2;
        }
        e->rr++;
    }
    return TPU_OK;
}

/* Post the sends whose data is there (their dependencies arrived and were added). */
static tpu_status_t post_sends(engine_t *e, int *progress_p, tpu_err_t *err)
{
    tpu_coll_exec_t *ctx = e->ctx;
    const tpu_sched_t *sc = &ctx->ps->s;
    tpu_xport_t *x = ctx->x;
    int i, wait_step = -1;

    for (i = e->send_first; i < e->nsend && e->send_unposted > 0; i++) {
        pending_t *p = &e->send[i];
        const tpu_flow_t *f = &sc->flows[p->flow];
        int32_t k, ok = 1;
        tpu_region_t r;
        tpu_status_t status;

        if (p->posted) {
            if (i == e->send_first) {
                e->send_first++;
            }
            continue;
        }
        if (wait_step >= 0 && f->step > wait_step) {
            break;
        }
        for (k = 0; k < f->ndeps && ok; k++) {
            ok = e->state[sc->deps[f->dep_first + k]] == 2;
        }
        if (!ok) {
            wait_step = f->step;
            continue;
        }
        p->hdr.sig = ctx->sig;
        p->hdr.flow = msg_id(ctx, p->flow);
        p->hdr.arrival = 0;
        p->hdr.bytes = tpu__span_bytes(&f->span) * ctx->scale;
        r = span_region(x->moves_data ? ctx->send[ctx->local_index[f->src]] : NULL, &f->span,
                        f->span.off, ctx->scale);
        status = x->ops->isend(x, f->src, f->dst, flow_tag(e, p->flow), &p->hdr, &r, &p->req);
        if (status != TPU_OK) {
            return fail_transport(e, "sending", status, err);
        }
        p->posted = 1;
        e->send_unposted--;
        *progress_p = 1;
        if (i == e->send_first) {
            e->send_first++;
        }
    }
    return TPU_OK;
}

static tpu_status_t watchdog(engine_t *e, tpu_err_t *err)
{
    const tpu_coll_plan_t *plan = e->ctx->plan;
    char me[64], who[512];
    int used = 0, i;

    tpu__exec_chip_str(&plan->topo, e->ctx->x->local_chips[0], me, sizeof(me));
    who[0] = '\0';
    for (i = 0; i < e->nrecv && used < (int)sizeof(who) - 64; i++) {
        if (e->recv[i].req != NULL) {
            char c[64];
            int src = e->ctx->ps->s.flows[e->recv[i].flow].src;

            tpu__exec_chip_str(&plan->topo, src, c, sizeof(c));
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

/* The source chip of the oldest receive still open; -1 when only sends are. */
static int waited_chip(const engine_t *e)
{
    int i;

    for (i = e->recv_open; i < e->nrecv; i++) {
        if (e->recv[i].req != NULL) {
            return e->ctx->ps->s.flows[e->recv[i].flow].src;
        }
    }
    return -1;
}

static tpu_status_t run_engine(engine_t *e, tpu_err_t *err)
{
    int rounds = 0;

    while (e->recv_left > 0 || e->send_left > 0 || e->send_unposted > 0) {
        int progress, nrecv, nsend, first = e->recv_open;
        tpu_status_t status = test_open(e, &nrecv, &nsend);

        if (status != TPU_OK) {
            /* The transport's message names the request that failed. */
            return fail_transport(e, "testing its requests", status, err);
        }
        e->send_left -= nsend;
        progress = nsend > 0;
        status = poll_recvs(e, first, nrecv, &progress, err);
        if (status == TPU_OK) {
            status = post_sends(e, &progress, err);
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
        if (e->opts->on_wait != NULL) {
            e->opts->on_wait(e->opts->on_wait_arg, waited_chip(e));
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

/* Cancel what is still live, so that nothing of this run is left for the next. */
static void cancel_all(engine_t *e)
{
    tpu_xport_t *x = e->ctx->x;
    int i;

    for (i = 0; i < e->nrecv + e->nsend; i++) {
        pending_t *p = i < e->nrecv ? &e->recv[i] : &e->send[i - e->nrecv];

        if (p->req != NULL) {
            x->ops->cancel(x, p->req);
            p->req = NULL;
        }
    }
}

/*
 * Run the messages of one call (its tags from 'epoch'): every receive posted at
 * once, each into its own place, then the engine until every flow of the local
 * chips is through; on an error, what is still live is cancelled.
 */
tpu_status_t tpu__exec_messages(tpu_coll_exec_t *ctx, const tpu_coll_run_opts_t *opts,
                                uint64_t epoch, tpu_err_t *err)
{
    const tpu_sched_t *sc = &ctx->ps->s;
    tpu_xport_t *x = ctx->x;
    pending_t *pend = NULL;
    unsigned char *scratch = ctx->scratch;
    engine_t e;
    int64_t f, sused = 0;
    tpu_status_t status;

    memset(&e, 0, sizeof(e));
    e.ctx = ctx;
    e.opts = opts;
    e.deadline = opts->timeout_s > 0 ? tpu__now_s() + opts->timeout_s : 0;
    e.tag_base = (int)(epoch % (uint64_t)ctx->epochs) << (ctx->flow_bits + 1);
    for (f = 0; f < sc->nflows; f++) {
        e.nrecv += ctx->is_local[sc->flows[f].dst];
        e.nsend += ctx->is_local[sc->flows[f].src];
    }
    pend = tpu__calloc((size_t)(e.nrecv + e.nsend + 1), sizeof(*pend));
    e.state = tpu__calloc((size_t)sc->nflows + 1, 1);
    e.reqs = tpu__malloc((size_t)(e.nrecv + e.nsend + 1) * sizeof(*e.reqs));
    e.which = tpu__malloc((size_t)(e.nrecv + e.nsend + 1) * sizeof(*e.which));
    if (pend == NULL || e.state == NULL || e.reqs == NULL || e.which == NULL) {
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
    e.send_left = e.send_unposted = e.nsend;
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
            r = span_region(p->scratch, &flat, 0, ctx->scale);
            sused += flat.len * ctx->scale;
        } else {
            r = span_region(x->moves_data ? ctx->recv[ctx->local_index[fl->dst]] : NULL, &fl->span,
                            fl->span.dst_off, ctx->scale);
        }
        status = x->ops->irecv(x, fl->dst, fl->src, flow_tag(&e, f), &p->hdr, &r, &p->req);
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
        cancel_all(&e);
    }
out:
    tpu__free(e.which);
    tpu__free(e.reqs);
    tpu__free(e.state);
    tpu__free(pend);
    return status;
}
