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
 * (x-y-z, y-z-x, z-x-y) and the split is the estimate's (choose_split()); over
 * three axes select.c also times the split between all six orders that loads
 * every axis in proportion to its bandwidth (balance_orders(), a small linear
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
#include "algo.h"
#include "alloc.h"

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

/* Axes that take part: ICI axes of the mask with at least 2 chips. */
static int ici_axes(const tpu_topo_t *topo, unsigned mask, int *axes)
{
    int a, d = 0;

    for (a = 0; a < topo->naxes; a++) {
        if ((mask & (1u << a)) && topo->dims[a] >= 2) {
            axes[d++] = a;
        }
    }
    return d;
}

/* Ring steps of one axis: floor(n/2) when it wraps, n-1 when it is open. */
static int axis_steps(const tpu_topo_t *topo, int a)
{
    return topo->wrap[a] ? topo->dims[a] / 2 : topo->dims[a] - 1;
}

/* Bytes moved per byte of item by one 1D all-gather, in units of 1/W. */
static double axis_tau(const tpu_topo_t *topo, int a)
{
    return (topo->dims[a] - 1) / (topo->wrap[a] ? 1.0 : 0.5);
}

/*
 * The axis orders of a torus all-gather over d axes, as indices into axes[]:
 * the d rotations first (x-y-z, y-z-x, z-x-y), then over three axes the other
 * three permutations (x-z-y, z-y-x, y-x-z).  Returns how many.
 */
static int axis_orders(int d, int ord[TPU_MAX_ORDERS][TPU_MAX_AXES])
{
    static const int rest[3][3] = {{0, 2, 1}, {2, 1, 0}, {1, 0, 2}};
    int r, j, n = 0;

    for (r = 0; r < d; r++) {
        for (j = 0; j < d; j++) {
            ord[n][j] = (r + j) % d;
        }
        n++;
    }
    for (r = 0; d == 3 && r < 3; r++) {
        memcpy(ord[n++], rest[r], sizeof(rest[r]));
    }
    return n;
}

/* load[a][r]: bytes per byte of item that order r puts on axis a, in units of 1/W. */
static void order_loads(const tpu_topo_t *topo, const int *axes, int d, int nord,
                        int ord[TPU_MAX_ORDERS][TPU_MAX_AXES],
                        double load[TPU_MAX_AXES][TPU_MAX_ORDERS])
{
    int r, j;

    for (r = 0; r < nord; r++) {
        double prod = 1;

        for (j = 0; j < d; j++) {
            int a = ord[r][j];

            load[a][r] = prod * axis_tau(topo, axes[a]);
            prod *= topo->dims[axes[a]];
        }
    }
}

/* Solve the n x n system m (augmented, column n) in place; 0 if it is singular. */
static int solve_system(double m[TPU_MAX_AXES + 1][TPU_MAX_AXES + 2], int n, double *x)
{
    int i, j, k;

    for (k = 0; k < n; k++) {
        int piv = k;

        for (i = k + 1; i < n; i++) {
            if ((m[i][k] < 0 ? -m[i][k] : m[i][k]) > (m[piv][k] < 0 ? -m[piv][k] : m[piv][k])) {
                piv = i;
            }
        }
        if ((m[piv][k] < 0 ? -m[piv][k] : m[piv][k]) < 1e-12) {
            return 0;
        }
        for (j = 0; j <= n; j++) {
            double t = m[k][j];

            m[k][j] = m[piv][j];
            m[piv][j] = t;
        }
        for (i = 0; i < n; i++) {
            if (i != k) {
                double f = m[i][k] / m[k][k];

                for (j = k; j <= n; j++) {
                    m[i][j] -= f * m[k][j];
                }
            }
        }
    }
    for (i = 0; i < n; i++) {
        x[i] = m[i][n] / m[i][i];
    }
    return 1;
}

/*
 * The shares of the orders that minimise the load of the most loaded axis (in
 * units of 1/W, so an axis' load is proportional to its time at its bandwidth
 * W f_a): a linear program, min t over shares s >= 0 summing to 1 with
 * sum_r s_r load[a][r] <= t on every axis.  An optimal vertex has as many
 * orders with a share as axes at t, so every choice of m orders and m axes (m =
 * 1..d) is solved with those axes at t, and the best feasible one kept (ties:
 * the first found, rotations before the other orders).  At its optimum the
 * axes carry loads proportional to their bandwidths wherever the orders can do
 * that: the formula's (N-1)/N V / (W sum f_a) is reached in bandwidth terms.
 * Returns the most loaded axis' load.
 */
static double balance_orders(int d, int nord, double load[TPU_MAX_AXES][TPU_MAX_ORDERS],
                             double *frac)
{
    double best = -1;
    int m, so, sa;

    for (m = 1; m <= d; m++) {
        for (so = 0; so < (1 << nord); so++) {
            int ro[TPU_MAX_AXES], ra[TPU_MAX_AXES], no = 0, na, r, i, j, ok;

            if (__builtin_popcount((unsigned)so) != m) {
                continue;
            }
            for (r = 0; r < nord; r++) {
                if (so & (1 << r)) {
                    ro[no++] = r;
                }
            }
            for (sa = 0; sa < (1 << d); sa++) {
                double mat[TPU_MAX_AXES + 1][TPU_MAX_AXES + 2], x[TPU_MAX_AXES + 1], t,
                    f[TPU_MAX_ORDERS];

                if (__builtin_popcount((unsigned)sa) != m) {
                    continue;
                }
                for (na = 0, i = 0; i < d; i++) {
                    if (sa & (1 << i)) {
                        ra[na++] = i;
                    }
                }
                /* Unknowns: the m shares, then t.  Rows: m tight axes, sum = 1. */
                for (i = 0; i < m; i++) {
                    for (j = 0; j < m; j++) {
                        mat[i][j] = load[ra[i]][ro[j]];
                    }
                    mat[i][m] = -1;
                    mat[i][m + 1] = 0;
                }
                for (j = 0; j < m; j++) {
                    mat[m][j] = 1;
                }
                mat[m][m] = 0;
                mat[m][m + 1] = 1;
                if (!solve_system(mat, m + 1, x)) {
                    continue;
                }
                memset(f, 0, sizeof(f));
                for (ok = 1, j = 0; j < m; j++) {
                    ok = ok && x[j] >= -1e-12;
                    f[ro[j]] = x[j] < 0 ? 0 : x[j];
                }
                for (t = 0, i = 0; ok && i < d; i++) {
                    double l = 0;

                    for (r = 0; r < nord; r++) {
                        l += f[r] * load[i][r];
                    }
                    t = l > t ? l : t;
                }
                if (ok && (best < 0 || t < best * (1 - 1e-9))) {
                    best = t;
                    memcpy(frac, f, sizeof(f));
                }
            }
        }
    }
    return best;
}

/*
 * Fractions of the data for each rotation of the axis order, such that every
 * axis carries the same load.  Falls back to equal parts if the system has no
 * non-negative solution.
 */
static void solve_fractions(const tpu_topo_t *topo, const int *axes, int d, double *frac)
{
    double m[TPU_MAX_AXES][TPU_MAX_AXES + 1];
    double load[TPU_MAX_AXES][TPU_MAX_AXES];
    int r, i, j, k, ok = 1;

    for (r = 0; r < d; r++) {
        double prod = 1;

        for (j = 0; j < d; j++) {
            int a = (r + j) % d; /* index into axes */

            load[a][r] = prod * axis_tau(topo, axes[a]);
            prod *= topo->dims[axes[a]];
        }
    }
    for (i = 0; i < d; i++) {
        for (r = 0; r < d; r++) {
            m[i][r] = i < d - 1 ? load[i][r] - load[i + 1][r] : 1.0;
        }
        m[i][d] = i < d - 1 ? 0.0 : 1.0;
    }
    for (k = 0; k < d && ok; k++) {
        int piv = k;

        for (i = k + 1; i < d; i++) {
            double a = m[i][k] < 0 ? -m[i][k] : m[i][k];
            double b = m[piv][k] < 0 ? -m[piv][k] : m[piv][k];

            if (a > b) {
                piv = i;
            }
        }
        if (m[piv][k] == 0) {
            ok = 0;
            break;
        }
        for (j = 0; j <= d; j++) {
            double t = m[k][j];

            m[k][j] = m[piv][j];
            m[piv][j] = t;
        }
        for (i = 0; i < d; i++) {
            if (i != k) {
                double f = m[i][k] / m[k][k];

                for (j = k; j <= d; j++) {
                    m[i][j] -= f * m[k][j];
                }
            }
        }
    }
    for (r = 0; r < d && ok; r++) {
        frac[r] = m[r][d] / m[r][r];
        ok = frac[r] >= 0;
    }
    if (!ok) {
        for (r = 0; r < d; r++) {
            frac[r] = 1.0 / d;
        }
    }
}

/*
 * An estimate of the time of the split 'frac' between the 'nord' orders 'ord'
 * with 'K' chunks, in seconds.  Phase j of order r moves its items in
 * axis_steps() ring steps: bw(r, j) = frac_r x (blocks gathered before) x tau x
 * block / W of bytes time, steps x alpha of hops.  The phases of the orders
 * advance in windows (phase j of every order in window j); in a window an axis
 * carries the phases of every order that is on it there, and the first chunk's
 * window lasts as long as its busiest axis (bw / K + hops); the other K - 1
 * chunks follow at the rate of the busiest axis, whose links carry every
 * window's phases of a chunk (the sum of its bw / K, or its ports' message
 * starts if they take longer); never below the load of the most loaded axis.
 * The rotations always count (their phases hold every axis in every window); the
 * other orders only where they have a share.
 */
static double split_estimate(const tpu_algo_args_t *args, const int *axes, int d, int nord,
                             int ord[TPU_MAX_ORDERS][TPU_MAX_AXES], int K, const double *frac)
{
    const tpu_topo_t *topo = args->topo;
    const tpu_link_model_t *link = args->link;
    double eff = link->ici_efficiency > 0 ? link->ici_efficiency : 1;
    double unit = (double)args->shard / (link->ici_bw * eff);
    double wbw[TPU_MAX_AXES][TPU_MAX_AXES] = {{0}}, wmsg[TPU_MAX_AXES][TPU_MAX_AXES] = {{0}};
    double tot[TPU_MAX_AXES] = {0}, rate = 0, t = 0;
    int on[TPU_MAX_AXES][TPU_MAX_AXES] = {{0}};
    int r, j, a;

    for (r = 0; r < nord; r++) {
        double prod = 1;

        if (r >= d && frac[r] <= 0) {
            continue;
        }
        for (j = 0; j < d; j++) {
            int steps;
            double bw;

            a = ord[r][j];
            steps = axis_steps(topo, axes[a]);
            bw = frac[r] * prod * axis_tau(topo, axes[a]) * unit;
            wbw[j][a] += bw / K;
            wmsg[j][a] += steps * link->msg_cost;
            on[j][a] = 1;
            tot[a] += bw;
            prod *= topo->dims[axes[a]];
        }
    }
    for (j = 0; j < d; j++) {
        double win = 0;

        for (a = 0; a < d; a++) {
            double chunk = wbw[j][a] + axis_steps(topo, axes[a]) * link->ici_latency;

            if (!on[j][a]) {
                continue;
            }
            win = chunk > win ? chunk : win;
        }
        t += win;
    }
    /* The other chunks follow at the rate of the busiest axis: its links carry
     * every window's phases of a chunk, and its ports start them (the starts
     * overlap the bytes, linkmodel.c). */
    for (a = 0; a < d; a++) {
        double bw = 0, msg = 0;

        for (j = 0; j < d; j++) {
            bw += wbw[j][a];
            msg += on[j][a] ? wmsg[j][a] : 0;
        }
        bw = bw > msg ? bw : msg;
        rate = bw > rate ? bw : rate;
    }
    t += (K - 1) * rate;
    for (a = 0; a < d; a++) {
        t = tot[a] > t ? tot[a] : t;
    }
    return t;
}

/*
 * The split between the rotations of the axis order (the estimate's choice, when
 * select.c asks for no other): the fractions that minimise split_estimate() for
 * K chunks, over the equal-load split of solve_fractions() and a grid of the
 * simplex (steps of 1/SPLIT_GRID).  With unequal or open axes the phases of the
 * orders differ in length (bytes and ring steps); equal loads keep every link
 * busy only if the chunks overlap the phases completely, and a shallow pipeline
 * does better with the data split so that the phases of a window end together.
 */
#define SPLIT_GRID 120
static void choose_split(const tpu_algo_args_t *args, const int *axes, int d, int nord,
                         int ord[TPU_MAX_ORDERS][TPU_MAX_AXES], int K, double *frac)
{
    double best, f[TPU_MAX_ORDERS] = {0};
    int i, j;

    solve_fractions(args->topo, axes, d, frac);
    best = split_estimate(args, axes, d, nord, ord, K, frac);
    for (i = 0; i <= SPLIT_GRID; i++) {
        for (j = 0; j <= (d == 3 ? SPLIT_GRID - i : 0); j++) {
            double t;

            f[0] = (double)i / SPLIT_GRID;
            f[1] = d == 3 ? (double)j / SPLIT_GRID : 1 - f[0];
            f[2] = d == 3 ? 1 - f[0] - f[1] : 0;
            t = split_estimate(args, axes, d, nord, ord, K, f);
            if (t < best) {
                best = t;
                memcpy(frac, f, sizeof(f));
            }
        }
    }
}

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
    int T = axis_steps(topo, axis);
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
    int axes[TPU_MAX_AXES], d = ici_axes(topo, args->mask, axes);
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
    nord = nord > 1 && d > 1 ? axis_orders(d, ord) : 1;
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
        double load[TPU_MAX_AXES][TPU_MAX_ORDERS];

        order_loads(topo, axes, d, nord, ord, load);
        if (balance_orders(d, nord, load, frac) < 0) {
            choose_split(args, axes, d, d, ord, K, frac);
        }
    } else if (nord > 1) {
        /* The rotations only: the estimate's split among them. */
        choose_split(args, axes, d, d, ord, K, frac);
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
        total_rx += 2 * axis_steps(topo, axes[j]);
        if (axis_steps(topo, axes[j]) + 1 > maxT) {
            maxT = axis_steps(topo, axes[j]) + 1;
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
        rx_flows += (topo->wrap[axes[j]] ? 2 : 1) * axis_steps(topo, axes[j]);
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
                if (step + axis_steps(topo, axis) > nsteps) {
                    nsteps = step + axis_steps(topo, axis);
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
                step += nord > 1 ? maxT - 1 : axis_steps(topo, axis);
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

tpu_status_t tpu__reversed(const tpu_algo_args_t *args, tpu_algo_fn_t ag_fn, int then_ag,
                           tpu_sched_t *sched, tpu_err_t *err)
{
    tpu_sched_t ag;
    tpu_status_t status;

    if (!then_ag) {
        /* Nothing follows: the all-gather is turned around where it lies. */
        status = ag_fn(args, sched, err);
        return status == TPU_OK ? tpu__sched_reverse_in_place(sched) : status;
    }
    tpu__sched_init(&ag);
    status = ag_fn(args, &ag, err);
    if (status == TPU_OK) {
        status = tpu__sched_reverse(&ag, sched, ag.nflows);
    }
    if (status == TPU_OK) {
        /* Two collectives: the all-gather starts once the reduce-scatter has ended. */
        sched->barrier = sched->nsteps;
        status = tpu__sched_concat(sched, &ag, args->local);
        if (status == TPU_OK) {
            status = tpu__sched_sort(sched);
        }
    }
    tpu__sched_fini(&ag);
    return status;
}

int64_t tpu__allgather_part(int r, int last, const double *frac, int64_t elems, int64_t done)
{
    int64_t part = (int64_t)(frac[r] * (double)elems + 0.5);

    if (r > last) {
        return 0;
    }
    return r == last || part > elems - done ? elems - done : part;
}

int tpu__allgather_orders(const tpu_topo_t *topo, unsigned mask, int *axes, int *d_p,
                          int ord[][TPU_MAX_AXES])
{
    *d_p = ici_axes(topo, mask, axes);
    return axis_orders(*d_p, ord);
}

double tpu__allgather_balance(const tpu_topo_t *topo, const int *axes, int d, int nord,
                              int ord[][TPU_MAX_AXES], double *frac)
{
    double load[TPU_MAX_AXES][TPU_MAX_ORDERS];

    order_loads(topo, axes, d, nord, ord, load);
    return balance_orders(d, nord, load, frac);
}

int tpu__allgather_steps(const tpu_topo_t *topo, int axis)
{
    return axis_steps(topo, axis);
}
