/*
 * Host plan: reduce-scatter in one round.
 *
 * What it does.  Block j of every chip goes to member j of its group, which adds
 * the others' into a copy of its own block, in flow order (group order): round 1
 * of the two-round psum (direct2.c).  Each block is reduced in one place, in the
 * same order every run (bf16: accumulated in f32 from the owner's block, rounded
 * once), the order the shared-memory reduce-scatter (shm_reduce_scatter.c)
 * follows.  The chip's sends read its input; its output starts as a copy of its
 * block.
 *
 * Cost (n members, V bytes per chip): one dependency round, n - 1 messages and
 * (n - 1) / n * V bytes per chip, where the ring takes n - 1 rounds.
 *
 * Restrictions: reduce-scatter over ICI axes, at most TPU_HOST_MAX_FLOWS flows;
 * else TPU_ERR_UNSUPPORTED.
 *
 * One group of 3, blocks a, b, c (member j owns block j), all in step 0:
 *
 *   chip1 a -> chip0, chip2 a -> chip0, chip0 b -> chip1, chip2 b -> chip1, ...
 */
#include "alloc.h"
#include "host/host.h"
#include "host/host_plan.h"
#include "plan.h"

tpu_status_t tpu__host_REDUCE_SCATTER_direct_rs(const tpu_coll_plan_t *p, const uint8_t *local,
                                                tpu_plan_sched_t *ps, tpu_err_t *err)
{
    const tpu_topo_t *topo = &p->topo;
    int n = p->group, d, g;
    int64_t shard = p->shard;
    tpu_flow_t f;

    if (p->desc.kind != TPU_COLL_REDUCE_SCATTER || (p->desc.axes & TPU_AXIS_MASK_DCN) ||
        shard == 0 || (double)topo->nchips * n > TPU_HOST_MAX_FLOWS) {
        return TPU_ERR_UNSUPPORTED;
    }
    tpu__host_plan_start(ps, &f);
    f.reduce = 1;
    f.span.len = shard;
    for (d = 0; d < topo->nchips; d++) {
        int me = tpu__plan_member_index(p, d);

        for (g = 0; g < n; g++) {
            int src = tpu__plan_member(p, d, g);

            if (src == d || (local != NULL && !local[src] && !local[d])) {
                continue;
            }
            f.src = src;
            f.dst = d;
            f.span.off = me * shard;
            f.span.dst_off = 0;
            if (tpu__sched_add(&ps->s, &f) < 0) {
                tpu__plan_sched_fini(ps);
                return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for the host plan");
            }
        }
    }
    ps->s.local[0].src_off = ps->s.local[0].dst_off = 0;
    ps->s.local[0].len = shard;
    ps->s.nlocal = 1;
    ps->s.local_src_shift = shard;
    ps->s.local_dst_shift = 0;
    return tpu__host_plan_finish(ps, 1, "direct_rs", err);
}
