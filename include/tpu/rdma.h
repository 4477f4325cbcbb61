/*
 * Remote DMA for kernel authors: Pallas' make_async_remote_copy on tpuemu.
 *
 * A kernel (tpu_rdma_kernel_t) runs on every chip of the pod at once (SPMD),
 * like a pallas_call under shard_map.  It declares its buffers and its DMA
 * semaphores; every chip has its own copy of each (they are symmetric, as in
 * Pallas, where dst_ref names the same buffer on the other chip).  Its body, a
 * C function called once per chip, computes on its buffers and starts copies:
 *
 *     Pallas                                      tpuemu
 *     lax.axis_index('x')                         tpu_rdma_axis_index(ctx, 0)
 *     lax.axis_index('model') over a mesh         tpu_rdma_mesh_index(ctx, mesh, "model", &i, err)
 *     (axis_index + 1) % n  as device_id          tpu_rdma_axis_peer(ctx, 0, +1, &dev, err)
 *                                                 tpu_rdma_mesh_peer(ctx, mesh, "model", +1, &dev,
 * err) c = pltpu.make_async_remote_copy(src_ref,   tpu_rdma_copy_init(&c, SRC, src_off, dst_ref,
 * send_sem, recv_sem,                DST, dst_off, bytes, device_id=dev) SEND, RECV, dev) c.start()
 * tpu_rdma_start(ctx, &c, err) c.wait_send()                               tpu_rdma_wait_send(ctx,
 * &c, err) c.wait_recv()  (on the receiving chip)      tpu_rdma_wait_recv(ctx, &c, err)
 *     pltpu.make_async_copy (same chip)           a copy whose device is the chip itself
 *
 * A copy moves 'bytes' from [src_off, +bytes) of buffer 'src_buf' on this chip to
 * [dst_off, +bytes) of buffer 'dst_buf' on chip 'device'.  When its data has left,
 * the sender's semaphore 'send_sem' goes up by one; when it has arrived, the
 * receiver's 'recv_sem' goes up by one.  A semaphore counts: wait_send/wait_recv
 * take one signal, tpu_rdma_sem_wait() takes n (for n copies into one semaphore).
 *
 * Real bytes move over the transport (one chip per MPI rank, or every chip in
 * one process over loopback, each chip's body on its own thread).  A copy reads
 * its source when it starts; its bytes appear in the destination when the
 * receiving chip waits for them (wait_recv or a wait on its receive semaphore):
 * as in Pallas, read a destination only after the wait.
 *
 * Modeled time.  Every chip has a clock, which starts at 0 when the kernel does:
 *   - tpu_rdma_compute(ctx, s) advances it by s seconds of compute (use the cost
 *     helpers tpu_mxu_seconds(), tpu_vpu_seconds(), or a VMEM kernel's modeled_us);
 *   - a copy started at clock t costs the DMA engine TPU_RDMA_DMA_ISSUE_S to issue
 *     and then travels through the link model (tpu_coll_link_timer_flow(): its
 *     dimension-order route, hops * alpha + bytes / (W/2) and the link model's
 *     other costs, behind this chip's earlier copies on the same first link);
 *     a copy to the chip itself is a local DMA at the HBM bandwidth (the HBM
 *     bytes it reads and writes);  the clock does not wait for it;
 *   - a wait moves the clock to the modeled time of the signals it takes
 *     (when later than the clock): the send side's "data has left" or the
 *     receive side's arrival.  A wait for n takes the n earliest signals.
 * The kernel's modeled time is the latest clock over all chips when their
 * bodies return.  It is a function of the kernel alone: the same over loopback
 * and MPI, whatever the host did.
 *
 * Errors a kernel author makes, each a clear message naming the kernel and chip:
 *   - a wait nobody will satisfy: over loopback, at once (every chip is waiting
 *     and nothing is in flight: a deadlock, naming every waiting chip and its
 *     semaphore); over MPI, after opts->timeout_s (the watchdog) - TPU_ERR_TIMEOUT;
 *   - a copy out of its source or destination buffer, a bad buffer or semaphore,
 *     a device id outside the pod - TPU_ERR_INVALID;
 *   - two copies that land on overlapping bytes of one buffer with no wait on the
 *     first one's receive semaphore before the second lands - TPU_ERR_INVALID
 *     ("race"), detected on the receiving chip;
 *   - a body that returns with copies in flight or signals not waited for (every
 *     semaphore must be back to 0, as in Pallas) - TPU_ERR_INVALID.
 * A failing chip tells the others, which stop with "chip N failed".
 */
#ifndef TPU_RDMA_H
#define TPU_RDMA_H

#include "tpu/chip.h"
#include "tpu/mesh.h"
#include "tpu/pod.h"
#include "tpu/status.h"
#include "tpu/vmem.h"
#include "tpu/xport.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The DMA engine's cost per copy: issuing the descriptor and signalling its
 * semaphores.  Not published; an assumption (about 100 cycles at ~1 GHz). */
#define TPU_RDMA_DMA_ISSUE_S 100e-9

#define TPU_RDMA_MAX_BUFS 32
#define TPU_RDMA_MAX_SEMS 64

typedef enum {
    TPU_RDMA_HBM = 0,
    TPU_RDMA_VMEM = 1
} tpu_rdma_space_t;

/* A symmetric buffer: one per chip. */
typedef struct tpu_rdma_buf {
    const char *name;       /* for messages */
    tpu_rdma_space_t space; /* VMEM buffers must fit the chip's VMEM together */
    uint64_t bytes;
    /* HBM only: the arrays of the local chips (data[i] for local chip i, as
     * tpu_rdma_local_chip() numbers them), borrowed for the run; NULL: the run
     * allocates zeroed buffers.  VMEM buffers are always the run's, zeroed. */
    void *const *data;
} tpu_rdma_buf_t;

typedef struct tpu_rdma_ctx tpu_rdma_ctx_t;

/* The body: runs once on every chip.  A status other than TPU_OK fails the kernel. */
typedef tpu_status_t (*tpu_rdma_body_fn_t)(tpu_rdma_ctx_t *ctx, void *arg, tpu_err_t *err);

typedef struct tpu_rdma_kernel {
    const char *name; /* for messages; may be NULL */
    int nbufs;
    const tpu_rdma_buf_t *bufs;
    int nsems;
    const char *const *sem_names; /* nsems names, for messages; may be NULL */
    tpu_rdma_body_fn_t body;
    void *arg; /* passed to the body of every chip */
} tpu_rdma_kernel_t;

/* One copy, as pltpu.make_async_remote_copy describes it. */
typedef struct tpu_rdma_copy {
    int src_buf;
    uint64_t src_off;
    int dst_buf;
    uint64_t dst_off;
    uint64_t bytes;
    int send_sem; /* on this chip */
    int recv_sem; /* on 'device' */
    int device;   /* the destination chip id */
} tpu_rdma_copy_t;

typedef struct tpu_rdma_opts {
    double timeout_s; /* watchdog on a wait over MPI (0: 30 s) */
    /* NULL, or called whenever a wait of a local chip makes no progress (as
     * tpu_coll_run_opts_t.on_wait), with the chip it waits for: at the end of the
     * kernel, the first peer still in its body; else -1 (a semaphore: any chip may
     * signal it).  Called with the runtime's lock held (one call at a time, from
     * the waiting chip's thread); it must return quickly. */
    void (*on_wait)(void *arg, int chip);
    void *on_wait_arg;
} tpu_rdma_opts_t;

/* What a run did (for the local chips) and the kernel's modeled time. */
typedef struct tpu_rdma_stats {
    double modeled_us; /* latest clock over all chips */
    double local_us;   /* latest clock over the local chips */
    double compute_us; /* compute of the local chips (the most of any one) */
    double wait_us;    /* time the clock jumped in waits (the most of any one local chip) */
    int64_t copies;    /* copies started by the local chips */
    double bytes;      /* their bytes */
    double host_us;    /* wall time of the run */
} tpu_rdma_stats_t;

typedef struct tpu_rdma tpu_rdma_t;

/*
 * The remote-DMA runtime of 'pod' over transport 'x' (both borrowed for its
 * life; the transport must host a pod of the same number of chips).
 * @return TPU_OK, TPU_ERR_INVALID, TPU_ERR_NO_MEMORY.
 */
TPU_API tpu_status_t tpu_rdma_create(const tpu_pod_t *pod, tpu_xport_t *x, tpu_rdma_t **rdma_p,
                                     tpu_err_t *err);
TPU_API void tpu_rdma_destroy(tpu_rdma_t *rdma);

/*
 * Run 'kernel' on every chip (collective over the transport's chips: every rank
 * calls it with the same kernel).  'opts' may be NULL.
 * @return TPU_OK, TPU_ERR_INVALID (a bad kernel or copy, a race, copies in flight
 *         at the end), TPU_ERR_RESOURCE_EXHAUSTED (VMEM buffers over capacity),
 *         TPU_ERR_TIMEOUT (a wait never satisfied), TPU_ERR_TRANSPORT,
 *         TPU_ERR_NO_MEMORY, or the body's status.  '*stats_p' is set on success.
 */
TPU_API tpu_status_t tpu_rdma_run(tpu_rdma_t *rdma, const tpu_rdma_kernel_t *kernel,
                                  const tpu_rdma_opts_t *opts, tpu_rdma_stats_t *stats_p,
                                  tpu_err_t *err);

/* Fill a copy descriptor. */
TPU_API void tpu_rdma_copy_init(tpu_rdma_copy_t *c, int src_buf, uint64_t src_off, int dst_buf,
                                uint64_t dst_off, uint64_t bytes, int send_sem, int recv_sem,
                                int device);

/* Inside a body: this chip, the pod, its buffers. */
TPU_API int tpu_rdma_chip(const tpu_rdma_ctx_t *ctx);
TPU_API int tpu_rdma_local_chip(const tpu_rdma_ctx_t *ctx); /* index among the local chips */
TPU_API const tpu_pod_t *tpu_rdma_pod(const tpu_rdma_ctx_t *ctx);
TPU_API tpu_vmem_t *tpu_rdma_vmem(tpu_rdma_ctx_t *ctx); /* this chip's VMEM, for MXU ops */
TPU_API void *tpu_rdma_buf_data(tpu_rdma_ctx_t *ctx, int buf);
/* The coordinate of this chip on torus axis 'axis' (0 x, 1 y, 2 z), or -1. */
TPU_API int tpu_rdma_axis_index(const tpu_rdma_ctx_t *ctx, int axis);
TPU_API int tpu_rdma_axis_size(const tpu_rdma_ctx_t *ctx, int axis);
/* The chip 'shift' places along 'axis' from this one, modulo the axis size. */
TPU_API tpu_status_t tpu_rdma_axis_peer(const tpu_rdma_ctx_t *ctx, int axis, int shift,
                                        int *device_p, tpu_err_t *err);

/*
 * The same over a named mesh axis (the mesh must be over this pod's chips):
 * lax.axis_index('model') and the chip 'shift' places along 'model' from this
 * one (modulo the axis size), the other mesh coordinates unchanged.
 * @return TPU_OK, or TPU_ERR_INVALID (an axis the mesh does not have, naming it;
 *         a mesh over another pod).
 */
TPU_API tpu_status_t tpu_rdma_mesh_index(const tpu_rdma_ctx_t *ctx, const tpu_mesh_t *mesh,
                                         const char *axis, int *index_p, tpu_err_t *err);
TPU_API tpu_status_t tpu_rdma_mesh_peer(const tpu_rdma_ctx_t *ctx, const tpu_mesh_t *mesh,
                                        const char *axis, int shift, int *device_p, tpu_err_t *err);

/* Start a copy (asynchronous). */
TPU_API tpu_status_t tpu_rdma_start(tpu_rdma_ctx_t *ctx, const tpu_rdma_copy_t *c, tpu_err_t *err);
/* Wait for one signal of c->send_sem (on this chip, the sender). */
TPU_API tpu_status_t tpu_rdma_wait_send(tpu_rdma_ctx_t *ctx, const tpu_rdma_copy_t *c,
                                        tpu_err_t *err);
/* Wait for one signal of c->recv_sem (on this chip, the receiver). */
TPU_API tpu_status_t tpu_rdma_wait_recv(tpu_rdma_ctx_t *ctx, const tpu_rdma_copy_t *c,
                                        tpu_err_t *err);
/* Wait until semaphore 'sem' of this chip holds 'count' signals, and take them. */
TPU_API tpu_status_t tpu_rdma_sem_wait(tpu_rdma_ctx_t *ctx, int sem, int count, tpu_err_t *err);
/* The signals semaphore 'sem' of this chip holds now (those that have landed). */
TPU_API int64_t tpu_rdma_sem_value(tpu_rdma_ctx_t *ctx, int sem);

/* Advance this chip's clock by 'seconds' of compute. */
TPU_API void tpu_rdma_compute(tpu_rdma_ctx_t *ctx, double seconds);
/* This chip's clock, seconds since the kernel started. */
TPU_API double tpu_rdma_now(const tpu_rdma_ctx_t *ctx);

#ifdef __cplusplus
}
#endif

#endif /* TPU_RDMA_H */
