/*
 * psum (all-reduce): tree reduce-scatter, then tree all-gather.
 *
 * What it does.  The buffer is cut into N blocks; the tree reduce-scatter
 * (reducescatter_tree.c) leaves block i summed on chip i, and the tree
 * all-gather (allgather_tree.c) spreads the sums.  On the chips, a stream's
 * all-gather starts on a chip as soon as the stream's reduce-scatter has ended
 * there; in the modeled time the whole all-gather starts when the whole
 * reduce-scatter is through (the schedule's barrier, timing.c), as two
 * collectives one after the other, the formula's sum.
 *
 * Cost model:  2 * (N-1)/N * V / (W * sum_i f_i) + 2 * D * alpha.
 * Restrictions: a commutative reduction; ICI axes.
 * Source: the JAX scaling book ("an AllReduce is a ReduceScatter followed by an
 * AllGather").
 */
#include "algo.h"
#include "reversed.h"

tpu_status_t tpu__algo_PSUM_tree(const tpu_algo_args_t *args, tpu_sched_t *sched, tpu_err_t *err)
{
    return tpu__reversed(args, tpu__algo_ALL_GATHER_tree, 1, sched, err);
}
