/*
 * Remote DMA between chips from inside kernels (tpu/rdma.h): Pallas'
 * make_async_remote_copy with send and receive semaphores, over the transport.
 * This file: the runtime object (tpu_rdma_create/destroy) and what a kernel
 * asks about its chip (ids, buffers, axis and mesh peers, the clock).  The
 * files of emulator/rdma/:
 *
 *   rdma.c           the runtime and a chip's context, names for messages
 *   rdma_run.c       a run: a thread per local chip, the drain, the max clock
 *   rdma_kernel.c    the kernel API: start a copy, wait on a semaphore
 *   rdma_progress.c  messages in and out, landing copies, waits, deadlocks
 *   rdma_sem.c       semaphore signals in modeled-time order
 *
 * What it does.  tpu_rdma_run() runs a kernel's body once per local chip (each
 * on its own thread when the transport hosts several chips, as loopback does;
 * in the caller's thread under MPI).  A copy to another chip is two messages
 * on the transport, both from the sender:
 *
 *   CTRL (tag TAG_CTRL, header only): COPY dst_buf, dst_off, bytes, recv_sem,
 *        modeled arrival; or DONE n (the sender's body returned after n copies to
 *        this chip); or ABORT (the sender failed).
 *   DATA (tag TAG_DATA): the bytes.
 * Every chip keeps one CTRL receive posted per peer.  When a COPY arrives, it
 * posts the DATA receive (messages of one pair on one tag match in order, so
 * the k-th COPY names the k-th DATA).  When the DATA has landed, the receive
 * semaphore gets a signal stamped with the modeled arrival, holding the bytes;
 * when the sender's DATA send completes, its send semaphore gets a signal
 * stamped with the modeled "left" time.  A copy reads its source when it starts
 * (a snapshot), and its bytes are written into the destination buffer when the
 * receiver waits for the signal: a chip's buffers change only at its own
 * program points, so the data, like the time, never depends on the order in
 * which the host ran the chips (in Pallas, reading before wait_recv is
 * undefined anyway).  Progress is made inside
 * every call of the API (one lock per runtime guards the state and the
 * transport, so the loopback threads take turns).
 *
 * Cost model.  A copy started at clock t:
 *     ready   = t + TPU_RDMA_DMA_ISSUE_S
 *     left, arrival = tpu_coll_link_timer_flow(this chip's timer, src, dst, bytes, ready)
 *                   (link model: hops * alpha + bytes / (W/2) behind this chip's
 *                    earlier copies on the same first link)
 *     same chip: left = arrival = ready + HBM bytes touched / hbm_bw, behind this
 *                chip's earlier local copies
 * A wait for n signals moves the clock to max(clock, latest of the n earliest).
 * Nothing depends on the host's timing, so loopback and MPI give the same times.
 *
 * End of a kernel, per chip (the drain):
 *
 *   body returns -> send DONE(n_p) to every peer p -> progress until DONE came
 *   from every peer and every DATA in and out completed -> every semaphore 0?
 *   -> max of the clocks over the transport (every chip, also one that found
 *   copies in flight, so that no rank is left in the reduction)
 *
 * Errors: a wait that cannot be satisfied (loopback: every chip waits and a
 * full progress pass changed nothing; MPI: the watchdog), a race (a copy lands
 * on bytes of the same buffer that a copy not yet waited for wrote), copies in
 * flight at the end, bad copies.  A chip that fails sends ABORT to its peers.
 *
 * Restrictions: the link timer does not see other chips' copies (see
 * tpu/coll.h); no copy of a strided region (one contiguous range per copy).
 */
#include "tpu/rdma.h"

#include "alloc.h"
#include "rdma_internal.h"

#include <stdio.h>

const char *tpu__rdma_kname(const run_state_t *run)
{
    return run->kernel->name != NULL ? run->kernel->name : "kernel";
}

const char *tpu__rdma_sem_name(const run_state_t *run, int s, char *buf, size_t len)
{
    if (run->kernel->sem_names != NULL && run->kernel->sem_names[s] != NULL) {
        return run->kernel->sem_names[s];
    }
    snprintf(buf, len, "%d", s);
    return buf;
}

const char *tpu__rdma_buf_name(const run_state_t *run, int b, char *buf, size_t len)
{
    if (run->kernel->bufs[b].name != NULL) {
        return run->kernel->bufs[b].name;
    }
    snprintf(buf, len, "%d", b);
    return buf;
}

tpu_status_t tpu_rdma_create(const tpu_pod_t *pod, tpu_xport_t *x, tpu_rdma_t **rdma_p,
                             tpu_err_t *err)
{
    tpu_rdma_t *r;
    tpu_status_t status;
    int i;

    if (pod == NULL || x == NULL || rdma_p == NULL) {
        return tpu_err_set(err, TPU_ERR_INVALID, "tpu_rdma_create: NULL argument");
    }
    if (x->nchips != tpu_pod_topo(pod)->nchips) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "remote DMA: the transport hosts %d chips, the pod has %d", x->nchips,
                           tpu_pod_topo(pod)->nchips);
    }
    r = tpu__calloc(1, sizeof(*r));
    if (r == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "remote DMA: no host memory");
    }
    r->pod = pod;
    r->topo = tpu_pod_topo(pod);
    r->link = *tpu_pod_link(pod);
    r->spec = *tpu_pod_chip(pod);
    r->x = x;
    r->vmem = tpu__calloc((size_t)x->nlocal, sizeof(*r->vmem));
    r->ctx = tpu__calloc((size_t)x->nlocal, sizeof(*r->ctx));
    if (r->vmem == NULL || r->ctx == NULL) {
        status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "remote DMA: no host memory");
        goto fail;
    }
    for (i = 0; i < x->nlocal; i++) {
        status = tpu_vmem_create(&r->spec, &r->vmem[i], err);
        if (status != TPU_OK) {
            goto fail;
        }
    }
    if (pthread_mutex_init(&r->mu, NULL) != 0) {
        status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "remote DMA: no mutex");
        goto fail;
    }
    if (pthread_cond_init(&r->cv, NULL) != 0) {
        pthread_mutex_destroy(&r->mu);
        status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "remote DMA: no condition variable");
        goto fail;
    }
    *rdma_p = r;
    return TPU_OK;

fail:
    for (i = 0; r->vmem != NULL && i < x->nlocal; i++) {
        tpu_vmem_destroy(r->vmem[i]);
    }
    tpu__free(r->vmem);
    tpu__free(r->ctx);
    tpu__free(r);
    return status;
}

void tpu_rdma_destroy(tpu_rdma_t *rdma)
{
    int i;

    if (rdma == NULL) {
        return;
    }
    for (i = 0; i < rdma->x->nlocal; i++) {
        tpu_vmem_destroy(rdma->vmem[i]);
    }
    pthread_cond_destroy(&rdma->cv);
    pthread_mutex_destroy(&rdma->mu);
    tpu__free(rdma->vmem);
    tpu__free(rdma->ctx);
    tpu__free(rdma);
}

void tpu_rdma_copy_init(tpu_rdma_copy_t *c, int src_buf, uint64_t src_off, int dst_buf,
                        uint64_t dst_off, uint64_t bytes, int send_sem, int recv_sem, int device)
{
    c->src_buf = src_buf;
    c->src_off = src_off;
    c->dst_buf = dst_buf;
    c->dst_off = dst_off;
    c->bytes = bytes;
    c->send_sem = send_sem;
    c->recv_sem = recv_sem;
    c->device = device;
}

int tpu_rdma_chip(const tpu_rdma_ctx_t *ctx)
{
    return ctx->chip;
}

int tpu_rdma_local_chip(const tpu_rdma_ctx_t *ctx)
{
    return ctx->li;
}

const tpu_pod_t *tpu_rdma_pod(const tpu_rdma_ctx_t *ctx)
{
    return ctx->rdma->pod;
}

tpu_vmem_t *tpu_rdma_vmem(tpu_rdma_ctx_t *ctx)
{
    return ctx->rdma->vmem[ctx->li];
}

void *tpu_rdma_buf_data(tpu_rdma_ctx_t *ctx, int buf)
{
    if (buf < 0 || buf >= ctx->run->kernel->nbufs) {
        return NULL;
    }
    return ctx->bufs[buf];
}

int tpu_rdma_axis_index(const tpu_rdma_ctx_t *ctx, int axis)
{
    int c[TPU_MAX_AXES];

    if (axis < 0 || axis >= ctx->rdma->topo->naxes) {
        return -1;
    }
    tpu_topo_coords(ctx->rdma->topo, ctx->chip, c);
    return c[axis];
}

int tpu_rdma_axis_size(const tpu_rdma_ctx_t *ctx, int axis)
{
    if (axis < 0 || axis >= ctx->rdma->topo->naxes) {
        return 0;
    }
    return ctx->rdma->topo->dims[axis];
}

tpu_status_t tpu_rdma_axis_peer(const tpu_rdma_ctx_t *ctx, int axis, int shift, int *device_p,
                                tpu_err_t *err)
{
    const tpu_topo_t *topo = ctx->rdma->topo;
    int c[TPU_MAX_AXES];
    int n;

    if (axis < 0 || axis >= topo->naxes) {
        return tpu_err_set(err, TPU_ERR_INVALID, "%s on chip %d: axis %d outside the %d axes",
                           tpu__rdma_kname(ctx->run), ctx->chip, axis, topo->naxes);
    }
    n = topo->dims[axis];
    tpu_topo_coords(topo, ctx->chip, c);
    c[axis] = ((c[axis] + shift) % n + n) % n;
    *device_p = tpu_topo_chip(topo, tpu_topo_slice_of(topo, ctx->chip), c);
    return TPU_OK;
}

/* The mesh axis called 'axis', checked against this pod. */
static tpu_status_t mesh_axis(const tpu_rdma_ctx_t *ctx, const tpu_mesh_t *mesh, const char *axis,
                              int *a_p, tpu_err_t *err)
{
    *a_p = -1; /* set on every path (the compiler cannot see the status of tpu_err_set) */
    if (mesh == NULL || axis == NULL) {
        return tpu_err_set(err, TPU_ERR_INVALID, "%s on chip %d: NULL mesh or axis name",
                           tpu__rdma_kname(ctx->run), ctx->chip);
    }
    if (tpu_mesh_size(mesh) != ctx->rdma->topo->nchips) {
        return tpu_err_set(
            err, TPU_ERR_INVALID, "%s on chip %d: the mesh has %d positions, the pod %d chips",
            tpu__rdma_kname(ctx->run), ctx->chip, tpu_mesh_size(mesh), ctx->rdma->topo->nchips);
    }
    *a_p = tpu_mesh_axis_find(mesh, axis);
    if (*a_p < 0) {
        return tpu_err_set(err, TPU_ERR_INVALID, "%s on chip %d: the mesh has no axis '%s'",
                           tpu__rdma_kname(ctx->run), ctx->chip, axis);
    }
    return TPU_OK;
}

tpu_status_t tpu_rdma_mesh_index(const tpu_rdma_ctx_t *ctx, const tpu_mesh_t *mesh,
                                 const char *axis, int *index_p, tpu_err_t *err)
{
    tpu_status_t status;
    int a;

    status = mesh_axis(ctx, mesh, axis, &a, err);
    if (status == TPU_OK) {
        *index_p = tpu_mesh_axis_index(mesh, ctx->chip, a);
    }
    return status;
}

tpu_status_t tpu_rdma_mesh_peer(const tpu_rdma_ctx_t *ctx, const tpu_mesh_t *mesh, const char *axis,
                                int shift, int *device_p, tpu_err_t *err)
{
    int coords[TPU_MESH_MAX_AXES];
    tpu_status_t status;
    int a, n;

    status = mesh_axis(ctx, mesh, axis, &a, err);
    if (status != TPU_OK) {
        return status;
    }
    n = tpu_mesh_axis_size(mesh, a);
    tpu_mesh_coords(mesh, ctx->chip, coords);
    coords[a] = ((coords[a] + shift) % n + n) % n;
    *device_p = tpu_mesh_chip_at(mesh, coords);
    return TPU_OK;
}

double tpu_rdma_now(const tpu_rdma_ctx_t *ctx)
{
    return ctx->clock;
}

void tpu_rdma_compute(tpu_rdma_ctx_t *ctx, double seconds)
{
    if (seconds > 0) {
        ctx->clock += seconds;
        ctx->compute += seconds;
    }
}
