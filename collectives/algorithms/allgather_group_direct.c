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
#include "algo.h"
#include "group_args.h"

#include <string.h>

/* Member i's block to member j: one whole-block flow, kept in member order. */
static tpu_status_t send_block(const tpu_algo_args_t *args, tpu_sched_t *sched, const int32_t *m,
                               int i, int j)
{
    const tpu_topo_t *topo = args->topo;
    int64_t B = args->shard;
    tpu_flow_t f;

    memset(&f, 0, sizeof(f));
    f.src = m[i];
    f.dst = m[j];
    f.kind = tpu_topo_slice_of(topo, m[i]) != tpu_topo_slice_of(topo, m[j]) ? TPU_ROUTE_DCN
                                                                            : TPU_ROUTE_ICI;
    f.tie = 1;
    f.span.off = f.span.dst_off = (int64_t)i * B;
    f.span.len = B;
    f.span.count[0] = f.span.count[1] = f.span.count[2] = 1;
    return tpu__sched_add(sched, &f) < 0 ? TPU_ERR_NO_MEMORY : TPU_OK;
}

tpu_status_t tpu__algo_ALL_GATHER_group_direct(const tpu_algo_args_t *args, tpu_sched_t *sched,
                                               tpu_err_t *err)
{
    int G = 0;
    tpu_status_t status = tpu__algo_group_pairs(args, sched, send_block, &G, err);

    /* One stream whose working layout is the user's: block k at k * B. */
    return status == TPU_OK ? tpu__algo_user_layout(sched, args->shard, G) : status;
}
