/*
 * Line timing of the direct schedules on any pod (lines.c): the per-axis line
 * loads of the schedule's own flows stand for the flows of every member pair of
 * the pod (the direct all-to-all, and group_direct over whole torus axes).
 */
#ifndef TPU_LINES_H
#define TPU_LINES_H

#include "plan.h"

/* The schedules line timing stands for (tpu_plan_sched_t.lines_form). */
enum {
    TPU_LINES_ALL_TO_ALL, /* a block per pair, in halves both ways round at a tie */
    TPU_LINES_GATHER,     /* a whole block per pair, the + way at a tie (group_direct) */
    TPU_LINES_SCATTER,    /* the gather's time reversal, reducing */
    TPU_LINES_PSUM        /* the scatter, then the gather once it is through */
};

/*
 * Does line timing apply to 'algo' (NULL: the direct all-to-all) for the plan's
 * request?  The direct all-to-all over torus axes, and group_direct named over
 * whole torus axes (all-gather, reduce-scatter, psum, all-to-all), on one slice
 * without faults.
 */
int tpu__lines_applies(const tpu_coll_plan_t *p, const tpu_algo_t *algo);
/* Is the algorithm the request names (desc.algo) one that line timing applies to? */
int tpu__lines_named(const tpu_coll_plan_t *p);
/* Make 'ps' (empty, initialised) the line form of the plan's schedule of 'algo'. */
tpu_status_t tpu__lines_build(const tpu_coll_plan_t *p, const tpu_algo_t *algo,
                              tpu_plan_sched_t *ps);
/*
 * The modeled time of the line form 'ps' and (res may be NULL) its per-axis
 * statistics, bit for bit those of the walk over every flow of the pod.
 * @return TPU_OK or TPU_ERR_NO_MEMORY (no message).
 */
tpu_status_t tpu__lines_time(const tpu_topo_t *topo, const tpu_link_model_t *link,
                             const tpu_plan_sched_t *ps, double *seconds_p, tpu_coll_result_t *res);
/*
 * The same, and '*own_end_p': the latest arrival over the flows of 'own' (a part of
 * the schedule the lines stand for, exec.c; its steps as the schedule's) that start
 * or end on a chip of 'local', plus the pod's chains and launch, as the walk's local
 * end.  'own' NULL: every chip is local, the pod's end.
 */
tpu_status_t tpu__lines_time_own(const tpu_topo_t *topo, const tpu_link_model_t *link,
                                 const tpu_plan_sched_t *ps, const tpu_sched_t *own,
                                 const uint8_t *local, double *own_end_p, double *seconds_p,
                                 tpu_coll_result_t *res);
/*
 * The same, telling 'obs' (NULL: no one) of every flow timed, one per combination
 * of the axes' classes ('representative' set: the flows of the pod it stands for
 * are not walked one by one), and of every resource's totals, exactly the walk's.
 */
tpu_status_t tpu__lines_time_observed(const tpu_topo_t *topo, const tpu_link_model_t *link,
                                      const tpu_plan_sched_t *ps, const tpu_coll_observer_t *obs,
                                      double *seconds_p, tpu_coll_result_t *res);
/*
 * An observer of a line form is told of every flow of the pod (every chip's schedule
 * built and walked) up to this many flows, the model's own budget (select.c); above,
 * of the line form's flows (tpu__lines_time_observed()).
 */
#define TPU_LINES_OBSERVE_EVERY 3e7
/* The flows of the whole pod the line form stands for. */
int64_t tpu__lines_pod_flows(const tpu_topo_t *topo, const tpu_plan_sched_t *ps);

#endif /* TPU_LINES_H */
