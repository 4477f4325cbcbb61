/*
 * psum (all-reduce), one axis after the other: the axis-by-axis reduce-scatter
 * (z, then y, then x, reducing), then the axis-by-axis all-gather (x, y, z).
 *
 * What it does.  As psum_rs_ag.c, but each half keeps one axis busy at a time;
 * kept as the baseline of the scaling book and for comparison (--algo).
 *
 * Cost model: twice the axis-by-axis all-gather of the same V
 * (allgather_axis_by_axis.c):
 *     2 * sum over axes i of ((n_i - 1) * V_i / (W * f_i) + steps_i * alpha).
 * Restrictions: a commutative reduction.
 * Source: the JAX scaling book ("an AllReduce is a ReduceScatter followed by an
 * AllGather").
 *
 * Steps on 2x2 (s = sum over chips):
 *
 *   step 1: sum half-buffers along y     step 3: gather blocks along x
 *   step 2: sum blocks along x -> s[i]   step 4: gather pairs along y -> s
 */
#include "algo.h"
#include "reversed.h"

tpu_status_t tpu__algo_PSUM_rs_ag_axis_by_axis(const tpu_algo_args_t *args, tpu_sched_t *sched,
                                               tpu_err_t *err)
{
    return tpu__reversed(args, tpu__algo_ALL_GATHER_axis_by_axis, 1, sched, err);
}
