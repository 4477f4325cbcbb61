/*
 * Progress of the copies (rdma_progress.c), for the kernel API and the run.
 * Called with the runtime's lock held.  Private to emulator/rdma/.
 */
#ifndef TPU_RDMA_PROGRESS_H
#define TPU_RDMA_PROGRESS_H

#include "rdma_internal.h"

#include <stdint.h>

/* Append 'p' to the growable array '*arr' ('*n' used, '*cap' allocated). */
tpu_status_t tpu__rdma_push_ptr(void ***arr, int *n, int *cap, void *p);

/* Send ABORT to every peer (best effort, not waited for beyond posting). */
void tpu__rdma_send_abort(tpu_rdma_ctx_t *ctx);

/* Post the CTRL receive from peer 'p'. */
tpu_status_t tpu__rdma_post_ctrl(tpu_rdma_ctx_t *ctx, int p);

/* A copy has landed: check for a race with one not waited for, then signal. */
tpu_status_t tpu__rdma_land(tpu_rdma_ctx_t *ctx, int src, int buf, uint64_t off, uint64_t bytes,
                            int recv_sem, double t, uint64_t seq, void *data);

/* Progress every local chip (the in-process transports need the receivers' turn). */
tpu_status_t tpu__rdma_progress_all(tpu_rdma_ctx_t *self, int *changed);

/*
 * Wait (lock held on entry and exit) until 'ctx' is satisfied in its state
 * (ST_WAITING or ST_DRAINING), making progress.  'what' describes the wait.
 */
tpu_status_t tpu__rdma_wait_until(tpu_rdma_ctx_t *ctx, const char *what);

#endif /* TPU_RDMA_PROGRESS_H */
