/*
 * A call through shared memory (shm_run.c).
 */
#ifndef TPU_SHM_RUN_H
#define TPU_SHM_RUN_H

#include "shm.h"

/* Run call 'sig->call' from 'in' into 'out' (the user's buffers). */
tpu_status_t tpu__shm_run(tpu_shm_t *s, const tpu_call_sig_t *sig, const tpu_coll_run_opts_t *opts,
                          const void *in, void *out, tpu_err_t *err);

#endif /* TPU_SHM_RUN_H */
