/*
 * The bound form of the tree all-gather (allgather_tree.c), its reduce-scatter
 * and its psum on pods that are not translation-invariant (an axis of the
 * collective open): the busiest link's bytes and the deepest chain's hops stand
 * for the G (G - 1) flows of every block's tree, where the walk over them is past
 * the tree's cap (TPU_TREE_MAX_FLOWS; a domain of the open 16x20x28 holds 30
 * million flows, of 16x20x28 with x wrapped 3.8 million).
 *
 * The loads.  In the stream of axis order r, a block moves along the order's
 * axes in turn, broadcast both ways along each line from where it entered it.
 * On an open axis a it crosses the link p -> p+1 of a line when its origin
 * is at or below p on a and agrees with the line on the axes after a in the order
 * (the axes before a it has crossed already, from any coordinate).  So that link
 * carries (p + 1) * P_r(a) blocks of the stream, P_r(a) the product of the sizes
 * of the axes before a in r, whatever the other coordinates, and p+1 -> p carries
 * (n_a - 1 - p) * P_r(a): the busiest links of axis a (its two ends, inward)
 * carry n_a - 1 blocks per P_r(a).  On a wrapped axis every link carries the
 * same: (n_a - 1) / 2 blocks from behind it, and on an even axis the first half
 * of the block at the tie (n_a / 2 away: half each way round), the + links the
 * larger half.  Summed over the streams with their block bytes: the busiest
 * link's bytes of each axis, exactly the walk's (integers).  The reduce-scatter
 * is the same flows turned round; in a psum a link of an open axis carries n_a
 * blocks per P_r(a), one of a wrapped axis n_a - 1, its two halves' together.
 *
 * The time.  Bytes and latency add as in the walk (timing.c): the collective
 * takes its latest bytes plus its longest chain of latencies.  The latest bytes
 * are at least the busiest link's bytes L over its bandwidth, and the longest
 * chain is at least the D hops of the farthest chip (n_a - 1 along an open axis,
 * n_a / 2 along a wrapped one; alpha each), so
 *
 *     T = L / (W/2 * efficiency) + D * alpha (+ launch)
 *
 * (a psum: twice both terms, its all-gather starting when the reduce-scatter is
 * through), a lower bound of the walk's time.  It is the walk's where the
 * busiest links never idle and no message start waits for another.  Measured
 * against the walk over every flow (orbit timing), one chunk, 1 MiB a chip:
 *
 *     shape         reduce-scatter   all-gather            psum
 *     8x8x8         equal (1e-15)    +0.100 us of 2006     +0.100 us of 4011
 *     10x10x10      equal            +0.150 us of 3907     +0.150 us of 7814
 *     8x10x14       equal            +0.041 us of 4375     +0.041 us of 8750
 *     8x10x14, x    equal            equal                 equal
 *     8x10x14, z    equal            equal                 equal
 *
 * (8x10x14: half the 16x20x28 on every axis, the largest whose tree the walk
 * takes).  The reduce-scatter is the walk's on every open shape measured (its
 * leaves all start at once) and on the mixed ones but one (4x4x4 with x wrapped,
 * 256 KiB a chip, calibrated: +5e-4); the all-gather leaves out the waits of its message starts
 * (a chip's streams arrive a few bytes apart, and their starts queue on the DMA
 * engine: a few msg_cost) and, where an axis is short, the idle time of a
 * busiest link waiting for blocks, at 4 MiB a chip: 2x3 +19.5% (x wrapped
 * +24%), 2x7 +12.5% (y wrapped +15%), 3x5 +7.0%, 2x16x16 +4.2%, 3x5x7 +3.0%, 4x6x8 with x
 * wrapped +2.9%, 4x3x5 +1.4%.  test_tree_bound checks the form on small open
 * and mixed shapes: the busiest links' bytes the walk's, the time never above
 * the walk's, the open reduce-scatter's equal to it, the rest within those
 * figures.
 *
 * Cost: a few operations per axis and order; no flow is built.  The data path
 * (a rank's own part of the tree, build.c with 'local') is the tree itself.
 *
 *   line of 4 (open), one stream, P = 1:   link 0>1 1>2 2>3   1>0 2>1 3>2
 *   blocks crossing                              1   2   3     3   2   1
 */
#include "tree_bound.h"

#include "algorithms/allgather_orders.h"
#include "build.h"

#include <string.h>

/*
 * The bound form stands for the tree where its message starts (msg_cost each,
 * G - 1 per order and chunk over a chip's 2 d ports) take at most this fraction
 * of its bandwidth term: measured on 8x10x14 against the walk, a ratio of 1/29
 * (64 KiB a chip) leaves out 0.25 us of 301 us (8e-4), 1/116 (256 KiB) 2e-4, and
 * 1/7 (16 KiB) 3%, 1/2 (4 KiB) 23%: the starts' waits then pile up along the
 * chains.  The open 16x20x28 at 1.1 GB: 1/58.
 */
#define TPU_TREE_BOUND_STARTS 32

/* The streams of the tree schedule (allgather_tree.c): its axes, orders and shares. */
typedef struct streams {
    int axes[TPU_MAX_AXES], d, nord, last, nset;
    int ord[TPU_MAX_ORDERS][TPU_MAX_AXES];
    double frac[TPU_MAX_ORDERS];
} streams_t;

/* The orders and shares allgather_tree.c builds for 'args'; -1 when it refuses them. */
static int tree_streams(const tpu_algo_args_t *args, streams_t *st)
{
    const tpu_topo_t *topo = args->topo;
    int r;

    memset(st, 0, sizeof(*st));
    st->frac[0] = 1;
    st->nord = tpu__allgather_orders(topo, args->mask, st->axes, &st->d, st->ord);
    if (st->d < 1 || ((args->mask & TPU_AXIS_MASK_DCN) && topo->slices > 1)) {
        return -1;
    }
    if (st->d == 2 && args->split > 0 && args->split < 1) {
        st->frac[0] = args->split;
        st->frac[1] = 1 - args->split;
    } else if (tpu__allgather_balance(topo, st->axes, st->d, st->nord, st->ord, st->frac) < 0) {
        return -1;
    }
    for (r = 0; r < st->nord; r++) {
        if (st->frac[r] > 0) {
            st->last = r;
            st->nset++;
        }
    }
    return 0;
}

int tpu__tree_bound_applies(const tpu_coll_plan_t *p, const tpu_algo_t *algo, int chunks)
{
    const tpu_topo_t *topo = &p->topo;
    streams_t st;

    if (strcmp(algo->name, "tree") != 0 || tpu__plan_faulty(p) || p->desc.groups != NULL ||
        p->desc.pairs != NULL || (p->desc.axes & TPU_AXIS_MASK_DCN) || topo->slices != 1 ||
        !(p->desc.kind == TPU_COLL_ALL_GATHER || p->desc.kind == TPU_COLL_REDUCE_SCATTER ||
          p->desc.kind == TPU_COLL_PSUM)) {
        return 0;
    }
    if (tree_streams(&p->args, &st) < 0) {
        return 0; /* the tree refuses the request itself */
    }
    /* allgather_tree.c's own count: G - 1 flows per chip of the domain, order, chunk. */
    return (double)tpu__plan_domain_chips(p, algo) * (p->group - 1) * st.nset * chunks >
           TPU_TREE_MAX_FLOWS;
}

tpu_status_t tpu__tree_bound_build(const tpu_coll_plan_t *p, int chunks, tpu_plan_sched_t *ps,
                                   tpu_err_t *err)
{
    const tpu_topo_t *topo = &p->topo;
    int64_t elems = p->args.shard / p->args.elem, done = 0, flows = 0;
    int K = chunks < 1 ? 1 : chunks, r, j, k, depth = 0;
    streams_t st;

    double starts, bytes_s, sumf = 0;

    if (tree_streams(&p->args, &st) < 0) {
        return tpu_err_set(err, TPU_ERR_UNSUPPORTED,
                           "the tree all-gather runs over ICI axes (over dcn: torus)");
    }
    /* Its message starts against its bandwidth term, as select.c's tree_start_bound()
     * counts them (every axis open: sum f_i = d / 2). */
    for (j = 0; j < st.d; j++) {
        sumf += topo->wrap[st.axes[j]] ? 1 : 0.5;
    }
    starts = (double)(p->group - 1) * K / (2.0 * st.d) * p->link.msg_cost;
    bytes_s = (double)(p->group - 1) / p->group * (double)p->args.shard * p->group /
              (p->link.ici_bw * sumf);
    if (starts > bytes_s / TPU_TREE_BOUND_STARTS) {
        return tpu_err_set(
            err, TPU_ERR_UNSUPPORTED,
            "the tree all-gather over %d chips needs about %.1f million flows, "
            "and its message starts (%.1f us a port) take more than 1/%d of its "
            "%.1f us of bytes, beyond its bound form: use more bytes, fewer "
            "chunks or --algo torus",
            p->group, (double)tpu__plan_domain_chips(p, NULL) * (p->group - 1) * st.nset * K / 1e6,
            starts * 1e6, TPU_TREE_BOUND_STARTS, bytes_s * 1e6);
    }
    memset(ps->bound_half, 0, sizeof(ps->bound_half));
    memset(ps->bound_link, 0, sizeof(ps->bound_link));
    for (r = 0; r < st.nord; r++) {
        int64_t part = tpu__allgather_part(r, st.last, st.frac, elems, done), kdone = 0;

        for (k = 0; k < K; k++) {
            int64_t piece = k == K - 1 ? part - kdone : part / K, before = 1;

            kdone += piece;
            if (piece == 0) {
                continue;
            }
            /* Flows per chip: one per block it receives, two at a tie (both halves). */
            flows += p->group - 1;
            /* P_r(a), the blocks of the lines before a in the order, times what one
             * line puts on its busiest link: n - 1 blocks on an open axis; on a
             * wrapped one (n - 1) / 2 blocks and, n even, the first half of the one
             * at the tie (half a block each way: its reverse in a psum). */
            for (j = 0; j < st.d; j++) {
                int a = st.axes[st.ord[r][j]], n = topo->dims[a];
                int64_t h1 = topo->wrap[a] && n % 2 == 0 ? (piece + 1) / 2 : 0;
                int64_t h2 = topo->wrap[a] && n % 2 == 0 ? piece / 2 : 0;
                int64_t whole = topo->wrap[a] ? (n - 1) / 2 : n - 1;

                flows += h2 > 0 ? before : 0;
                ps->bound_half[a] += before * (whole * piece + h1) * p->args.elem;
                ps->bound_link[a] += before *
                                     (p->desc.kind != TPU_COLL_PSUM ? whole * piece + h1
                                      : topo->wrap[a]               ? 2 * whole * piece + h1 + h2
                                                                    : n * piece) *
                                     p->args.elem;
                before *= n;
            }
        }
        done += part;
    }
    for (j = 0; j < st.d; j++) {
        depth += tpu__allgather_steps(topo, st.axes[j]);
    }
    ps->bound = 1;
    ps->bound_halves = p->desc.kind == TPU_COLL_PSUM ? 2 : 1;
    ps->bound_hops = depth;
    ps->bound_flows = (int64_t)topo->nchips * flows * ps->bound_halves;
    ps->s.nsteps = K * depth * ps->bound_halves;
    ps->s.nstreams = st.nord * K;
    return tpu__plan_sched_index(ps);
}

void tpu__tree_bound_time(const tpu_topo_t *topo, const tpu_link_model_t *link,
                          const tpu_plan_sched_t *ps, double *seconds_p, tpu_coll_result_t *res)
{
    double eff = link->ici_efficiency > 0 ? link->ici_efficiency : 1, bw = link->ici_bw / 2 * eff;
    double most = 0, bytes_s = 0, chain = 0, end, busy[TPU_MAX_AXES];
    int a, h, i;

    (void)topo;
    for (a = 0; a < TPU_MAX_AXES; a++) {
        most = (double)ps->bound_half[a] > most ? (double)ps->bound_half[a] : most;
        busy[a] = (double)ps->bound_link[a] / bw;
    }
    /* The halves one after the other, as the walk's barrier: bytes, then chains. */
    for (h = 0; h < ps->bound_halves; h++) {
        bytes_s += most / bw;
        for (i = 0; i < ps->bound_hops; i++) {
            chain += link->ici_latency;
        }
    }
    end = bytes_s + chain + (link->launch > 0 ? link->launch : 0);
    *seconds_p = end;
    if (res == NULL) {
        return;
    }
    memset(res->axis, 0, sizeof(res->axis));
    for (a = 0; a < TPU_MAX_AXES; a++) {
        if (ps->bound_link[a] > 0) {
            res->axis[a].busy_us = busy[a] * 1e6;
            res->axis[a].bytes = (double)ps->bound_link[a];
            res->axis[a].utilisation = end > 0 ? res->axis[a].busy_us / (end * 1e6) : 0;
        }
    }
}
