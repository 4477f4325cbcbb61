/*
 * Line timing of the direct all-to-all (alltoall_direct.c) on any pod: open,
 * wrapped or mixed axes, without building the N * (N - 1) flows of the pod.
 *
 * What it does.  Under dimension-order routes a flow from s to d crosses the links
 * of axis a on one line of that axis (at d's coordinates on the axes routed
 * before a, s's on those after), and the links it crosses there depend only on
 * (s_a, d_a) and on the direction it takes at a tie.  So every link of axis a at
 * line position p carries the same bytes as the link at p of any other line:
 *
 *     load(a, p, dir) = line(a, p, dir) * prod over the other axes b of n_b,
 *
 * where line(a, p, dir) is the load that the flows between the chips of one line
 * (the schedule's own flows, tpu__algo_direct_block(), routed by the link model)
 * put on that line.  The tie halves add up the same way: away from a tie a pair's
 * halves cross axis a together (a whole block), at a tie on a the halves go one
 * way each on every tied axis.  The loads of every link of the pod are filled in
 * from these tables, exactly the sums the full schedule adds up (whole bytes:
 * exact in doubles below 2^53 bytes per link).
 *
 * Messages come in three sizes: a block, and its two halves at a tie (a pair at
 * the tie distance of a wrapped even axis sends half each way; both halves then
 * cross every axis that is not at a tie).  The link model shares a link between
 * the messages it carries (processor sharing: a half is through before a
 * block), so the loads are kept per size: a line's whole blocks and halves, and
 * on the other axes' free coordinates, the fraction at a tie on some other axis,
 * whose blocks cross this line as halves.
 *
 * The only step has no dependencies, so a flow's bytes' time is a function of
 * its route, its size and those loads.  Along each axis the flows fall into
 * classes by the hops they make there and the direction they take at a tie; in
 * each class, for each size, the route whose busiest link the message is through
 * last stands for it, and the pod's flows are the combinations of a class per
 * axis (the tied axes all going the same way).  Timing one flow per combination
 * through the link model itself gives the latest bytes and the most hops of the
 * whole pod (the collective takes their sum, as the walk: timing.c), and the link
 * loads its per-axis statistics, bit for bit as the walk over every flow:
 * test_coll_classes compares both on every shape up to 8x8x8.
 *
 * Cost: sum over axes of n_a^2 line flows, one pass over the links, and
 * prod over axes of (n_a + 2) timed flows: about 10^4 on 16x20x28.
 *
 *   line of 4 (open), flows of one line:    link 0>1 1>2 2>3   (x prod n_b)
 *   0->1 0->2 0->3 1->2 1->3 2->3 (+)            3   4   3
 *
 * Restrictions: ICI axes of one slice, no faults (tpu__plan_faulty()), no observer
 * of single flows (the caller walks every chip's schedule for those).
 */
#include "lines.h"

#include "alloc.h"
#include "group_args.h"
#include "linkmodel.h"
#include "linkmodel_loads.h"
#include "timing.h"

#include <string.h>

/* The message sizes of the direct all-to-all: a block, and its two tie halves. */
enum {
    SZ_BLOCK,
    SZ_PLUS,
    SZ_MINUS,
    NSZ
};

/* A class of the flows along one axis: the hops they make and their tie direction. */
typedef struct line_class {
    int hops;
    int tie; /* 0: no tie on this axis; +1 / -1: a tie, taken that way */
    /* For a message of each size: the line flow that stands for the class (the
     * route whose busiest link it is through last) and when. */
    int from[NSZ], to[NSZ];
    double arrival[NSZ];
} line_class_t;

typedef struct axis_lines {
    line_class_t *cls;
    int ncls;
} axis_lines_t;

int tpu__lines_applies(const tpu_coll_plan_t *p, const tpu_algo_t *algo)
{
    return !tpu__plan_faulty(p) && p->desc.kind == TPU_COLL_ALL_TO_ALL &&
           (algo == NULL || !algo->groups) && p->desc.groups == NULL && p->desc.pairs == NULL &&
           !(p->desc.axes & TPU_AXIS_MASK_DCN) && p->topo.slices == 1;
}

tpu_status_t tpu__lines_build(const tpu_coll_plan_t *p, tpu_plan_sched_t *ps)
{
    ps->lines = 1;
    ps->lines_mask = p->desc.axes;
    ps->lines_blk = p->shard;
    ps->lines_elem = p->args.elem;
    ps->s.nsteps = 1;
    ps->s.nstreams = 1;
    return tpu__plan_sched_index(ps);
}

/* The chip with coordinate 'i' on axis 'a' and 0 elsewhere (slice 0). */
static int line_chip(const tpu_topo_t *topo, int a, int i)
{
    int c[TPU_MAX_AXES] = {0, 0, 0};

    c[a] = i;
    return tpu_topo_chip(topo, 0, c);
}

static void add_class(axis_lines_t *al, int hops, int tie, int from, int to, const double *arrival)
{
    line_class_t *c = NULL;
    int k, z;

    for (k = 0; k < al->ncls && c == NULL; k++) {
        if (al->cls[k].hops == hops && al->cls[k].tie == tie) {
            c = &al->cls[k];
        }
    }
    if (c == NULL) {
        c = &al->cls[al->ncls++];
        c->hops = hops;
        c->tie = tie;
        for (z = 0; z < NSZ; z++) {
            c->arrival[z] = -1;
        }
    }
    for (z = 0; z < NSZ; z++) {
        if (arrival[z] > c->arrival[z]) {
            c->from[z] = from;
            c->to[z] = to;
            c->arrival[z] = arrival[z];
        }
    }
}

/*
 * The flows of one line of axis 'a' (the schedule's own, from
 * tpu__algo_direct_block(), between the chips of the line through chip 0) into
 * 's', and what they put on that line's links (their routes in 'lm') into
 * 'line' (per position and
 * direction, NLT entries): the number of whole blocks (LT_WHOLE) and the bytes of
 * tie halves (LT_PLUS, LT_MINUS).
 */
enum {
    LT_WHOLE,
    LT_PLUS,
    LT_MINUS,
    NLT
};

static tpu_status_t axis_line(const tpu_topo_t *topo, const tpu_linkmodel_t *lm,
                              const tpu_algo_args_t *args, int a, tpu_sched_t *s, double *line)
{
    int n = topo->dims[a], i, j;
    tpu_status_t status = TPU_OK;
    int32_t *links;
    int64_t f;

    /* A route along the line crosses at most n - 1 links. */
    links = tpu__malloc((size_t)n * sizeof(*links));
    if (links == NULL) {
        return TPU_ERR_NO_MEMORY;
    }
    for (i = 0; i < n && status == TPU_OK; i++) {
        for (j = 0; j < n && status == TPU_OK; j++) {
            if (i != j) {
                status = tpu__algo_direct_block(args, s, line_chip(topo, a, i),
                                                line_chip(topo, a, j), 0, 0);
            }
        }
    }
    for (f = 0; f < s->nflows && status == TPU_OK; f++) {
        const tpu_flow_t *fl = &s->flows[f];
        int src_host, dst_host, nl, q, k;
        int64_t bytes = tpu__span_bytes(&fl->span);

        /* A whole block, or a half: the first goes +, the second - at the tie. */
        k = bytes == args->shard ? LT_WHOLE : fl->tie > 0 ? LT_PLUS : LT_MINUS;
        nl = tpu__linkmodel_flow_links(lm, fl, links, n, &src_host, &dst_host);
        for (q = 0; q < nl; q++) {
            int src, axis, dir, dst, c[TPU_MAX_AXES];

            tpu_topo_link_ends(topo, links[q], &src, &axis, &dir, &dst);
            tpu_topo_coords(topo, src, c);
            line[(2 * c[a] + (dir < 0)) * NLT + k] += k == LT_WHOLE ? 1.0 : (double)bytes;
        }
    }
    tpu__free(links);
    return status;
}

/*
 * The classes of axis a's line flows 's': "no move on this axis", then one per
 * hop count and tie direction, each with the route whose busiest link a message
 * of each size is through last, on the pod's loads in 'lm'.
 */
static tpu_status_t axis_classes(const tpu_topo_t *topo, tpu_linkmodel_t *lm, int a,
                                 const tpu_sched_t *s, const double *sizes, axis_lines_t *al)
{
    int n = topo->dims[a];
    int64_t f;

    al->cls = tpu__calloc((size_t)2 * n + 2, sizeof(*al->cls));
    if (al->cls == NULL) {
        return TPU_ERR_NO_MEMORY;
    }
    al->cls[0].hops = 0;
    al->ncls = 1;
    for (f = 0; f < s->nflows; f++) {
        const tpu_flow_t *fl = &s->flows[f];
        int ci[TPU_MAX_AXES], cj[TPU_MAX_AXES], dir, z, hops, tie;
        double lat, arrival[NSZ];
        tpu_flow_t g = *fl;

        tpu_topo_coords(topo, fl->src, ci);
        tpu_topo_coords(topo, fl->dst, cj);
        hops = tpu_topo_axis_move(topo, a, ci[a], cj[a], &dir);
        tie = topo->wrap[a] && n % 2 == 0 && hops == n / 2 ? (fl->tie < 0 ? -1 : 1) : 0;
        /* The pod's message on this route is a half when an axis is at a tie. */
        for (z = 0; z < NSZ; z++) {
            g.span.len = (int64_t)sizes[z];
            g.span.count[0] = g.span.count[1] = g.span.count[2] = 1;
            tpu__linkmodel_time_flow(lm, &g, 0, &arrival[z], &lat);
        }
        add_class(al, hops, tie, ci[a], cj[a], arrival);
    }
    return TPU_OK;
}

tpu_status_t tpu__lines_time(const tpu_topo_t *topo, const tpu_link_model_t *link,
                             const tpu_plan_sched_t *ps, double *seconds_p, tpu_coll_result_t *res)
{
    return tpu__lines_time_own(topo, link, ps, NULL, NULL, NULL, seconds_p, res);
}

tpu_status_t tpu__lines_time_own(const tpu_topo_t *topo, const tpu_link_model_t *link,
                                 const tpu_plan_sched_t *ps, const tpu_sched_t *own,
                                 const uint8_t *local, double *own_end_p, double *seconds_p,
                                 tpu_coll_result_t *res)
{
    axis_lines_t al[TPU_MAX_AXES];
    tpu_sched_t ls[TPU_MAX_AXES];
    double *line[TPU_MAX_AXES] = {NULL, NULL, NULL}, sizes[NSZ];
    int axes[TPU_MAX_AXES], nax = 0, a, l, k[TPU_MAX_AXES], z;
    int64_t mult[TPU_MAX_AXES], whole[TPU_MAX_AXES], e = ps->lines_blk / ps->lines_elem;
    tpu_algo_args_t args;
    tpu_linkmodel_t lm;
    tpu_status_t status = TPU_OK;
    double end = 0, chain = 0;

    memset(al, 0, sizeof(al));
    memset(ls, 0, sizeof(ls));
    memset(&args, 0, sizeof(args));
    args.topo = topo;
    args.link = link;
    args.shard = ps->lines_blk;
    args.elem = ps->lines_elem;
    args.chunks = 1;
    args.rep = -1;
    if (tpu__linkmodel_init(&lm, topo, link, 0) != TPU_OK) {
        return TPU_ERR_NO_MEMORY;
    }
    for (a = 0; a < topo->naxes; a++) {
        if ((ps->lines_mask & (1u << a)) && topo->dims[a] >= 2) {
            axes[nax++] = a;
        }
    }
    /* A block, and its halves of whole elements at a tie (tpu__algo_direct_block):
     * the first one way, the second the other; a block of one element is not split. */
    sizes[SZ_BLOCK] = (double)ps->lines_blk;
    sizes[SZ_PLUS] = e >= 2 ? (double)((e + 1) / 2 * ps->lines_elem) : sizes[SZ_BLOCK];
    sizes[SZ_MINUS] = e >= 2 ? (double)(e / 2 * ps->lines_elem) : sizes[SZ_BLOCK];
    for (a = 0; a < nax && status == TPU_OK; a++) {
        int b;

        tpu__sched_init(&ls[a]);
        line[a] = tpu__calloc((size_t)2 * topo->dims[axes[a]] * NLT, sizeof(double));
        if (line[a] == NULL) {
            status = TPU_ERR_NO_MEMORY;
            break;
        }
        status = axis_line(topo, &lm, &args, axes[a], &ls[a], line[a]);
        /* The pod's flows through one line's links: the other axes' free coordinates,
         * of which those at a tie on some other axis split the block in two halves. */
        mult[a] = 1;
        whole[a] = 1;
        for (b = 0; b < nax; b++) {
            int nb = topo->dims[axes[b]];

            if (b != a) {
                mult[a] *= nb;
                whole[a] *= e >= 2 && topo->wrap[axes[b]] && nb % 2 == 0 ? nb - 1 : nb;
            }
        }
    }
    if (status != TPU_OK) {
        goto out;
    }
    /* Every link of the pod: its line's loads times the lines' multiplicity, by size. */
    for (l = 0; l < topo->nlinks && status == TPU_OK; l++) {
        int src, axis, dir, dst, c[TPU_MAX_AXES];
        const double *lt;
        double by[NSZ];

        tpu_topo_link_ends(topo, l, &src, &axis, &dir, &dst);
        for (a = 0; a < nax && axes[a] != axis; a++) {
        }
        if (a == nax) {
            continue;
        }
        tpu_topo_coords(topo, src, c);
        lt = &line[a][(2 * c[axis] + (dir < 0)) * NLT];
        by[SZ_BLOCK] = lt[LT_WHOLE] * (double)whole[a] * sizes[SZ_BLOCK];
        by[SZ_PLUS] = lt[LT_WHOLE] * (double)(mult[a] - whole[a]) * sizes[SZ_PLUS] +
                      lt[LT_PLUS] * (double)mult[a];
        by[SZ_MINUS] = lt[LT_WHOLE] * (double)(mult[a] - whole[a]) * sizes[SZ_MINUS] +
                       lt[LT_MINUS] * (double)mult[a];
        for (z = 0; z < NSZ && status == TPU_OK; z++) {
            if (by[z] > 0) {
                status = tpu__linkmodel_add_load(&lm, l, by[z], sizes[z]);
            }
        }
    }
    for (a = 0; a < nax && status == TPU_OK; a++) {
        status = axis_classes(topo, &lm, axes[a], &ls[a], sizes, &al[a]);
    }
    if (status != TPU_OK) {
        goto out;
    }
    /* One flow per combination of classes; the tied axes all take one direction.  As
     * in the walk (timing.c), the collective takes the bytes' time plus its longest
     * chain of latencies: the latest bytes plus the most hops. */
    memset(k, 0, sizeof(k));
    for (;;) {
        int tie = 0, ok = 1, moves = 0, cs[TPU_MAX_AXES] = {0, 0, 0}, cd[TPU_MAX_AXES] = {0, 0, 0};

        for (a = 0; a < nax; a++) {
            const line_class_t *c = &al[a].cls[k[a]];

            if (c->tie != 0 && tie != 0 && c->tie != tie) {
                ok = 0;
            }
            tie = c->tie != 0 ? c->tie : tie;
            moves += c->hops;
        }
        /* A whole block, or the tie half of its direction (tpu__algo_direct_block). */
        z = tie < 0 ? SZ_MINUS : tie > 0 ? SZ_PLUS : SZ_BLOCK;
        for (a = 0; a < nax; a++) {
            cs[axes[a]] = al[a].cls[k[a]].from[z];
            cd[axes[a]] = al[a].cls[k[a]].to[z];
        }
        if (ok && moves > 0) {
            tpu_flow_t f;
            double bytes, lat;

            memset(&f, 0, sizeof(f));
            f.src = tpu_topo_chip(topo, 0, cs);
            f.dst = tpu_topo_chip(topo, 0, cd);
            f.tie = (int8_t)(tie < 0 ? -1 : 1);
            f.kind = TPU_ROUTE_ICI;
            f.span.count[0] = f.span.count[1] = f.span.count[2] = 1;
            f.span.len = (int64_t)sizes[z];
            tpu__linkmodel_time_flow(&lm, &f, 0, &bytes, &lat);
            end = bytes > end ? bytes : end;
            chain = lat > chain ? lat : chain;
        }
        for (a = 0; a < nax; a++) {
            if (++k[a] < al[a].ncls) {
                break;
            }
            k[a] = 0;
        }
        if (a == nax) {
            break;
        }
    }
    /* A chip's own end: its own flows (the same flows the pod's schedule has), each
     * timed on the loads of the whole pod, plus the pod's longest chain. */
    if (own != NULL) {
        int64_t f;

        *own_end_p = 0;
        for (f = 0; f < own->nflows; f++) {
            const tpu_flow_t *fl = &own->flows[f];
            double bytes, lat;

            if (local[fl->src] || local[fl->dst]) {
                tpu__linkmodel_time_flow(&lm, fl, 0, &bytes, &lat);
                *own_end_p = bytes > *own_end_p ? bytes : *own_end_p;
            }
        }
        *own_end_p += chain;
        *own_end_p += link->launch > 0 ? link->launch : 0;
    }
    /* The launch cost of a calibrated model, once, after the chain (as the walk). */
    end += chain;
    end += link->launch > 0 ? link->launch : 0;
    tpu__linkmodel_end_step(&lm);
    if (res != NULL) {
        tpu__linkmodel_stats(&lm, end, res);
    }
    *seconds_p = end;
out:
    for (a = 0; a < TPU_MAX_AXES; a++) {
        tpu__free(line[a]);
        tpu__free(al[a].cls);
        tpu__sched_fini(&ls[a]);
    }
    tpu__linkmodel_fini(&lm);
    return status;
}

int64_t tpu__lines_pod_flows(const tpu_topo_t *topo, const tpu_plan_sched_t *ps)
{
    int64_t plain = 1, all = 1, group = 1, split;
    int a;

    /* Flows per pair: 2 at a tie when the block splits into halves of whole elements. */
    split = ps->lines_blk / ps->lines_elem >= 2 ? 2 : 1;
    for (a = 0; a < topo->naxes; a++) {
        int n = topo->dims[a];
        int64_t tie = topo->wrap[a] && n % 2 == 0 ? n : 0;

        if (!(ps->lines_mask & (1u << a)) || n < 2) {
            continue;
        }
        plain *= (int64_t)n * n - tie;
        all *= (int64_t)n * n;
        group *= n;
    }
    return topo->nchips / group * ((plain - group) + split * (all - plain));
}
