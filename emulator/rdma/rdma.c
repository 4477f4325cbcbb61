/*
 * Remote DMA between chips from inside kernels (tpu/rdma.h): Pallas'
 * make_async_remote_copy with send and receive semaphores, over the transport.
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

#include "tpu/coll.h"

#include "alloc.h"
#include "clock.h" /* common/: tpu__now_s() */

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define TAG_CTRL 0x400000
#define TAG_DATA 0x400001

enum {
    MSG_COPY = 1,
    MSG_DONE = 2,
    MSG_ABORT = 3
};
enum {
    ST_RUNNING = 0,
    ST_WAITING,
    ST_DRAINING,
    ST_FINISHED
};

#define DEFAULT_TIMEOUT_S 30.0

/* A signal of a semaphore: its modeled time, and for a receive what it wrote. */
typedef struct signal {
    double t;
    int src;      /* chip that sent it (the chip itself for a send signal) */
    uint64_t seq; /* order among the signals of 'src' */
    int recv;     /* 1: a receive signal (the landed range below is not yet waited for) */
    int buf;
    uint64_t off, bytes;
    void *data; /* a receive's bytes, written into the buffer when it is waited for */
} signal_t;

typedef struct sem {
    signal_t *sig;
    int n, cap;
} sem_t_;

/* A copy this chip sent, until its DATA send completed. */
typedef struct out_copy {
    tpu_xport_req_t *ctrl_req;
    tpu_xport_req_t *data_req;
    tpu_msg_hdr_t ctrl_hdr;
    tpu_msg_hdr_t data_hdr;
    int send_sem;
    double left;
    uint64_t seq;
    void *stage; /* the source bytes as they were when the copy started */
} out_copy_t;

/* A copy coming in: DATA receive posted. */
typedef struct in_copy {
    tpu_xport_req_t *req;
    tpu_msg_hdr_t hdr;
    int src;
    int buf;
    uint64_t off, bytes;
    int recv_sem;
    double arrival;
    uint64_t seq;
    void *stage; /* the bytes, until the receiver waits for them */
} in_copy_t;

/* The CTRL receive from one peer. */
typedef struct peer {
    tpu_xport_req_t *req; /* NULL once DONE came */
    tpu_msg_hdr_t hdr;
    int done;       /* DONE received */
    uint64_t nrecv; /* COPY messages received */
    uint64_t nsent; /* copies sent to it */
} peer_t;

typedef struct run_state run_state_t;

struct tpu_rdma_ctx {
    tpu_rdma_t *rdma;
    run_state_t *run;
    int chip;
    int li;
    double clock;
    double compute;
    double waited;
    double local_free; /* the local DMA queue is free from */
    void *bufs[TPU_RDMA_MAX_BUFS];
    int owned[TPU_RDMA_MAX_BUFS];
    sem_t_ sems[TPU_RDMA_MAX_SEMS];
    out_copy_t **outs;
    int nouts, cap_outs;
    in_copy_t **ins;
    int nins, cap_ins;
    peer_t *peers;
    uint64_t seq;
    int state;
    int wait_sem;
    int wait_count;
    int aborted_by; /* a peer that sent ABORT, or -1 */
    int drained;    /* the body returned and DONE came from every peer */
    int64_t copies;
    double bytes;
    tpu_coll_link_timer_t *timer;
    tpu_status_t status;
    int primary;   /* the error was found on this chip */
    int secondary; /* the error is another chip's failure */
    tpu_err_t err;
    pthread_t thread;
};

struct run_state {
    const tpu_rdma_kernel_t *kernel;
    double timeout_s;
    void (*on_wait)(void *arg, int chip); /* tpu_rdma_opts_t.on_wait (NULL: none) */
    void *on_wait_arg;
    int failed;   /* a local chip failed (loopback: tell the waiting threads) */
    int deadlock; /* a deadlock was found; 'deadlock_msg' names it */
    char deadlock_msg[TPU_ERR_MSG_LEN];
};

struct tpu_rdma {
    const tpu_pod_t *pod;
    const tpu_topo_t *topo;
    tpu_link_model_t link;
    tpu_chip_spec_t spec;
    tpu_xport_t *x;
    tpu_vmem_t **vmem; /* per local chip */
    tpu_rdma_ctx_t *ctx;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* in-process chips: something changed */
};

static const char *kname(const run_state_t *run)
{
    return run->kernel->name != NULL ? run->kernel->name : "kernel";
}

static const char *sem_name(const run_state_t *run, int s, char *buf, size_t len)
{
    if (run->kernel->sem_names != NULL && run->kernel->sem_names[s] != NULL) {
        return run->kernel->sem_names[s];
    }
    snprintf(buf, len, "%d", s);
    return buf;
}

static const char *buf_name(const run_state_t *run, int b, char *buf, size_t len)
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
                           kname(ctx->run), ctx->chip, axis, topo->naxes);
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
                           kname(ctx->run), ctx->chip);
    }
    if (tpu_mesh_size(mesh) != ctx->rdma->topo->nchips) {
        return tpu_err_set(
            err, TPU_ERR_INVALID, "%s on chip %d: the mesh has %d positions, the pod %d chips",
            kname(ctx->run), ctx->chip, tpu_mesh_size(mesh), ctx->rdma->topo->nchips);
    }
    *a_p = tpu_mesh_axis_find(mesh, axis);
    if (*a_p < 0) {
        return tpu_err_set(err, TPU_ERR_INVALID, "%s on chip %d: the mesh has no axis '%s'",
                           kname(ctx->run), ctx->chip, axis);
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

/* ---- semaphores ---- */

static int sem_push(sem_t_ *s, const signal_t *sig)
{
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 8;
        signal_t *p = tpu__realloc(s->sig, (size_t)cap * sizeof(*p));

        if (p == NULL) {
            return -1;
        }
        s->sig = p;
        s->cap = cap;
    }
    s->sig[s->n++] = *sig;
    return 0;
}

/* Signal a before b: by modeled time, then by sender, then by its order. */
static int sig_before(const signal_t *a, const signal_t *b)
{
    if (a->t != b->t) {
        return a->t < b->t;
    }
    if (a->src != b->src) {
        return a->src < b->src;
    }
    return a->seq < b->seq;
}

/*
 * Take the 'count' earliest signals of 's' and return the latest time taken.
 * The bytes of the receives taken appear in their buffers now, earliest first:
 * a chip's buffers change only at its own waits, whatever the host's order.
 */
static double sem_take(sem_t_ *s, int count, void *const *bufs)
{
    double latest = 0;
    int k, i, best;

    for (k = 0; k < count; k++) {
        best = 0;
        for (i = 1; i < s->n; i++) {
            if (sig_before(&s->sig[i], &s->sig[best])) {
                best = i;
            }
        }
        if (s->sig[best].t > latest) {
            latest = s->sig[best].t;
        }
        if (s->sig[best].data != NULL) {
            memcpy((unsigned char *)bufs[s->sig[best].buf] + s->sig[best].off, s->sig[best].data,
                   (size_t)s->sig[best].bytes);
            tpu__free(s->sig[best].data);
        }
        s->sig[best] = s->sig[--s->n];
    }
    return latest;
}

/* ---- errors ---- */

static tpu_status_t push_ptr(void ***arr, int *n, int *cap, void *p)
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
static void send_abort(tpu_rdma_ctx_t *ctx)
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
            push_ptr((void ***)&ctx->outs, &ctx->nouts, &ctx->cap_outs, o) != TPU_OK) {
            tpu__free(o);
            return;
        }
    }
}

/* ---- progress (called with the lock held) ---- */

static tpu_status_t post_ctrl(tpu_rdma_ctx_t *ctx, int p)
{
    tpu_xport_t *x = ctx->rdma->x;
    tpu_region_t none = {.count = {1, 1, 1}};
    tpu_status_t status;

    status =
        x->ops->irecv(x, ctx->chip, p, TAG_CTRL, &ctx->peers[p].hdr, &none, &ctx->peers[p].req);
    if (status != TPU_OK) {
        ctx->peers[p].req = NULL;
        return tpu_err_set(&ctx->err, status, "%s on chip %d: posting a receive from chip %d: %s",
                           kname(ctx->run), ctx->chip, p, x->msg);
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
                           kname(ctx->run), ctx->chip, p, buf, (unsigned long long)h->sig.call,
                           (long long)h->bytes);
    }
    in = tpu__calloc(1, sizeof(*in));
    if (in == NULL) {
        return tpu_err_set(&ctx->err, TPU_ERR_NO_MEMORY, "%s on chip %d: no host memory",
                           kname(ctx->run), ctx->chip);
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
                           kname(ctx->run), ctx->chip, (unsigned long long)h->bytes);
    }
    reg.base = in->stage;
    reg.len = (int64_t)in->bytes;
    status = x->ops->irecv(x, ctx->chip, p, TAG_DATA, &in->hdr, &reg, &in->req);
    if (status != TPU_OK) {
        tpu__free(in->stage);
        tpu__free(in);
        return tpu_err_set(&ctx->err, status, "%s on chip %d: receiving from chip %d: %s",
                           kname(ctx->run), ctx->chip, p, x->msg);
    }
    if (push_ptr((void ***)&ctx->ins, &ctx->nins, &ctx->cap_ins, in) != TPU_OK) {
        x->ops->cancel(x, in->req);
        tpu__free(in->stage);
        tpu__free(in);
        return tpu_err_set(&ctx->err, TPU_ERR_NO_MEMORY, "%s on chip %d: no host memory",
                           kname(ctx->run), ctx->chip);
    }
    return TPU_OK;
}

/* A copy has landed: check for a race with one not waited for, then signal. */
static tpu_status_t land(tpu_rdma_ctx_t *ctx, int src, int buf, uint64_t off, uint64_t bytes,
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
                    kname(ctx->run), ctx->chip, buf_name(ctx->run, buf, b1, sizeof(b1)), src,
                    (unsigned long long)off, (unsigned long long)(off + bytes),
                    (unsigned long long)o->off, (unsigned long long)(o->off + o->bytes), o->src,
                    sem_name(ctx->run, s, b2, sizeof(b2)));
            }
        }
    }
    if (sem_push(&ctx->sems[recv_sem], &sig) != 0) {
        tpu__free(data);
        return tpu_err_set(&ctx->err, TPU_ERR_NO_MEMORY, "%s on chip %d: no host memory",
                           kname(ctx->run), ctx->chip);
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
                                   kname(ctx->run), ctx->chip, x->msg);
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
                                       kname(ctx->run), ctx->chip, p,
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
            status = post_ctrl(ctx, p);
            if (status != TPU_OK) {
                return status;
            }
        }
    }
    for (i = 0; i < ctx->nins; i++) {
        in_copy_t *in = ctx->ins[i];

        status = x->ops->test(x, in->req, &done);
        if (status != TPU_OK) {
            return tpu_err_set(&ctx->err, status, "%s on chip %d: transport: %s", kname(ctx->run),
                               ctx->chip, x->msg);
        }
        if (!done) {
            continue;
        }
        *changed = 1;
        ctx->ins[i--] = ctx->ins[--ctx->nins];
        status = land(ctx, in->src, in->buf, in->off, in->bytes, in->recv_sem, in->arrival, in->seq,
                      in->stage);
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
                                   kname(ctx->run), ctx->chip, x->msg);
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
                                   kname(ctx->run), ctx->chip, x->msg);
            }
            if (done) {
                signal_t sig = {o->left, ctx->chip, o->seq, 0, -1, 0, 0, NULL};

                o->data_req = NULL;
                *changed = 1;
                if (o->send_sem >= 0 && sem_push(&ctx->sems[o->send_sem], &sig) != 0) {
                    return tpu_err_set(&ctx->err, TPU_ERR_NO_MEMORY,
                                       "%s on chip %d: no host memory", kname(ctx->run), ctx->chip);
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
static tpu_status_t progress_all(tpu_rdma_ctx_t *self, int *changed)
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
    off +=
        (size_t)snprintf(run->deadlock_msg, sizeof(run->deadlock_msg), "%s: deadlock:", kname(run));
    for (i = 0; i < r->x->nlocal && off < sizeof(run->deadlock_msg); i++) {
        const tpu_rdma_ctx_t *c = &r->ctx[i];

        if (c->state != ST_WAITING) {
            continue;
        }
        off += (size_t)snprintf(
            run->deadlock_msg + off, sizeof(run->deadlock_msg) - off,
            "%s chip %d waits on semaphore '%s' (holds %d, needs %d)", nwait++ ? "," : "", c->chip,
            sem_name(run, c->wait_sem, sb, sizeof(sb)), c->sems[c->wait_sem].n, c->wait_count);
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
static tpu_status_t wait_until(tpu_rdma_ctx_t *ctx, const char *what)
{
    tpu_rdma_t *r = ctx->rdma;
    run_state_t *run = ctx->run;
    double t0 = tpu__now_s();
    tpu_status_t status;
    int rounds = 0;

    for (;;) {
        int changed = 0;

        status = progress_all(ctx, &changed);
        if (status != TPU_OK) {
            return status;
        }
        if (ctx->aborted_by >= 0) {
            ctx->secondary = 1;
            return tpu_err_set(&ctx->err, TPU_ERR_INVALID, "%s on chip %d: chip %d failed",
                               kname(run), ctx->chip, ctx->aborted_by);
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
                               kname(run), ctx->chip);
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
                               kname(run), ctx->chip, run->timeout_s, late[0] ? late : "-");
        }
        if (tpu__now_s() - t0 > run->timeout_s) {
            return tpu_err_set(&ctx->err, TPU_ERR_TIMEOUT,
                               "%s on chip %d: waited %.1f s %s (watchdog)", kname(run), ctx->chip,
                               run->timeout_s, what);
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

/* ---- the kernel API ---- */

static tpu_status_t check_copy(tpu_rdma_ctx_t *ctx, const tpu_rdma_copy_t *c)
{
    const tpu_rdma_kernel_t *k = ctx->run->kernel;
    const char *kn = kname(ctx->run);
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
                           (unsigned long long)c->src_off, buf_name(ctx->run, c->src_buf, b, 16),
                           (unsigned long long)k->bufs[c->src_buf].bytes);
    }
    if (c->dst_off > k->bufs[c->dst_buf].bytes ||
        c->bytes > k->bufs[c->dst_buf].bytes - c->dst_off) {
        return tpu_err_set(&ctx->err, TPU_ERR_INVALID,
                           "%s on chip %d: copy of %llu bytes to chip %d does not fit buffer '%s' "
                           "(%llu bytes) at offset %llu",
                           kn, ctx->chip, (unsigned long long)c->bytes, c->device,
                           buf_name(ctx->run, c->dst_buf, b, 16),
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
                           kname(ctx->run), ctx->chip, (unsigned long long)c->bytes);
    }
    memcpy(data, (unsigned char *)ctx->bufs[c->src_buf] + c->src_off, (size_t)c->bytes);
    status =
        land(ctx, ctx->chip, c->dst_buf, c->dst_off, c->bytes, c->recv_sem, end, ctx->seq, data);
    if (status != TPU_OK) {
        return status;
    }
    memset(&sig, 0, sizeof(sig));
    sig.t = end;
    sig.src = ctx->chip;
    sig.seq = ctx->seq;
    sig.buf = -1;
    if (sem_push(&ctx->sems[c->send_sem], &sig) != 0) {
        return tpu_err_set(&ctx->err, TPU_ERR_NO_MEMORY, "%s on chip %d: no host memory",
                           kname(ctx->run), ctx->chip);
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
                           kname(ctx->run), ctx->chip);
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
                           kname(ctx->run), ctx->chip, (unsigned long long)c->bytes);
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
                           kname(ctx->run), ctx->chip, c->device, x->msg);
    }
    if (push_ptr((void ***)&ctx->outs, &ctx->nouts, &ctx->cap_outs, o) != TPU_OK) {
        /* Leave the requests to the transport; the run fails. */
        return tpu_err_set(&ctx->err, TPU_ERR_NO_MEMORY, "%s on chip %d: no host memory",
                           kname(ctx->run), ctx->chip);
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
        status = progress_all(ctx, &changed);
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
                             kname(ctx->run), ctx->chip, how, sem, count, ctx->run->kernel->nsems);
        return fail(ctx, status, err);
    }
    snprintf(what, sizeof(what), "in %s on semaphore '%s' for %d signal%s; nobody signalled it",
             how, sem_name(ctx->run, sem, sb, sizeof(sb)), count, count > 1 ? "s" : "");
    pthread_mutex_lock(&r->mu);
    ctx->state = ST_WAITING;
    ctx->wait_sem = sem;
    ctx->wait_count = count;
    status = wait_until(ctx, what);
    ctx->state = ST_RUNNING;
    if (status == TPU_OK) {
        t = sem_take(&ctx->sems[sem], count, ctx->bufs);
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
    (void)progress_all(ctx, &changed);
    n = ctx->sems[sem].n;
    pthread_mutex_unlock(&ctx->rdma->mu);
    return n;
}

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
                                 kname(ctx->run), ctx->chip);
            break;
        }
        o->ctrl_hdr.sig.kind = MSG_DONE;
        o->ctrl_hdr.sig.bytes = ctx->peers[p].nsent;
        o->send_sem = -1;
        status = r->x->ops->isend(r->x, ctx->chip, p, TAG_CTRL, &o->ctrl_hdr, &none, &o->ctrl_req);
        if (status != TPU_OK) {
            tpu__free(o);
            status = tpu_err_set(&ctx->err, status, "%s on chip %d: transport: %s", kname(ctx->run),
                                 ctx->chip, r->x->msg);
        } else if (push_ptr((void ***)&ctx->outs, &ctx->nouts, &ctx->cap_outs, o) != TPU_OK) {
            status = tpu_err_set(&ctx->err, TPU_ERR_NO_MEMORY, "%s on chip %d: no host memory",
                                 kname(ctx->run), ctx->chip);
        }
    }
    ctx->state = ST_DRAINING;
    while (status == TPU_OK) {
        tpu_status_t st = wait_until(ctx, "for the other chips to end the kernel");

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
                                 kname(ctx->run), ctx->chip, sem_name(ctx->run, s, sb, sizeof(sb)),
                                 sm->n, sm->sig[0].recv ? "receive" : "send", sm->n > 1 ? "s" : "");
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
            tpu_err_set(&ctx->err, status, "%s on chip %d: %s", kname(ctx->run), ctx->chip,
                        berr.status != TPU_OK ? berr.msg : tpu_status_str(status));
            ctx->primary = 1;
        }
        ctx->status = status;
        ctx->state = ST_FINISHED;
        send_abort(ctx);
        pthread_cond_broadcast(&ctx->rdma->cv);
        pthread_mutex_unlock(&ctx->rdma->mu);
        return NULL;
    }
    status = drain(ctx);
    ctx->status = status;
    if (status != TPU_OK && ctx->err.status == TPU_OK) {
        tpu_err_set(&ctx->err, status, "%s on chip %d failed", kname(ctx->run), ctx->chip);
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
                                   kname(run), b, ctx->chip);
            }
            continue;
        }
        ctx->bufs[b] = tpu__calloc(1, (size_t)bd->bytes + 1);
        ctx->owned[b] = 1;
        if (ctx->bufs[b] == NULL) {
            return tpu_err_set(err, TPU_ERR_NO_MEMORY,
                               "%s: no host memory for buffer %d (%llu bytes) of chip %d",
                               kname(run), b, (unsigned long long)bd->bytes, ctx->chip);
        }
    }
    ctx->peers = tpu__calloc((size_t)r->x->nchips, sizeof(*ctx->peers));
    if (ctx->peers == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "%s: no host memory", kname(run));
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
        status = post_ctrl(ctx, p);
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
                                     kname(&run), rdma->ctx[i].chip);
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
            status = tpu_err_set(err, s2, "%s: the max of the clocks: %s", kname(&run), x->msg);
            goto out;
        }
        if (first < 0 && all >= 1e299) {
            status = tpu_err_set(err, TPU_ERR_INVALID, "%s: another chip failed", kname(&run));
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
