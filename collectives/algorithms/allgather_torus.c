/*
 * All-gather over any set of torus axes: rings on every axis at once.
 *
 * What it does.  Every chip starts with its block (V/N bytes) and ends with all N
 * blocks, ordered by group index.  Over one axis the blocks travel a
 * bidirectional ring when the axis wraps (each block goes both ways; the block
 * from the opposite side of an even ring is split, half each way) and a
 * bidirectional line when it does not.  Over several axes the data is split
 * between axis orders: the part of order x-y-z first gathers along x, then the
 * gathered row along y, then along z.  By default the orders are the rotations
 * (x-y-z, y-z-x, z-x-y) and the split is the estimate's (allgather_orders.c); over
 * three axes select.c also times the split between all six orders that loads
 * every axis in proportion to its bandwidth (allgather_orders.c, a small linear
 * program), which the rotations alone cannot do when one axis is much cheaper
 * than the others (a wrapped axis of 2 chips is cheap only as a last phase).
 * Each part is cut into 'chunks' pieces that follow each other through the
 * phases (a pipeline), so that the phases of one part overlap; every step of a
 * chunk comes after every step of the chunk before, so a link serves the earlier
 * chunk first (the link model's steps are priorities).  Across slices
 * ('dcn') the blocks are first exchanged directly with the chips of the same
 * coordinates in the other slices.
 *
 * Cost model (W: bidirectional bandwidth of one link, alpha: per-hop latency,
 * f_i = 1 for a wrapped axis and 1/2 for an open one, D the diameter):
 *
 *     T = (N-1)/N * V / (W * sum_i f_i) + D * alpha          (the bound it approaches)
 *
 * One wrapped axis, n chips: floor(n/2) steps, each moving one block each way
 * over one hop: (n-1)/n * V / W + floor(n/2) * alpha, exactly.  One open axis:
 * n-1 steps at W/2 per direction: twice the ring's bandwidth term (the chip at
 * the end of the line has one link in).  A wrapped axis of 2 chips is a ring of
 * two links each way (the '+' link and the wraparound '-' link join the same two
 * chips: we assume the wraparound cable is there, as --wrap asks, so f = 1 as in
 * the formula), and its one step sends half of every block over each.  Several
 * axes: the load of axis a is sum_r frac_r * (prod of the sizes gathered before
 * a in order r) * (n_a - 1)/f_a; the rotations' fractions solve "all axes equal"
 * (a d x d linear system) where they can, and the six orders' minimise the
 * largest load, which is (N-1)/N V / (W sum f) whenever the orders can balance
 * the axes; with enough chunks the time approaches the bound (every chunk is a
 * message per ring step: the starts are free while the bytes of the messages
 * before last longer, and a deep pipeline of small chunks pays for them).  The
 * DCN phase costs (S-1)/S * V_dcn / W_dcn.
 *
 * Restrictions: V must divide into N blocks of whole elements.
 * Source: the JAX scaling book, "Sharded Matrices and How to Multiply Them"
 * (bidirectional rings, AllGather_XY cost V/(2W)); Patarasuk and Yuan (bandwidth
 * optimal all-reduce on trees and tori, JPDC 2009) for the ring schedule.
 *
 * Steps on a wrapped axis of 4 chips, one ordering, one chunk ([b] = block of chip b):
 *
 *   step   chip0          chip1          chip2          chip3
 *    1   [0]->1,[0]->3  [1]->2,[1]->0  [2]->3,[2]->1  [3]->0,[3]->2
 *    2   [3]a->1        [0]a->2        [1]a->3        [2]a->0     (a: first half, +)
 *        [1]b->3        [2]b->0        [3]b->1        [0]b->2     (b: second half, -)
 *
 * after step 2 every chip holds all four blocks.
 */
#include "allgather_torus.h"

#include "algo.h"
#include "allgather_orders.h"
#include "alloc.h"
#include "group_args.h"

#include <string.h>

typedef struct phase_ctx {
    const tpu_topo_t *topo;
    tpu_sched_t *sched;
    int64_t stride[TPU_AXIS_DCN + 1]; /* group-index stride of each axis, in blocks */
    int64_t shard;
    int prior[TPU_AXIS_DCN + 1]; /* axes gathered before the current phase */
    int nprior;
    int64_t sub_off; /* the stream's part of every block */
    int64_t sub_len;
    int64_t elem;                /* bytes per element: halves split between elements */
    int rep;                     /* representative chip, or -1 for all */
    const tpu_algo_args_t *args; /* its period: the chips of a domain only (orbit timing) */
    int32_t *chips; /* the chips whose flows are built (the representative, a domain, or all) */
    int nbuilt;
    const tpu_layout_t *lay; /* the current stream's working layout */
    int stream;
    unsigned mask;
    int32_t *seen; /* per chip: flows of this stream received so far */
    int seen_cap;
    int *nseen;
    int32_t *phase_rx; /* per chip, per direction, per ring step */
    int phase_cap;
    int32_t *pending; /* receptions of the current phase, added after it */
    int *npending;
} phase_ctx_t;

/*
 * The span of the item chip 'origin' holds in the current phase: its blocks over
 * the axes gathered so far, which the working layout keeps contiguous (the
 * fastest 'nprior' digits), each the stream's 'sub_len' bytes.
 */
static void item_span(const phase_ctx_t *ctx, int origin, tpu_span_t *span)
{
    const tpu_layout_t *l = ctx->lay;
    int64_t g = tpu_topo_group_index(ctx->topo, ctx->mask, origin), blocks = 1, w = 0, scale = 1;
    int i;

    for (i = 0; i < l->ndigits; i++) {
        if (i < ctx->nprior) {
            blocks *= l->n[i];
        } else {
            w += ((g / l->gstride[i]) % l->n[i]) * scale;
        }
        scale *= l->n[i];
    }
    memset(span, 0, sizeof(*span));
    span->count[0] = span->count[1] = span->count[2] = 1;
    span->off = l->base + w * l->sub_len;
    span->dst_off = span->off;
    span->len = blocks * l->sub_len;
}

/*
 * Can chip 'c' send to or receive from a chip of args->local?  Its flows go to its
 * neighbours on the collective's axes and to its twins in the other slices.
 */
static int near_local(const tpu_topo_t *topo, const tpu_algo_args_t *args, int c)
{
    int coords[TPU_MAX_AXES], a, dir, s;

    if (args->local == NULL || args->local[c]) {
        return 1;
    }
    for (a = 0; a < topo->naxes; a++) {
        for (dir = -1; dir <= 1 && (args->mask & (1u << a)); dir += 2) {
            int nb = tpu_topo_neighbor(topo, c, a, dir);

            if (nb >= 0 && args->local[nb]) {
                return 1;
            }
        }
    }
    tpu_topo_coords(topo, c, coords);
    for (s = 0; s < topo->slices && (args->mask & TPU_AXIS_MASK_DCN); s++) {
        if (args->local[tpu_topo_chip(topo, s, coords)]) {
            return 1;
        }
    }
    return 0;
}

static tpu_status_t add_flow(phase_ctx_t *ctx, int src, int dst, int step, int kind, int tie,
                             const tpu_span_t *span, const int32_t *deps, int ndeps, int64_t *idx_p)
{
    const uint8_t *local = ctx->args->local;
    tpu_flow_t f;
    int64_t idx;

    /* A rank's own part: flows that touch none of its chips are left out. */
    if (local != NULL && !local[src] && !local[dst]) {
        *idx_p = -1;
        return TPU_OK;
    }
    memset(&f, 0, sizeof(f));
    f.src = src;
    f.dst = dst;
    f.step = step;
    f.stream = ctx->stream;
    f.kind = (uint8_t)kind;
    f.tie = (int8_t)tie;
    f.span = *span;
    idx = tpu__sched_add(ctx->sched, &f);
    if (idx < 0) {
        return TPU_ERR_NO_MEMORY;
    }
    if (ndeps > 0 && tpu__sched_add_deps(ctx->sched, idx, deps, ndeps) != TPU_OK) {
        return TPU_ERR_NO_MEMORY;
    }
    *idx_p = idx;
    return TPU_OK;
}

static void note_pending(phase_ctx_t *ctx, int chip, int64_t flow)
{
    ctx->pending[(int64_t)chip * ctx->seen_cap + ctx->npending[chip]++] = (int32_t)flow;
}

static void end_phase(phase_ctx_t *ctx)
{
    int i, c;

    /* Flows are received (or stood for) by the chips that are built only. */
    for (i = 0; i < ctx->nbuilt; i++) {
        c = ctx->chips[i];
        memcpy(ctx->seen + (int64_t)c * ctx->seen_cap + ctx->nseen[c],
               ctx->pending + (int64_t)c * ctx->seen_cap, (size_t)ctx->npending[c] * 4);
        ctx->nseen[c] += ctx->npending[c];
        ctx->npending[c] = 0;
    }
}

/* The direct exchange between slices: every chip sends its block to its twins. */
static tpu_status_t dcn_phase(phase_ctx_t *ctx, int step)
{
    const tpu_topo_t *topo = ctx->topo;
    int i, s;

    for (i = 0; i < ctx->nbuilt; i++) {
        int coords[TPU_MAX_AXES], c = ctx->chips[i];
        tpu_span_t span;

        tpu_topo_coords(topo, c, coords);
        item_span(ctx, c, &span);
        for (s = 1; s < topo->slices; s++) {
            int dst = tpu_topo_chip(topo, (tpu_topo_slice_of(topo, c) + s) % topo->slices, coords);
            int64_t idx;
            tpu_status_t status =
                add_flow(ctx, c, dst, step, TPU_ROUTE_DCN, 1, &span, NULL, 0, &idx);

            if (status != TPU_OK) {
                return status;
            }
            if (idx < 0) {
                continue;
            }
            /* A representative receives the translate of what it sends. */
            note_pending(ctx, ctx->rep >= 0 ? ctx->rep : dst, idx);
        }
    }
    end_phase(ctx);
    ctx->prior[ctx->nprior++] = TPU_AXIS_DCN;
    return TPU_OK;
}

/* One bidirectional ring (or line) along 'axis', its step t at 'step0 + t - 1'. */
static tpu_status_t ring_phase(phase_ctx_t *ctx, int axis, int step0)
{
    const tpu_topo_t *topo = ctx->topo;
    int n = topo->dims[axis], wrap = topo->wrap[axis];
    int T = tpu__allgather_steps(topo, axis);
    int t, i, di;

    for (t = 1; t <= T; t++) {
        int half = wrap && n % 2 == 0 && t == n / 2;

        for (i = 0; i < ctx->nbuilt; i++) {
            int coords[TPU_MAX_AXES], c = ctx->chips[i];

            tpu_topo_coords(topo, c, coords);
            for (di = 0; di < 2; di++) {
                int dir = di == 0 ? 1 : -1;
                int dst = tpu_topo_neighbor(topo, c, axis, dir);
                int oc[TPU_MAX_AXES];
                int origin;
                tpu_span_t span;
                const int32_t *deps;
                int32_t dep1;
                int ndeps;
                int64_t idx;
                int rdi = di;
                unsigned refl;
                tpu_status_t status;

                if (dst < 0) {
                    continue;
                }
                memcpy(oc, coords, sizeof(oc));
                oc[axis] = coords[axis] - dir * (t - 1);
                if (wrap) {
                    oc[axis] = ((oc[axis] % n) + n) % n;
                } else if (oc[axis] < 0 || oc[axis] >= n) {
                    continue;
                }
                origin = tpu_topo_chip(topo, tpu_topo_slice_of(topo, c), oc);
                item_span(ctx, origin, &span);
                if (half) {
                    int64_t e = span.len / ctx->elem;
                    int64_t h1 = (e + 1) / 2;
                    int64_t el = ctx->elem;

                    if (dir > 0) {
                        span.len = h1 * el;
                    } else {
                        span.off += h1 * el;
                        span.dst_off = span.off;
                        span.len = (e - h1) * el;
                    }
                    if (span.len == 0) {
                        continue;
                    }
                }
                if (t == 1) {
                    deps = ctx->seen + (int64_t)c * ctx->seen_cap;
                    ndeps = ctx->nseen[c];
                } else {
                    dep1 = ctx->phase_rx[((int64_t)c * 2 + di) * ctx->phase_cap + t - 1];
                    deps = &dep1;
                    ndeps = dep1 >= 0 ? 1 : 0;
                }
                status = add_flow(ctx, c, dst, step0 + t - 1, TPU_ROUTE_ICI, dir, &span, deps,
                                  ndeps, &idx);
                if (status != TPU_OK) {
                    return status;
                }
                if (idx < 0) {
                    continue;
                }
                if (ctx->rep >= 0) {
                    dst = ctx->rep; /* it receives the translate of what it sends */
                } else {
                    /* A domain chip receives what its stand-in's image sends: the
                     * flow runs the other way there if the symmetry reflects it. */
                    dst = tpu__algo_canon_refl(ctx->args, dst, &refl);
                    rdi = (refl & (1u << axis)) ? 1 - di : di;
                }
                ctx->phase_rx[((int64_t)dst * 2 + rdi) * ctx->phase_cap + t] = (int32_t)idx;
                note_pending(ctx, dst, idx);
            }
        }
    }
    end_phase(ctx);
    ctx->prior[ctx->nprior++] = axis;
    return TPU_OK;
}

tpu_status_t tpu__allgather_phases(const tpu_algo_args_t *args, int nord, tpu_sched_t *sched,
                                   tpu_err_t *err)
{
    const tpu_topo_t *topo = args->topo;
    phase_ctx_t ctx;
    int axes[TPU_MAX_AXES], d = tpu__allgather_axes(topo, args->mask, axes);
    int dcn = (args->mask & TPU_AXIS_MASK_DCN) && topo->slices > 1;
    double frac[TPU_MAX_ORDERS] = {1, 0, 0, 0, 0, 0};
    int ord[TPU_MAX_ORDERS][TPU_MAX_AXES] = {{0, 1, 2}};
    int64_t elems = args->shard / args->elem, done = 0, base = 0;
    /* The DCN phase is a stage of its own (reduce-scatter over ICI, then DCN, then
     * all-gather over ICI, as the hierarchical algorithm is defined), so chunks
     * do not pipeline it with the ICI phases. */
    int K, r, k, j, a, maxT = 1, total_rx, rx_flows, nsteps = 0, last = 0, nset = 0;
    tpu_status_t status = TPU_OK;

    (void)err;
    memset(&ctx, 0, sizeof(ctx));
    ctx.topo = topo;
    ctx.sched = sched;
    ctx.shard = args->shard;
    ctx.mask = args->mask;
    /* One order (axis by axis), or every order of the axes (d rotations first). */
    nord = nord > 1 && d > 1 ? tpu__allgather_axis_orders(d, ord) : 1;
    /* Chunks pipeline the phases of several axes into each other; one axis is one
     * phase, which the ring already keeps busy (chunks would only hide its hops). */
    K = nord > 1 && !dcn ? args->chunks : 1;
    if (K < 1) {
        K = 1;
    }
    /* Group-index strides: dcn is the most significant, then x, y, z. */
    {
        int64_t s = 1;

        for (a = TPU_MAX_AXES - 1; a >= 0; a--) {
            if (args->mask & (1u << a)) {
                ctx.stride[a] = s;
                s *= topo->dims[a];
            }
        }
        ctx.stride[TPU_AXIS_DCN] = s;
    }
    if (nord > 1 && d == 2 && args->split > 0 && args->split < 1) {
        frac[0] = args->split;
        frac[1] = 1 - args->split;
    } else if (nord > d && args->split == TPU_SPLIT_ALL_ORDERS) {
        if (tpu__allgather_balance(topo, axes, d, nord, ord, frac) < 0) {
            tpu__allgather_choose_split(args, axes, d, d, ord, K, frac);
        }
    } else if (nord > 1) {
        /* The rotations only: the estimate's split among them. */
        tpu__allgather_choose_split(args, axes, d, d, ord, K, frac);
    }
    /* The last order with a share takes the rounding's rest; orders without one
     * build nothing (at most d have one, balance_orders()). */
    for (r = 0; r < nord; r++) {
        if (frac[r] > 0) {
            last = r;
            nset++;
        }
    }
    total_rx = dcn ? topo->slices : 0;
    for (j = 0; j < d; j++) {
        total_rx += 2 * tpu__allgather_steps(topo, axes[j]);
        if (tpu__allgather_steps(topo, axes[j]) + 1 > maxT) {
            maxT = tpu__allgather_steps(topo, axes[j]) + 1;
        }
    }
    ctx.seen_cap = total_rx + 1;
    ctx.phase_cap = maxT;
    ctx.seen = tpu__malloc((size_t)topo->nchips * ctx.seen_cap * sizeof(int32_t));
    ctx.pending = tpu__malloc((size_t)topo->nchips * ctx.seen_cap * sizeof(int32_t));
    ctx.nseen = tpu__calloc((size_t)topo->nchips, sizeof(int));
    ctx.npending = tpu__calloc((size_t)topo->nchips, sizeof(int));
    ctx.phase_rx = tpu__malloc((size_t)topo->nchips * 2 * maxT * sizeof(int32_t));
    ctx.chips = tpu__malloc((size_t)topo->nchips * sizeof(int32_t));
    if (ctx.seen == NULL || ctx.pending == NULL || ctx.nseen == NULL || ctx.npending == NULL ||
        ctx.phase_rx == NULL || ctx.chips == NULL) {
        status = TPU_ERR_NO_MEMORY;
        goto out;
    }
    for (a = 0; a < topo->nchips; a++) {
        if (args->rep >= 0 ? a == args->rep
                           : tpu__algo_in_domain(args, a) && near_local(topo, args, a)) {
            ctx.chips[ctx.nbuilt++] = a;
        }
    }
    /* Room for every flow at once: no copies while the schedule grows.  A chip
     * receives 2 * floor(n/2) flows on a ring of n, n - 1 on an open line and one
     * from every other slice (total_rx, 2 (n - 1) on a line, bounds the scratch
     * lists only: reserved as flows, it doubled the schedule of an open mesh). */
    rx_flows = dcn ? topo->slices - 1 : 0;
    for (j = 0; j < d; j++) {
        rx_flows += (topo->wrap[axes[j]] ? 2 : 1) * tpu__allgather_steps(topo, axes[j]);
    }
    if (tpu__sched_reserve(sched, (int64_t)ctx.nbuilt * rx_flows * (nset > 0 ? nset : 1) * K, 0) !=
        TPU_OK) {
        status = TPU_ERR_NO_MEMORY;
        goto out;
    }
    ctx.elem = args->elem;
    ctx.rep = args->rep;
    ctx.args = args;
    sched->layout = tpu__calloc((size_t)(nord * K), sizeof(*sched->layout));
    if (sched->layout == NULL) {
        status = TPU_ERR_NO_MEMORY;
        goto out;
    }
    sched->nlayout = nord * K;
    for (r = 0; r < nord; r++) {
        int64_t part = tpu__allgather_part(r, last, frac, elems, done), kdone = 0;

        for (k = 0; k < K; k++) {
            int64_t piece = k == K - 1 ? part - kdone : part / K;
            /* Chunk-major: every step of chunk k comes after chunk k - 1's, so a link
             * serves the earlier chunk first (a later step fills only the idle time the
             * earlier ones left, linkmodel.c): a pipeline, not K chunks sharing it. */
            int step = k * (d * (maxT - 1));

            tpu_layout_t *l = &sched->layout[r * K + k];

            ctx.stream = r * K + k;
            ctx.sub_off = (done + kdone) * args->elem;
            ctx.sub_len = piece * args->elem;
            ctx.nprior = 0;
            kdone += piece;
            /* The stream's working layout: DCN, then its axes in phase order. */
            l->base = base;
            l->sub_off = ctx.sub_off;
            l->sub_len = ctx.sub_len;
            l->ndigits = 0;
            if (dcn) {
                l->n[l->ndigits] = topo->slices;
                l->gstride[l->ndigits++] = ctx.stride[TPU_AXIS_DCN];
            }
            for (j = 0; j < d; j++) {
                l->n[l->ndigits] = topo->dims[axes[ord[r][j]]];
                l->gstride[l->ndigits++] = ctx.stride[axes[ord[r][j]]];
            }
            base += (int64_t)args->group * ctx.sub_len;
            ctx.lay = l;
            if (piece == 0) {
                continue;
            }
            memset(ctx.nseen, 0, (size_t)topo->nchips * sizeof(int));
            if (dcn) {
                nsteps = step + 1 > nsteps ? step + 1 : nsteps;
                status = dcn_phase(&ctx, step);
                if (status != TPU_OK) {
                    goto out;
                }
                step += 1;
            }
            for (j = 0; j < d; j++) {
                int axis = axes[ord[r][j]];

                /* The rows of the chips built: only they send, and a flow is received
                 * by a chip built (the representative, a domain chip, a chip near
                 * args->local). */
                for (a = 0; a < ctx.nbuilt; a++) {
                    memset(ctx.phase_rx + (int64_t)ctx.chips[a] * 2 * maxT, 0xff,
                           (size_t)2 * maxT * sizeof(int32_t));
                }
                /* The steps of every chip's schedule, also when a part leaves the
                 * last ones out (args->local). */
                if (step + tpu__allgather_steps(topo, axis) > nsteps) {
                    nsteps = step + tpu__allgather_steps(topo, axis);
                }
                status = ring_phase(&ctx, axis, step);
                if (status != TPU_OK) {
                    goto out;
                }
                /* With several orders, phase j of every order gets the same window of
                 * steps: the rotations use distinct axes in one phase, so no two
                 * orders share an axis in a step, and the loads of a step never
                 * couple them.  Dataflow still lets a chunk move on as soon as its
                 * data and its link are there. */
                step += nord > 1 ? maxT - 1 : tpu__allgather_steps(topo, axis);
            }
        }
        done += part;
    }
    if (sched->nstreams < nord * K) {
        sched->nstreams = nord * K;
    }
    if (args->local != NULL && sched->nsteps < nsteps) {
        sched->nsteps = nsteps;
    }
    status = tpu__sched_sort(sched);
out:
    tpu__free(ctx.chips);
    tpu__free(ctx.phase_rx);
    tpu__free(ctx.npending);
    tpu__free(ctx.nseen);
    tpu__free(ctx.pending);
    tpu__free(ctx.seen);
    return status;
}

tpu_status_t tpu__algo_ALL_GATHER_torus(const tpu_algo_args_t *args, tpu_sched_t *sched,
                                        tpu_err_t *err)
{
    return tpu__allgather_phases(args, TPU_MAX_AXES, sched, err);
}
