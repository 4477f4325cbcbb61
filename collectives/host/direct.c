/*
 * Host plan: psum in one round, for small buffers.
 *
 * What it does.  Every chip sends its buffer to every member of its group
 * (itself included), and adds what it receives in group order, starting from a
 * copy of member 0's (bf16: widened into an f32 accumulator, rounded once at
 * the end).  Every chip adds the same values in the same order, so every chip
 * ends with the same bits.  A host plan moves the host's bytes only; the modeled
 * time is still the plan's own schedule (host_algorithms.def).
 *
 * Cost (n members, V bytes per chip): one dependency round instead of the ring's
 * 2 * sum(n_i - 1); n - 1 messages of V bytes out and in per chip.
 *
 * Restrictions: psum over ICI axes, at most DIRECT_MAX_BYTES per chip and
 * DIRECT_MAX_TOTAL received per chip, at most TPU_HOST_MAX_FLOWS flows, and group
 * members in increasing chip order (receives are added in flow order, which is
 * source-chip order); else TPU_ERR_UNSUPPORTED and the next row is tried.
 *
 * One group of 3 (every arrow one flow, all in step 0; chip c adds 0, 1, 2):
 *
 *   chip0 -> 0, 1, 2     chip1 -> 0, 1, 2     chip2 -> 0, 1, 2
 */
#include "alloc.h"
#include "host/host.h"
#include "host/host_plan.h"
#include "plan.h"

#define DIRECT_MAX_BYTES 16384
#define DIRECT_MAX_TOTAL (256 * 1024)

tpu_status_t tpu__host_PSUM_direct(const tpu_coll_plan_t *p, const uint8_t *local,
                                   tpu_plan_sched_t *ps, tpu_err_t *err)
{
    const tpu_topo_t *topo = &p->topo;
    int n = p->group, src, g, wide = p->data_scale == 2;
    tpu_flow_t f;

    if (p->desc.kind != TPU_COLL_PSUM || (p->desc.axes & TPU_AXIS_MASK_DCN) ||
        p->desc.bytes > DIRECT_MAX_BYTES || p->desc.bytes * (uint64_t)n > DIRECT_MAX_TOTAL ||
        (double)topo->nchips * n > TPU_HOST_MAX_FLOWS) {
        return TPU_ERR_UNSUPPORTED;
    }
    /* Receives are added in flow order, which is source-chip order: that must be
     * group order. */
    for (src = 0; src < topo->nchips; src++) {
        for (g = 1; g < n; g++) {
            if (tpu__plan_member(p, src, g) <= tpu__plan_member(p, src, g - 1)) {
                return TPU_ERR_UNSUPPORTED;
            }
        }
    }
    tpu__host_plan_start(ps, &f);
    f.span.len = (int64_t)p->desc.bytes;
    for (src = 0; src < topo->nchips; src++) {
        int me = tpu__plan_member_index(p, src);

        for (g = 0; g < n; g++) {
            f.src = src;
            f.dst = tpu__plan_member(p, src, g);
            f.reduce = wide || me != 0;
            if (local != NULL && !local[f.src] && !local[f.dst]) {
                continue; /* a rank's own part: the flows of its chips */
            }
            if (tpu__sched_add(&ps->s, &f) < 0) {
                tpu__plan_sched_fini(ps);
                return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for the host plan");
            }
        }
    }
    return tpu__host_plan_finish(ps, 1, "direct", err);
}
