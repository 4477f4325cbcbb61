/*
 * psum over any groups of chips: the group ring reduce-scatter, then the group
 * ring all-gather (reducescatter_group_ring.c, allgather_group_ring.c).
 *
 * What it does.  The buffer (padded to G blocks of whole elements) is reduced
 * block by block around the ring, member k ending with block k reduced; then the
 * reduced blocks go around the ring again to every member.  The all-gather's
 * first flows wait for the reduce-scatter's last arrivals at their source.
 *
 * Cost model: twice the ring all-gather's,
 *     T = 2 (G-1)/G * V/W + 2 floor(G/2) * alpha
 * on rings of single links (every step moves B = V/G bytes each way), about twice
 * the bandwidth term on a part of an open line (the closing hop shares links).
 *
 * Both phases' model schedules are compact (timing_repeat.c).  Over x,y,z of the
 * 16x20x28 v5p at 1,174,405,120 bytes: 44,027.03 us open, 22,631.49 us mixed,
 * 22,343.49 us wrapped (the reduce-scatter's and the all-gather's times added, the
 * second phase's chains after the first's longest).
 *
 * Restrictions: none on V beyond whole elements (the last blocks are padding).
 * Not pipelined.
 *
 * Steps, G = 4:  floor(4/2) = 2 reduce-scatter steps (the second with half
 * blocks), then 2 all-gather steps; see the two files for the diagrams.
 */
#include "algo.h"
#include "reversed.h"

tpu_status_t tpu__algo_PSUM_group_rs_ag(const tpu_algo_args_t *args, tpu_sched_t *sched,
                                        tpu_err_t *err)
{
    return tpu__reversed(args, tpu__algo_ALL_GATHER_group_ring, 1, sched, err);
}
