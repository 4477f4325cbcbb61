/*
 * Psum over two or more open axes along a snake ring: the snake reduce-scatter
 * then the snake all-gather (allgather_snake.c, reducescatter_snake.c).
 *
 * Cost model: twice the all-gather's, T = 2 * ((G-1)/G * V/W + G/2 * (alpha +
 * msg)).  On a 2 x n open group G/2 = D, the formula's hop count, and the time is
 * the formula's.  Steps: G/2 reducing steps (reversed ring), then G/2 gathering
 * steps.  Restrictions: the snake all-gather's (open ICI axes, an even group).
 */
#include "algo.h"
#include "reversed.h"

tpu_status_t tpu__algo_PSUM_snake(const tpu_algo_args_t *args, tpu_sched_t *sched, tpu_err_t *err)
{
    return tpu__reversed(args, tpu__algo_ALL_GATHER_snake, 1, sched, err);
}
