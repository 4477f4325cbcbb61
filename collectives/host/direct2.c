/*
 * Host plan: psum in two rounds, for larger buffers.
 *
 * What it does.  Block j (the plan's shard) of every chip goes to member j of
 * its group, which adds the others' into its own copy (in flow order: the same
 * order every run); then member j sends its reduced block to every other member.
 * Each block is reduced in one place and copied from there, so every chip ends
 * with the same bits (bf16: the owner accumulates its block in f32 and rounds it
 * once before sending it on).  The chip works in its output buffer (the input
 * copied there first), so its sends read the output.
 *
 * Cost (n members, V bytes per chip): two dependency rounds, 2 (n - 1) messages
 * and 2 (n - 1) / n * V bytes per chip, as a ring moves but without its
 * 2 * sum(n_i - 1) rounds.
 *
 * Restrictions: psum over ICI axes, at most TPU_HOST_MAX_FLOWS flows; else
 * TPU_ERR_UNSUPPORTED and the next row is tried.
 *
 * One group of 3, blocks a, b, c (member j owns block j):
 *
 *   step 0   chip1 a -> chip0, chip2 a -> chip0   (and b to chip1, c to chip2)
 *   step 1   chip0 a -> chip1, chip2              (and b from chip1, c from chip2)
 */
#include "alloc.h"
#include "host/host.h"
#include "host/host_plan.h"
#include "plan.h"

tpu_status_t tpu__host_PSUM_direct2(const tpu_coll_plan_t *p, const uint8_t *local,
                                    tpu_plan_sched_t *ps, tpu_err_t *err)
{
    const tpu_topo_t *topo = &p->topo;
    int n = p->group, d, g, k;
    int64_t V = (int64_t)p->desc.bytes, shard = p->shard;
    int32_t *deps = NULL;
    tpu_flow_t f;

    if (p->desc.kind != TPU_COLL_PSUM || (p->desc.axes & TPU_AXIS_MASK_DCN) ||
        (double)topo->nchips * n * 2 > TPU_HOST_MAX_FLOWS) {
        return TPU_ERR_UNSUPPORTED;
    }
    deps = tpu__malloc((size_t)n * sizeof(*deps));
    if (deps == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for the host plan");
    }
    tpu__host_plan_start(ps, &f);
    /* Round 1: the blocks to their owners, added there. */
    f.step = 0;
    f.reduce = 1;
    for (d = 0; d < topo->nchips; d++) {
        int me = tpu__plan_member_index(p, d);
        int64_t off = me * shard, len = off >= V ? 0 : (off + shard > V ? V - off : shard);

        for (g = 0; g < n && len > 0; g++) {
            int src = tpu__plan_member(p, d, g);

            if (src == d || (local != NULL && !local[src] && !local[d])) {
                continue;
            }
            f.src = src;
            f.dst = d;
            f.span.off = f.span.dst_off = off;
            f.span.len = len;
            if (tpu__sched_add(&ps->s, &f) < 0) {
                goto nomem;
            }
        }
    }
    /* Round 2: every owner's block to the others, once all of it has arrived. */
    f.step = 1;
    f.reduce = 0;
    for (d = 0; d < topo->nchips; d++) {
        int me = tpu__plan_member_index(p, d);
        int64_t off = me * shard, len = off >= V ? 0 : (off + shard > V ? V - off : shard);

        for (g = 0, k = 0; g < (int)ps->s.nflows && len > 0; g++) {
            if (ps->s.flows[g].step == 0 && ps->s.flows[g].dst == d) {
                deps[k++] = g;
            }
        }
        for (g = 0; g < n && len > 0; g++) {
            int dst = tpu__plan_member(p, d, g);
            int64_t i;

            if (dst == d || (local != NULL && !local[d] && !local[dst])) {
                continue;
            }
            f.src = d;
            f.dst = dst;
            f.span.off = f.span.dst_off = off;
            f.span.len = len;
            i = tpu__sched_add(&ps->s, &f);
            if (i < 0 || tpu__sched_add_deps(&ps->s, i, deps, k) != TPU_OK) {
                goto nomem;
            }
        }
    }
    tpu__free(deps);
    ps->s.local[0].src_off = ps->s.local[0].dst_off = 0;
    ps->s.local[0].len = V;
    ps->s.nlocal = 1;
    return tpu__host_plan_finish(ps, 2, "direct2", err);
nomem:
    tpu__free(deps);
    tpu__plan_sched_fini(ps);
    return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for the host plan");
}
