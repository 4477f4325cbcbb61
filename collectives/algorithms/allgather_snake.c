/*
 * All-gather over two or more open axes as one bidirectional ring along a
 * Hamiltonian cycle of the group's grid (a "snake"): every ring hop is one link.
 *
 * What it does.  The torus all-gather runs one line per open axis; its phases
 * cannot keep every axis busy when the lines differ in length (6 x 2: the short
 * line idles while the long one runs), and only pipelining balances them.  A grid
 * of an even number of chips has a Hamiltonian cycle whose consecutive chips are
 * neighbours (boustrophedon order with a return column), so the group is a ring
 * of G chips with 1-link hops, and the ring all-gather of allgather_group_ring.c
 * runs over it: at step t (1 to G/2) every chip passes the block it got at step
 * t-1 on to both ring neighbours, the block from the opposite chip split in
 * halves at the last step.  Blocks keep their places in the output (block k is
 * member k of the axes' group, tpu_topo_group_index()); only the ring order is
 * the snake's.
 *
 * The cycle.  Let e be the first selected axis of even size n_e and P the other
 * selected axes walked as a boustrophedon path p = 0 .. L-1 (L chips, each one
 * hop from the last: the reflected mixed-radix order).  The ring is row 0 of e
 * along p = 1 .. L-1, row 1 back along p = L-1 .. 1, and so on (n_e rows, even,
 * so the last row ends at p = 1), then column p = 0 from row n_e-1 back to row
 * 0, which closes the ring next to its start.
 *
 * Cost model (V the output bytes, W the bidirectional link bandwidth, alpha the
 * per-hop latency, msg the message start): every directed link carries at most
 * one ring hop's flow per step, so
 *
 *     T = (G-1)/G * V/W + G/2 * (alpha + msg)
 *
 * The formula for k open axes is (G-1)/G * V/(W k/2) + D alpha with D the sum of
 * (n_a - 1).  For two open axes (k/2 = 1) the bandwidth terms are equal and
 * G/2 = D exactly when one side is 2 (6 x 2: 6 steps, D = 5 + 1): the snake then
 * reaches the formula where the torus all-gather cannot without deep pipelines.
 * On larger grids (4 x 4: 8 steps against D = 6) or three open axes (half the
 * formula's bandwidth) it is slower, and the selector, which times every
 * candidate, keeps the torus algorithm.  Source: Patarasuk and Yuan (bandwidth
 * optimal all-reduce, JPDC 2009) for the ring; the Hamiltonian cycle of an even
 * grid graph is the classical boustrophedon construction (Itai, Papadimitriou
 * and Szwarcfiter, Hamilton paths in grid graphs, SIAM J. Comput. 1982).
 *
 * Steps, 4 x 2 open (x = 4 even, rows; path over y = 0, 1), ring positions:
 *
 *       y=0  y=1        ring: (0,1) (1,1) (2,1) (3,1) (3,0) (2,0) (1,0) (0,0)
 *   x=0  7    0         step 1..3: each chip to both ring neighbours (1 hop);
 *   x=1  6    1         step 4: the opposite chip's block, half each way.
 *   x=2  5    2         4 steps = D = 3 + 1; every hop one link.
 *   x=3  4    3
 *
 * Restrictions: ICI axes only (no 'dcn'), at least two selected axes of size
 * above 1, none of them wrapped (a wrapped axis has its own ring), an even group
 * (odd grids have no Hamiltonian cycle), at most TPU_SNAKE_MAX_FLOWS flows (2 per
 * chip and built step: the model schedule of a named snake holds 3 steps, its
 * second run G/2 - 2 times (timing_repeat.c), 53,760 flows on an open 16x20x28
 * over x,y,z; the cost model, which compares it with the torus, counts all G/2,
 * 80 million there, and skips it: a ring of G/2 hops only loses to the torus's D
 * hops).  Otherwise TPU_ERR_UNSUPPORTED, and the selector skips it.  Not
 * pipelined.  Named on the open 16x20x28 at 1,174,405,120 bytes: every step one
 * block per link, 11,003.7 us (4,480 steps of 1 hop and B/(W/2)).
 */
#include "algo.h"
#include "allgather_group_ring.h"
#include "alloc.h"
#include "timing_repeat.h"

/* The most flows a snake schedule may hold (group chips x pod chips). */
#define TPU_SNAKE_MAX_FLOWS 8e6

#include <string.h>

/*
 * The coordinates on the axes 'ax' of path position p: digit i of p (mixed radix,
 * ax[0] most significant) runs backwards when the number of whole runs of it
 * before p is odd, so consecutive positions differ by one hop on one axis.
 */
static void path_coords(const tpu_topo_t *topo, const int *ax, int nax, int p, int *c)
{
    int i, span = 1;

    for (i = 0; i < nax; i++) {
        span *= topo->dims[ax[i]];
    }
    for (i = 0; i < nax; i++) {
        int n = topo->dims[ax[i]], runs = p / span, d;

        span /= n;
        d = (p / span) % n;
        c[ax[i]] = runs % 2 ? n - 1 - d : d;
    }
}

tpu_status_t tpu__algo_ALL_GATHER_snake(const tpu_algo_args_t *args, tpu_sched_t *sched,
                                        tpu_err_t *err)
{
    const tpu_topo_t *topo = args->topo;
    tpu_groups_t gr;
    int32_t *blk = NULL;
    int ax[TPU_MAX_AXES], nax = 0, e = -1, a, G, L, k, r, p, g;
    double flows;
    tpu_status_t status;

    memset(&gr, 0, sizeof(gr));
    for (a = 0; a < topo->naxes; a++) {
        if ((args->mask & (1u << a)) && topo->dims[a] > 1) {
            if (topo->wrap[a]) {
                return tpu_err_set(err, TPU_ERR_UNSUPPORTED,
                                   "the snake ring takes open axes only (axis %d wraps)", a);
            }
            if (e < 0 && topo->dims[a] % 2 == 0) {
                e = a;
            } else {
                ax[nax++] = a;
            }
        }
    }
    if ((args->mask & TPU_AXIS_MASK_DCN) || e < 0 || nax < 1) {
        return tpu_err_set(err, TPU_ERR_UNSUPPORTED,
                           "the snake ring needs two or more open ICI axes, one of even size");
    }
    G = tpu_topo_group_size(topo, args->mask);
    /* Every chip's flows (no representative: the cycle has no symmetry to use), 2
     * per chip and built step: all G/2 steps, or 3 in the compact model schedule
     * (timing_repeat.c); a rank's part (args->local) those from and into its chips.
     * Not named, the cost model counts every step: a ring this long only loses to
     * the torus's D hops, and is not worth building to compare. */
    flows = args->local != NULL ? 0 : topo->nchips;
    for (a = 0; args->local != NULL && a < topo->nchips; a++) {
        flows += args->local[a] ? 2 : 0;
    }
    flows *=
        2.0 * tpu__repeat_ring_steps(G, args->compact && args->desc != NULL && args->desc->algo[0]);
    if (flows > TPU_SNAKE_MAX_FLOWS) {
        return tpu_err_set(err, TPU_ERR_UNSUPPORTED,
                           "the snake ring over %d of %d chips would need about %.0f million "
                           "flows, more than %.0f million",
                           G, topo->nchips, flows / 1e6, TPU_SNAKE_MAX_FLOWS / 1e6);
    }
    L = G / topo->dims[e];
    status = tpu_groups_of_axes(topo, args->mask, &gr, err);
    if (status != TPU_OK) {
        return status;
    }
    blk = tpu__malloc((size_t)G * sizeof(int32_t));
    if (blk == NULL) {
        status = TPU_ERR_NO_MEMORY;
        goto out;
    }
    /* Ring position k -> coordinates -> block (member index), from group 0's first chip. */
    for (k = 0; k < G; k++) {
        int c[TPU_MAX_AXES];

        tpu_topo_coords(topo, gr.chips[0], c);
        if (k < topo->dims[e] * (L - 1)) {
            r = k / (L - 1);
            p = 1 + k % (L - 1);
            if (r % 2 == 1) {
                p = L - p;
            }
        } else {
            r = topo->dims[e] - 1 - (k - topo->dims[e] * (L - 1));
            p = 0;
        }
        path_coords(topo, ax, nax, p, c);
        c[e] = r;
        blk[k] = tpu_topo_group_index(topo, args->mask,
                                      tpu_topo_chip(topo, tpu_topo_slice_of(topo, gr.chips[0]), c));
    }
    /* Every group in ring order: its member blk[k] at position k. */
    for (g = 0; g < gr.ngroups; g++) {
        int32_t *m = gr.chips + (int64_t)g * G, first = m[0];

        for (k = 0; k < G; k++) {
            m[k] = tpu_topo_group_member(topo, args->mask, first, blk[k]);
        }
    }
    status = tpu__ring_allgather(args, &gr, blk, sched);
out:
    tpu__free(blk);
    tpu_groups_fini(&gr);
    return status;
}
