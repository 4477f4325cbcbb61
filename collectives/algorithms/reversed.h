/*
 * Time reversal of an all-gather schedule (reversed.c).
 */
#ifndef TPU_REVERSED_H
#define TPU_REVERSED_H

#include "algo.h"

/*
 * Build the all-gather 'ag_fn' and write its time reversal, a reduce-scatter,
 * into 'sched'; with 'then_ag', append the all-gather after it (a psum).
 */
tpu_status_t tpu__reversed(const tpu_algo_args_t *args, tpu_algo_fn_t ag_fn, int then_ag,
                           tpu_sched_t *sched, tpu_err_t *err);

#endif /* TPU_REVERSED_H */
