/*
 * Reduce-scatter over any groups of chips, direct: the time reversal of the
 * direct group all-gather (allgather_group_direct.c).
 *
 * What it does.  Every member sends its part k of the buffer straight to member
 * k, which adds the G-1 parts it receives into its own: one step.
 *
 * Cost model: T = D * alpha + L * B / (W/2) with B = V/G, D the largest hop
 * count between members and L the most blocks a directed link carries (about
 * G^2/8 on a ring of G): the latency-optimal choice for small buffers.
 *
 * Restrictions: V divides into G blocks of whole elements.  Not pipelined.
 *
 * Step diagram, group {a, b, c} (p_m[k]: member m's part k):
 *   step 1:  a: p_a[1]->b, p_a[2]->c   b: p_b[0]->a, p_b[2]->c   c: p_c[0]->a, p_c[1]->b
 */
#include "algo.h"
#include "reversed.h"

tpu_status_t tpu__algo_REDUCE_SCATTER_group_direct(const tpu_algo_args_t *args, tpu_sched_t *sched,
                                                   tpu_err_t *err)
{
    return tpu__reversed(args, tpu__algo_ALL_GATHER_group_direct, 0, sched, err);
}
