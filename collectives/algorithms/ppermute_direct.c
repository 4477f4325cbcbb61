/*
 * ppermute, direct: every chip sends its buffer to its partner over the
 * dimension-order route.
 *
 * What it does.  The common case is a shift: chip at coordinate p on the axis
 * sends to p + shift (mod n), as jax.lax.ppermute with perm [(i, (i+shift) % n)].
 * On a wrapped axis the message takes the shortest way round; on an open axis the
 * messages that wrap (from the last chips to the first) run back along the line,
 * over the links of the opposite direction.  Across slices ('dcn') the shift is
 * over slice indices and every message crosses DCN.
 *
 * Cost model: b bytes per chip; a shift of k on a wrapped axis loads each
 * directed link with k messages when k <= n/2:
 *     T = k * b / (W/2) + k * alpha            (k = 1: b / (W/2) + alpha)
 * On an open axis the wrapping messages travel n - k hops:
 *     T = (n - k) * alpha + max link load / (W/2).
 * Restrictions: 1 <= |shift| < n.  Source: the seed notes' link model (bytes over
 * the per-direction bandwidth, plus a hop latency per link crossed).
 *
 * Shift +1 on a line of 4:  0->1, 1->2, 2->3 over the + links (1 hop each), and
 * 3->0 back over the - links (3 hops).
 */
#include "algo.h"

#include <string.h>

tpu_status_t tpu__algo_PPERMUTE_direct(const tpu_algo_args_t *args, tpu_sched_t *sched,
                                       tpu_err_t *err)
{
    const tpu_topo_t *topo = args->topo;
    int shift = args->desc->shift;
    int c;

    (void)err;
    for (c = 0; c < topo->nchips; c++) {
        if (args->rep >= 0 && c != args->rep) {
            continue;
        }
        int i = tpu_topo_group_index(topo, args->mask, c);
        int n = args->group;
        int dst = tpu_topo_group_member(topo, args->mask, c, ((i + shift) % n + n) % n);
        tpu_flow_t f;

        if (args->local != NULL && !args->local[c] && !args->local[dst]) {
            continue; /* a rank's own part: the flows of its chips */
        }
        memset(&f, 0, sizeof(f));
        f.src = c;
        f.dst = dst;
        f.kind = args->mask == TPU_AXIS_MASK_DCN ? TPU_ROUTE_DCN : TPU_ROUTE_ICI;
        f.tie = (int8_t)(shift > 0 ? 1 : -1);
        f.span.len = (int64_t)args->desc->bytes;
        f.span.count[0] = f.span.count[1] = f.span.count[2] = 1;
        if (tpu__sched_add(sched, &f) < 0) {
            return TPU_ERR_NO_MEMORY;
        }
    }
    sched->nsteps = 1;
    sched->nstreams = 1;
    return TPU_OK;
}
