/*
 * The published-formula ("ideal") times of shared/reference/fidelity.md: what the
 * torus could do at best by the book, for the "vs ideal" columns of bench and
 * model.  Formulas only (see tpu_coll_ideal_us() in tpu/coll.h); no schedule.
 *
 * The formulas are the published ones, with one addition: a DCN stage pays the
 * DCN latency (dcn_latency) the way the ICI stages pay their hops.  The table has
 * none because no source publishes one; with dcn_latency 0 (the table's case)
 * the formulas are exactly fidelity.md's.  Neither the message start nor the
 * calibrated launch cost and link efficiency are in the formula: the default
 * model must reach the formula anyway, and the calibrated mode is compared with
 * measurements, not with the formula.  A wrapped axis counts f = 1 at any size:
 * a wrapped axis of 2 chips is two links each way in the topology
 * (topology/topo.c), a ring's bandwidth.
 */
#include "tpu/coll.h"

#include <math.h>

double tpu_coll_ideal_us(const tpu_topo_t *t, const tpu_link_model_t *link,
                         const tpu_coll_desc_t *d)
{
    double W = link->ici_bw, alpha = link->ici_latency, V = (double)d->bytes;
    double sumf = 0, N = 1, worst = 0, dcn;
    int a, D = tpu_topo_diameter(t, d->axes & 7u);

    for (a = 0; a < t->naxes; a++) {
        if ((d->axes & (1u << a)) && t->dims[a] > 1) {
            int n = t->dims[a];
            double f = t->wrap[a] ? 1.0 : 0.5;
            double x = V * floor(n * n / 4.0) / (n * W * f);

            sumf += f;
            N *= n;
            if (x > worst) {
                worst = x;
            }
        }
    }
    /* Across slices: the DCN stage moves the slice's share, V / (chips of the group
     * in one slice), at the DCN bandwidth per chip (fidelity.md, multi-slice rows). */
    if (d->axes & TPU_AXIS_MASK_DCN) {
        double S = t->slices, ici = 0;

        dcn = (S - 1) / S * (V / N) / link->dcn_bw + link->dcn_latency;
        if (sumf > 0) {
            ici = (N - 1) / N * V / (W * sumf) + D * alpha;
        }
        switch (d->kind) {
        case TPU_COLL_PSUM:
            return 1e6 * (2 * ici + 2 * dcn);
        case TPU_COLL_ALL_GATHER:
        case TPU_COLL_REDUCE_SCATTER:
            return 1e6 * (ici + dcn);
        default:
            break;
        }
    }
    switch (d->kind) {
    case TPU_COLL_ALL_GATHER:
    case TPU_COLL_REDUCE_SCATTER:
        return sumf > 0 ? 1e6 * ((N - 1) / N * V / (W * sumf) + D * alpha) : 0;
    case TPU_COLL_PSUM:
        return sumf > 0 ? 1e6 * 2 * ((N - 1) / N * V / (W * sumf) + D * alpha) : 0;
    case TPU_COLL_ALL_TO_ALL:
        return 1e6 * (worst + D * alpha);
    case TPU_COLL_PPERMUTE: {
        /* A shift by k along one axis (fidelity.md: +1 costs b / (W/2) and 1 hop if the
         * axis wraps, n - 1 hops if it is open: the message of the last chip runs back
         * along the line).  In general the busiest link carries min(k, n - k)
         * messages; on a wrapped axis each goes min(k, n - k) hops, on an open one
         * the messages that wrap go n - k hops back.  Explicit pairs have no
         * published formula: one message over one link. */
        int ax = -1, n, k;

        for (a = 0; a < t->naxes && ax < 0; a++) {
            ax = (d->axes & (1u << a)) ? a : -1;
        }
        if (d->pairs != NULL || d->shift == 0 || ax < 0) {
            return 1e6 * (V / (W / 2) + alpha);
        }
        n = t->dims[ax];
        k = ((d->shift % n) + n) % n;
        k = k < n - k ? k : n - k;
        if (t->wrap[ax]) {
            return 1e6 * (k * V / (W / 2) + k * alpha);
        }
        return 1e6 * (k * V / (W / 2) + (n - k) * alpha);
    }
    default: {
        /* p2p: split over the P edge-disjoint minimal routes, plus the hops. */
        tpu_route_t routes[TPU_MAX_ROUTES];
        int src = d->src < 0 ? 0 : d->src, dst = d->dst < 0 ? 0 : d->dst;

        if (tpu_topo_slice_of(t, src) != tpu_topo_slice_of(t, dst)) {
            return 1e6 * (V / link->dcn_bw + link->dcn_latency);
        }
        return 1e6 * (V / (tpu_topo_routes_disjoint(t, src, dst, routes) * W / 2) +
                      tpu_topo_hops(t, src, dst) * alpha);
    }
    }
}

/*
 * The calibrated mode of v5e: two constants fitted to the scaling book's
 * measurements on v5e ("Sharded Matrices and How to Multiply Them", pop quiz 2,
 * and its all-gather bandwidth plot):
 *   (a) {X:8, Y:4} all-gather of bf16[2048, 8192] over Y (open, 4 chips):
 *       measured 680 us, formula 562 us;
 *   (b) the same with E = F = 256 (128 KiB): measured ~8 us, formula 5.2 us;
 *   (c) v5e 8x16: ~95% of peak unidirectional link bandwidth at ~10 MB.
 * (a) alone says a link efficiency of 559/677 = 0.83; (c) says 0.95: the figures
 * do not fit one efficiency, so the efficiency is the one that makes the
 * largest error of (a) and (c) smallest (0.895: -7.4% and +7.1%), and (b) fixes
 * the launch cost once the efficiency is chosen (2.5 us).  The constants are in
 * tpu/link.h; the profiles of every generation in tpu/calibration.h.  These are
 * fits to published measurements, not published constants; the default
 * (formula) model does not use them.
 */
void tpu_link_model_calibrate(tpu_link_model_t *link)
{
    link->ici_efficiency = TPU_LINK_V5E_ICI_EFFICIENCY;
    link->launch = TPU_LINK_V5E_LAUNCH_S;
}
