/*
 * All-to-all over any groups of chips: every block straight to its member.
 *
 * What it does.  The buffer of member i holds G blocks (B = V/G bytes); block j
 * goes to member j, which stores it at position i.  Member i keeps its own block
 * i (a local copy).  Every transfer takes the dimension-order route (DCN between
 * slices); at a tie distance on a wrapped axis of even size the block is split,
 * half each way, as the torus all-to-all does.  One step; the schedule covers
 * every group, so the links the groups share are shared.
 *
 * Cost model (W: bidirectional link bandwidth, alpha: per-hop latency, D: the
 * largest hop count between members, L: the bytes the busiest directed link
 * carries):
 *     T = D * alpha + L / (W/2).
 * On a ring of G members that are single links apart, L = B * sum over d < G/2
 * of d ~ B G^2/8 = V G/8: about a quarter of an all-gather of the same V over
 * the ring per link direction pair, as the torus all-to-all.
 *
 * Restrictions: V divides into G blocks of whole elements.  Not pipelined.
 *
 * Step diagram, group {a, b, c} ([m][k]: block k of member m):
 *   step 1:  a: [a][1]->b, [a][2]->c   b: [b][0]->a, [b][2]->c   c: [c][0]->a, [c][1]->b
 *            (and each keeps [m][m])
 */
#include "algo.h"
#include "group_args.h"

/* Block j of member i to member j, as block i (split both ways round at a tie). */
static tpu_status_t send_block(const tpu_algo_args_t *args, tpu_sched_t *sched, const int32_t *m,
                               int i, int j)
{
    return tpu__algo_direct_block(args, sched, m[i], m[j], (int64_t)j * args->shard,
                                  (int64_t)i * args->shard);
}

tpu_status_t tpu__algo_ALL_TO_ALL_group_direct(const tpu_algo_args_t *args, tpu_sched_t *sched,
                                               tpu_err_t *err)
{
    int G;

    tpu__algo_keep_own_block(sched, args->shard);
    return tpu__algo_group_pairs(args, sched, send_block, &G, err);
}
