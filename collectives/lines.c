/*
 * Line timing of the direct schedules on any pod (open, wrapped or mixed axes),
 * without building the flows of every member pair: the direct all-to-all
 * (alltoall_direct.c, and alltoall_group_direct.c over whole torus axes), and
 * group_direct over whole torus axes (allgather_group_direct.c, its time
 * reversal reducescatter_group_direct.c, and psum_group_direct.c: the reversal,
 * then the all-gather once it is through).
 *
 * What it does.  Under dimension-order routes (one axis order for every flow of
 * a step) a flow from s to d crosses the links of axis a on one line of that
 * axis (at d's coordinates on the axes routed before a, s's on those after), and
 * the links it crosses there depend only on (s_a, d_a) and on the direction it
 * takes at a tie.  Every ordered pair of members moves, so every link of axis a
 * at line position p carries the same bytes as the link at p of any other line:
 *
 *     load(a, p, dir) = line(a, p, dir) * prod over the other axes b of n_b,
 *
 * where line(a, p, dir) is the load that the flows between the chips of one line
 * (the schedule's own kind of flow, routed by the link model) put on that line.
 * The loads of every link of the pod are filled in from these tables, exactly the
 * sums the full schedule adds up (whole bytes: exact in doubles below 2^53 bytes
 * per link).  A reducing step adds G - 1 blocks on every chip's VPU.
 *
 * The flows, per step ("phase"):
 *   all-to-all  a block per pair; at the tie distance of a wrapped even axis it
 *               goes as two halves, one each way (tpu__algo_direct_block()), and
 *               then both halves cross every axis that is not at a tie;
 *   gather      a whole block per pair, the + way at a tie, axis order x, y, z;
 *   scatter     the gather turned round (tpu__sched_reverse()): the - way at a
 *               tie, axis order z, y, x, reducing at the destination;
 *   psum        the scatter, then (a barrier) the gather: every gather flow starts
 *               when the scatter's latest bytes are through, its chain after the
 *               scatter's longest (timing.c).
 * Messages come in three sizes: a block, and its two halves at a tie (the
 * all-to-all only).  The link model shares a link between the messages it
 * carries (processor sharing: a half is through before a block), so the loads
 * are kept per size: a line's whole blocks and halves, and on the other axes'
 * free coordinates, the fraction at a tie on some other axis, whose blocks cross
 * this line as halves.
 *
 * Each step's flows all start together and have no other dependencies, so a
 * flow's bytes' time is its start plus a function of its route, its size and
 * those loads (a psum's second step starts after the first step's busiest
 * resource is through: no resource is still busy, linkmodel.c).  Along each axis
 * the flows fall into classes by the hops they make there and the direction they
 * take at a tie; in each class, for each size, the route whose busiest link the
 * message is through last stands for it, and the pod's flows are the
 * combinations of a class per axis (the tied axes all going the same way).
 * Timing one flow per combination through the link model itself gives the
 * latest bytes and the most hops of the whole pod (the collective takes their
 * sum, as the walk: timing.c), and the link loads its per-axis statistics, bit
 * for bit as the walk over every flow: test_coll_classes compares both on every
 * shape up to 8x8x8 and test_lines_group on the group forms.  Message starts
 * (msg_cost): the first step's are one batch per port at time 0, inside the
 * hop latency; a psum's gather flow waits for its port's engine when the
 * scatter started a batch there less than msg_cost before (only when the
 * scatter's bytes and hops take less than msg_cost), the wait on its chain.
 *
 * Cost: per step, sum over axes of n_a^2 line flows, one pass over the links,
 * and prod over axes of (n_a + 2) timed flows: about 10^4 on 16x20x28.
 *
 *   line of 4 (open), flows of one line:    link 0>1 1>2 2>3   (x prod n_b)
 *   0->1 0->2 0->3 1->2 1->3 2->3 (+)            3   4   3
 *
 * An observer is told of the flows timed (one per combination, marked
 * representative) and of every link's totals, the walk's exactly; one that wants
 * every flow of the pod walks every chip's schedule instead (plan.c).
 *
 * Restrictions: ICI axes of one slice, no faults (tpu__plan_faulty()).
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
    int tie;  /* 0: no tie on this axis; +1 / -1: a tie, taken that way */
    int port; /* 1: some flow of the class starts on a port the step before started */
    /* For a message of each size: the line flow that stands for the class (the
     * route whose busiest link it is through last) and when. */
    int from[NSZ], to[NSZ];
    double arrival[NSZ];
} line_class_t;

typedef struct axis_lines {
    line_class_t *cls;
    int ncls;
} axis_lines_t;

/* One step of a schedule the lines stand for: how its flows go. */
typedef struct line_phase {
    int split;  /* 1: a block at a tie goes as two halves, one each way round */
    int tie;    /* else the way a whole block takes at a tie: +1 or -1 */
    int order;  /* the routes' axis order (index into tpu__axis_orders) */
    int reduce; /* 1: the destination adds (its VPU is on the route) */
} line_phase_t;

/* The pod's axes of the lines and the arguments of their flows. */
typedef struct line_pod {
    const tpu_topo_t *topo;
    tpu_algo_args_t args;
    int axes[TPU_MAX_AXES], nax;
    double sizes[NSZ];
    double group;                   /* members per group */
    int halves;                     /* 1: a tie splits a block (all-to-all, 2 elements or more) */
    const tpu_coll_observer_t *obs; /* told of each flow timed, or NULL */
    int64_t nobs;                   /* flows told so far */
    int32_t *obs_links;             /* room for the links of one flow (obs_cap) */
    int obs_cap;
} line_pod_t;

int tpu__lines_applies(const tpu_coll_plan_t *p, const tpu_algo_t *algo)
{
    tpu_coll_kind_t k = p->desc.kind;

    if (tpu__plan_faulty(p) || p->desc.groups != NULL || p->desc.pairs != NULL ||
        (p->desc.axes & TPU_AXIS_MASK_DCN) || p->topo.slices != 1) {
        return 0;
    }
    if (algo == NULL || !algo->groups) {
        return k == TPU_COLL_ALL_TO_ALL;
    }
    /* A group algorithm over whole axes: every member pair of every group moves. */
    return strcmp(algo->name, "group_direct") == 0 &&
           (k == TPU_COLL_ALL_TO_ALL || k == TPU_COLL_ALL_GATHER || k == TPU_COLL_REDUCE_SCATTER ||
            k == TPU_COLL_PSUM);
}

int tpu__lines_named(const tpu_coll_plan_t *p)
{
    const tpu_algo_t *algo = tpu__algo_named(&p->desc);

    return algo != NULL && tpu__lines_applies(p, algo);
}

tpu_status_t tpu__lines_build(const tpu_coll_plan_t *p, const tpu_algo_t *algo,
                              tpu_plan_sched_t *ps)
{
    tpu_coll_kind_t k = p->desc.kind;

    ps->lines = 1;
    ps->lines_mask = p->desc.axes;
    ps->lines_blk = p->shard;
    ps->lines_elem = p->args.elem;
    ps->lines_form = algo == NULL || k == TPU_COLL_ALL_TO_ALL ? TPU_LINES_ALL_TO_ALL
                     : k == TPU_COLL_ALL_GATHER               ? TPU_LINES_GATHER
                     : k == TPU_COLL_REDUCE_SCATTER           ? TPU_LINES_SCATTER
                                                              : TPU_LINES_PSUM;
    /* A psum is two steps, the second after a barrier (reversed.c). */
    ps->s.nsteps = ps->lines_form == TPU_LINES_PSUM ? 2 : 1;
    ps->s.barrier = ps->lines_form == TPU_LINES_PSUM ? 1 : 0;
    ps->s.nstreams = 1;
    return tpu__plan_sched_index(ps);
}

/* The steps of line form 'form' into 'ph' (room for two); returns how many. */
static int form_phases(int form, line_phase_t *ph)
{
    const int *o = tpu__axis_orders[0];
    int rev[3] = {o[2], o[1], o[0]}, n = 0;

    memset(ph, 0, 2 * sizeof(*ph));
    if (form == TPU_LINES_ALL_TO_ALL) {
        ph[n++].split = 1;
        return n;
    }
    if (form == TPU_LINES_SCATTER || form == TPU_LINES_PSUM) {
        /* The gather's flows turned round (tpu__sched_reverse()). */
        ph[n].tie = -1;
        ph[n].order = tpu__axis_order_index(rev, 3);
        ph[n++].reduce = 1;
    }
    if (form == TPU_LINES_GATHER || form == TPU_LINES_PSUM) {
        ph[n++].tie = 1; /* allgather_group_direct.c's flow */
    }
    return n;
}

/* The chip with coordinate 'i' on axis 'a' and 0 elsewhere (slice 0). */
static int line_chip(const tpu_topo_t *topo, int a, int i)
{
    int c[TPU_MAX_AXES] = {0, 0, 0};

    c[a] = i;
    return tpu_topo_chip(topo, 0, c);
}

/* The flows of step 'ph' from chip 'src' to chip 'dst' (one, or two halves). */
static tpu_status_t line_flow(const tpu_algo_args_t *args, const line_phase_t *ph, tpu_sched_t *s,
                              int src, int dst)
{
    tpu_flow_t f;

    if (ph->split) {
        return tpu__algo_direct_block(args, s, src, dst, 0, 0);
    }
    memset(&f, 0, sizeof(f));
    f.src = src;
    f.dst = dst;
    f.kind = TPU_ROUTE_ICI;
    f.tie = (int8_t)ph->tie;
    f.order = (uint8_t)ph->order;
    f.reduce = (uint8_t)ph->reduce;
    f.span.len = args->shard;
    f.span.count[0] = f.span.count[1] = f.span.count[2] = 1;
    return tpu__sched_add(s, &f) < 0 ? TPU_ERR_NO_MEMORY : TPU_OK;
}

/* Where a link of axis 'a' sits in a line's tables: its position and direction. */
static int line_slot(const tpu_topo_t *topo, int link, int a)
{
    int src, axis, dir, dst, c[TPU_MAX_AXES];

    tpu_topo_link_ends(topo, link, &src, &axis, &dir, &dst);
    tpu_topo_coords(topo, src, c);
    return 2 * c[a] + (dir < 0);
}

static void add_class(axis_lines_t *al, int hops, int tie, int port, int from, int to,
                      const double *arrival)
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
    c->port |= port;
    for (z = 0; z < NSZ; z++) {
        if (arrival[z] > c->arrival[z]) {
            c->from[z] = from;
            c->to[z] = to;
            c->arrival[z] = arrival[z];
        }
    }
}

/*
 * The flows of one line of axis 'a' (between the chips of the line through chip
 * 0, of step 'ph') into 's', and what they put on that line's links (their routes
 * in 'lm') into 'line' (per position and direction, NLT entries): the number of
 * whole blocks (LT_WHOLE) and the bytes of tie halves (LT_PLUS, LT_MINUS); and
 * into 'port' (per position and direction) the links they start on.
 */
enum {
    LT_WHOLE,
    LT_PLUS,
    LT_MINUS,
    NLT
};

static tpu_status_t axis_line(const line_pod_t *lp, const tpu_linkmodel_t *lm,
                              const line_phase_t *ph, int a, tpu_sched_t *s, double *line,
                              uint8_t *port)
{
    const tpu_topo_t *topo = lp->topo;
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
                status = line_flow(&lp->args, ph, s, line_chip(topo, a, i), line_chip(topo, a, j));
            }
        }
    }
    for (f = 0; f < s->nflows && status == TPU_OK; f++) {
        const tpu_flow_t *fl = &s->flows[f];
        int src_host, dst_host, nl, q, k;
        int64_t bytes = tpu__span_bytes(&fl->span);

        /* A whole block, or a half: the first goes +, the second - at the tie. */
        k = bytes == lp->args.shard ? LT_WHOLE : fl->tie > 0 ? LT_PLUS : LT_MINUS;
        nl = tpu__linkmodel_flow_links(lm, fl, links, n, &src_host, &dst_host);
        for (q = 0; q < nl; q++) {
            line[line_slot(topo, links[q], a) * NLT + k] += k == LT_WHOLE ? 1.0 : (double)bytes;
        }
        if (nl > 0) {
            port[line_slot(topo, links[0], a)] = 1;
        }
    }
    tpu__free(links);
    return status;
}

/*
 * The classes of axis a's line flows 's': "no move on this axis", then one per
 * hop count and tie direction, each with the route whose busiest link a message
 * of each size is through last, on the pod's loads in 'lm', and whether one of
 * them starts on a port of 'before' (NULL: none).
 */
static tpu_status_t axis_classes(const tpu_topo_t *topo, tpu_linkmodel_t *lm, int a,
                                 const tpu_sched_t *s, const double *sizes, const uint8_t *before,
                                 axis_lines_t *al)
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
        int ci[TPU_MAX_AXES], cj[TPU_MAX_AXES], dir, z, hops, tie, port = 0, sh, dh;
        double lat, arrival[NSZ];
        tpu_flow_t g = *fl;
        int32_t first;

        tpu_topo_coords(topo, fl->src, ci);
        tpu_topo_coords(topo, fl->dst, cj);
        hops = tpu_topo_axis_move(topo, a, ci[a], cj[a], &dir);
        tie = topo->wrap[a] && n % 2 == 0 && hops == n / 2 ? (fl->tie < 0 ? -1 : 1) : 0;
        if (before != NULL && tpu__linkmodel_flow_links(lm, fl, &first, 1, &sh, &dh) == 1) {
            port = before[line_slot(topo, first, a)];
        }
        /* The pod's message on this route is a half when an axis is at a tie. */
        for (z = 0; z < NSZ; z++) {
            g.span.len = (int64_t)sizes[z];
            g.span.count[0] = g.span.count[1] = g.span.count[2] = 1;
            tpu__linkmodel_time_flow(lm, &g, 0, &arrival[z], &lat);
        }
        add_class(al, hops, tie, port, ci[a], cj[a], arrival);
    }
    return TPU_OK;
}

/* Tell the observer of flow 'f' of step 'step', from 'start' to 'end' (real times). */
static void observe(line_pod_t *lp, const tpu_linkmodel_t *lm, const tpu_flow_t *f, int step,
                    double start, double end)
{
    tpu_coll_flow_event_t ev;

    if (lp->obs == NULL || lp->obs->on_flow == NULL) {
        return;
    }
    memset(&ev, 0, sizeof(ev));
    ev.flow = lp->nobs++;
    ev.src = f->src;
    ev.dst = f->dst;
    ev.step = step;
    ev.start_s = start;
    ev.end_s = end;
    ev.bytes = (uint64_t)tpu__span_bytes(&f->span);
    ev.nlinks =
        tpu__linkmodel_flow_links(lm, f, lp->obs_links, lp->obs_cap, &ev.src_host, &ev.dst_host);
    ev.links = lp->obs_links;
    ev.representative = 1;
    lp->obs->on_flow(lp->obs->user, &ev);
}

/* The pod's loads of step 'ph' from the line tables 'line' of every axis. */
static tpu_status_t pod_loads(const line_pod_t *lp, tpu_linkmodel_t *lm, const line_phase_t *ph,
                              double *const *line)
{
    const tpu_topo_t *topo = lp->topo;
    const double *sizes = lp->sizes;
    int64_t mult[TPU_MAX_AXES], whole[TPU_MAX_AXES];
    tpu_status_t status = TPU_OK;
    int a, b, l, z, c;

    /* The pod's flows through one line's links: the other axes' free coordinates,
     * of which those at a tie on some other axis split the block in two halves. */
    for (a = 0; a < lp->nax; a++) {
        mult[a] = 1;
        whole[a] = 1;
        for (b = 0; b < lp->nax; b++) {
            int nb = topo->dims[lp->axes[b]];

            if (b != a) {
                mult[a] *= nb;
                whole[a] *= lp->halves && topo->wrap[lp->axes[b]] && nb % 2 == 0 ? nb - 1 : nb;
            }
        }
    }
    /* Every link of the pod: its line's loads times the lines' multiplicity, by size. */
    for (l = 0; l < topo->nlinks && status == TPU_OK; l++) {
        int src, axis, dir, dst;
        const double *lt;
        double by[NSZ];

        tpu_topo_link_ends(topo, l, &src, &axis, &dir, &dst);
        for (a = 0; a < lp->nax && lp->axes[a] != axis; a++) {
        }
        if (a == lp->nax) {
            continue;
        }
        lt = &line[a][line_slot(topo, l, axis) * NLT];
        by[SZ_BLOCK] = lt[LT_WHOLE] * (double)whole[a] * sizes[SZ_BLOCK];
        by[SZ_PLUS] = lt[LT_WHOLE] * (double)(mult[a] - whole[a]) * sizes[SZ_PLUS] +
                      lt[LT_PLUS] * (double)mult[a];
        by[SZ_MINUS] = lt[LT_WHOLE] * (double)(mult[a] - whole[a]) * sizes[SZ_MINUS] +
                       lt[LT_MINUS] * (double)mult[a];
        for (z = 0; z < NSZ && status == TPU_OK; z++) {
            if (by[z] > 0) {
                status = tpu__linkmodel_add_load(lm, l, by[z], sizes[z]);
            }
        }
    }
    /* A reducing step: every chip's VPU adds the G - 1 blocks it receives. */
    for (c = 0; ph->reduce && lm->link.reduce_bw > 0 && c < topo->nchips && status == TPU_OK; c++) {
        status = tpu__linkmodel_add_load(lm, lm->vpu0 + c, (lp->group - 1) * sizes[SZ_BLOCK],
                                         sizes[SZ_BLOCK]);
    }
    return status;
}

/*
 * Step 'ph' on the loads it adds to 'lm', every flow starting at 'ready' with the
 * chain 'chain0' before it: '*end_p' its latest bytes, '*chain_p' its longest chain
 * (a flow that starts on a port of 'before' waits 'wait' more for its engine);
 * into 'ports' the ports it starts on.  The classes of every axis are left in 'al'.
 */
static tpu_status_t time_phase(line_pod_t *lp, tpu_linkmodel_t *lm, const line_phase_t *ph,
                               int step, double ready, double chain0, double wait,
                               uint8_t *const *before, uint8_t **ports, axis_lines_t *al,
                               double *end_p, double *chain_p)
{
    const tpu_topo_t *topo = lp->topo;
    const int *order = tpu__axis_orders[ph->order];
    tpu_sched_t ls[TPU_MAX_AXES];
    double *line[TPU_MAX_AXES] = {NULL, NULL, NULL}, end = 0, chain = 0;
    int a, k[TPU_MAX_AXES], z;
    tpu_status_t status = TPU_OK;

    memset(ls, 0, sizeof(ls));
    for (a = 0; a < lp->nax && status == TPU_OK; a++) {
        int n = topo->dims[lp->axes[a]];

        tpu__sched_init(&ls[a]);
        line[a] = tpu__calloc((size_t)2 * n * NLT, sizeof(double));
        ports[a] = tpu__calloc((size_t)2 * n, 1);
        if (line[a] == NULL || ports[a] == NULL) {
            status = TPU_ERR_NO_MEMORY;
            break;
        }
        status = axis_line(lp, lm, ph, lp->axes[a], &ls[a], line[a], ports[a]);
    }
    if (status == TPU_OK) {
        status = pod_loads(lp, lm, ph, line);
    }
    for (a = 0; a < lp->nax && status == TPU_OK; a++) {
        status = axis_classes(topo, lm, lp->axes[a], &ls[a], lp->sizes,
                              before != NULL ? before[a] : NULL, &al[a]);
    }
    if (status != TPU_OK) {
        goto out;
    }
    /* One flow per combination of classes; the tied axes all take one direction.  As
     * in the walk (timing.c), the collective takes the bytes' time plus its longest
     * chain of latencies: the latest bytes plus the most hops. */
    memset(k, 0, sizeof(k));
    for (;;) {
        int tie = 0, ok = 1, moves = 0, first = -1, i, cs[TPU_MAX_AXES] = {0, 0, 0},
            cd[TPU_MAX_AXES] = {0, 0, 0};

        for (a = 0; a < lp->nax; a++) {
            const line_class_t *c = &al[a].cls[k[a]];

            if (c->tie != 0 && tie != 0 && c->tie != tie) {
                ok = 0;
            }
            tie = c->tie != 0 ? c->tie : tie;
            moves += c->hops;
        }
        /* A whole block, or the tie half of its direction (tpu__algo_direct_block). */
        z = tie < 0 ? SZ_MINUS : tie > 0 ? SZ_PLUS : SZ_BLOCK;
        for (a = 0; a < lp->nax; a++) {
            cs[lp->axes[a]] = al[a].cls[k[a]].from[z];
            cd[lp->axes[a]] = al[a].cls[k[a]].to[z];
        }
        /* The axis whose links the route starts on: its port. */
        for (i = 0; i < TPU_MAX_AXES && first < 0; i++) {
            for (a = 0; a < lp->nax; a++) {
                first = lp->axes[a] == order[i] && al[a].cls[k[a]].hops > 0 ? a : first;
            }
        }
        if (ok && moves > 0) {
            tpu_flow_t f;
            double bytes, lat, w = first >= 0 && al[first].cls[k[first]].port ? wait : 0;

            memset(&f, 0, sizeof(f));
            f.src = tpu_topo_chip(topo, 0, cs);
            f.dst = tpu_topo_chip(topo, 0, cd);
            f.tie = (int8_t)(ph->split ? (tie < 0 ? -1 : 1) : ph->tie);
            f.order = (uint8_t)ph->order;
            f.reduce = (uint8_t)ph->reduce;
            f.kind = TPU_ROUTE_ICI;
            f.span.count[0] = f.span.count[1] = f.span.count[2] = 1;
            f.span.len = (int64_t)lp->sizes[z];
            tpu__linkmodel_time_flow(lm, &f, ready, &bytes, &lat);
            /* Its chain as the walk's: the chain before it, plus its hops and wait. */
            lat = chain0 + (lat + w);
            observe(lp, lm, &f, step, ready + chain0, bytes + lat);
            end = bytes > end ? bytes : end;
            chain = lat > chain ? lat : chain;
        }
        for (a = 0; a < lp->nax; a++) {
            if (++k[a] < al[a].ncls) {
                break;
            }
            k[a] = 0;
        }
        if (a == lp->nax) {
            break;
        }
    }
    *end_p = end;
    *chain_p = chain;
out:
    for (a = 0; a < TPU_MAX_AXES; a++) {
        tpu__free(line[a]);
        tpu__sched_fini(&ls[a]);
    }
    return status;
}

/* tpu__lines_time_own(), and 'obs' (NULL: none) told of the flows timed and the links. */
static tpu_status_t lines_time(const tpu_topo_t *topo, const tpu_link_model_t *link,
                               const tpu_plan_sched_t *ps, const tpu_sched_t *own,
                               const uint8_t *local, const tpu_coll_observer_t *obs,
                               double *own_end_p, double *seconds_p, tpu_coll_result_t *res)
{
    axis_lines_t al[TPU_MAX_AXES];
    uint8_t *ports[2][TPU_MAX_AXES];
    line_phase_t ph[2];
    line_pod_t lp;
    int a, s, nph = form_phases(ps->lines_form, ph);
    int64_t e = ps->lines_blk / ps->lines_elem;
    tpu_linkmodel_t lm;
    tpu_status_t status = TPU_OK;
    double end = 0, chain = 0, ready = 0, own_end = 0;

    memset(al, 0, sizeof(al));
    memset(ports, 0, sizeof(ports));
    memset(&lp, 0, sizeof(lp));
    lp.topo = topo;
    lp.args.topo = topo;
    lp.args.link = link;
    lp.args.shard = ps->lines_blk;
    lp.args.elem = ps->lines_elem;
    lp.args.chunks = 1;
    lp.args.rep = -1;
    lp.group = 1;
    lp.obs = obs;
    lp.obs_cap = 1;
    for (a = 0; a < topo->naxes; a++) {
        lp.obs_cap += topo->dims[a];
        if ((ps->lines_mask & (1u << a)) && topo->dims[a] >= 2) {
            lp.axes[lp.nax++] = a;
            lp.group *= topo->dims[a];
        }
    }
    lp.obs_links = obs != NULL ? tpu__malloc((size_t)lp.obs_cap * sizeof(int32_t)) : NULL;
    if ((obs != NULL && lp.obs_links == NULL) ||
        tpu__linkmodel_init(&lm, topo, link, 0) != TPU_OK) {
        tpu__free(lp.obs_links);
        return TPU_ERR_NO_MEMORY;
    }
    /* A block, and its halves of whole elements at a tie (tpu__algo_direct_block):
     * the first one way, the second the other; a block of one element is not split,
     * nor a block of the group schedules. */
    lp.halves = e >= 2 && ph[0].split;
    lp.sizes[SZ_BLOCK] = (double)ps->lines_blk;
    lp.sizes[SZ_PLUS] = lp.halves ? (double)((e + 1) / 2 * ps->lines_elem) : lp.sizes[SZ_BLOCK];
    lp.sizes[SZ_MINUS] = lp.halves ? (double)(e / 2 * ps->lines_elem) : lp.sizes[SZ_BLOCK];
    for (s = 0; s < nph && status == TPU_OK; s++) {
        double step_end = 0, step_chain = 0, wait = 0, msg = link->msg_cost;
        int64_t f;

        /* After a barrier: every flow starts at the latest bytes before, its chain
         * after the longest; a port's engine that started a batch at 0 is free at
         * msg_cost (linkmodel_starts.c). */
        if (s > 0 && msg > 0 && msg > ready + chain) {
            wait = msg - (ready + chain);
        }
        status = time_phase(&lp, &lm, &ph[s], s, ready, chain, wait, s > 0 ? ports[s - 1] : NULL,
                            ports[s], al, &step_end, &step_chain);
        /* A chip's own end: its own flows of this step (the same flows the pod's
         * schedule has), each timed on the loads of the whole pod. */
        for (f = 0; own != NULL && f < own->nflows && status == TPU_OK; f++) {
            const tpu_flow_t *fl = &own->flows[f];
            double bytes, lat;

            if ((fl->step >= 1) == (s >= 1) && (local[fl->src] || local[fl->dst])) {
                tpu__linkmodel_time_flow(&lm, fl, ready, &bytes, &lat);
                own_end = bytes > own_end ? bytes : own_end;
            }
        }
        tpu__linkmodel_end_step(&lm);
        for (a = 0; a < TPU_MAX_AXES; a++) {
            tpu__free(al[a].cls);
            al[a].cls = NULL;
        }
        end = step_end > end ? step_end : end;
        chain = step_chain > chain ? step_chain : chain;
        ready = end;
    }
    if (status != TPU_OK) {
        goto out;
    }
    if (own_end_p != NULL) {
        /* As the walk's local end: the latest own bytes, the pod's chain, the launch. */
        *own_end_p = own != NULL ? own_end : end;
        *own_end_p += chain;
        *own_end_p += link->launch > 0 ? link->launch : 0;
    }
    /* The launch cost of a calibrated model, once, after the chain (as the walk). */
    end += chain;
    end += link->launch > 0 ? link->launch : 0;
    if (res != NULL) {
        tpu__linkmodel_stats(&lm, end, res);
    }
    if (obs != NULL) {
        /* Every resource's totals, as the walk reports them (timing.c). */
        tpu_timing_t t;

        memset(&t, 0, sizeof(t));
        t.lm = lm;
        t.obs = obs;
        tpu__timing_report(&t);
    }
    *seconds_p = end;
out:
    for (s = 0; s < 2; s++) {
        for (a = 0; a < TPU_MAX_AXES; a++) {
            tpu__free(ports[s][a]);
        }
    }
    for (a = 0; a < TPU_MAX_AXES; a++) {
        tpu__free(al[a].cls);
    }
    tpu__linkmodel_fini(&lm);
    tpu__free(lp.obs_links);
    return status;
}

tpu_status_t tpu__lines_time(const tpu_topo_t *topo, const tpu_link_model_t *link,
                             const tpu_plan_sched_t *ps, double *seconds_p, tpu_coll_result_t *res)
{
    return lines_time(topo, link, ps, NULL, NULL, NULL, NULL, seconds_p, res);
}

tpu_status_t tpu__lines_time_own(const tpu_topo_t *topo, const tpu_link_model_t *link,
                                 const tpu_plan_sched_t *ps, const tpu_sched_t *own,
                                 const uint8_t *local, double *own_end_p, double *seconds_p,
                                 tpu_coll_result_t *res)
{
    return lines_time(topo, link, ps, own, local, NULL, own_end_p, seconds_p, res);
}

tpu_status_t tpu__lines_time_observed(const tpu_topo_t *topo, const tpu_link_model_t *link,
                                      const tpu_plan_sched_t *ps, const tpu_coll_observer_t *obs,
                                      double *seconds_p, tpu_coll_result_t *res)
{
    return lines_time(topo, link, ps, NULL, NULL, obs, NULL, seconds_p, res);
}

int64_t tpu__lines_pod_flows(const tpu_topo_t *topo, const tpu_plan_sched_t *ps)
{
    int64_t plain = 1, all = 1, group = 1, split;
    int a;

    /* Flows per pair: 2 at a tie when the block splits into halves of whole elements
     * (the all-to-all); the group schedules send whole blocks, a psum twice. */
    split = ps->lines_form == TPU_LINES_ALL_TO_ALL && ps->lines_blk / ps->lines_elem >= 2 ? 2 : 1;
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
    return topo->nchips / group * ((plain - group) + split * (all - plain)) *
           (ps->lines_form == TPU_LINES_PSUM ? 2 : 1);
}
