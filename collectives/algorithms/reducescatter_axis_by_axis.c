/*
 * Reduce-scatter, one axis after the other: the time reversal of the
 * axis-by-axis all-gather (z, then y, then x), reducing on the way.
 *
 * Cost model: as allgather_axis_by_axis.c for the same V.  Restrictions: a
 * commutative reduction; V divides into N blocks of whole elements.
 * Source: the JAX scaling book ("a ReduceScatter is the transpose of an AllGather").
 *
 * Steps on 2x2: step 1 sums pairs of half-buffers along y, step 2 sums blocks
 * along x; each chip ends with the total of its own block.
 */
#include "algo.h"
#include "reversed.h"

tpu_status_t tpu__algo_REDUCE_SCATTER_axis_by_axis(const tpu_algo_args_t *args, tpu_sched_t *sched,
                                                   tpu_err_t *err)
{
    return tpu__reversed(args, tpu__algo_ALL_GATHER_axis_by_axis, 0, sched, err);
}
