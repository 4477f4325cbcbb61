/*
 * Selection by the cost model.  Every (algorithm, pipeline depth) the registry
 * offers for the collective is built and timed (timing.c), over two axes the
 * one-chunk schedule also at a grid of splits between its axis orders, refined
 * around the grid's best, over three axes the shares that balance the axes'
 * loads and (for the torus all-gather) the estimate's split among the rotations;
 * an algorithm that refuses the shape is skipped.  Deeper pipelines are tried
 * until one is slower than the depth before (the time over depth has one
 * valley), and the tree algorithms not where their message starts alone would
 * outlast the bandwidth term.  The fastest wins, and among those within
 * TPU_SELECT_SLACK of it the shallowest pipeline.  No depth can hide a hop: the
 * walk adds the hop latency of the deepest chain to the bytes' time (timing.c).
 * The tables below are the whole policy: the depths tried, the size guards, and
 * how many flows each collective's schedule holds per chip.
 */
#include "select.h"

#include "alloc.h"
#include "build.h"
#include "lines.h"
#include "timing.h"
#include "timing_repeat.h"

#include <string.h>

/* Pipeline depths the selector tries. */
static const int chunk_choices[] = {1, 2, 4, 8, 16};
#define NCHOICES ((int)(sizeof(chunk_choices) / sizeof(chunk_choices[0])))
/* The largest torus schedule a deeper pipeline is tried on, in flows. */
#define TPU_SELECT_MAX_FLOWS 5e5
/* The largest tree schedule (allgather_tree.c) a deeper pipeline is tried on; and the
 * most flows its grid of splits over two axes may build in all. */
#define TPU_SELECT_TREE_FLOWS 2e5
/* The most flows the grid of splits over two axes builds in all (torus family). */
#define TPU_SELECT_GRID_FLOWS 3e5
/* The largest one-chunk tree schedule the cost model builds to compare (a named one
 * is built up to allgather_tree.c's own limit). */
#define TPU_SELECT_TREE_FIRST 5e5
/* The largest model schedule built, in flows (about 100 bytes each). */
#define TPU_MAX_MODEL_FLOWS 3e7
/* The most bytes the walk may hold for one step (tpu__timing_step_bytes()): a
 * schedule that needs more is refused before the walk starts. */
#define TPU_MAX_STEP_BYTES 3e9
/* How much modeled time a deeper pipeline must save to be chosen (a fraction). */
#define TPU_SELECT_SLACK 0.01
/* The most candidates compared. */
#define TPU_SELECT_MAX_CAND 256
/*
 * Splits of the data between the two axis orders of a torus all-gather over two
 * axes that the selector times besides the estimate's (allgather_orders.c): k /
 * TPU_SELECT_SPLITS for k = 1 .. TPU_SELECT_SPLITS - 1.  The estimate is a sum of
 * phase windows; the link model's time, with dataflow between the phases, has
 * its minimum in a narrow valley the estimate often misses (5x3 open: the even
 * split reaches the formula in one chunk, the estimate's needs two chunks and
 * stays 1.6% above; 16x4, x wrapped: 0.40 gives +4.2%, the estimate +9%).
 */
#define TPU_SELECT_SPLITS 20
/*
 * Then TPU_SELECT_REFINE - 1 splits each side of the grid's best, at steps of
 * 1 / (TPU_SELECT_SPLITS * TPU_SELECT_REFINE): the valley is often narrower than
 * the grid (8x6, y wrapped, psum of 2.25 MiB: the grid's best, 0.65, is 5.5%
 * above the formula, 0.625 is 4.0%).
 */
#define TPU_SELECT_REFINE 4

/* How the flows of a collective's cheapest schedule grow, per chip of the model. */
typedef enum {
    FLOWS_TORUS,
    FLOWS_GROUP,
    FLOWS_ONE
} flow_growth_t;

static const flow_growth_t flow_growth[TPU_COLL_COUNT] = {
    [TPU_COLL_PSUM] = FLOWS_TORUS,           [TPU_COLL_ALL_GATHER] = FLOWS_TORUS,
    [TPU_COLL_REDUCE_SCATTER] = FLOWS_TORUS, [TPU_COLL_ALL_TO_ALL] = FLOWS_GROUP,
    [TPU_COLL_PPERMUTE] = FLOWS_ONE,         [TPU_COLL_P2P] = FLOWS_ONE,
};
_Static_assert(TPU_COLL_COUNT == 6, "flow_growth lists every collective");

/* Flows the torus family would create with 'chunks' chunks: a bound for the selector. */
static double flow_estimate(const tpu_coll_plan_t *p, int chunks)
{
    double steps = 0;
    int a;

    for (a = 0; a < p->topo.naxes; a++) {
        if (p->desc.axes & (1u << a)) {
            steps += 2.0 * p->topo.dims[a];
        }
    }
    return steps *
           (double)(tpu__plan_translation_invariant(p) ? 1 : tpu__plan_domain_chips(p, NULL)) *
           TPU_MAX_AXES * chunks * 2;
}

static double group_flows(const tpu_coll_plan_t *p, const tpu_algo_t *algo);

/*
 * Flows the model schedule of the cheapest choice holds (one chip's when the pod
 * is translation-invariant, every chip's otherwise): a guard against requests
 * that would take minutes and gigabytes, such as a direct all-to-all over 8,960
 * chips of an open mesh.
 */
static double model_flows(const tpu_coll_plan_t *p)
{
    double chips = tpu__plan_translation_invariant(p) ? 1 : p->topo.nchips;
    const tpu_algo_t *algo = tpu__algo_named(&p->desc);
    /* A group algorithm named over whole axes builds what it builds over groups. */
    int i, named = algo != NULL && algo->groups;

    if (tpu__lines_named(p)) {
        return chips; /* group_direct over whole axes: timed from its lines (lines.c) */
    }
    if (p->desc.groups != NULL || named) {
        /* A ring psum: two flows per member and step, of the chips of one domain (what
         * is built: orbit timing, linkmodel.h). */
        double domain = p->topo.nchips;
        int a;

        for (a = 0; p->orbit && a < TPU_MAX_AXES; a++) {
            domain = domain * p->period[a] / p->topo.dims[a];
        }
        /* The tree's flows grow like the chips, not the group, a ring's like its
         * built steps (timing_repeat.c): their own closed forms. */
        if (named && (strcmp(algo->name, "group_tree") == 0 || tpu__repeat_ring_algo(algo->name))) {
            return group_flows(p, algo);
        }
        if (!named) {
            /* The cost model builds only the candidates within the budget: the
             * cheapest one's flows (tpu__plan_select()). */
            double least = 2.0 * domain * p->group, f;

            for (i = 0; i < tpu__nalgos; i++) {
                f = tpu__algos[i].kind == p->desc.kind && tpu__algos[i].groups
                        ? group_flows(p, &tpu__algos[i])
                        : 0;
                least = f > 0 && f < least ? f : least;
            }
            return least;
        }
        return 2.0 * domain * p->group;
    }
    switch (flow_growth[p->desc.kind]) {
    case FLOWS_GROUP:
        /* The direct all-to-all is timed from its lines (lines.c) unless one is named. */
        if ((p->desc.algo[0] == '\0' || strcmp(p->desc.algo, "direct") == 0) &&
            tpu__lines_applies(p, NULL)) {
            return chips;
        }
        return chips * p->group;
    case FLOWS_ONE:
        return chips;
    default:
        return flow_estimate(p, 1);
    }
}

/*
 * What the walk would hold for the one step of a named group_direct (every member
 * to every other at once, from the chips of one domain), estimated before it is
 * built as tpu__timing_step_bytes() counts it after: the mean route of a member
 * pair (a quarter of a wrapped axis, a third of an open one) times 12 bytes per
 * crossing, 92 when blocks of two sizes share the links (an all-to-all splits a
 * block at the tie of an even wrapped axis).  0 for any other algorithm, and where
 * it is timed from its lines (lines.c: no step is walked).
 */
static double direct_step_bytes(const tpu_coll_plan_t *p)
{
    double domain = p->topo.nchips, hops = 0;
    int a, halves = 0;

    if (p->desc.groups != NULL || strcmp(p->desc.algo, "group_direct") != 0 ||
        p->desc.kind == TPU_COLL_PSUM || tpu__lines_named(p)) {
        return 0; /* the psum's is bounded by its flows (model_flows()) */
    }
    for (a = 0; a < p->topo.naxes; a++) {
        if (p->desc.axes & (1u << a)) {
            hops += p->topo.wrap[a] ? p->topo.dims[a] / 4.0 : p->topo.dims[a] / 3.0;
            halves |= p->topo.wrap[a] && p->topo.dims[a] % 2 == 0;
        }
        domain = p->orbit ? domain * p->period[a] / p->topo.dims[a] : domain;
    }
    return domain * (p->group - 1) * hops *
           (p->desc.kind == TPU_COLL_ALL_TO_ALL && halves ? 92 : 12);
}

/* The chips a group schedule is built for: every chip, or one domain of the
 * groups' translations (orbit timing, linkmodel.h). */
static double group_domain(const tpu_coll_plan_t *p)
{
    double domain = p->topo.nchips;
    int a;

    for (a = 0; p->orbit && a < TPU_MAX_AXES; a++) {
        domain = domain * p->period[a] / p->topo.dims[a];
    }
    return domain;
}

/*
 * The flows (and dependency lists, at a tenth of a flow each) the schedule of the
 * group algorithm 'algo' holds, in closed form, before it is built: a ring has 2
 * flows per member and built step (timing_repeat.c: 3 per phase); a direct phase G - 1
 * per member; the tree (psum_group_tree.c) one per member and phase; a psum two
 * phases.  0 where no closed form is known (the explicit
 * pairs).
 */
static double group_flows(const tpu_coll_plan_t *p, const tpu_algo_t *algo)
{
    double g = p->group, domain = group_domain(p), phases = p->desc.kind == TPU_COLL_PSUM ? 2 : 1;

    if (strcmp(algo->name, "group_ring") == 0 || strcmp(algo->name, "group_rs_ag") == 0) {
        return phases * domain * 2 * (double)tpu__repeat_ring_steps(p->group, 1);
    }
    if (strcmp(algo->name, "group_tree") == 0) {
        /* One flow per member and phase, a dependency or two; every chip (build.c). */
        return phases * p->topo.nchips * 1.2;
    }
    if (strcmp(algo->name, "group_direct") == 0) {
        /* A psum's gather flows from one chip share one list of its G - 1 reduce flows. */
        return phases * domain * (g - 1) * (p->desc.kind == TPU_COLL_PSUM ? 1.1 : 1);
    }
    return 0;
}

/*
 * The mean route length, in hops, between two members of the first group (the
 * groups are alike): the sum over the axes of the mean distance between two
 * members' coordinates (a histogram of the coordinates, O(G + dims^2)), 4 for
 * members of different slices.  Over whole axes, a quarter of a wrapped axis
 * and a third of an open one.
 */
static double group_mean_hops(const tpu_coll_plan_t *p)
{
    const tpu_groups_t *gr = p->desc.groups;
    double hops = 0, pairs;
    int a, i, c[TPU_MAX_AXES];

    if (gr == NULL) {
        for (a = 0; a < p->topo.naxes; a++) {
            if (p->desc.axes & (1u << a)) {
                hops += p->topo.wrap[a] ? p->topo.dims[a] / 4.0 : p->topo.dims[a] / 3.0;
            }
        }
        return hops;
    }
    pairs = (double)gr->size * gr->size;
    for (a = 0; a < p->topo.naxes && pairs > 0; a++) {
        int n = p->topo.dims[a], x, y;
        double *h = tpu__calloc((size_t)n, sizeof(double));

        if (h == NULL) {
            return p->topo.dims[a]; /* an upper bound */
        }
        for (i = 0; i < gr->size; i++) {
            tpu_topo_coords(&p->topo, gr->chips[i], c);
            h[c[a]] += 1;
        }
        for (x = 0; x < n; x++) {
            for (y = 0; y < n && h[x] > 0; y++) {
                int d = x > y ? x - y : y - x;

                d = p->topo.wrap[a] && n - d < d ? n - d : d;
                hops += h[x] * h[y] * d / pairs;
            }
        }
        tpu__free(h);
    }
    return hops;
}

/*
 * What the walk would hold for the one step of a group_direct schedule (every
 * member to every other at once, from the chips of one domain), estimated before
 * it is built as tpu__timing_step_bytes() counts it after: the mean route of a
 * member pair times 12 bytes per crossing, 92 when the flows wait on others (a
 * psum's gather) or blocks of two sizes share the links (an all-to-all splits a
 * block at the tie of an even wrapped axis), as direct_step_bytes() does.  0 for
 * any other algorithm.
 */
static double group_direct_step_bytes(const tpu_coll_plan_t *p, const tpu_algo_t *algo)
{
    int a, halves = 0;

    if (strcmp(algo->name, "group_direct") != 0) {
        return 0;
    }
    for (a = 0; a < p->topo.naxes; a++) {
        halves |= p->topo.wrap[a] && p->topo.dims[a] % 2 == 0;
    }
    return group_domain(p) * (p->group - 1) * group_mean_hops(p) *
           (p->desc.kind == TPU_COLL_PSUM || (p->desc.kind == TPU_COLL_ALL_TO_ALL && halves) ? 92
                                                                                             : 12);
}

/* The refusal of a schedule whose step would need 'need' bytes in the walk. */
static tpu_status_t walk_too_big(const tpu_coll_plan_t *p, const char *algo, double need,
                                 tpu_err_t *err)
{
    return tpu_err_set(err, TPU_ERR_UNSUPPORTED,
                       "%s over %d chips with %s: one step of its schedule needs about %.1f GB "
                       "in the link model's walk, more than the %.0f GB this build times; use "
                       "fewer chips or another algorithm",
                       tpu_coll_name(p->desc.kind), p->group, algo, need / 1e9,
                       TPU_MAX_STEP_BYTES / 1e9);
}

/* The flows of a tree schedule (allgather_tree.c): a block per member, per order and
 * chunk, of every chip built (psum: twice). */
static double tree_flows(const tpu_coll_plan_t *p, const tpu_algo_t *algo, int chunks)
{
    return (double)(tpu__plan_translation_invariant(p) ? 1 : tpu__plan_domain_chips(p, algo)) *
           (p->group - 1) * TPU_MAX_AXES * chunks * (p->desc.kind == TPU_COLL_PSUM ? 2 : 1);
}

/* How many ICI axes of two chips or more the collective spans. */
static int ici_axes(const tpu_coll_plan_t *p)
{
    int a, d = 0;

    for (a = 0; a < p->topo.naxes; a++) {
        d += (p->desc.axes & (1u << a)) && p->topo.dims[a] >= 2;
    }
    return d;
}

/*
 * How many splits to time for 'algo': the grid over two ICI axes, for the
 * one-chunk schedule (deeper pipelines overlap the phases and depend less on the
 * split) of schedules whose grid stays within TPU_SELECT_GRID_FLOWS flows; over
 * three axes, at every depth, TPU_SPLIT_ALL_ORDERS, the six orders' shares that
 * balance the axes (split_at(): first; allgather_orders.c: the rotations cannot
 * when one axis is much cheaper than the others, v4 4x6x2 with z wrapped), and
 * when two such schedules stay within TPU_SELECT_MAX_FLOWS also the estimate's
 * split between the rotations of the axis order (a pipeline of some depth may
 * prefer it).  Algorithms that take no split ignore it.
 */
static int split_count(const tpu_coll_plan_t *p, const tpu_algo_t *algo, int chunks)
{
    /* The budget counts every chip's flows even where one chip's are timed: the
     * representative walk's cost still grows with the pod (16x20x28 wrapped
     * keeps the estimate's split and its tenth of a second). */
    double every = tpu__plan_translation_invariant(p) ? p->topo.nchips : 1;
    int d = ici_axes(p);

    if (!algo->pipelined || (p->desc.axes & TPU_AXIS_MASK_DCN)) {
        return 1;
    }
    if (d == 3 && strcmp(algo->name, "tree") == 0) {
        return 1; /* the balanced shares (allgather_tree.c): the rotations' split is the torus's */
    }
    if (d == 3) {
        /* The balance of all six orders and the rotations' split, at every depth;
         * the estimate is not scaled by the pod as the grid's budget is (two walks
         * are worth it over three axes). */
        return flow_estimate(p, chunks) * 2 > TPU_SELECT_MAX_FLOWS ? 1 : 2;
    }
    if (d != 2 || chunks > 1 ||
        flow_estimate(p, chunks) * every * TPU_SELECT_SPLITS > TPU_SELECT_GRID_FLOWS ||
        (strcmp(algo->name, "tree") == 0 &&
         tree_flows(p, algo, chunks) * TPU_SELECT_SPLITS > TPU_SELECT_TREE_FLOWS)) {
        return 1;
    }
    return TPU_SELECT_SPLITS;
}

/*
 * How many refining splits to time after a grid of 'nsplit': 2 (TPU_SELECT_REFINE
 * - 1) when the grid and they together stay within TPU_SELECT_MAX_FLOWS, else
 * none.
 */
static int refine_count(const tpu_coll_plan_t *p, int nsplit, int chunks)
{
    double every = tpu__plan_translation_invariant(p) ? p->topo.nchips : 1;
    int n = 2 * (TPU_SELECT_REFINE - 1);

    return nsplit == TPU_SELECT_SPLITS &&
                   flow_estimate(p, chunks) * every * (nsplit + n) <= TPU_SELECT_MAX_FLOWS
               ? n
               : 0;
}

typedef struct candidate {
    const tpu_algo_t *algo;
    int chunks;
    double split; /* the torus all-gather's split over two axes (0: the estimate's) */
    double t;
    tpu_coll_result_t res; /* its per-axis statistics */
    tpu_plan_sched_t ps;   /* its model schedule, kept while it may still be chosen */
    int kept;              /* ps holds it (0: freed, rebuilt if it is chosen after all) */
} candidate_t;

/*
 * Split number 'i' (0: the estimate's) of the candidates from 'first' on: the
 * grid k / TPU_SELECT_SPLITS for i < nsplit, then the refinement around the
 * grid's fastest split, nearest first; -1 when it falls outside (0, 1).
 */
static double split_at(const candidate_t *cand, int first, int ncand, int i, int nsplit, int three)
{
    int k, best = -1, j = i - nsplit, side;
    double step = 1.0 / (TPU_SELECT_SPLITS * TPU_SELECT_REFINE), x;

    if (three) {
        /* Over three axes the balanced shares first (the time is their bytes' time
         * plus the hops, so balanced loads are the natural choice), then the
         * estimate's split among the rotations, which a pipeline may prefer. */
        return i == 0 ? TPU_SPLIT_ALL_ORDERS : i == 1 ? 0 : -1;
    }
    if (i < nsplit) {
        return i == 0 ? 0 : (double)i / TPU_SELECT_SPLITS;
    }
    for (k = first; k < ncand && k < first + nsplit; k++) {
        if (cand[k].split > 0 && (best < 0 || cand[k].t < cand[best].t)) {
            best = k;
        }
    }
    if (best < 0) {
        return -1;
    }
    side = j % 2 ? 1 : -1;
    x = cand[best].split + side * (j / 2 + 1) * step;
    return x > 0 && x < 1 ? x : -1;
}


/*
 * Is the tree schedule (allgather_tree.c) of depth 'chunks' bound by its message
 * starts?  A chip sends every block of every chunk as a message of its own,
 * about (G - 1) x chunks of them per order over its 2 d ports, one start each
 * (msg_cost, serial on a port): when the starts alone take longer than the
 * formula's bandwidth term, the schedule is slower than one of fewer messages.
 */
static int tree_start_bound(const tpu_coll_plan_t *p, int chunks)
{
    double sumf = 0, starts, bw;
    int a, d = ici_axes(p);

    if (p->link.msg_cost <= 0 || d == 0) {
        return 0;
    }
    for (a = 0; a < p->topo.naxes; a++) {
        if ((p->desc.axes & (1u << a)) && p->topo.dims[a] >= 2) {
            sumf += p->topo.wrap[a] ? 1 : 0.5;
        }
    }
    starts = (double)(p->group - 1) * chunks / (2.0 * d) * p->link.msg_cost;
    bw = (double)(p->group - 1) / p->group * (double)p->shard * p->group / (p->link.ici_bw * sumf);
    return starts > bw;
}

/*
 * Is depth number 'c' of the choices worth building?  The first is, but for the
 * tree when the cost model chooses (not named): neither it nor a deeper one when
 * start-bound, nor past TPU_SELECT_TREE_FIRST flows (TPU_SELECT_TREE_FLOWS for a
 * deeper one).
 */
static int depth_worth_trying(const tpu_coll_plan_t *p, const tpu_algo_t *algo, int c, int chunks)
{
    if (strcmp(algo->name, "tree") == 0 && (c > 0 || p->desc.algo[0] == '\0') &&
        (tree_start_bound(p, chunks) ||
         tree_flows(p, algo, chunks) > (c > 0 ? TPU_SELECT_TREE_FLOWS : TPU_SELECT_TREE_FIRST))) {
        return 0;
    }
    /* DCN stages are not pipelined (allgather_torus.c): one depth is enough. */
    return c == 0 || !((p->desc.axes & TPU_AXIS_MASK_DCN) ||
                       flow_estimate(p, chunks) > TPU_SELECT_MAX_FLOWS ||
                       (int64_t)chunks * TPU_MAX_AXES > p->shard / p->args.elem);
}

/*
 * Is the schedule of the group algorithm 'algo' within the budget, by its closed
 * forms before it is built (group_flows(), group_direct_step_bytes())?  TPU_OK,
 * or TPU_ERR_UNSUPPORTED with the one-line reason.
 */
static tpu_status_t over_budget(const tpu_coll_plan_t *p, const tpu_algo_t *algo, tpu_err_t *err)
{
    double flows, need;

    if (!algo->groups || tpu__lines_applies(p, algo)) {
        return TPU_OK; /* no group schedule: line timing (lines.c) */
    }
    flows = group_flows(p, algo);
    if (flows > TPU_MAX_MODEL_FLOWS) {
        return tpu_err_set(err, TPU_ERR_UNSUPPORTED,
                           "%s over %d chips with %s needs about %.0f million flows, more than "
                           "the %.0f million this build models; use fewer chips or another "
                           "algorithm",
                           tpu_coll_name(p->desc.kind), p->group, algo->name, flows / 1e6,
                           TPU_MAX_MODEL_FLOWS / 1e6);
    }
    need = group_direct_step_bytes(p, algo);
    return need > TPU_MAX_STEP_BYTES ? walk_too_big(p, algo->name, need, err) : TPU_OK;
}

/*
 * A floor under the modeled time of the group algorithm 'algo', in closed form:
 * the ring's (group_ring, group_rs_ag) dependent chain of floor(G/2) steps per
 * phase, each at least one hop's latency (the walk adds the deepest chain's hops
 * to the bytes' time, timing.c), halved for a margin; 0 for the others.
 */
static double group_time_floor(const tpu_coll_plan_t *p, const tpu_algo_t *algo)
{
    double hop = p->topo.slices > 1 && p->link.dcn_latency < p->link.ici_latency
                     ? p->link.dcn_latency
                     : p->link.ici_latency;

    if (!algo->groups ||
        (strcmp(algo->name, "group_ring") != 0 && strcmp(algo->name, "group_rs_ag") != 0)) {
        return 0;
    }
    return 0.5 * (double)(p->group / 2) * hop;
}

/*
 * Registry entry number 'i' in the order the candidates are tried: over groups
 * with no algorithm named, those with no time floor (group_time_floor()) first,
 * in registry order, then the others, so that a ring over thousands of members
 * is not built when a cheaper candidate already beats its floor; else the
 * registry's order.  Equal times go to the earlier entry of the registry, in
 * whatever order they were timed.
 */
static int algo_order(const tpu_coll_plan_t *p, int i)
{
    int k, n = 0, pass;

    if (p->desc.groups == NULL || p->desc.algo[0] != '\0') {
        return i;
    }
    for (pass = 0; pass < 2; pass++) {
        for (k = 0; k < tpu__nalgos; k++) {
            if ((group_time_floor(p, &tpu__algos[k]) > 0) == pass && n++ == i) {
                return k;
            }
        }
    }
    return i;
}

/* Build the model schedule of 'algo' with 'chunks' into 'ps'. */
static tpu_status_t build_choice(tpu_coll_plan_t *p, const tpu_algo_t *algo, int chunks,
                                 double split, tpu_plan_sched_t *ps, tpu_err_t *err)
{
    /* Group algorithms treat members by their place in a group, not by their
     * coordinates: their schedules are built for every chip. */
    int rep = tpu__plan_translation_invariant(p) && !algo->groups ? 0 : -1;
    double keep = p->args.split;
    tpu_status_t status;

    p->args.split = split;
    status = tpu__plan_build(p, algo, chunks, rep, 1, ps, err);
    p->args.split = keep;
    return status;
}

/* Make 'algo' with 'chunks' the plan's choice, with its model schedule 'ps' (moved). */
static void choose(tpu_coll_plan_t *p, const tpu_algo_t *algo, int chunks, double split,
                   tpu_plan_sched_t *ps)
{
    p->algo = algo;
    p->args.chunks = chunks;
    p->args.split = split;
    p->args.rep = ps->rep;
    tpu__plan_label(algo, chunks, p->name, sizeof(p->name));
    tpu__plan_sched_fini(&p->model);
    p->model = *ps;
    memset(ps, 0, sizeof(*ps));
}


tpu_status_t tpu__plan_select(tpu_coll_plan_t *p, tpu_err_t *err)
{
    const tpu_coll_desc_t *desc = &p->desc;
    candidate_t *cand = NULL;
    int best_chunks = 1, i, c, found = 0, ncand = 0, best = -1, k;
    double best_t = 0;
    tpu_status_t status = TPU_OK, skipped = TPU_OK;
    tpu_err_t skip_err;

    if (model_flows(p) > TPU_MAX_MODEL_FLOWS && tpu__plan_faulty(p)) {
        /* Faults break the symmetry the shortcuts rely on: every chip is walked. */
        return tpu_err_set(err, TPU_ERR_UNSUPPORTED,
                           "%s over %d chips with faults needs about %.0f million flows (faults "
                           "make the model walk every chip), more than the %.0f million this "
                           "build models; use fewer chips or fewer axes",
                           tpu_coll_name(desc->kind), p->group, model_flows(p) / 1e6,
                           TPU_MAX_MODEL_FLOWS / 1e6);
    }
    if (model_flows(p) > TPU_MAX_MODEL_FLOWS && p->desc.groups == NULL &&
        (desc->algo[0] != '\0' || tpu__plan_translation_invariant(p))) {
        /* A named algorithm (over wrapped axes, only a group algorithm gets here):
         * the wraparound would not help, another algorithm would. */
        return tpu_err_set(err, TPU_ERR_UNSUPPORTED,
                           "%s over %d chips with --algo %s needs about %.0f million flows, more "
                           "than the %.0f million this build models; let the cost model choose "
                           "(no --algo) or use fewer chips",
                           tpu_coll_name(desc->kind), p->group, desc->algo, model_flows(p) / 1e6,
                           TPU_MAX_MODEL_FLOWS / 1e6);
    }
    if (model_flows(p) > TPU_MAX_MODEL_FLOWS && p->desc.groups != NULL) {
        /* Over groups the wraparound does not help: name the algorithm. */
        return tpu_err_set(err, TPU_ERR_UNSUPPORTED,
                           "%s over groups of %d chips%s%s needs about %.0f million flows, more "
                           "than the %.0f million this build models; use fewer chips%s",
                           tpu_coll_name(desc->kind), p->group, desc->algo[0] ? " with " : "",
                           desc->algo, model_flows(p) / 1e6, TPU_MAX_MODEL_FLOWS / 1e6,
                           desc->algo[0] ? " or another algorithm" : "");
    }
    if (model_flows(p) > TPU_MAX_MODEL_FLOWS) {
        return tpu_err_set(err, TPU_ERR_UNSUPPORTED,
                           "%s over %d chips without wraparound on every axis needs about "
                           "%.0f million flows, more than the %.0f million this build models; "
                           "use wrapped axes (--wrap all) or fewer chips",
                           tpu_coll_name(desc->kind), p->group, model_flows(p) / 1e6,
                           TPU_MAX_MODEL_FLOWS / 1e6);
    }
    if (direct_step_bytes(p) > TPU_MAX_STEP_BYTES) {
        return walk_too_big(p, "group_direct", direct_step_bytes(p), err);
    }
    cand = tpu__calloc(TPU_SELECT_MAX_CAND, sizeof(*cand));
    if (cand == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory choosing the %s algorithm",
                           tpu_coll_name(desc->kind));
    }
    for (i = 0; i < tpu__nalgos && status == TPU_OK; i++) {
        const tpu_algo_t *algo = &tpu__algos[algo_order(p, i)];
        int nchoices = algo->pipelined && desc->chunks == 0 ? NCHOICES : 1,
            three = ici_axes(p) == 3;
        double depth_best[NCHOICES];

        for (c = 0; c < NCHOICES; c++) {
            depth_best[c] = -1;
        }

        if (algo->kind != desc->kind ||
            (desc->algo[0] != '\0' && strcmp(desc->algo, algo->name) != 0)) {
            continue;
        }
        /* Groups and pairs take the group algorithms; axes take the torus ones
         * unless a group algorithm is named. */
        if ((desc->groups != NULL || desc->pairs != NULL) ? !algo->groups
                                                          : algo->groups && desc->algo[0] == '\0') {
            continue;
        }
        found = 1;
        for (c = 0; c < nchoices && ncand < TPU_SELECT_MAX_CAND && status == TPU_OK; c++) {
            int chunks = !algo->pipelined ? 1 : desc->chunks > 0 ? desc->chunks : chunk_choices[c];
            int s, nsplit = split_count(p, algo, chunks), first = ncand;
            int nfine = refine_count(p, nsplit, chunks);
            candidate_t *cd;

            if (!depth_worth_trying(p, algo, c, chunks)) {
                break;
            }
            /* One more chunk depth only until one made it slower: the time over depth
             * has one valley (deeper pipelines fill better and start more messages). */
            if (c >= 2 && depth_best[c - 2] >= 0 &&
                depth_best[c - 1] > depth_best[c - 2] * (1 + TPU_SELECT_SLACK)) {
                break;
            }
            for (s = 0; s < nsplit + nfine && ncand < TPU_SELECT_MAX_CAND; s++) {
                cd = &cand[ncand];
                cd->split = split_at(cand, first, ncand, s, nsplit, three);
                if (cd->split < 0) {
                    continue;
                }
                if (desc->algo[0] == '\0' && best >= 0 &&
                    group_time_floor(p, algo) > best_t * (1 + TPU_SELECT_SLACK)) {
                    break; /* slower than a candidate timed already, whatever it builds */
                }
                status = over_budget(p, algo, err);
                if (status == TPU_OK) {
                    status = build_choice(p, algo, chunks, cd->split, &cd->ps, err);
                }
                if (status == TPU_OK) {
                    /* The walk's memory, before it starts: refused like a shape. */
                    double need = tpu__timing_step_bytes(&p->topo, &cd->ps, TPU_MAX_STEP_BYTES);

                    if (need > TPU_MAX_STEP_BYTES) {
                        tpu__plan_sched_fini(&cd->ps);
                        status = walk_too_big(p, algo->name, need, err);
                    }
                }
                if ((status == TPU_ERR_UNSUPPORTED ||
                     (status == TPU_ERR_NO_MEMORY && algo->groups)) &&
                    (desc->algo[0] == '\0' || c > 0)) {
                    /* The algorithm does not take this shape (the snake ring: open axes,
                     * an even group), or a group schedule is over the budget (or the
                     * memory): the others are the choice; the first such reason is the
                     * refusal when none applies. */
                    if (err != NULL && skipped == TPU_OK) {
                        skip_err = *err;
                    }
                    skipped = skipped == TPU_OK ? status : skipped;
                    if (err != NULL) {
                        memset(err, 0, sizeof(*err));
                    }
                    status = TPU_OK;
                    break;
                }
                if (status == TPU_OK) {
                    status = tpu__time_schedule(&p->topo, &p->link, &cd->ps, &cd->t, &cd->res);
                    if (status != TPU_OK) {
                        tpu_err_set(err, status, "out of memory timing the %s schedule (%s)",
                                    tpu_coll_name(desc->kind), algo->name);
                    }
                }
                if (status != TPU_OK) {
                    tpu__plan_sched_fini(&cd->ps);
                    break;
                }
                cd->algo = algo;
                cd->chunks = chunks;
                cd->kept = 1;
                ncand++;
                if (depth_best[c] < 0 || cd->t < depth_best[c]) {
                    depth_best[c] = cd->t;
                }
                if (best < 0 || cd->t < best_t || (cd->t == best_t && cd->algo < cand[best].algo)) {
                    best = ncand - 1;
                    best_chunks = chunks;
                    best_t = cd->t;
                }
                /* A split of this depth no faster than one before it is never chosen:
                 * the one before is (first in the shallowest depth), or leaves first. */
                for (k = first; k < ncand - 1 && cd->kept; k++) {
                    if (cand[k].t >= 0 && cand[k].t <= cd->t) {
                        tpu__plan_sched_fini(&cd->ps);
                        cd->kept = 0;
                    }
                }
                /* A schedule slower than the slack allows is never chosen: free it. */
                for (k = 0; k < ncand; k++) {
                    if (cand[k].kept && cand[k].t > best_t * (1 + TPU_SELECT_SLACK)) {
                        tpu__plan_sched_fini(&cand[k].ps);
                        cand[k].kept = 0;
                    }
                }
            }
            if (status != TPU_OK || s < nsplit + nfine) {
                break;
            }
        }
    }
    if (status == TPU_OK && found && ncand == 0 && skipped != TPU_OK) {
        /* Every candidate was over the budget or refused the shape. */
        status = skipped;
        if (err != NULL) {
            *err = skip_err;
        }
    }
    if (status == TPU_OK && !found) {
        status = tpu_err_set(err, TPU_ERR_INVALID,
                             "unknown algorithm '%s' for %s (see tpuemu info --algorithms)",
                             desc->algo, tpu_coll_name(desc->kind));
    }
    if (status == TPU_OK) {
        /*
         * The shallowest pipeline within TPU_SELECT_SLACK of the fastest: a deeper
         * one buys less than that in modeled time for proportionally more messages
         * (each a DMA start on the TPU, and a real cost on the host that emulates it).
         */
        for (i = 0; i < ncand; i++) {
            if (cand[i].t >= 0 && cand[i].t <= best_t * (1 + TPU_SELECT_SLACK) &&
                (cand[i].chunks < best_chunks ||
                 (cand[i].chunks == best_chunks &&
                  (cand[i].t < best_t ||
                   (cand[i].t == best_t && cand[i].algo < cand[best].algo))))) {
                best = i;
                best_chunks = cand[i].chunks;
            }
        }
        if (!cand[best].kept) {
            /* Never: best_t only falls, so a candidate within the slack of the final
             * best was within it of every best before and was kept, and a split freed
             * for an earlier one at least as fast is not the choice.  A guard. */
            status = build_choice(p, cand[best].algo, cand[best].chunks, cand[best].split,
                                  &cand[best].ps, err);
        }
    }
    if (status == TPU_OK) {
        choose(p, cand[best].algo, cand[best].chunks, cand[best].split, &cand[best].ps);
        /* tpu_coll_plan_model() without an observer gives what the walk just gave. */
        p->model_s = cand[best].t;
        p->model_res = cand[best].res;
        p->model_cached = 1;
    }
    for (k = 0; k < ncand; k++) {
        tpu__plan_sched_fini(&cand[k].ps);
    }
    tpu__free(cand);
    return status;
}
