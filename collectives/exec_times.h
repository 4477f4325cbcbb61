/*
 * The modeled times of a run object (exec_times.c).
 */
#ifndef TPU_EXEC_TIMES_H
#define TPU_EXEC_TIMES_H

#include "exec.h"

/*
 * Set e->end_s and e->local_end_s from the plan's model; with an observer 'obs'
 * (may be NULL), report the walk to it.  TPU_OK or TPU_ERR_NO_MEMORY.
 */
tpu_status_t tpu__exec_model_times(tpu_coll_exec_t *e, const tpu_coll_observer_t *obs);

#endif /* TPU_EXEC_TIMES_H */
