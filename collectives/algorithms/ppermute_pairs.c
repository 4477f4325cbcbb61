/*
 * ppermute over explicit pairs: XLA's collective-permute.
 *
 * What it does.  Every pair (source, target) of chip ids moves the source's
 * buffer (V bytes) to the target, over the dimension-order route (DCN between
 * slices).  Sources are unique and targets are unique (the plan checks); a chip
 * that is no target receives nothing (jax.lax.ppermute then gives it zeros, which
 * the caller writes).  A pair of a chip with itself is a transfer of 0 hops.
 * Without pairs (a request over one axis with --shift, when named) the pairs
 * are the shift's: member i -> member i + shift of every group.
 *
 * Cost model (W: bidirectional link bandwidth, alpha: per-hop latency):
 *     T = max over pairs of (hops * alpha + L_route / (W/2)),
 * L_route the bytes on the busiest directed link of the pair's route, counted
 * over every pair: a shift by one along a ring costs V/(W/2) + alpha; pairs whose
 * routes overlap share their links.
 *
 * Restrictions: one step, not pipelined.  With args->local (a rank's own part)
 * only the pairs that start or end on a marked chip are built; in orbit timing
 * (args->period) the shift's pairs from the chips of the domain only.
 *
 * Step diagram, pairs (0,1) (1,2) (2,3) (3,0) on a line of 4:
 *   step 1:  0->1, 1->2, 2->3 over the + links; 3->0 back over the - links (3 hops).
 */
#include "algo.h"
#include "alloc.h"
#include "group_args.h"

#include <string.h>

static tpu_status_t add_pair(const tpu_algo_args_t *args, int src, int dst, int tie,
                             tpu_sched_t *sched)
{
    const tpu_topo_t *topo = args->topo;
    tpu_flow_t f;

    memset(&f, 0, sizeof(f));
    f.src = src;
    f.dst = dst;
    f.kind = tpu_topo_slice_of(topo, src) != tpu_topo_slice_of(topo, dst) ? TPU_ROUTE_DCN
                                                                          : TPU_ROUTE_ICI;
    f.tie = (int8_t)tie;
    f.span.len = (int64_t)args->desc->bytes;
    f.span.count[0] = f.span.count[1] = f.span.count[2] = 1;
    return tpu__sched_add(sched, &f) < 0 ? TPU_ERR_NO_MEMORY : TPU_OK;
}

tpu_status_t tpu__algo_PPERMUTE_pairs(const tpu_algo_args_t *args, tpu_sched_t *sched,
                                      tpu_err_t *err)
{
    const tpu_coll_desc_t *d = args->desc;
    tpu_status_t status = TPU_OK;
    int k;

    (void)err;
    if (d->pairs != NULL) {
        for (k = 0; k < d->npairs && status == TPU_OK; k++) {
            int src = d->pairs[2 * k], dst = d->pairs[2 * k + 1];

            if (args->local != NULL && !args->local[src] && !args->local[dst]) {
                continue; /* a rank's own part: the pairs of its chips */
            }
            status = add_pair(args, src, dst, 1, sched);
        }
    } else {
        const tpu_topo_t *topo = args->topo;
        int n = args->group, c;

        for (c = 0; c < topo->nchips && status == TPU_OK; c++) {
            int i = tpu_topo_group_index(topo, args->mask, c);
            int dst = tpu_topo_group_member(topo, args->mask, c, ((i + d->shift) % n + n) % n);

            if ((args->local != NULL && !args->local[c] && !args->local[dst]) ||
                !tpu__algo_in_domain(args, c)) {
                /* A rank's own part, or orbit timing: the pairs from the chips of a
                 * domain only (the shift maps the others onto them). */
                continue;
            }
            status = add_pair(args, c, dst, d->shift > 0 ? 1 : -1, sched);
        }
    }
    sched->nsteps = 1;
    sched->nstreams = 1;
    return status;
}
