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

#include <string.h>

/* Does the route from 'src' to 'dst' have an axis at the tie distance? */
static int has_tie(const tpu_topo_t *topo, int src, int dst)
{
    int cs[TPU_MAX_AXES], cd[TPU_MAX_AXES], a;

    tpu_topo_coords(topo, src, cs);
    tpu_topo_coords(topo, dst, cd);
    for (a = 0; a < topo->naxes; a++) {
        int n = topo->dims[a];

        if (topo->wrap[a] && n % 2 == 0 && ((cd[a] - cs[a] + n) % n) == n / 2) {
            return 1;
        }
    }
    return 0;
}

tpu_status_t tpu__algo_ALL_TO_ALL_direct(const tpu_algo_args_t *args, tpu_sched_t *sched,
                                         tpu_err_t *err)
{
    const tpu_topo_t *topo = args->topo;
    int64_t blk = args->shard;
    int c, j;

    (void)err;
    sched->local[0].src_off = 0;
    sched->local[0].dst_off = 0;
    sched->local[0].len = blk;
    sched->nlocal = 1;
    sched->local_src_shift = blk;
    sched->local_dst_shift = blk;
    for (c = 0; c < topo->nchips; c++) {
        if (args->rep >= 0 && c != args->rep) {
            continue;
        }
        int i = tpu_topo_group_index(topo, args->mask, c);

        for (j = 0; j < args->group; j++) {
            int dst = tpu_topo_group_member(topo, args->mask, c, j);
            int dcn = tpu_topo_slice_of(topo, dst) != tpu_topo_slice_of(topo, c);
            int from = c, split, h;
            tpu_flow_t f;

            if (j == i) {
                continue;
            }
            if (dcn) {
                int coords[TPU_MAX_AXES];

                tpu_topo_coords(topo, c, coords);
                from = tpu_topo_chip(topo, tpu_topo_slice_of(topo, dst), coords);
            }
            split = has_tie(topo, from, dst) && blk >= 2 * args->elem;
            for (h = 0; h < (split ? 2 : 1); h++) {
                int64_t e = blk / args->elem, h1 = (e + 1) / 2;

                memset(&f, 0, sizeof(f));
                f.src = c;
                f.dst = dst;
                f.kind = dcn ? TPU_ROUTE_DCN : TPU_ROUTE_ICI;
                f.tie = (int8_t)(h == 0 ? 1 : -1);
                f.span.off = (int64_t)j * blk;
                f.span.dst_off = (int64_t)i * blk;
                f.span.len = blk;
                f.span.count[0] = f.span.count[1] = f.span.count[2] = 1;
                if (split) {
                    f.span.len = (h == 0 ? h1 : e - h1) * args->elem;
                    if (h == 1) {
                        f.span.off += h1 * args->elem;
                        f.span.dst_off += h1 * args->elem;
                    }
                }
                if (tpu__sched_add(sched, &f) < 0) {
                    return TPU_ERR_NO_MEMORY;
                }
            }
        }
    }
    sched->nsteps = 1;
    sched->nstreams = 1;
    return TPU_OK;
}
