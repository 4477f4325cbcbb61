/*
 * Reduce-scatter over any set of torus axes: the torus all-gather run backwards.
 *
 * What it does.  Every chip starts with V bytes and ends with the sum over the
 * group of its own block (V/N bytes).  The schedule is the time reversal of the
 * torus all-gather (allgather_torus.c): every all-gather flow "a sends block b to
 * c" becomes "c sends its partial sum of block b to a, which adds it", in the
 * opposite order of steps.  In the all-gather each block spreads from its owner
 * along a tree that reaches every chip once; reversed, the partial sums flow up
 * the same tree to the owner, and a chip sends a partial only after all of its
 * children's partials have arrived (the reversed dependencies).
 *
 * Cost model: the same as the all-gather of the same V (the same bytes cross the
 * same links the other way), plus the reductions, which the model treats as free
 * next to the links:  (N-1)/N * V / (W * sum_i f_i) + D * alpha.
 *
 * Restrictions: a commutative reduction; V divides into N blocks of whole elements.
 * Source: the JAX scaling book ("a ReduceScatter is the transpose of an AllGather").
 *
 * Steps on a wrapped axis of 4 chips, one ordering ([b]p = partial of block b):
 *
 *   step   chip0          chip1          chip2          chip3
 *    1   [2]a->3,[2]b->1  [3]a->0,[3]b->2  ...          (half partials, summed)
 *    2   [1]->1,[3]->3    [2]->2,[0]->0    ...          (every chip now holds its sum)
 */
#include "algo.h"
#include "reversed.h"

tpu_status_t tpu__algo_REDUCE_SCATTER_torus(const tpu_algo_args_t *args, tpu_sched_t *sched,
                                            tpu_err_t *err)
{
    return tpu__reversed(args, tpu__algo_ALL_GATHER_torus, 0, sched, err);
}
