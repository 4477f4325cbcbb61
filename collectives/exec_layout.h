/*
 * The buffers of a run: in and out of the data schedule's layout (exec_layout.c).
 */
#ifndef TPU_EXEC_LAYOUT_H
#define TPU_EXEC_LAYOUT_H

#include "exec.h"

/* Set up the buffers the data schedule of 'ctx' works on, from the user's 'in'
 * and 'out' (one per local chip). */
void tpu__exec_prepare(tpu_coll_exec_t *ctx, void *const *in, void *const *out);

/* Write the result from the working buffers into 'out' (the all-gather family). */
void tpu__exec_finish(tpu_coll_exec_t *ctx, void *const *out);

#endif /* TPU_EXEC_LAYOUT_H */
