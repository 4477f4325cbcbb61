/*
 * All-gather, one axis after the other.
 *
 * What it does.  The plain schedule: a bidirectional ring (or line) along x over
 * the whole block, then along y over the gathered row, then along z.  Only one
 * axis is busy at a time, so it is slower than the torus algorithm whenever
 * several axes are selected; it is kept as the baseline the scaling book
 * describes ("a plain x phase, then y phase") and for comparison (--algo).
 *
 * Cost model: sum over axes i (in order) of
 *     (n_i - 1) * V_i / (W * f_i) + steps_i * alpha,  V_i = V * prod_{j<i} n_j / N
 * with f_i = 1 for a wrapped axis, 1/2 for an open one, and steps_i = floor(n_i/2)
 * or n_i - 1.  Restrictions and source: as allgather_torus.c.
 *
 * Steps on 2x2 (x then y, both open): step 1 exchanges blocks along x, step 2
 * exchanges the gathered pairs along y:
 *
 *   step   (0,0)        (0,1)        (1,0)        (1,1)
 *    1    [00]->(1,0)  [01]->(1,1)  [10]->(0,0)  [11]->(0,1)
 *    2    [00,10]->(0,1) ...        (pairs along y)
 */
#include "algo.h"
#include "allgather_torus.h"

tpu_status_t tpu__algo_ALL_GATHER_axis_by_axis(const tpu_algo_args_t *args, tpu_sched_t *sched,
                                               tpu_err_t *err)
{
    return tpu__allgather_phases(args, 1, sched, err);
}
