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
 * The only step has no dependencies, so a flow's time is a function of its route
 * and of those loads.  Along each axis the flows fall into classes by the hops
 * they make there and the direction they take at a tie; in each class the one
 * whose route crosses the busiest link stands for it (a later arrival is never
 * the cost of a lighter route), and the pod's flows are the combinations of a
 * class per axis (the tied axes all going the same way).  Timing one flow per
 * combination through the link model itself gives the latest arrival of the
 * whole pod, and the link loads its per-axis statistics, bit for bit as the walk
 * over every flow: test_coll_classes compares both on every shape up to 8x8x8.
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

#include "tpu/alloc.h"

#include "timing.h"

#include <string.h>

/* A class of the flows along one axis: the hops they make and their tie direction. */
typedef struct line_class {
    int hops;
    int tie;      /* 0: no tie on this axis; +1 / -1: a tie, taken that way */
    int from, to; /* the line flow that stands for the class (busiest route) */
    double arrival;
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

static void add_class(axis_lines_t *al, int hops, int tie, int from, int to, double arrival)
{
    int k;

    for (k = 0; k < al->ncls; k++) {
        line_class_t *c = &al->cls[k];

        if (c->hops == hops && c->tie == tie) {
            if (arrival > c->arrival) {
                c->from = from;
                c->to = to;
                c->arrival = arrival;
            }
            return;
        }
    }
    al->cls[al->ncls].hops = hops;
    al->cls[al->ncls].tie = tie;
    al->cls[al->ncls].from = from;
    al->cls[al->ncls].to = to;
    al->cls[al->ncls].arrival = arrival;
    al->ncls++;
}

/*
 * The flows of one line of axis 'a' (the schedule's own, from
 * tpu__algo_direct_block()), their loads on that line in 'lm1' (read into
 * 'line', per position and direction), and their classes.
 */
static tpu_status_t axis_line(const tpu_topo_t *topo, const tpu_link_model_t *link,
                              const tpu_algo_args_t *args, int a, double *line, axis_lines_t *al,
                              int64_t *half_p)
{
    int n = topo->dims[a], i, j, d;
    tpu_sched_t s;
    tpu_linkmodel_t lm1;
    tpu_status_t status = TPU_OK;
    int64_t f;

    tpu__sched_init(&s);
    if (tpu__linkmodel_init(&lm1, topo, link, 0) != TPU_OK) {
        return TPU_ERR_NO_MEMORY;
    }
    al->cls = tpu__calloc((size_t)2 * n + 2, sizeof(*al->cls));
    if (al->cls == NULL) {
        status = TPU_ERR_NO_MEMORY;
        goto out;
    }
    for (i = 0; i < n && status == TPU_OK; i++) {
        for (j = 0; j < n && status == TPU_OK; j++) {
            if (i != j) {
                status = tpu__algo_direct_block(args, &s, line_chip(topo, a, i),
                                                line_chip(topo, a, j), 0, 0);
            }
        }
    }
    if (status != TPU_OK) {
        goto out;
    }
    tpu__linkmodel_load_step(&lm1, &s, 0, s.nflows);
    for (i = 0; i < n; i++) {
        for (d = 0; d < 2; d++) {
            int l = tpu_topo_link(topo, line_chip(topo, a, i), a, d == 0 ? 1 : -1);

            line[2 * i + d] = l >= 0 ? tpu__linkmodel_load(&lm1, l) : 0;
        }
    }
    /* The class of "no move on this axis", then one per hop count and tie direction. */
    al->cls[0].hops = 0;
    al->ncls = 1;
    for (f = 0; f < s.nflows; f++) {
        const tpu_flow_t *fl = &s.flows[f];
        int ci[TPU_MAX_AXES], cj[TPU_MAX_AXES], dir;
        int hops, tie;
        double start, arrival;

        tpu_topo_coords(topo, fl->src, ci);
        tpu_topo_coords(topo, fl->dst, cj);
        hops = tpu_topo_axis_move(topo, a, ci[a], cj[a], &dir);
        tie = topo->wrap[a] && n % 2 == 0 && hops == n / 2 ? (fl->tie < 0 ? -1 : 1) : 0;
        if (tie < 0) {
            *half_p = tpu__span_bytes(&fl->span);
        }
        /* On one line the busiest link crossed decides: the link model's own time. */
        tpu__linkmodel_time_flow(&lm1, fl, 0, &start, &arrival);
        add_class(al, hops, tie, ci[a], cj[a], arrival);
    }
out:
    tpu__linkmodel_fini(&lm1);
    tpu__sched_fini(&s);
    return status;
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
    double *line[TPU_MAX_AXES] = {NULL, NULL, NULL};
    int axes[TPU_MAX_AXES], nax = 0, a, l, k[TPU_MAX_AXES];
    int64_t half = -1, mult[TPU_MAX_AXES];
    tpu_algo_args_t args;
    tpu_linkmodel_t lm;
    tpu_status_t status = TPU_OK;
    double end = 0;

    memset(al, 0, sizeof(al));
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
    for (a = 0; a < nax && status == TPU_OK; a++) {
        int b;

        line[a] = tpu__calloc((size_t)2 * topo->dims[axes[a]], sizeof(double));
        if (line[a] == NULL) {
            status = TPU_ERR_NO_MEMORY;
            break;
        }
        status = axis_line(topo, link, &args, axes[a], line[a], &al[a], &half);
        mult[a] = 1;
        for (b = 0; b < nax; b++) {
            mult[a] *= b == a ? 1 : topo->dims[axes[b]];
        }
    }
    if (status != TPU_OK) {
        goto out;
    }
    /* Every link of the pod: its line's load times the lines' multiplicity. */
    for (l = 0; l < topo->nlinks; l++) {
        int src, axis, dir, dst, c[TPU_MAX_AXES];

        tpu_topo_link_ends(topo, l, &src, &axis, &dir, &dst);
        for (a = 0; a < nax && axes[a] != axis; a++) {
        }
        if (a == nax) {
            continue;
        }
        tpu_topo_coords(topo, src, c);
        if (line[a][2 * c[axis] + (dir < 0)] > 0) {
            tpu__linkmodel_add_load(&lm, l, line[a][2 * c[axis] + (dir < 0)] * (double)mult[a]);
        }
    }
    /* A chip's own end: its own flows (the same flows the pod's schedule has), each
     * timed on the loads of the whole pod. */
    if (own != NULL) {
        int64_t f;

        *own_end_p = 0;
        for (f = 0; f < own->nflows; f++) {
            const tpu_flow_t *fl = &own->flows[f];
            double start, arrival;

            if (local[fl->src] || local[fl->dst]) {
                tpu__linkmodel_time_flow(&lm, fl, 0, &start, &arrival);
                if (arrival > *own_end_p) {
                    *own_end_p = arrival;
                }
            }
        }
    }
    /* One flow per combination of classes; the tied axes all take one direction. */
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
            cs[axes[a]] = c->from;
            cd[axes[a]] = c->to;
        }
        if (ok && moves > 0) {
            tpu_flow_t f;
            double start, arrival;

            memset(&f, 0, sizeof(f));
            f.src = tpu_topo_chip(topo, 0, cs);
            f.dst = tpu_topo_chip(topo, 0, cd);
            f.tie = (int8_t)(tie < 0 ? -1 : 1);
            f.kind = TPU_ROUTE_ICI;
            f.span.count[0] = f.span.count[1] = f.span.count[2] = 1;
            /* A whole block, or the tie half of its direction (tpu__algo_direct_block). */
            f.span.len = tie < 0                ? half
                         : tie > 0 && half >= 0 ? ps->lines_blk - half
                                                : ps->lines_blk;
            tpu__linkmodel_time_flow(&lm, &f, 0, &start, &arrival);
            if (arrival > end) {
                end = arrival;
            }
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
    tpu__linkmodel_end_step(&lm);
    if (res != NULL) {
        tpu__linkmodel_stats(&lm, end, res);
    }
    *seconds_p = end;
out:
    for (a = 0; a < TPU_MAX_AXES; a++) {
        tpu__free(line[a]);
        tpu__free(al[a].cls);
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
