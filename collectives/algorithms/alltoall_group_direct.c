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

#include <string.h>

/* Are src and dst at the tie distance (n/2 on a wrapped axis of even size n) on an axis? */
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

tpu_status_t tpu__algo_ALL_TO_ALL_group_direct(const tpu_algo_args_t *args, tpu_sched_t *sched,
                                               tpu_err_t *err)
{
    const tpu_topo_t *topo = args->topo;
    tpu_groups_t own = {0, 0, NULL};
    const tpu_groups_t *gr;
    const int32_t *member;
    int32_t *own_member = NULL;
    int64_t blk = args->shard, e = args->shard / args->elem, h1 = (e + 1) / 2;
    int G, g, i, j, h;
    tpu_status_t status;

    (void)err;
    status = tpu__algo_groups(args, &own, &gr, &member, &own_member);
    if (status != TPU_OK) {
        return status;
    }
    (void)member;
    G = gr->size;
    sched->local[0].src_off = 0;
    sched->local[0].dst_off = 0;
    sched->local[0].len = blk;
    sched->nlocal = 1;
    sched->local_src_shift = blk;
    sched->local_dst_shift = blk;
    for (g = 0; g < gr->ngroups && status == TPU_OK; g++) {
        const int32_t *m = gr->chips + (int64_t)g * G;

        for (i = 0; i < G && status == TPU_OK; i++) {
            for (j = 0; j < G && status == TPU_OK; j++) {
                int c = m[i], dst = m[j], from = c, split;
                int dcn = tpu_topo_slice_of(topo, dst) != tpu_topo_slice_of(topo, c);

                if (j == i || !tpu__algo_in_domain(args, c)) {
                    continue;
                }
                if (dcn) {
                    int coords[TPU_MAX_AXES];

                    tpu_topo_coords(topo, c, coords);
                    from = tpu_topo_chip(topo, tpu_topo_slice_of(topo, dst), coords);
                }
                split = has_tie(topo, from, dst) && e >= 2;
                for (h = 0; h < (split ? 2 : 1); h++) {
                    tpu_flow_t f;

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
                        status = TPU_ERR_NO_MEMORY;
                        break;
                    }
                }
            }
        }
    }
    sched->nsteps = 1;
    sched->nstreams = 1;
    tpu__free(own_member);
    tpu_groups_fini(&own);
    return status;
}
