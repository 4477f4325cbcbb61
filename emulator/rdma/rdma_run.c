/*
 * An RDMA run (tpu_rdma_run()): check the kernel, set up every local chip, run
 * the body once per chip (a thread each when the transport hosts several chips),
 * drain (DONE to every peer, every copy in and out completed, semaphores back to
 * 0), tear down, and take the max of the clocks over the transport.
 */
#include "tpu/rdma.h"

#include "alloc.h"
#include "clock.h" /* common/: tpu__now_s() */
#include "rdma_internal.h"
#include "rdma_progress.h"

#include <pthread.h>
#include <string.h>

/* ---- a run ---- */

/* After the body: tell every peer, receive everything, check the semaphores. */
static tpu_status_t drain(tpu_rdma_ctx_t *ctx)
{
    tpu_rdma_t *r = ctx->rdma;
    tpu_region_t none = {.count = {1, 1, 1}};
    char sb[16];
    tpu_status_t status = TPU_OK, saved = TPU_OK;
    int p, s;

    pthread_mutex_lock(&r->mu);
    for (p = 0; p < r->x->nchips && status == TPU_OK; p++) {
        out_copy_t *o;

        if (p == ctx->chip) {
            continue;
        }
        o = tpu__calloc(1, sizeof(*o));
        if (o == NULL) {
            status = tpu_err_set(&ctx->err, TPU_ERR_NO_MEMORY, "%s on chip %d: no host memory",
                                 tpu__rdma_kname(ctx->run), ctx->chip);
            break;
        }
        o->ctrl_hdr.sig.kind = MSG_DONE;
        o->ctrl_hdr.sig.bytes = ctx->peers[p].nsent;
        o->send_sem = -1;
        status = r->x->ops->isend(r->x, ctx->chip, p, TAG_CTRL, &o->ctrl_hdr, &none, &o->ctrl_req);
        if (status != TPU_OK) {
            tpu__free(o);
            status = tpu_err_set(&ctx->err, status, "%s on chip %d: transport: %s",
                                 tpu__rdma_kname(ctx->run), ctx->chip, r->x->msg);
        } else if (tpu__rdma_push_ptr((void ***)&ctx->outs, &ctx->nouts, &ctx->cap_outs, o) !=
                   TPU_OK) {
            status = tpu_err_set(&ctx->err, TPU_ERR_NO_MEMORY, "%s on chip %d: no host memory",
                                 tpu__rdma_kname(ctx->run), ctx->chip);
        }
    }
    ctx->state = ST_DRAINING;
    while (status == TPU_OK) {
        tpu_status_t st = tpu__rdma_wait_until(ctx, "for the other chips to end the kernel");

        if (st == TPU_OK) {
            ctx->drained = 1;
            break;
        }
        saved = saved != TPU_OK ? saved : st;
        /* A race found here is this chip's: keep draining, so that the chips
         * that end normally do not wait for this one in the max of the clocks. */
        if (st != TPU_ERR_INVALID || ctx->secondary) {
            status = st;
        }
    }
    if (status == TPU_OK && saved != TPU_OK) {
        status = saved;
        ctx->primary = 1;
    }
    ctx->state = ST_FINISHED;
    pthread_cond_broadcast(&r->cv);
    for (s = 0; s < ctx->run->kernel->nsems && status == TPU_OK; s++) {
        const sem_t_ *sm = &ctx->sems[s];

        if (sm->n > 0) {
            status = tpu_err_set(&ctx->err, TPU_ERR_INVALID,
                                 "%s on chip %d: the kernel ended with copies in flight: "
                                 "semaphore '%s' holds %d %s signal%s nobody waited for",
                                 tpu__rdma_kname(ctx->run), ctx->chip,
                                 tpu__rdma_sem_name(ctx->run, s, sb, sizeof(sb)), sm->n,
                                 sm->sig[0].recv ? "receive" : "send", sm->n > 1 ? "s" : "");
            ctx->primary = 1;
        }
    }
    pthread_mutex_unlock(&r->mu);
    return status;
}

static void *chip_main(void *arg)
{
    tpu_rdma_ctx_t *ctx = arg;
    const tpu_rdma_kernel_t *k = ctx->run->kernel;
    tpu_err_t berr;
    tpu_status_t status;

    tpu_err_clear(&berr);
    status = k->body(ctx, k->arg, &berr);
    if (status != TPU_OK) {
        pthread_mutex_lock(&ctx->rdma->mu);
        if (ctx->err.status == TPU_OK) {
            /* The body's own failure, not one of ours. */
            tpu_err_set(&ctx->err, status, "%s on chip %d: %s", tpu__rdma_kname(ctx->run),
                        ctx->chip, berr.status != TPU_OK ? berr.msg : tpu_status_str(status));
            ctx->primary = 1;
        }
        ctx->status = status;
        ctx->state = ST_FINISHED;
        tpu__rdma_send_abort(ctx);
        pthread_cond_broadcast(&ctx->rdma->cv);
        pthread_mutex_unlock(&ctx->rdma->mu);
        return NULL;
    }
    status = drain(ctx);
    ctx->status = status;
    if (status != TPU_OK && ctx->err.status == TPU_OK) {
        tpu_err_set(&ctx->err, status, "%s on chip %d failed", tpu__rdma_kname(ctx->run),
                    ctx->chip);
    }
    return NULL;
}

static tpu_status_t setup_chip(tpu_rdma_t *r, run_state_t *run, int li, tpu_err_t *err)
{
    const tpu_rdma_kernel_t *k = run->kernel;
    tpu_rdma_ctx_t *ctx = &r->ctx[li];
    tpu_status_t status;
    int b, p;

    memset(ctx, 0, sizeof(*ctx));
    ctx->rdma = r;
    ctx->run = run;
    ctx->li = li;
    ctx->chip = r->x->local_chips[li];
    ctx->aborted_by = -1;
    ctx->state = ST_RUNNING;
    for (b = 0; b < k->nbufs; b++) {
        const tpu_rdma_buf_t *bd = &k->bufs[b];

        if (bd->space == TPU_RDMA_HBM && bd->data != NULL) {
            ctx->bufs[b] = bd->data[li];
            if (ctx->bufs[b] == NULL && bd->bytes > 0) {
                return tpu_err_set(err, TPU_ERR_INVALID, "%s: buffer %d has no data for chip %d",
                                   tpu__rdma_kname(run), b, ctx->chip);
            }
            continue;
        }
        ctx->bufs[b] = tpu__calloc(1, (size_t)bd->bytes + 1);
        ctx->owned[b] = 1;
        if (ctx->bufs[b] == NULL) {
            return tpu_err_set(err, TPU_ERR_NO_MEMORY,
                               "%s: no host memory for buffer %d (%llu bytes) of chip %d",
                               tpu__rdma_kname(run), b, (unsigned long long)bd->bytes, ctx->chip);
        }
    }
    ctx->peers = tpu__calloc((size_t)r->x->nchips, sizeof(*ctx->peers));
    if (ctx->peers == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "%s: no host memory", tpu__rdma_kname(run));
    }
    status = tpu_coll_link_timer_create(r->topo, &r->link, &ctx->timer, err);
    if (status != TPU_OK) {
        return status;
    }
    for (p = 0; p < r->x->nchips; p++) {
        if (p == ctx->chip) {
            ctx->peers[p].done = 1;
            continue;
        }
        status = tpu__rdma_post_ctrl(ctx, p);
        if (status != TPU_OK) {
            return tpu_err_set(err, status, "%s", ctx->err.msg);
        }
    }
    return TPU_OK;
}

static void teardown_chip(tpu_rdma_t *r, const tpu_rdma_kernel_t *k, tpu_rdma_ctx_t *ctx)
{
    tpu_xport_t *x = r->x;
    int b, p, i;

    for (p = 0; ctx->peers != NULL && p < x->nchips; p++) {
        if (ctx->peers[p].req != NULL) {
            x->ops->cancel(x, ctx->peers[p].req);
        }
    }
    for (i = 0; i < ctx->nins; i++) {
        x->ops->cancel(x, ctx->ins[i]->req);
        tpu__free(ctx->ins[i]->stage);
        tpu__free(ctx->ins[i]);
    }
    for (i = 0; i < ctx->nouts; i++) {
        if (ctx->outs[i]->ctrl_req != NULL) {
            x->ops->cancel(x, ctx->outs[i]->ctrl_req);
        }
        if (ctx->outs[i]->data_req != NULL) {
            x->ops->cancel(x, ctx->outs[i]->data_req);
        }
        tpu__free(ctx->outs[i]->stage);
        tpu__free(ctx->outs[i]);
    }
    for (b = 0; b < k->nbufs && b < TPU_RDMA_MAX_BUFS; b++) {
        if (ctx->owned[b]) {
            tpu__free(ctx->bufs[b]);
        }
    }
    for (i = 0; i < TPU_RDMA_MAX_SEMS; i++) {
        for (p = 0; p < ctx->sems[i].n; p++) {
            tpu__free(ctx->sems[i].sig[p].data);
        }
        tpu__free(ctx->sems[i].sig);
    }
    tpu__free(ctx->ins);
    tpu__free(ctx->outs);
    tpu__free(ctx->peers);
    tpu_coll_link_timer_destroy(ctx->timer);
    memset(ctx, 0, sizeof(*ctx));
}

static tpu_status_t check_kernel(const tpu_rdma_t *r, const tpu_rdma_kernel_t *k, tpu_err_t *err)
{
    const char *kn;
    double vmem = 0;
    int b;

    if (k == NULL || k->body == NULL) {
        return tpu_err_set(err, TPU_ERR_INVALID, "tpu_rdma_run: NULL kernel or body");
    }
    kn = k->name != NULL ? k->name : "kernel";
    if (k->nbufs < 0 || k->nbufs > TPU_RDMA_MAX_BUFS || (k->nbufs > 0 && k->bufs == NULL)) {
        return tpu_err_set(err, TPU_ERR_INVALID, "%s: %d buffers (0 to %d)", kn, k->nbufs,
                           TPU_RDMA_MAX_BUFS);
    }
    if (k->nsems < 0 || k->nsems > TPU_RDMA_MAX_SEMS) {
        return tpu_err_set(err, TPU_ERR_INVALID, "%s: %d semaphores (0 to %d)", kn, k->nsems,
                           TPU_RDMA_MAX_SEMS);
    }
    for (b = 0; b < k->nbufs; b++) {
        if (k->bufs[b].space != TPU_RDMA_HBM && k->bufs[b].space != TPU_RDMA_VMEM) {
            return tpu_err_set(err, TPU_ERR_INVALID, "%s: buffer %d has no memory space", kn, b);
        }
        if (k->bufs[b].bytes > ((uint64_t)1 << 40)) {
            return tpu_err_set(err, TPU_ERR_INVALID, "%s: buffer %d of %llu bytes is too large", kn,
                               b, (unsigned long long)k->bufs[b].bytes);
        }
        if (k->bufs[b].space == TPU_RDMA_VMEM) {
            vmem += (double)k->bufs[b].bytes;
        }
    }
    if (vmem > (double)tpu_vmem_capacity(r->vmem[0])) {
        return tpu_err_set(err, TPU_ERR_RESOURCE_EXHAUSTED,
                           "%s on chip %s: VMEM buffers need %.1f MiB, capacity %.1f MiB", kn,
                           r->spec.name, vmem / 1048576.0,
                           (double)tpu_vmem_capacity(r->vmem[0]) / 1048576.0);
    }
    return TPU_OK;
}

tpu_status_t tpu_rdma_run(tpu_rdma_t *rdma, const tpu_rdma_kernel_t *kernel,
                          const tpu_rdma_opts_t *opts, tpu_rdma_stats_t *stats_p, tpu_err_t *err)
{
    tpu_xport_t *x;
    run_state_t run;
    tpu_rdma_stats_t stats;
    tpu_status_t status;
    double t0 = tpu__now_s(), local = 0, all = 0;
    int i, nset = 0, nthreads = 0, drained = 1, first = -1;

    if (rdma == NULL) {
        return tpu_err_set(err, TPU_ERR_INVALID, "tpu_rdma_run: NULL runtime");
    }
    x = rdma->x;
    status = check_kernel(rdma, kernel, err);
    if (status != TPU_OK) {
        return status;
    }
    memset(&run, 0, sizeof(run));
    run.kernel = kernel;
    run.timeout_s = opts != NULL && opts->timeout_s > 0 ? opts->timeout_s : DEFAULT_TIMEOUT_S;
    if (opts != NULL) {
        run.on_wait = opts->on_wait;
        run.on_wait_arg = opts->on_wait_arg;
    }
    for (i = 0; i < x->nlocal; i++, nset++) {
        status = setup_chip(rdma, &run, i, err);
        if (status != TPU_OK) {
            nset++;
            goto out;
        }
    }
    if (x->nlocal == 1) {
        chip_main(&rdma->ctx[0]);
    } else {
        for (i = 0; i < x->nlocal; i++, nthreads++) {
            if (pthread_create(&rdma->ctx[i].thread, NULL, chip_main, &rdma->ctx[i]) != 0) {
                /* The chips already running see run.failed and stop. */
                pthread_mutex_lock(&rdma->mu);
                run.failed = 1;
                pthread_mutex_unlock(&rdma->mu);
                status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "%s: no thread for chip %d",
                                     tpu__rdma_kname(&run), rdma->ctx[i].chip);
                break;
            }
        }
        for (i = 0; i < nthreads; i++) {
            pthread_join(rdma->ctx[i].thread, NULL);
        }
        if (status != TPU_OK) {
            goto out;
        }
    }

    /* The first chip's own error wins; else the first error at all.  Under MPI,
     * a chip takes part in the max of the clocks when every peer ended its body
     * (then every peer does too), even when it found an error at its end. */
    for (i = 0; i < x->nlocal; i++) {
        tpu_rdma_ctx_t *c = &rdma->ctx[i];

        if (c->status != TPU_OK && c->primary && first < 0) {
            first = i;
        }
        if (c->clock > local) {
            local = c->clock;
        }
        drained &= c->drained;
    }
    for (i = 0; i < x->nlocal && first < 0; i++) {
        if (rdma->ctx[i].status != TPU_OK) {
            first = i;
        }
    }
    if (drained && x->nlocal != x->nchips) {
        tpu_xport_wait_t w = {run.timeout_s, run.on_wait, run.on_wait_arg};
        tpu_status_t s2 = x->ops->max_time(x, first >= 0 ? 1e300 : local, &all, &w);

        if (s2 != TPU_OK && first < 0) {
            status = tpu_err_set(err, s2, "%s: the max of the clocks: %s", tpu__rdma_kname(&run),
                                 x->msg);
            goto out;
        }
        if (first < 0 && all >= 1e299) {
            status =
                tpu_err_set(err, TPU_ERR_INVALID, "%s: another chip failed", tpu__rdma_kname(&run));
            goto out;
        }
    } else {
        all = local;
    }
    if (first >= 0) {
        status = tpu_err_set(err, rdma->ctx[first].status, "%s", rdma->ctx[first].err.msg);
        goto out;
    }
    memset(&stats, 0, sizeof(stats));
    stats.modeled_us = all * 1e6;
    stats.local_us = local * 1e6;
    for (i = 0; i < x->nlocal; i++) {
        tpu_rdma_ctx_t *c = &rdma->ctx[i];

        if (c->compute * 1e6 > stats.compute_us) {
            stats.compute_us = c->compute * 1e6;
        }
        if (c->waited * 1e6 > stats.wait_us) {
            stats.wait_us = c->waited * 1e6;
        }
        stats.copies += c->copies;
        stats.bytes += c->bytes;
    }
    stats.host_us = (tpu__now_s() - t0) * 1e6;
    if (stats_p != NULL) {
        *stats_p = stats;
    }
    status = TPU_OK;

out:
    for (i = 0; i < nset && i < x->nlocal; i++) {
        teardown_chip(rdma, kernel, &rdma->ctx[i]);
    }
    return status;
}
