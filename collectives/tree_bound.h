/*
 * The bound form of the tree all-gather, reduce-scatter and psum on open and
 * mixed pods (tree_bound.c): the busiest link's bytes and the deepest chain's
 * hops stand for the flows of every block's tree where the walk over them is past
 * the tree's cap.
 */
#ifndef TPU_TREE_BOUND_H
#define TPU_TREE_BOUND_H

#include "plan.h"

/* The most flows a tree schedule (allgather_tree.c) is built with. */
#define TPU_TREE_MAX_FLOWS 1e6

/*
 * Does the bound form stand for 'algo' with 'chunks' for the plan's request?  The
 * tree over ICI axes of one slice, no faults, whose schedule of a domain
 * (build.c) would be over TPU_TREE_MAX_FLOWS (the callers build it only where no
 * chip stands for every other: rep < 0).
 */
int tpu__tree_bound_applies(const tpu_coll_plan_t *p, const tpu_algo_t *algo, int chunks);
/*
 * Make 'ps' (empty, initialised) the bound form of the plan's tree schedule with
 * 'chunks': no flows, the busiest link's bytes per axis, the hops and steps.
 * @return TPU_OK, TPU_ERR_NO_MEMORY or TPU_ERR_UNSUPPORTED (with a message).
 */
tpu_status_t tpu__tree_bound_build(const tpu_coll_plan_t *p, int chunks, tpu_plan_sched_t *ps,
                                   tpu_err_t *err);
/*
 * The modeled time of the bound form 'ps' with 'link' and (res may be NULL) its
 * per-axis statistics.
 */
void tpu__tree_bound_time(const tpu_topo_t *topo, const tpu_link_model_t *link,
                          const tpu_plan_sched_t *ps, double *seconds_p, tpu_coll_result_t *res);

#endif /* TPU_TREE_BOUND_H */
