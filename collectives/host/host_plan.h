/*
 * The start and the end of every host plan builder (host_plan.c).
 */
#ifndef TPU_HOST_PLAN_H
#define TPU_HOST_PLAN_H

#include "tpu/status.h"

#include "schedule.h"

/* The most flows a host plan builds (every chip's, over the pod). */
#define TPU_HOST_MAX_FLOWS 100000

/* Empty 'ps' for a host plan and set 'f' up as its first flow: one span, no offsets. */
void tpu__host_plan_start(tpu_plan_sched_t *ps, tpu_flow_t *f);

/* Sort and index a host plan of one stream in 'nsteps' steps, named 'algo'. */
tpu_status_t tpu__host_plan_finish(tpu_plan_sched_t *ps, int nsteps, const char *algo,
                                   tpu_err_t *err);

#endif /* TPU_HOST_PLAN_H */
