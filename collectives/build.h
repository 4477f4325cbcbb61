/*
 * Building a plan's schedule from the registry (build.c).
 */
#ifndef TPU_BUILD_H
#define TPU_BUILD_H

#include "tpu/coll.h"

#include "algo.h"
#include "plan.h"
#include "schedule.h"

#include <stddef.h>
#include <stdint.h>

/* "torus chunks=4", or the bare name when the algorithm is not pipelined. */
void tpu__plan_label(const tpu_algo_t *algo, int chunks, char *buf, size_t len);

/*
 * Build algorithm 'algo' with 'chunks' for the plan's request into 'ps':
 * the flows of chip 'rep' only (representative mode), or of every chip (rep -1);
 * with 'orbit' (a group algorithm on a plan with p->orbit) only the flows of the
 * chips of the domain of p->period (orbit timing, linkmodel.h).
 * @return TPU_OK, TPU_ERR_NO_MEMORY (with a message), or the algorithm's error.
 */
tpu_status_t tpu__plan_build(const tpu_coll_plan_t *p, const tpu_algo_t *algo, int chunks, int rep,
                             int orbit, tpu_plan_sched_t *ps, tpu_err_t *err);

/*
 * The same, with only the flows that start or end on a chip marked in 'local'
 * (NULL: every flow), where the algorithm can leave the others out: a rank's own
 * part of the data schedule (exec.c).  Dependencies of the flows that a marked
 * chip sends are all there; those of the others may not be.
 */
tpu_status_t tpu__plan_build_local(const tpu_coll_plan_t *p, const tpu_algo_t *algo, int chunks,
                                   int rep, int orbit, const uint8_t *local, tpu_plan_sched_t *ps,
                                   tpu_err_t *err);

/*
 * The chips whose flows a model schedule of 'algo' holds on a pod that is not
 * translation-invariant: a domain of the symmetries of the torus family ('algo'
 * NULL: the family as a whole), or every chip.
 */
int64_t tpu__plan_domain_chips(const tpu_coll_plan_t *p, const tpu_algo_t *algo);

/* The flows of the whole pod the schedule stands for (it may hold a part of them). */
int64_t tpu__plan_sched_pod_flows(const tpu_topo_t *topo, const tpu_plan_sched_t *ps);

#endif /* TPU_BUILD_H */
