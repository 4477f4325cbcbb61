/*
 * Reduce-scatter over any set of torus axes: the tree all-gather run backwards.
 *
 * What it does.  Every chip starts with V bytes and ends with the sum over the
 * group of its own block.  The schedule is the time reversal of the tree
 * all-gather (allgather_tree.c): every block's tree, walked from the leaves to
 * its owner, each chip sending its partial sum of the block once the partials of
 * its children have arrived (and been added, on its VPU).
 *
 * Cost model: that of the tree all-gather of the same V (the same bytes cross
 * the same links the other way), plus the reductions:
 *     (N-1)/N * V / (W * sum_i f_i) + D * alpha.
 * Restrictions: a commutative reduction; ICI axes; V divides into N blocks.
 * Source: the JAX scaling book ("a ReduceScatter is the transpose of an AllGather").
 */
#include "algo.h"
#include "reversed.h"

tpu_status_t tpu__algo_REDUCE_SCATTER_tree(const tpu_algo_args_t *args, tpu_sched_t *sched,
                                           tpu_err_t *err)
{
    return tpu__reversed(args, tpu__algo_ALL_GATHER_tree, 0, sched, err);
}
