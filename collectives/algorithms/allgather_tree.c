/*
 * All-gather over any set of torus axes: every block down its own tree.
 *
 * What it does.  Every chip starts with its block (V/N bytes) and ends with all N
 * blocks, ordered by group index.  The data is split between axis orders as in
 * the torus all-gather (allgather_torus.c), in the shares that load every axis in
 * proportion to its bandwidth (over two axes select.c also times a grid of
 * splits).  In the part of order x-y-z, chip c's block travels a bidirectional
 * ring (a line on an open axis) along x from c; every chip that receives it
 * sends it on along y at once, and every chip that receives it along y sends it
 * on along z: a dimension-order broadcast tree per block.  The torus all-gather
 * forwards along y the whole row it gathered along x, once the x phase is over;
 * here each block moves on as soon as it arrives, so every axis has work from
 * the first moment (each chip's own block leaves on every axis at once) and the
 * phases overlap without cutting the data into chunks.  The cost is messages:
 * a chip receives every block once per order, N - 1 flows, where the torus
 * all-gather receives one per ring step.  The schedule is generated sender by
 * sender (each chip's flows follow from where it sits in each block's tree), so
 * the model builds only the flows of the chips it needs: one chip's when the pod
 * is translation-invariant, a domain's of its symmetries (build.c), a rank's
 * own part; it is refused above TPU_TREE_MAX_FLOWS flows.
 *
 * Cost model (W: bidirectional bandwidth of one link, alpha: per-hop latency,
 * f_i = 1 for a wrapped axis and 1/2 for an open one, D the diameter):
 *
 *     T = (N-1)/N * V / (W * sum_i f_i) + D * alpha
 *
 * Every link carries what the torus all-gather puts on it (the same blocks cross
 * the same links), so with the balanced split the busiest link of every axis is
 * busy for the bandwidth term; a block reaches its farthest chip after D hops.
 * What the link model adds: the links are not all busy at the very start and end
 * (a chip's later phases wait for the first blocks to arrive, the last blocks
 * still have hops to go), and every block a port forwards is a message start
 * (msg_cost, serial on the port, overlapping the bytes of the messages before).
 *
 * Restrictions: ICI axes only (dcn: the torus all-gather's hierarchical stage);
 * V must divide into N blocks of whole elements.
 * Source: the dimension-order broadcast tree of the torus (Ho and Johnsson,
 * "Optimum broadcasting and personalized communication in hypercubes", 1989, for
 * trees over dimensions); the split between orders as in allgather_orders.c.
 *
 * The tree of chip 0's block on a wrapped 4x4, order x-y (depth = the step a
 * chip sends it on; [0]a, [0]b: its halves, one each way round):
 *
 *      (0,0)  -x->  (1,0) -x-> (2,0)a        depth 0: (0,0) sends along x and y
 *        |          |           (2,0)b <-x- (3,0) <-x- (0,0)
 *        y          y         each of (1,0), (2,0), (3,0) sends it on along y at
 *      (0,1) ...  (1,1) ...   depth 1 (2,0) once both halves are in
 */
#include "algo.h"
#include "allgather_orders.h"
#include "alloc.h"
#include "group_args.h"
#include "tree_bound.h"

#include <string.h>

/* The most flows one chip sends of one block: on along its axis, both ways on the rest. */
#define MAX_CHILDREN (2 * TPU_MAX_AXES + 1)

/* A flow of a block's tree: to 'dst' along 'axis' in direction 'dir', the whole
 * block (half 0) or its first or second half (1, 2). */
typedef struct child {
    int dst;
    int dir;
    int half;
} child_t;

typedef struct tree_ctx {
    const tpu_algo_args_t *args;
    const tpu_topo_t *topo;
    int axes[TPU_MAX_AXES];
    int d;
    const int *ord;   /* the current order, as indices into axes */
    int64_t elems;    /* elements of the current stream's part of a block */
    int32_t *built;   /* chip -> its index among the senders built, or -1 */
    int32_t *senders; /* the senders built */
    int nbuilt;
    int64_t *first; /* per (sender, origin member): its first flow in the stream */
    int G;          /* chips per group */
    int *xyz;       /* every chip's coordinates (TPU_MAX_AXES each) */
    int32_t *gidx;  /* every chip's index in its group */
} tree_ctx_t;

/* Member j of chip u's group: u's coordinates off the collective's axes, j's digits
 * on them (the last axis fastest): tpu_topo_group_member() on the table of
 * coordinates, which the schedule's G lookups per sender read instead of
 * computing them again. */
static int member(const tree_ctx_t *t, int u, int j)
{
    const tpu_topo_t *topo = t->topo;
    int c[TPU_MAX_AXES], a;

    memcpy(c, t->xyz + (size_t)u * TPU_MAX_AXES, sizeof(c));
    for (a = topo->naxes - 1; a >= 0; a--) {
        if (t->args->mask & (1u << a)) {
            c[a] = j % topo->dims[a];
            j /= topo->dims[a];
        }
    }
    return tpu_topo_chip(topo, tpu_topo_slice_of(topo, u), c);
}

/* The chip of u's slice at coordinates 'c' (in range): tpu_topo_chip() without its
 * checks. */
static int chip_at(const tree_ctx_t *t, int u, const int *c)
{
    const tpu_topo_t *topo = t->topo;

    return (topo->slices > 1 ? tpu_topo_slice_of(topo, u) * topo->chips_per_slice : 0) +
           (c[0] * topo->dims[1] + c[1]) * topo->dims[2] + c[2];
}

/* u's neighbour along 'axis' in direction 'dir', or -1: tpu_topo_neighbor() from the
 * table of coordinates. */
static int next_to(const tree_ctx_t *t, int u, int axis, int dir)
{
    const tpu_topo_t *topo = t->topo;
    int c[TPU_MAX_AXES], n = topo->dims[axis];

    if (n < 2) {
        return -1;
    }
    memcpy(c, t->xyz + (size_t)u * TPU_MAX_AXES, sizeof(c));
    c[axis] += dir;
    if (c[axis] < 0 || c[axis] >= n) {
        if (!topo->wrap[axis]) {
            return -1;
        }
        c[axis] = (c[axis] + n) % n;
    }
    return chip_at(t, u, c);
}

/*
 * Where chip u sits in the tree of origin o's block (the order t->ord): its
 * depth (hops from o), and the flows it sends of that block into 'ch' (returns
 * how many); with 'par' non-NULL the flows that bring it the block into par[]
 * (as (sender, half) pairs, '*npar' of them).  Along the order's axes the block
 * moves on a ring both ways from o (a line on an open axis); on a wrapped axis
 * of even size n the chip at n/2 gets half from each side.  A chip forwards the
 * block on along the axis it got it on, and starts it both ways along every
 * later axis.  Halves of no element are not sent.
 */
static int place(const tree_ctx_t *t, int u, int o, child_t *ch, int *depth_p, int *par, int *npar)
{
    const tpu_topo_t *topo = t->topo;
    int cu[TPU_MAX_AXES], co[TPU_MAX_AXES], k[TPU_MAX_AXES], j, J = -1, n_ch = 0, depth = 0;
    int anti = 0, second = t->elems / 2 > 0;

    memcpy(cu, t->xyz + (size_t)u * TPU_MAX_AXES, sizeof(cu));
    memcpy(co, t->xyz + (size_t)o * TPU_MAX_AXES, sizeof(co));
    for (j = 0; j < t->d; j++) {
        int a = t->axes[t->ord[j]], n = topo->dims[a];

        k[j] = cu[a] - co[a]; /* in (-n, n): normalized without a division */
        if (topo->wrap[a]) {
            k[j] += k[j] < 0 ? n : 0;
            k[j] = k[j] > n / 2 ? k[j] - n : k[j];
        }
        depth += k[j] < 0 ? -k[j] : k[j];
        if (k[j] != 0) {
            J = j;
        }
    }
    if (J >= 0) {
        int a = t->axes[t->ord[J]], n = topo->dims[a];

        anti = topo->wrap[a] && n % 2 == 0 && k[J] == n / 2;
    }
    *depth_p = depth;
    if (par != NULL) {
        *npar = 0;
        if (J >= 0) {
            int a = t->axes[t->ord[J]], dir = k[J] > 0 ? 1 : -1;

            if (anti) {
                /* Both halves: the first came the + way, the second the - way. */
                par[(*npar)++] = next_to(t, u, a, -1);
                par[(*npar)++] = 1;
                if (second) {
                    par[(*npar)++] = next_to(t, u, a, 1);
                    par[(*npar)++] = 2;
                }
            } else {
                par[(*npar)++] = next_to(t, u, a, -dir);
                par[(*npar)++] = 0;
            }
        }
    }
    /* On along the axis it came by, unless it is the end of the line or ring. */
    if (J >= 0 && !anti) {
        int a = t->axes[t->ord[J]], n = topo->dims[a], dir = k[J] > 0 ? 1 : -1;
        int dist = (k[J] < 0 ? -k[J] : k[J]) + 1, v = next_to(t, u, a, dir);
        int half = topo->wrap[a] && n % 2 == 0 && dist == n / 2 ? (dir > 0 ? 1 : 2) : 0;

        if (v >= 0 && (!topo->wrap[a] || dist <= n / 2) && (half != 2 || second)) {
            ch[n_ch].dst = v;
            ch[n_ch].dir = dir;
            ch[n_ch++].half = half;
        }
    }
    /* Both ways along every later axis. */
    for (j = J + 1; j < t->d; j++) {
        int a = t->axes[t->ord[j]], n = topo->dims[a], di;

        for (di = 0; di < 2; di++) {
            int dir = di == 0 ? 1 : -1, v = next_to(t, u, a, dir);
            int half = topo->wrap[a] && n == 2 ? (dir > 0 ? 1 : 2) : 0;

            if (v >= 0 && (half != 2 || second)) {
                ch[n_ch].dst = v;
                ch[n_ch].dir = dir;
                ch[n_ch++].half = half;
            }
        }
    }
    return n_ch;
}

/* Does a rank's own part keep the flow src -> dst? */
static int kept(const tpu_algo_args_t *args, int src, int dst)
{
    return args->local == NULL || args->local[src] || args->local[dst];
}

/*
 * The chip built in place of 'w' and the symmetry that takes w there, applied to
 * 'x' (the same chip in the full build and a rank's part; the representative:
 * the translation w -> rep; a domain: the translations by its periods and the
 * reflections of build.c).
 */
static int image(const tree_ctx_t *t, int w, int x)
{
    const tpu_algo_args_t *args = t->args;
    const tpu_topo_t *topo = args->topo;
    const int *cw = t->xyz + (size_t)w * TPU_MAX_AXES, *cr;
    int cx[TPU_MAX_AXES], a;

    if (args->rep < 0 && args->period == NULL) {
        return x;
    }
    memcpy(cx, t->xyz + (size_t)x * TPU_MAX_AXES, sizeof(cx));
    cr = t->xyz + (size_t)(args->rep >= 0 ? args->rep : 0) * TPU_MAX_AXES;
    for (a = 0; a < topo->naxes; a++) {
        int n = topo->dims[a];

        /* Coordinates are in [0, n): each sum below is within one n of it. */
        if (args->rep >= 0) {
            cx[a] = cx[a] - cw[a] + cr[a];
            cx[a] += cx[a] < 0 ? n : cx[a] >= n ? -n : 0;
        } else if ((args->reflect & (1u << a)) && cw[a] >= n / 2) {
            cx[a] = n - 1 - cx[a];
        } else {
            cx[a] = cx[a] - (cw[a] - cw[a] % args->period[a]);
            cx[a] += cx[a] < 0 ? n : 0;
        }
    }
    /* Symmetries act within a slice (the model's shortcuts are off across slices). */
    return chip_at(t, x, cx);
}

/* The index in the stream of the flow w -> u of origin o's block (half h); -1 if not built. */
static int64_t flow_index(const tree_ctx_t *t, int w, int u, int o, int h)
{
    const tpu_algo_args_t *args = t->args;
    child_t ch[MAX_CHILDREN];
    int w2 = image(t, w, w), u2 = image(t, w, u), o2 = image(t, w, o);
    int i = t->built[w2], depth, n, q, pos = 0;

    if (i < 0) {
        return -1;
    }
    n = place(t, w2, o2, ch, &depth, NULL, NULL);
    for (q = 0; q < n; q++) {
        if (!kept(args, w2, ch[q].dst)) {
            continue;
        }
        if (ch[q].dst == u2 && ch[q].half == h) {
            return t->first[(int64_t)i * t->G + t->gidx[o2]] + pos;
        }
        pos++;
    }
    return -1;
}

/* The working layout's span of origin o's block (half h) in stream 'l'. */
static void block_span(const tree_ctx_t *t, const tpu_layout_t *l, int o, int h, tpu_span_t *span)
{
    const tpu_algo_args_t *args = t->args;
    int64_t e = l->sub_len / args->elem, h1 = (e + 1) / 2;

    memset(span, 0, sizeof(*span));
    span->count[0] = span->count[1] = span->count[2] = 1;
    span->off = span->dst_off = tpu__layout_offset(l, t->gidx[o]) + (h == 2 ? h1 * args->elem : 0);
    span->len = h == 0 ? l->sub_len : h == 1 ? h1 * args->elem : (e - h1) * args->elem;
}

/*
 * Count every built sender's flows of every origin (first[], in the order they
 * are added) and return the stream's total; then, with 'sched', add them.
 */
static tpu_status_t stream_flows(tree_ctx_t *t, const tpu_layout_t *l, int stream, int step0,
                                 int64_t base, tpu_sched_t *sched, int64_t *count_p)
{
    const tpu_algo_args_t *args = t->args;
    int64_t total = 0;
    int i, j, q;

    for (i = 0; i < t->nbuilt; i++) {
        int u = t->senders[i];

        for (j = 0; j < t->G; j++) {
            int o = member(t, u, j), depth, n, np, p;
            int par[4];
            int32_t dep[2];
            int ndep = 0;
            child_t ch[MAX_CHILDREN];

            n = place(t, u, o, ch, &depth, sched != NULL ? par : NULL, &np);
            if (sched == NULL) {
                t->first[(int64_t)i * t->G + j] = total;
                for (q = 0; q < n; q++) {
                    total += kept(args, u, ch[q].dst);
                }
                continue;
            }
            for (p = 0; p < np; p += 2) {
                int64_t k = flow_index(t, par[p], u, o, par[p + 1]);

                if (k >= 0) {
                    dep[ndep++] = (int32_t)(base + k);
                }
            }
            for (q = 0; q < n; q++) {
                tpu_flow_t f;
                int64_t idx;

                if (!kept(args, u, ch[q].dst)) {
                    continue;
                }
                memset(&f, 0, sizeof(f));
                f.src = u;
                f.dst = ch[q].dst;
                f.step = step0 + depth;
                f.stream = stream;
                f.kind = TPU_ROUTE_ICI;
                f.tie = (int8_t)ch[q].dir;
                block_span(t, l, o, ch[q].half, &f.span);
                idx = tpu__sched_add(sched, &f);
                if (idx < 0 || (ndep > 0 && tpu__sched_add_deps(sched, idx, dep, ndep) != TPU_OK)) {
                    return TPU_ERR_NO_MEMORY;
                }
            }
        }
    }
    if (count_p != NULL) {
        *count_p = total;
    }
    return TPU_OK;
}

/* The chips whose flows are built, into t->senders / t->built. */
static void choose_senders(tree_ctx_t *t)
{
    const tpu_algo_args_t *args = t->args;
    const tpu_topo_t *topo = t->topo;
    int c, j;

    for (c = 0; c < topo->nchips; c++) {
        int want = args->rep >= 0 ? c == args->rep : tpu__algo_in_domain(args, c);

        if (want && args->local != NULL && !args->local[c]) {
            /* A rank's part: its chips, and the neighbours that send to them. */
            want = 0;
            for (j = 0; j < t->d && !want; j++) {
                int v1 = tpu_topo_neighbor(topo, c, t->axes[j], 1);
                int v2 = tpu_topo_neighbor(topo, c, t->axes[j], -1);

                want = (v1 >= 0 && args->local[v1]) || (v2 >= 0 && args->local[v2]);
            }
        }
        t->built[c] = want ? t->nbuilt : -1;
        if (want) {
            t->senders[t->nbuilt++] = c;
        }
    }
}

tpu_status_t tpu__algo_ALL_GATHER_tree(const tpu_algo_args_t *args, tpu_sched_t *sched,
                                       tpu_err_t *err)
{
    const tpu_topo_t *topo = args->topo;
    int ord[TPU_MAX_ORDERS][TPU_MAX_AXES], nord;
    double frac[TPU_MAX_ORDERS] = {1, 0, 0, 0, 0, 0}, flows;
    int64_t elems = args->shard / args->elem, done = 0, base = 0, nflows = 0,
            stride[TPU_MAX_AXES] = {0};
    int K = args->chunks < 1 ? 1 : args->chunks, r, k, j, a, last = 0, depth = 0, nset = 0;
    tree_ctx_t t;
    tpu_status_t status = TPU_OK;

    memset(&t, 0, sizeof(t));
    t.args = args;
    t.topo = topo;
    nord = tpu__allgather_orders(topo, args->mask, t.axes, &t.d, ord);
    if (t.d < 1 || ((args->mask & TPU_AXIS_MASK_DCN) && topo->slices > 1)) {
        return tpu_err_set(err, TPU_ERR_UNSUPPORTED,
                           "the tree all-gather runs over ICI axes (over dcn: torus)");
    }
    if (t.d == 2 && args->split > 0 && args->split < 1) {
        frac[0] = args->split;
        frac[1] = 1 - args->split;
    } else if (tpu__allgather_balance(topo, t.axes, t.d, nord, ord, frac) < 0) {
        return tpu_err_set(err, TPU_ERR_UNSUPPORTED, "no split balances the tree all-gather");
    }
    for (r = 0; r < nord; r++) {
        if (frac[r] > 0) {
            last = r;
            nset++;
        }
    }
    t.G = args->group;
    t.built = tpu__malloc((size_t)topo->nchips * sizeof(*t.built));
    t.senders = tpu__malloc((size_t)topo->nchips * sizeof(*t.senders));
    t.xyz = tpu__calloc((size_t)topo->nchips * TPU_MAX_AXES, sizeof(*t.xyz));
    t.gidx = tpu__malloc((size_t)topo->nchips * sizeof(*t.gidx));
    if (t.built == NULL || t.senders == NULL || t.xyz == NULL || t.gidx == NULL) {
        status = TPU_ERR_NO_MEMORY;
        goto out;
    }
    for (j = 0; j < topo->nchips; j++) {
        tpu_topo_coords(topo, j, t.xyz + (size_t)j * TPU_MAX_AXES);
        t.gidx[j] = tpu_topo_group_index(topo, args->mask, j);
    }
    choose_senders(&t);
    flows = (double)t.nbuilt * (t.G - 1) * nset * K;
    if (args->local == NULL && flows > TPU_TREE_MAX_FLOWS) {
        status = tpu_err_set(err, TPU_ERR_UNSUPPORTED,
                             "the tree all-gather over %d chips needs about %.1f million flows, "
                             "more than the %.1f million it is built with (--algo torus)",
                             t.G, flows / 1e6, TPU_TREE_MAX_FLOWS / 1e6);
        goto out;
    }
    t.first = tpu__malloc(((size_t)t.nbuilt * t.G + 1) * sizeof(*t.first));
    sched->layout = tpu__calloc((size_t)(nord * K), sizeof(*sched->layout));
    if (t.first == NULL || sched->layout == NULL ||
        tpu__sched_reserve(sched, args->local != NULL ? 0 : (int64_t)flows, 0) != TPU_OK) {
        status = TPU_ERR_NO_MEMORY;
        goto out;
    }
    {
        int64_t s = 1;

        for (a = TPU_MAX_AXES - 1; a >= 0; a--) {
            if (args->mask & (1u << a)) {
                stride[a] = s;
                s *= topo->dims[a];
            }
        }
    }
    for (j = 0; j < t.d; j++) {
        depth += tpu__allgather_steps(topo, t.axes[j]);
    }
    sched->nlayout = nord * K;
    for (r = 0; r < nord; r++) {
        int64_t part = tpu__allgather_part(r, last, frac, elems, done), kdone = 0;

        t.ord = ord[r];
        for (k = 0; k < K; k++) {
            int64_t piece = k == K - 1 ? part - kdone : part / K, count;
            tpu_layout_t *l = &sched->layout[r * K + k];

            /* The stream's working layout: its axes in the order's sequence. */
            l->base = base;
            l->sub_off = (done + kdone) * args->elem;
            l->sub_len = piece * args->elem;
            for (j = 0; j < t.d; j++) {
                l->n[l->ndigits] = topo->dims[t.axes[ord[r][j]]];
                l->gstride[l->ndigits++] = stride[t.axes[ord[r][j]]];
            }
            base += (int64_t)args->group * l->sub_len;
            kdone += piece;
            if (piece == 0) {
                continue;
            }
            t.elems = piece;
            /* Chunk-major: chunk k's steps come after chunk k - 1's, so a link serves
             * the earlier chunk first (linkmodel.c: a later step fills the idle time
             * the earlier ones left). */
            status = stream_flows(&t, l, r * K + k, k * depth, nflows, NULL, &count);
            if (status == TPU_OK) {
                status = stream_flows(&t, l, r * K + k, k * depth, nflows, sched, NULL);
            }
            if (status != TPU_OK) {
                goto out;
            }
            nflows += count;
        }
        done += part;
    }
    if (sched->nstreams < nord * K) {
        sched->nstreams = nord * K;
    }
    if (sched->nsteps < K * depth) {
        sched->nsteps = K * depth;
    }
    status = tpu__sched_sort(sched);
out:
    tpu__free(t.first);
    tpu__free(t.xyz);
    tpu__free(t.gidx);
    tpu__free(t.senders);
    tpu__free(t.built);
    if (status == TPU_ERR_NO_MEMORY) {
        tpu_err_set(err, status, "out of memory for the tree all-gather");
    }
    return status;
}
