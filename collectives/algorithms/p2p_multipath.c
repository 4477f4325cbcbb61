/*
 * Point-to-point transfer split over edge-disjoint minimal routes.
 *
 * What it does.  One chip sends b bytes to another.  Between chips that differ
 * in k axes there are k edge-disjoint minimal routes (the rotations of the axis
 * order), and an axis at the tie distance n/2 of an even wrapped axis doubles
 * them (forwards and backwards); the transfer is split evenly over the P routes
 * found (tpu_topo_routes_disjoint), so the source drives P links at once.
 * Between slices the transfer crosses DCN.
 *
 * Cost model:  T = b / (P * W/2) + hops * alpha.
 * The seed's example: 1.7e7 bytes from (0,0) to (3,3) of a 4x4 v5e without
 * wraparound: P = 2, 1.7e7 / 9e10 = 188 us, plus 6 hops = 194 us.
 * Restrictions: none.  Source: seed 001 and the JAX scaling book, "How to Think
 * About TPUs" (question 5).
 *
 * On 4x4 open, (0,0) -> (3,3):  half over x-then-y, half over y-then-x.
 */
#include "algo.h"

#include <string.h>

tpu_status_t tpu__algo_P2P_multipath(const tpu_algo_args_t *args, tpu_sched_t *sched,
                                     tpu_err_t *err)
{
    const tpu_topo_t *topo = args->topo;
    const tpu_coll_desc_t *d = args->desc;
    tpu_route_t routes[TPU_MAX_ROUTES];
    int n = 1, r;
    int64_t elems = (int64_t)d->bytes / args->elem, done = 0;

    (void)err;
    if (tpu_topo_slice_of(topo, d->src) == tpu_topo_slice_of(topo, d->dst)) {
        n = tpu_topo_routes_disjoint(topo, d->src, d->dst, routes);
    }
    for (r = 0; r < n; r++) {
        int64_t part = r == n - 1 ? elems - done : elems / n;
        tpu_flow_t f;

        memset(&f, 0, sizeof(f));
        f.src = d->src;
        f.dst = d->dst;
        f.kind = n == 1 && tpu_topo_slice_of(topo, d->src) != tpu_topo_slice_of(topo, d->dst)
                     ? TPU_ROUTE_DCN
                     : TPU_ROUTE_ICI;
        if (f.kind == TPU_ROUTE_ICI) {
            int order[TPU_MAX_AXES], s, tie = 1;

            for (s = 0; s < routes[r].nseg; s++) {
                const tpu_route_seg_t *seg = &routes[r].seg[s];
                int dim = topo->dims[seg->axis];

                order[s] = seg->axis;
                if (topo->wrap[seg->axis] && dim % 2 == 0 && seg->hops == dim / 2) {
                    tie = seg->dir; /* the direction this route takes on its tie axes */
                }
            }
            f.order = (uint8_t)tpu__axis_order_index(order, routes[r].nseg);
            f.tie = (int8_t)tie;
        }
        f.span.off = done * args->elem;
        f.span.dst_off = f.span.off;
        f.span.len = part * args->elem;
        f.span.count[0] = f.span.count[1] = f.span.count[2] = 1;
        done += part;
        if (tpu__sched_add(sched, &f) < 0) {
            return TPU_ERR_NO_MEMORY;
        }
    }
    sched->nsteps = 1;
    sched->nstreams = 1;
    return TPU_OK;
}
