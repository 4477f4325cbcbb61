/*
 * psum (all-reduce): torus reduce-scatter, then torus all-gather.
 *
 * What it does.  Every chip starts and ends with V bytes; at the end every chip
 * holds the reduction over the group.  The buffer is cut into N blocks (padded to
 * whole elements when V does not divide: 1 KiB over 6 chips is a valid psum); the
 * reduce-scatter leaves block i summed on chip i, and the all-gather spreads the
 * sums.  On the chips, each all-gather stream starts on a chip as soon as the
 * reduce-scatter of the same stream has finished there; in the modeled time the
 * all-gather starts when the whole reduce-scatter is through (the schedule's
 * barrier, timing.c: a pipeline of the two halves would beat the formula's sum by
 * hiding one half's hops behind the other's bytes).
 *
 * Cost model:  2 * (N-1)/N * V / (W * sum_i f_i) + 2 * D * alpha.
 * Every chip's result is the same bits: each block is reduced once, in one
 * order, on its owner, and then copied.
 *
 * Restrictions: a commutative reduction.
 * Source: the JAX scaling book ("an AllReduce is a ReduceScatter followed by an
 * AllGather"); Patarasuk and Yuan, JPDC 2009.
 *
 * Steps on a wrapped axis of 4 chips (s = sum over chips):
 *
 *   steps 1-2: reduce-scatter (allreduce_torus reversed) -> chip i holds s[i]
 *   steps 3-4: all-gather of the s[i]                   -> every chip holds s
 */
#include "algo.h"
#include "reversed.h"

tpu_status_t tpu__algo_PSUM_rs_ag(const tpu_algo_args_t *args, tpu_sched_t *sched, tpu_err_t *err)
{
    return tpu__reversed(args, tpu__algo_ALL_GATHER_torus, 1, sched, err);
}
