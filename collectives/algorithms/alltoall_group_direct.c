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
#include "tpu/alloc.h"

#include "algo.h"

tpu_status_t tpu__algo_ALL_TO_ALL_group_direct(const tpu_algo_args_t *args, tpu_sched_t *sched,
                                               tpu_err_t *err)
{
    tpu_groups_t own = {0, 0, NULL};
    const tpu_groups_t *gr;
    int32_t *own_member = NULL;
    int64_t blk = args->shard;
    int G, g, i, j;
    tpu_status_t status;

    (void)err;
    status = tpu__algo_groups(args, &own, &gr, NULL, &own_member);
    if (status != TPU_OK) {
        return status;
    }
    G = gr->size;
    tpu__algo_keep_own_block(sched, blk);
    for (g = 0; g < gr->ngroups && status == TPU_OK; g++) {
        const int32_t *m = gr->chips + (int64_t)g * G;

        for (i = 0; i < G && status == TPU_OK; i++) {
            for (j = 0; j < G && status == TPU_OK; j++) {
                if (j == i || !tpu__algo_in_domain(args, m[i])) {
                    continue;
                }
                status = tpu__algo_direct_block(args, sched, m[i], m[j], (int64_t)j * blk,
                                                (int64_t)i * blk);
            }
        }
    }
    sched->nsteps = 1;
    sched->nstreams = 1;
    tpu__free(own_member);
    tpu_groups_fini(&own);
    return status;
}
