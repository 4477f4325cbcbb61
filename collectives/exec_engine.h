/*
 * The message engine of a run (exec_engine.c).
 */
#ifndef TPU_EXEC_ENGINE_H
#define TPU_EXEC_ENGINE_H

#include "exec.h"

/*
 * Move the bytes of one call of 'ctx' over its transport, the tags from 'epoch':
 * the flows of the local chips of its data schedule, from and into the buffers
 * tpu__exec_prepare() set up.  TPU_OK, or the error (named in 'err') after every
 * request still live has been cancelled.
 */
tpu_status_t tpu__exec_messages(tpu_coll_exec_t *ctx, const tpu_coll_run_opts_t *opts,
                                uint64_t epoch, tpu_err_t *err);

#endif /* TPU_EXEC_ENGINE_H */
