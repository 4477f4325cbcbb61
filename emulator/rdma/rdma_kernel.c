/*
 * The RDMA kernel API (tpu/rdma.h): check and start a copy (a local one through
 * the chip's DMA queue, a remote one as CTRL and DATA messages timed by the link
 * timer), and the waits on send and receive semaphores.
 */
#include "tpu/rdma.h"

#include "alloc.h"
#include "rdma_internal.h"
#include "rdma_progress.h"
#include "rdma_sem.h"

#include <stdio.h>
#include <string.h>

/* ---- the kernel API ---- */

static tpu_status_t check_copy(tpu_rdma_ctx_t *ctx, const tpu_rdma_copy_t *c)
{
    const tpu_rdma_kernel_t *k = ctx->run->kernel;
    const char *kn = tpu__rdma_kname(ctx->run);
    char b[16];

    if (c->device < 0 || c->device >= ctx->rdma->topo->nchips) {
        return tpu_err_set(&ctx->err, TPU_ERR_INVALID,
                           "%s on chip %d: device id %d is outside the pod of %d chips", kn,
                           ctx->chip, c->device, ctx->rdma->topo->nchips);
    }
    if (c->src_buf < 0 || c->src_buf >= k->nbufs || c->dst_buf < 0 || c->dst_buf >= k->nbufs) {
        return tpu_err_set(&ctx->err, TPU_ERR_INVALID,
                           "%s on chip %d: copy from buffer %d to buffer %d: the kernel has %d "
                           "buffers",
                           kn, ctx->chip, c->src_buf, c->dst_buf, k->nbufs);
    }
    if (c->send_sem < 0 || c->send_sem >= k->nsems || c->recv_sem < 0 || c->recv_sem >= k->nsems) {
        return tpu_err_set(&ctx->err, TPU_ERR_INVALID,
                           "%s on chip %d: semaphores %d and %d: the kernel has %d", kn, ctx->chip,
                           c->send_sem, c->recv_sem, k->nsems);
    }
    if (c->src_off > k->bufs[c->src_buf].bytes ||
        c->bytes > k->bufs[c->src_buf].bytes - c->src_off) {
        return tpu_err_set(&ctx->err, TPU_ERR_INVALID,
                           "%s on chip %d: copy of %llu bytes from offset %llu of buffer '%s' "
                           "(%llu bytes) reads past its end",
                           kn, ctx->chip, (unsigned long long)c->bytes,
                           (unsigned long long)c->src_off,
                           tpu__rdma_buf_name(ctx->run, c->src_buf, b, 16),
                           (unsigned long long)k->bufs[c->src_buf].bytes);
    }
    if (c->dst_off > k->bufs[c->dst_buf].bytes ||
        c->bytes > k->bufs[c->dst_buf].bytes - c->dst_off) {
        return tpu_err_set(&ctx->err, TPU_ERR_INVALID,
                           "%s on chip %d: copy of %llu bytes to chip %d does not fit buffer '%s' "
                           "(%llu bytes) at offset %llu",
                           kn, ctx->chip, (unsigned long long)c->bytes, c->device,
                           tpu__rdma_buf_name(ctx->run, c->dst_buf, b, 16),
                           (unsigned long long)k->bufs[c->dst_buf].bytes,
                           (unsigned long long)c->dst_off);
    }
    return TPU_OK;
}

/* A copy to this chip: a local DMA, done on the host at once. */
static tpu_status_t start_local(tpu_rdma_ctx_t *ctx, const tpu_rdma_copy_t *c, double ready)
{
    const tpu_rdma_kernel_t *k = ctx->run->kernel;
    double hbm = 0, start, end;
    signal_t sig;
    void *data;
    tpu_status_t status;

    hbm += k->bufs[c->src_buf].space == TPU_RDMA_HBM ? (double)c->bytes : 0;
    hbm += k->bufs[c->dst_buf].space == TPU_RDMA_HBM ? (double)c->bytes : 0;
    start = ready > ctx->local_free ? ready : ctx->local_free;
    end = start + hbm / ctx->rdma->spec.hbm_bw;
    ctx->local_free = end;
    data = tpu__malloc((size_t)c->bytes + 1);
    if (data == NULL) {
        return tpu_err_set(&ctx->err, TPU_ERR_NO_MEMORY,
                           "%s on chip %d: no host memory for a copy of %llu bytes",
                           tpu__rdma_kname(ctx->run), ctx->chip, (unsigned long long)c->bytes);
    }
    memcpy(data, (unsigned char *)ctx->bufs[c->src_buf] + c->src_off, (size_t)c->bytes);
    status = tpu__rdma_land(ctx, ctx->chip, c->dst_buf, c->dst_off, c->bytes, c->recv_sem, end,
                            ctx->seq, data);
    if (status != TPU_OK) {
        return status;
    }
    memset(&sig, 0, sizeof(sig));
    sig.t = end;
    sig.src = ctx->chip;
    sig.seq = ctx->seq;
    sig.buf = -1;
    if (tpu__rdma_sem_push(&ctx->sems[c->send_sem], &sig) != 0) {
        return tpu_err_set(&ctx->err, TPU_ERR_NO_MEMORY, "%s on chip %d: no host memory",
                           tpu__rdma_kname(ctx->run), ctx->chip);
    }
    return TPU_OK;
}

static tpu_status_t start_remote(tpu_rdma_ctx_t *ctx, const tpu_rdma_copy_t *c, double ready)
{
    tpu_xport_t *x = ctx->rdma->x;
    tpu_region_t none = {.count = {1, 1, 1}};
    tpu_region_t reg = {.count = {1, 1, 1}};
    double left, arrival;
    out_copy_t *o;
    tpu_status_t status;

    tpu_coll_link_timer_flow(ctx->timer, ctx->chip, c->device, c->bytes, ready, &left, &arrival,
                             NULL);
    o = tpu__calloc(1, sizeof(*o));
    if (o == NULL) {
        return tpu_err_set(&ctx->err, TPU_ERR_NO_MEMORY, "%s on chip %d: no host memory",
                           tpu__rdma_kname(ctx->run), ctx->chip);
    }
    o->send_sem = c->send_sem;
    o->left = left;
    o->seq = ctx->seq;
    o->ctrl_hdr.sig.kind = MSG_COPY;
    o->ctrl_hdr.sig.axes = c->dst_buf;
    o->ctrl_hdr.sig.dtype = c->recv_sem;
    o->ctrl_hdr.sig.call = c->dst_off;
    o->ctrl_hdr.bytes = (int64_t)c->bytes;
    o->ctrl_hdr.arrival = arrival;
    o->ctrl_hdr.flow = (int64_t)ctx->seq;
    o->data_hdr = o->ctrl_hdr;
    /* The DMA engine reads the source when the copy starts: a snapshot, so that
     * what the kernel writes there afterwards (in modeled time after the bytes
     * left) never changes what the transport delivers later on the host. */
    o->stage = tpu__malloc((size_t)c->bytes + 1);
    if (o->stage == NULL) {
        tpu__free(o);
        return tpu_err_set(&ctx->err, TPU_ERR_NO_MEMORY,
                           "%s on chip %d: no host memory for a copy of %llu bytes",
                           tpu__rdma_kname(ctx->run), ctx->chip, (unsigned long long)c->bytes);
    }
    memcpy(o->stage, (unsigned char *)ctx->bufs[c->src_buf] + c->src_off, (size_t)c->bytes);
    reg.base = o->stage;
    reg.len = (int64_t)c->bytes;
    status = x->ops->isend(x, ctx->chip, c->device, TAG_CTRL, &o->ctrl_hdr, &none, &o->ctrl_req);
    if (status == TPU_OK) {
        status = x->ops->isend(x, ctx->chip, c->device, TAG_DATA, &o->data_hdr, &reg, &o->data_req);
        if (status != TPU_OK) {
            x->ops->cancel(x, o->ctrl_req);
        }
    }
    if (status != TPU_OK) {
        tpu__free(o->stage);
        tpu__free(o);
        return tpu_err_set(&ctx->err, status, "%s on chip %d: sending to chip %d: %s",
                           tpu__rdma_kname(ctx->run), ctx->chip, c->device, x->msg);
    }
    if (tpu__rdma_push_ptr((void ***)&ctx->outs, &ctx->nouts, &ctx->cap_outs, o) != TPU_OK) {
        /* Leave the requests to the transport; the run fails. */
        return tpu_err_set(&ctx->err, TPU_ERR_NO_MEMORY, "%s on chip %d: no host memory",
                           tpu__rdma_kname(ctx->run), ctx->chip);
    }
    ctx->peers[c->device].nsent++;
    return TPU_OK;
}

/* Copy the chip's error into the body's 'err' (the body returns it). */
static tpu_status_t fail(tpu_rdma_ctx_t *ctx, tpu_status_t status, tpu_err_t *err)
{
    if (status != TPU_OK) {
        if (!ctx->secondary) {
            ctx->primary = 1;
        }
        tpu_err_set(err, status, "%s", ctx->err.msg);
    }
    return status;
}

tpu_status_t tpu_rdma_start(tpu_rdma_ctx_t *ctx, const tpu_rdma_copy_t *c, tpu_err_t *err)
{
    tpu_rdma_t *r = ctx->rdma;
    double ready = ctx->clock + TPU_RDMA_DMA_ISSUE_S;
    tpu_status_t status;
    int changed = 0;

    pthread_mutex_lock(&r->mu);
    status = check_copy(ctx, c);
    if (status == TPU_OK) {
        ctx->seq++;
        ctx->copies++;
        ctx->bytes += (double)c->bytes;
        status = c->device == ctx->chip ? start_local(ctx, c, ready) : start_remote(ctx, c, ready);
    }
    if (status == TPU_OK) {
        status = tpu__rdma_progress_all(ctx, &changed);
    }
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    return fail(ctx, status, err);
}

static tpu_status_t sem_wait(tpu_rdma_ctx_t *ctx, int sem, int count, const char *how,
                             tpu_err_t *err)
{
    tpu_rdma_t *r = ctx->rdma;
    char what[160];
    char sb[16];
    double t;
    tpu_status_t status;

    if (sem < 0 || sem >= ctx->run->kernel->nsems || count < 1) {
        status = tpu_err_set(&ctx->err, TPU_ERR_INVALID,
                             "%s on chip %d: %s on semaphore %d for %d (the kernel has %d "
                             "semaphores; count >= 1)",
                             tpu__rdma_kname(ctx->run), ctx->chip, how, sem, count,
                             ctx->run->kernel->nsems);
        return fail(ctx, status, err);
    }
    snprintf(what, sizeof(what), "in %s on semaphore '%s' for %d signal%s; nobody signalled it",
             how, tpu__rdma_sem_name(ctx->run, sem, sb, sizeof(sb)), count, count > 1 ? "s" : "");
    pthread_mutex_lock(&r->mu);
    ctx->state = ST_WAITING;
    ctx->wait_sem = sem;
    ctx->wait_count = count;
    status = tpu__rdma_wait_until(ctx, what);
    ctx->state = ST_RUNNING;
    if (status == TPU_OK) {
        t = tpu__rdma_sem_take(&ctx->sems[sem], count, ctx->bufs);
        if (t > ctx->clock) {
            ctx->waited += t - ctx->clock;
            ctx->clock = t;
        }
    }
    pthread_mutex_unlock(&r->mu);
    return fail(ctx, status, err);
}

tpu_status_t tpu_rdma_wait_send(tpu_rdma_ctx_t *ctx, const tpu_rdma_copy_t *c, tpu_err_t *err)
{
    return sem_wait(ctx, c->send_sem, 1, "wait_send", err);
}

tpu_status_t tpu_rdma_wait_recv(tpu_rdma_ctx_t *ctx, const tpu_rdma_copy_t *c, tpu_err_t *err)
{
    return sem_wait(ctx, c->recv_sem, 1, "wait_recv", err);
}

tpu_status_t tpu_rdma_sem_wait(tpu_rdma_ctx_t *ctx, int sem, int count, tpu_err_t *err)
{
    return sem_wait(ctx, sem, count, "a wait", err);
}

int64_t tpu_rdma_sem_value(tpu_rdma_ctx_t *ctx, int sem)
{
    int64_t n;
    int changed = 0;

    if (sem < 0 || sem >= ctx->run->kernel->nsems) {
        return 0;
    }
    pthread_mutex_lock(&ctx->rdma->mu);
    (void)tpu__rdma_progress_all(ctx, &changed);
    n = ctx->sems[sem].n;
    pthread_mutex_unlock(&ctx->rdma->mu);
    return n;
}
