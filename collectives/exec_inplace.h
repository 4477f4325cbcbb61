/*
 * In-place runs (exec_inplace.c): where NCCL's in-place form puts a chip's input
 * and output in one buffer, and the copy aside of an input that a run would
 * overwrite before sending it.
 */
#ifndef TPU_EXEC_INPLACE_H
#define TPU_EXEC_INPLACE_H

#include "tpu/coll.h"

/*
 * The inputs a run reads: 'in' itself, or, for the local chips whose input
 * overlaps their output on a path that would overwrite input it still sends,
 * copies made here (kept in the run object across runs).  '*in_p' is set to the
 * array to run with.
 * @return TPU_OK, TPU_ERR_NO_MEMORY.
 */
tpu_status_t tpu__exec_stage_inputs(tpu_coll_exec_t *ctx, void *const *in, void *const *out,
                                    void *const **in_p, tpu_err_t *err);
/* Free what tpu__exec_stage_inputs() kept. */
void tpu__exec_stage_free(tpu_coll_exec_t *ctx);

#endif /* TPU_EXEC_INPLACE_H */
