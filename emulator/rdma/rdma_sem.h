/*
 * Semaphore signals (rdma_sem.c).  Private to emulator/rdma/.
 */
#ifndef TPU_RDMA_SEM_H
#define TPU_RDMA_SEM_H

#include "rdma_internal.h"

/* Add a signal to 's': 0, or -1 when out of memory. */
int tpu__rdma_sem_push(sem_t_ *s, const signal_t *sig);

/*
 * Take the 'count' earliest signals of 's' and return the latest time taken.
 * The bytes of the receives taken appear in their buffers now, earliest first:
 * a chip's buffers change only at its own waits, whatever the host's order.
 */
double tpu__rdma_sem_take(sem_t_ *s, int count, void *const *bufs);

#endif /* TPU_RDMA_SEM_H */
