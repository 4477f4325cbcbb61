/*
 * All-to-all, direct: every block goes straight to its chip.
 *
 * What it does.  Every chip's buffer is cut into N blocks; block j of chip i ends
 * as block i of chip j (JAX's all_to_all with split axis = concat axis = 0 over the
 * flattened buffer).  All blocks travel at once, each over its dimension-order
 * route (x, then y, then z, shortest direction); a block bound for the chip
 * opposite on an even wrapped axis (two shortest directions) is split in halves,
 * one each way, so both directions of the ring carry the same load.  Blocks for
 * another slice cross DCN to the chip of the same coordinates there, then ICI.
 *
 * Cost model.  On a wrapped axis of n chips each directed link carries
 * b * floor(n^2/4) / (2n) bytes (b = bytes per chip), on an open axis the middle
 * link carries b * floor(n^2/4) / n; axes load their links concurrently, so
 *
 *     T = max over axes of  b * floor(n_i^2/4) / (n_i * W * f_i)  +  D * alpha,
 *
 * a quarter of an all-gather of the same total on a ring (the scaling book's
 * "AllToAll is 1/4 of an AllGather").
 * Restrictions: V divides into N blocks of whole elements.
 * Source: the JAX scaling book, "Sharded Matrices and How to Multiply Them".
 *
 * One step on a line of 3 chips (block [i>j] from i to j):
 *
 *   chip0: [0>1]->1, [0>2]->2 (2 hops)   chip1: [1>0]->0, [1>2]->2   chip2: ...
 *   link 0->1 carries [0>1],[0>2]; link 1->2 carries [0>2],[1>2]: floor(9/4) = 2 blocks.
 */
#include "algo.h"
#include "alloc.h"
#include "group_args.h"

/* The block from 'c' (member i) to member j of its group. */
static tpu_status_t block(const tpu_algo_args_t *args, tpu_sched_t *sched, int c, int i, int j)
{
    int dst = tpu_topo_group_member(args->topo, args->mask, c, j);

    return tpu__algo_direct_block(args, sched, c, dst, (int64_t)j * args->shard,
                                  (int64_t)i * args->shard);
}

tpu_status_t tpu__algo_ALL_TO_ALL_direct(const tpu_algo_args_t *args, tpu_sched_t *sched,
                                         tpu_err_t *err)
{
    const tpu_topo_t *topo = args->topo;
    int32_t *mine = NULL; /* with args->local: the local chips, in increasing order */
    int nmine = 0, c, j, k;
    tpu_status_t status = TPU_OK;

    (void)err;
    tpu__algo_keep_own_block(sched, args->shard);
    if (args->local != NULL) {
        mine = tpu__malloc((size_t)topo->nchips * sizeof(*mine));
        if (mine == NULL) {
            return TPU_ERR_NO_MEMORY;
        }
        for (c = 0; c < topo->nchips; c++) {
            if (args->local[c]) {
                mine[nmine++] = c;
            }
        }
    }
    for (c = 0; c < topo->nchips && status == TPU_OK; c++) {
        int i = tpu_topo_group_index(topo, args->mask, c);

        if (args->rep >= 0 && c != args->rep) {
            continue;
        }
        if (mine != NULL && !args->local[c]) {
            /* A rank's own part: from another chip, only its blocks for local chips of
             * its group, in member order (chip order within a group) as in the full one. */
            for (k = 0; k < nmine && status == TPU_OK; k++) {
                j = tpu_topo_group_index(topo, args->mask, mine[k]);
                if (j != i && tpu_topo_group_member(topo, args->mask, c, j) == mine[k]) {
                    status = block(args, sched, c, i, j);
                }
            }
            continue;
        }
        for (j = 0; j < args->group && status == TPU_OK; j++) {
            if (j != i) {
                status = block(args, sched, c, i, j);
            }
        }
    }
    tpu__free(mine);
    sched->nsteps = 1;
    sched->nstreams = 1;
    return status;
}
