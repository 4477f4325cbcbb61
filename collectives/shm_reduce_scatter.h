/*
 * reduce-scatter through shared memory (shm_reduce_scatter.c).
 */
#ifndef TPU_SHM_REDUCE_SCATTER_H
#define TPU_SHM_REDUCE_SCATTER_H

#include "shm.h"

/* Run call 'sig->call' of a reduce-scatter from 'in' into 'out' (the user's buffers). */
tpu_status_t tpu__shm_reduce_scatter_run(tpu_shm_t *s, const tpu_call_sig_t *sig,
                                         const tpu_coll_run_opts_t *opts, const void *in, void *out,
                                         tpu_err_t *err);

#endif /* TPU_SHM_REDUCE_SCATTER_H */
