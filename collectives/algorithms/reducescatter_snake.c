/*
 * Reduce-scatter over two or more open axes along a snake ring: the time reversal
 * of the snake all-gather (allgather_snake.c), every flow reducing.
 *
 * Cost model: the all-gather's, T = (G-1)/G * V/W + G/2 * (alpha + msg), V the
 * input bytes; the VPU adds each block as it lands (linkmodel.c).  Steps: the
 * all-gather's in reverse order, each flow from its destination to its source.
 * Restrictions: the snake all-gather's (open ICI axes, an even group).
 */
#include "algo.h"
#include "reversed.h"

tpu_status_t tpu__algo_REDUCE_SCATTER_snake(const tpu_algo_args_t *args, tpu_sched_t *sched,
                                            tpu_err_t *err)
{
    return tpu__reversed(args, tpu__algo_ALL_GATHER_snake, 0, sched, err);
}
