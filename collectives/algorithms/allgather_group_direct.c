/*
 * All-gather over any groups of chips, direct: every member sends its block
 * straight to every other member in one step.
 *
 * What it does.  Member i sends block i (B = V/G bytes) to each member j != i
 * over the dimension-order route (DCN between slices); every member ends with
 * the G blocks in member order.  One step, G-1 messages per chip: the latency is
 * one route instead of floor(G/2) ring hops, and the bytes crowd the links, so
 * the cost model picks it for small buffers and the ring for large ones.
 *
 * Cost model (W: bidirectional link bandwidth, alpha: per-hop latency, D: the
 * largest hop count between two members, L: the most blocks one directed link
 * carries, counted from the routes of every group):
 *     T = D * alpha + L * B / (W/2).
 * On a ring of G chips L = sum over distances d < G/2 of d (each link carries the
 * blocks that pass over it): about G^2/8 blocks, against G/2 for the ring.
 *
 * Restrictions: V divides into G blocks of whole elements.  Not pipelined.
 *
 * Step diagram, group {a, b, c} ([m]: block of member m):
 *   step 1:  a: [0]->b, [0]->c    b: [1]->a, [1]->c    c: [2]->a, [2]->b
 */
#include "tpu/alloc.h"

#include "algo.h"

#include <string.h>

tpu_status_t tpu__algo_ALL_GATHER_group_direct(const tpu_algo_args_t *args, tpu_sched_t *sched,
                                               tpu_err_t *err)
{
    const tpu_topo_t *topo = args->topo;
    tpu_groups_t own = {0, 0, NULL};
    const tpu_groups_t *gr;
    const int32_t *member;
    int32_t *own_member = NULL;
    int64_t B = args->shard;
    int G, g, i, j;
    tpu_status_t status;

    (void)err;
    status = tpu__algo_groups(args, &own, &gr, &member, &own_member);
    if (status != TPU_OK) {
        return status;
    }
    (void)member;
    G = gr->size;
    sched->layout = tpu__calloc(1, sizeof(*sched->layout));
    if (sched->layout == NULL) {
        status = TPU_ERR_NO_MEMORY;
        goto out;
    }
    /* One stream whose working layout is the user's: block k at k * B. */
    sched->nlayout = 1;
    sched->layout[0].sub_len = B;
    sched->layout[0].ndigits = 1;
    sched->layout[0].n[0] = G;
    sched->layout[0].gstride[0] = 1;
    for (g = 0; g < gr->ngroups && status == TPU_OK; g++) {
        const int32_t *m = gr->chips + (int64_t)g * G;

        for (i = 0; i < G && status == TPU_OK; i++) {
            for (j = 0; j < G; j++) {
                tpu_flow_t f;

                if (j == i || !tpu__algo_in_domain(args, m[i])) {
                    continue;
                }
                memset(&f, 0, sizeof(f));
                f.src = m[i];
                f.dst = m[j];
                f.kind = tpu_topo_slice_of(topo, m[i]) != tpu_topo_slice_of(topo, m[j])
                             ? TPU_ROUTE_DCN
                             : TPU_ROUTE_ICI;
                f.tie = 1;
                f.span.off = f.span.dst_off = (int64_t)i * B;
                f.span.len = B;
                f.span.count[0] = f.span.count[1] = f.span.count[2] = 1;
                if (tpu__sched_add(sched, &f) < 0) {
                    status = TPU_ERR_NO_MEMORY;
                    break;
                }
            }
        }
    }
    sched->nsteps = 1;
    sched->nstreams = 1;
out:
    tpu__free(own_member);
    tpu_groups_fini(&own);
    return status;
}
