/*
 * The cost-model choice of a plan's algorithm and pipeline depth (select.c).
 */
#ifndef TPU_SELECT_H
#define TPU_SELECT_H

#include "tpu/status.h"

#include "plan.h"

/*
 * Choose the algorithm and pipeline depth by the cost model: fills p->algo,
 * p->args.chunks, p->args.rep, p->name and the model schedule.
 */
tpu_status_t tpu__plan_select(tpu_coll_plan_t *p, tpu_err_t *err);

#endif /* TPU_SELECT_H */
