/*
 * all-gather through shared memory (shm_all_gather.c).
 */
#ifndef TPU_SHM_ALL_GATHER_H
#define TPU_SHM_ALL_GATHER_H

#include "shm.h"

/* Run call 'sig->call' of an all-gather from 'in' into 'out' (the user's buffers). */
tpu_status_t tpu__shm_all_gather_run(tpu_shm_t *s, const tpu_call_sig_t *sig,
                                     const tpu_coll_run_opts_t *opts, const void *in, void *out,
                                     tpu_err_t *err);

#endif /* TPU_SHM_ALL_GATHER_H */
