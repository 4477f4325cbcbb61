/*
 * Reduce-scatter over any groups of chips: the time reversal of the group ring
 * all-gather (allgather_group_ring.c), reducing.
 *
 * What it does.  Every flow of the ring all-gather runs backwards: where the
 * all-gather carried block k from member i to member i+1, the reduce-scatter
 * carries the partial sum of block k from i+1 to i, which adds it in.  After
 * floor(G/2) steps member k holds the reduction of block k over the group.
 *
 * Cost model: the all-gather's, step for step in reverse order, on the same
 * routes and link loads (plus the reductions, which the link model does not
 * charge):  T = (G-1)/G * V/W + floor(G/2) * alpha on rings of single links,
 * about twice the bandwidth term on a part of an open line.
 *
 * The model schedule is compact as the all-gather's (timing_repeat.c: steps T, 2
 * and 1 turned round, the middle one run T - 2 times).  Over x,y,z of the open
 * 16x20x28 (1,174,405,120 bytes) the turned routes run z first: a z row's first
 * chip sends both its flows (to the next chip, and the turned hop that closed the
 * row before) out on its z+ link, its last chip both on z-, and such a port's DMA
 * engine starts them one after the other when they are ready within msg_cost of
 * each other, 22,013.54 us against
 * the all-gather's 22,013.49; 11,171.7 us wrapped and 11,315.7 us mixed, as the
 * all-gather.
 *
 * Restrictions: V divides into G blocks of whole elements.  Not pipelined.
 *
 * Steps for the group {0, 2, 5, 7} (the all-gather's diagram read bottom up):
 *   step 1   (a: first half of a block, backward; b: second half, forward)
 *            chip2 -> chip0: [3]a   chip5 -> chip2: [0]a   ...   chip7 -> chip0: [0]b ...
 *   step 2   every member sends its partial of the blocks two and one away, full blocks.
 */
#include "algo.h"
#include "reversed.h"

tpu_status_t tpu__algo_REDUCE_SCATTER_group_ring(const tpu_algo_args_t *args, tpu_sched_t *sched,
                                                 tpu_err_t *err)
{
    return tpu__reversed(args, tpu__algo_ALL_GATHER_group_ring, 0, sched, err);
}
