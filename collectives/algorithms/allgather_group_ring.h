/*
 * The bidirectional ring all-gather over any groups (allgather_group_ring.c).
 */
#ifndef TPU_ALLGATHER_GROUP_RING_H
#define TPU_ALLGATHER_GROUP_RING_H

#include "tpu/groups.h"

#include "algo.h"

/*
 * The bidirectional ring all-gather over 'gr', whose
 * groups list their chips in ring order: ring position k of a group holds block
 * blk[k] (the same for every group; NULL: block k).  Honours args->period and
 * args->local.  The group ring passes the plan's groups, the snake ring
 * (allgather_snake.c) the groups of the axes in snake order.
 */
tpu_status_t tpu__ring_allgather(const tpu_algo_args_t *args, const tpu_groups_t *gr,
                                 const int32_t *blk, tpu_sched_t *sched);

#endif /* TPU_ALLGATHER_GROUP_RING_H */
