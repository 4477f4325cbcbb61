/*
 * psum over any groups of chips, direct: the direct reduce-scatter, then the
 * direct all-gather (reducescatter_group_direct.c, allgather_group_direct.c).
 *
 * What it does.  Every member sends part k of its buffer to member k, which adds
 * them up; then every member sends its reduced part to every other member.  Two
 * steps whatever the group size: the cost model picks it for small buffers,
 * where the ring's 2 floor(G/2) latencies dominate.
 *
 * Cost model: T = 2 (D * alpha + L * B / (W/2)), B = V/G, D the largest hop count
 * between members, L the most blocks a directed link carries in one step.
 *
 * Restrictions: none on V beyond whole elements (padding).  Not pipelined.
 *
 * Step diagram, group {a, b, c}:
 *   step 1 (reduce):  every member -> every other member: its part of theirs
 *   step 2 (gather):  every member -> every other member: its reduced part
 */
#include "algo.h"
#include "reversed.h"

tpu_status_t tpu__algo_PSUM_group_direct(const tpu_algo_args_t *args, tpu_sched_t *sched,
                                         tpu_err_t *err)
{
    return tpu__reversed(args, tpu__algo_ALL_GATHER_group_direct, 1, sched, err);
}
