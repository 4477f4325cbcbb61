/*
 * RDMA progress, with the runtime's lock held: ABORT to the peers, the CTRL
 * receive per peer, incoming COPY messages and their DATA, copies landing (and
 * races), sends completing, progress over every local chip, and the wait loop
 * with its deadlock finder, back-off and watchdog.
 */
#include "rdma_progress.h"

#include "alloc.h"
#include "clock.h" /* common/: tpu__now_s() */
#include "rdma_sem.h"

#include <stdio.h>
#include <time.h>

/* ---- errors ---- */

tpu_status_t tpu__rdma_push_ptr(void ***arr, int *n, int *cap, void *p)
{
    if (*n == *cap) {
        int c = *cap ? 2 * *cap : 16;
        void **q = tpu__realloc(*arr, (size_t)c * sizeof(*q));

        if (q == NULL) {
            return TPU_ERR_NO_MEMORY;
        }
        *arr = q;
        *cap = c;
    }
    (*arr)[(*n)++] = p;
    return TPU_OK;
}

/* Send ABORT to every peer (best effort, not waited for beyond posting). */
void tpu__rdma_send_abort(tpu_rdma_ctx_t *ctx)
{
    tpu_rdma_t *r = ctx->rdma;
    int p;

    ctx->run->failed = 1;
    for (p = 0; p < r->x->nchips; p++) {
        out_copy_t *o;

        if (p == ctx->chip || r->x->nlocal == r->x->nchips) {
            continue; /* in-process peers see run->failed */
        }
        o = tpu__calloc(1, sizeof(*o));
        if (o == NULL) {
            return;
        }
        o->ctrl_hdr.sig.kind = MSG_ABORT;
        o->send_sem = -1;
        o->data_req = NULL;
        if (r->x->ops->isend(r->x, ctx->chip, p, TAG_CTRL, &o->ctrl_hdr,
                             &(tpu_region_t){.count = {1, 1, 1}}, &o->ctrl_req) != TPU_OK ||
            tpu__rdma_push_ptr((void ***)&ctx->outs, &ctx->nouts, &ctx->cap_outs, o) != TPU_OK) {
            tpu__free(o);
            return;
        }
    }
}

/* ---- progress (called with the lock held) ---- */

tpu_status_t tpu__rdma_post_ctrl(tpu_rdma_ctx_t *ctx, int p)
{
    tpu_xport_t *x = ctx->rdma->x;
    tpu_region_t none = {.count = {1, 1, 1}};
    tpu_status_t status;

    status =
        x->ops->irecv(x, ctx->chip, p, TAG_CTRL, &ctx->peers[p].hdr, &none, &ctx->peers[p].req);
    if (status != TPU_OK) {
        ctx->peers[p].req = NULL;
        return tpu_err_set(&ctx->err, status, "%s on chip %d: posting a receive from chip %d: %s",
                           tpu__rdma_kname(ctx->run), ctx->chip, p, x->msg);
    }
    return TPU_OK;
}

/* A COPY arrived from 'p': check it and post its DATA receive. */
static tpu_status_t on_copy(tpu_rdma_ctx_t *ctx, int p, const tpu_msg_hdr_t *h)
{
    const tpu_rdma_kernel_t *k = ctx->run->kernel;
    tpu_xport_t *x = ctx->rdma->x;
    tpu_region_t reg = {.count = {1, 1, 1}};
    in_copy_t *in;
    int buf = h->sig.axes;
    tpu_status_t status;

    if (buf < 0 || buf >= k->nbufs || h->sig.call + (uint64_t)h->bytes < h->sig.call ||
        h->sig.call + (uint64_t)h->bytes > k->bufs[buf].bytes || h->sig.dtype < 0 ||
        h->sig.dtype >= k->nsems) {
        return tpu_err_set(&ctx->err, TPU_ERR_INVALID,
                           "%s on chip %d: chip %d sent a copy that fits no buffer (buffer %d, "
                           "offset %llu, %lld bytes): do both chips run the same kernel?",
                           tpu__rdma_kname(ctx->run), ctx->chip, p, buf,
                           (unsigned long long)h->sig.call, (long long)h->bytes);
    }
    in = tpu__calloc(1, sizeof(*in));
    if (in == NULL) {
        return tpu_err_set(&ctx->err, TPU_ERR_NO_MEMORY, "%s on chip %d: no host memory",
                           tpu__rdma_kname(ctx->run), ctx->chip);
    }
    in->src = p;
    in->buf = buf;
    in->off = h->sig.call;
    in->bytes = (uint64_t)h->bytes;
    in->recv_sem = h->sig.dtype;
    in->arrival = h->arrival;
    in->seq = (uint64_t)h->flow;
    in->stage = tpu__malloc((size_t)in->bytes + 1);
    if (in->stage == NULL) {
        tpu__free(in);
        return tpu_err_set(&ctx->err, TPU_ERR_NO_MEMORY,
                           "%s on chip %d: no host memory for a copy of %llu bytes",
                           tpu__rdma_kname(ctx->run), ctx->chip, (unsigned long long)h->bytes);
    }
    reg.base = in->stage;
    reg.len = (int64_t)in->bytes;
    status = x->ops->irecv(x, ctx->chip, p, TAG_DATA, &in->hdr, &reg, &in->req);
    if (status != TPU_OK) {
        tpu__free(in->stage);
        tpu__free(in);
        return tpu_err_set(&ctx->err, status, "%s on chip %d: receiving from chip %d: %s",
                           tpu__rdma_kname(ctx->run), ctx->chip, p, x->msg);
    }
    if (tpu__rdma_push_ptr((void ***)&ctx->ins, &ctx->nins, &ctx->cap_ins, in) != TPU_OK) {
        x->ops->cancel(x, in->req);
        tpu__free(in->stage);
        tpu__free(in);
        return tpu_err_set(&ctx->err, TPU_ERR_NO_MEMORY, "%s on chip %d: no host memory",
                           tpu__rdma_kname(ctx->run), ctx->chip);
    }
    return TPU_OK;
}

/* A copy has landed: check for a race with one not waited for, then signal. */
tpu_status_t tpu__rdma_land(tpu_rdma_ctx_t *ctx, int src, int buf, uint64_t off, uint64_t bytes,
                            int recv_sem, double t, uint64_t seq, void *data)
{
    signal_t sig = {t, src, seq, 1, buf, off, bytes, data};
    char b1[16], b2[16];
    int s, i;

    for (s = 0; s < ctx->run->kernel->nsems && bytes > 0; s++) {
        for (i = 0; i < ctx->sems[s].n; i++) {
            const signal_t *o = &ctx->sems[s].sig[i];

            if (o->recv && o->buf == buf && o->bytes > 0 && o->off < off + bytes &&
                off < o->off + o->bytes) {
                tpu__free(data);
                return tpu_err_set(
                    &ctx->err, TPU_ERR_INVALID,
                    "%s on chip %d: race in buffer '%s': the copy from chip %d to bytes [%llu, "
                    "%llu) lands on bytes [%llu, %llu) written by a copy from chip %d that "
                    "nobody waited for (wait on semaphore '%s' between the two copies)",
                    tpu__rdma_kname(ctx->run), ctx->chip,
                    tpu__rdma_buf_name(ctx->run, buf, b1, sizeof(b1)), src, (unsigned long long)off,
                    (unsigned long long)(off + bytes), (unsigned long long)o->off,
                    (unsigned long long)(o->off + o->bytes), o->src,
                    tpu__rdma_sem_name(ctx->run, s, b2, sizeof(b2)));
            }
        }
    }
    if (tpu__rdma_sem_push(&ctx->sems[recv_sem], &sig) != 0) {
        tpu__free(data);
        return tpu_err_set(&ctx->err, TPU_ERR_NO_MEMORY, "%s on chip %d: no host memory",
                           tpu__rdma_kname(ctx->run), ctx->chip);
    }
    return TPU_OK;
}

/* One progress pass over one chip.  Sets '*changed' when anything happened. */
static tpu_status_t progress_chip(tpu_rdma_ctx_t *ctx, int *changed)
{
    tpu_xport_t *x = ctx->rdma->x;
    tpu_status_t status;
    int p, i, done;

    for (p = 0; p < x->nchips; p++) {
        peer_t *pe = &ctx->peers[p];

        while (pe->req != NULL) {
            status = x->ops->test(x, pe->req, &done);
            if (status != TPU_OK) {
                pe->req = NULL;
                return tpu_err_set(&ctx->err, status, "%s on chip %d: transport: %s",
                                   tpu__rdma_kname(ctx->run), ctx->chip, x->msg);
            }
            if (!done) {
                break;
            }
            pe->req = NULL;
            *changed = 1;
            if (pe->hdr.sig.kind == MSG_ABORT) {
                ctx->aborted_by = p;
                return TPU_OK;
            }
            if (pe->hdr.sig.kind == MSG_DONE) {
                pe->done = 1;
                if (pe->nrecv != pe->hdr.sig.bytes) {
                    return tpu_err_set(&ctx->err, TPU_ERR_INTERNAL,
                                       "%s on chip %d: chip %d sent %llu copies, %llu came",
                                       tpu__rdma_kname(ctx->run), ctx->chip, p,
                                       (unsigned long long)pe->hdr.sig.bytes,
                                       (unsigned long long)pe->nrecv);
                }
                break;
            }
            pe->nrecv++;
            status = on_copy(ctx, p, &pe->hdr);
            if (status != TPU_OK) {
                return status;
            }
            status = tpu__rdma_post_ctrl(ctx, p);
            if (status != TPU_OK) {
                return status;
            }
        }
    }
    for (i = 0; i < ctx->nins; i++) {
        in_copy_t *in = ctx->ins[i];

        status = x->ops->test(x, in->req, &done);
        if (status != TPU_OK) {
            return tpu_err_set(&ctx->err, status, "%s on chip %d: transport: %s",
                               tpu__rdma_kname(ctx->run), ctx->chip, x->msg);
        }
        if (!done) {
            continue;
        }
        *changed = 1;
        ctx->ins[i--] = ctx->ins[--ctx->nins];
        status = tpu__rdma_land(ctx, in->src, in->buf, in->off, in->bytes, in->recv_sem,
                                in->arrival, in->seq, in->stage);
        tpu__free(in);
        if (status != TPU_OK) {
            return status;
        }
    }
    for (i = 0; i < ctx->nouts; i++) {
        out_copy_t *o = ctx->outs[i];

        if (o->ctrl_req != NULL) {
            status = x->ops->test(x, o->ctrl_req, &done);
            if (status != TPU_OK) {
                o->ctrl_req = NULL;
                return tpu_err_set(&ctx->err, status, "%s on chip %d: transport: %s",
                                   tpu__rdma_kname(ctx->run), ctx->chip, x->msg);
            }
            if (done) {
                o->ctrl_req = NULL;
                *changed = 1;
            }
        }
        if (o->data_req != NULL) {
            status = x->ops->test(x, o->data_req, &done);
            if (status != TPU_OK) {
                o->data_req = NULL;
                return tpu_err_set(&ctx->err, status, "%s on chip %d: transport: %s",
                                   tpu__rdma_kname(ctx->run), ctx->chip, x->msg);
            }
            if (done) {
                signal_t sig = {o->left, ctx->chip, o->seq, 0, -1, 0, 0, NULL};

                o->data_req = NULL;
                *changed = 1;
                if (o->send_sem >= 0 && tpu__rdma_sem_push(&ctx->sems[o->send_sem], &sig) != 0) {
                    return tpu_err_set(&ctx->err, TPU_ERR_NO_MEMORY,
                                       "%s on chip %d: no host memory", tpu__rdma_kname(ctx->run),
                                       ctx->chip);
                }
            }
        }
        if (o->ctrl_req == NULL && o->data_req == NULL) {
            ctx->outs[i--] = ctx->outs[--ctx->nouts];
            tpu__free(o->stage);
            tpu__free(o);
        }
    }
    return TPU_OK;
}

/* Progress every local chip (the in-process transports need the receivers' turn). */
tpu_status_t tpu__rdma_progress_all(tpu_rdma_ctx_t *self, int *changed)
{
    tpu_rdma_t *r = self->rdma;
    tpu_status_t status;
    int i;

    for (i = 0; i < r->x->nlocal; i++) {
        tpu_rdma_ctx_t *c = &r->ctx[i];

        if (c->state == ST_FINISHED || c->status != TPU_OK) {
            continue;
        }
        status = progress_chip(c, changed);
        if (status != TPU_OK) {
            c->status = status;
            c->primary = 1;
            if (c != self) {
                /* Its own thread reports it when it looks next. */
                self->run->failed = 1;
                *changed = 1;
            } else {
                return status;
            }
        }
    }
    return TPU_OK;
}

/* Is what chip 'c' waits for there? */
static int satisfied(const tpu_rdma_ctx_t *c)
{
    int p;

    if (c->state == ST_WAITING) {
        return c->sems[c->wait_sem].n >= c->wait_count;
    }
    if (c->state == ST_DRAINING) {
        for (p = 0; p < c->rdma->x->nchips; p++) {
            if (p != c->chip && !c->peers[p].done) {
                return 0;
            }
        }
        return c->nins == 0 && c->nouts == 0;
    }
    return 1;
}

/* Loopback: every chip waits, nothing changed, none satisfied: name them all. */
static int find_deadlock(tpu_rdma_ctx_t *self)
{
    tpu_rdma_t *r = self->rdma;
    run_state_t *run = self->run;
    size_t off = 0;
    char sb[16];
    int i, nwait = 0;

    if (r->x->nlocal != r->x->nchips) {
        return 0;
    }
    for (i = 0; i < r->x->nlocal; i++) {
        const tpu_rdma_ctx_t *c = &r->ctx[i];

        if (c->state == ST_RUNNING || (c->state != ST_FINISHED && satisfied(c))) {
            return 0;
        }
    }
    off += (size_t)snprintf(run->deadlock_msg, sizeof(run->deadlock_msg),
                            "%s: deadlock:", tpu__rdma_kname(run));
    for (i = 0; i < r->x->nlocal && off < sizeof(run->deadlock_msg); i++) {
        const tpu_rdma_ctx_t *c = &r->ctx[i];

        if (c->state != ST_WAITING) {
            continue;
        }
        off += (size_t)snprintf(run->deadlock_msg + off, sizeof(run->deadlock_msg) - off,
                                "%s chip %d waits on semaphore '%s' (holds %d, needs %d)",
                                nwait++ ? "," : "", c->chip,
                                tpu__rdma_sem_name(run, c->wait_sem, sb, sizeof(sb)),
                                c->sems[c->wait_sem].n, c->wait_count);
    }
    if (off < sizeof(run->deadlock_msg)) {
        snprintf(run->deadlock_msg + off, sizeof(run->deadlock_msg) - off, "%s",
                 nwait ? "; no copy in flight signals it"
                       : " every chip ended its kernel with copies not received");
    }
    run->deadlock = 1;
    return 1;
}

/*
 * Let the others run (lock held).  Under MPI the transport's idle backs off;
 * in one process the chips' threads sleep until one of them changes something
 * (or 2 ms, to look at the watchdog).
 */
static void backoff(tpu_rdma_t *r, int rounds)
{
    struct timespec ts;

    if (r->x->nlocal != r->x->nchips) {
        pthread_mutex_unlock(&r->mu);
        r->x->ops->idle(r->x, rounds);
        pthread_mutex_lock(&r->mu);
        return;
    }
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 2000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&r->cv, &r->mu, &ts);
}

/* Whom 'ctx' waits for, for the on_wait hook: at the end of the kernel the first
 * peer still in its body; a semaphore can be signalled by any chip (-1). */
static int waited_chip(const tpu_rdma_ctx_t *ctx)
{
    int p;

    if (ctx->state == ST_DRAINING) {
        for (p = 0; p < ctx->rdma->x->nchips; p++) {
            if (!ctx->peers[p].done) {
                return p;
            }
        }
    }
    return -1;
}

/*
 * Wait (lock held on entry and exit) until 'ctx' is satisfied in its state
 * (ST_WAITING or ST_DRAINING), making progress.  'what' describes the wait.
 */
tpu_status_t tpu__rdma_wait_until(tpu_rdma_ctx_t *ctx, const char *what)
{
    tpu_rdma_t *r = ctx->rdma;
    run_state_t *run = ctx->run;
    double t0 = tpu__now_s();
    tpu_status_t status;
    int rounds = 0;

    for (;;) {
        int changed = 0;

        status = tpu__rdma_progress_all(ctx, &changed);
        if (status != TPU_OK) {
            return status;
        }
        if (ctx->aborted_by >= 0) {
            ctx->secondary = 1;
            return tpu_err_set(&ctx->err, TPU_ERR_INVALID, "%s on chip %d: chip %d failed",
                               tpu__rdma_kname(run), ctx->chip, ctx->aborted_by);
        }
        if (satisfied(ctx)) {
            return TPU_OK;
        }
        if (run->deadlock) {
            return tpu_err_set(&ctx->err, TPU_ERR_TIMEOUT, "%s", run->deadlock_msg);
        }
        if (run->failed) {
            ctx->secondary = 1;
            return tpu_err_set(&ctx->err, TPU_ERR_INVALID, "%s on chip %d: another chip failed",
                               tpu__rdma_kname(run), ctx->chip);
        }
        if (!changed && find_deadlock(ctx)) {
            return tpu_err_set(&ctx->err, TPU_ERR_TIMEOUT, "%s", run->deadlock_msg);
        }
        if (tpu__now_s() - t0 > run->timeout_s && ctx->state == ST_DRAINING) {
            char late[96] = "";
            size_t off = 0;
            int p;

            for (p = 0; p < r->x->nchips && off + 12 < sizeof(late); p++) {
                if (!ctx->peers[p].done) {
                    off += (size_t)snprintf(late + off, sizeof(late) - off, "%s%d", off ? ", " : "",
                                            p);
                }
            }
            return tpu_err_set(&ctx->err, TPU_ERR_TIMEOUT,
                               "%s on chip %d: waited %.1f s for chips %s to end the kernel "
                               "(watchdog)",
                               tpu__rdma_kname(run), ctx->chip, run->timeout_s,
                               late[0] ? late : "-");
        }
        if (tpu__now_s() - t0 > run->timeout_s) {
            return tpu_err_set(&ctx->err, TPU_ERR_TIMEOUT,
                               "%s on chip %d: waited %.1f s %s (watchdog)", tpu__rdma_kname(run),
                               ctx->chip, run->timeout_s, what);
        }
        if (changed) {
            pthread_cond_broadcast(&r->cv);
            continue;
        }
        if (run->on_wait != NULL) {
            run->on_wait(run->on_wait_arg, waited_chip(ctx));
        }
        backoff(r, rounds++);
    }
}
