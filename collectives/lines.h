/*
 * Line timing of the direct all-to-all on any pod (lines.c): the per-axis line
 * loads of the schedule's own flows stand for the N * (N - 1) flows of the pod.
 */
#ifndef TPU_LINES_H
#define TPU_LINES_H

#include "plan.h"

/* Does line timing apply to 'algo' (NULL: the direct all-to-all) for the plan's request? */
int tpu__lines_applies(const tpu_coll_plan_t *p, const tpu_algo_t *algo);
/* Make 'ps' (empty, initialised) the line form of the plan's all-to-all. */
tpu_status_t tpu__lines_build(const tpu_coll_plan_t *p, tpu_plan_sched_t *ps);
/*
 * The modeled time of the line form 'ps' and (res may be NULL) its per-axis
 * statistics, bit for bit those of the walk over every flow of the pod.
 * @return TPU_OK or TPU_ERR_NO_MEMORY (no message).
 */
tpu_status_t tpu__lines_time(const tpu_topo_t *topo, const tpu_link_model_t *link,
                             const tpu_plan_sched_t *ps, double *seconds_p, tpu_coll_result_t *res);
/*
 * The same, and '*own_end_p': the latest arrival over the flows of 'own' (a part of
 * the direct all-to-all's schedule, exec.c) that start or end on a chip of 'local'.
 */
tpu_status_t tpu__lines_time_own(const tpu_topo_t *topo, const tpu_link_model_t *link,
                                 const tpu_plan_sched_t *ps, const tpu_sched_t *own,
                                 const uint8_t *local, double *own_end_p, double *seconds_p,
                                 tpu_coll_result_t *res);
/* The flows of the whole pod the line form stands for. */
int64_t tpu__lines_pod_flows(const tpu_topo_t *topo, const tpu_plan_sched_t *ps);

#endif /* TPU_LINES_H */
