/*
 * The shortcut timings of the model against the walk over every chip's flows,
 * compared with == on doubles (issue 13 item 6): whatever part of the pod the
 * model builds (one chip's flows when every axis wraps, the flows of a domain
 * of a symmetry elsewhere, the per-axis line loads of an all-to-all), the
 * modeled time and every per-axis statistic must be bit for bit those of the
 * full schedule, and the flow and step counts those of the whole pod.
 *
 * Shapes up to 8x8x8, open, wrapped and mixed, every collective over all its
 * axes and over a subset, every algorithm of the registry that takes axes at
 * pipeline depths 1, 2 and 4, and blocks of 1, 3 (halves of unequal size at a
 * tie) and 1000 elements.  And a rank's own part of the data schedule (item 5)
 * against the flows of every chip's that touch its chip, for the algorithm the
 * cost model chooses and for every group algorithm and ppermute pairs.
 */
#include "tpu/coll.h"
#include "tpu/mesh.h"
#include "tpu/topo.h"
#include "tpu/xport.h"

#include "build.h"
#include "exec.h"
#include "model_case.h"
#include "plan.h"
#include "test_coll.h"
#include "test_main.h"
#include "timing.h"
#include "timing_repeat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

typedef struct counts {
    int compared;  /* (plan, algorithm, depth) triples compared */
    int shortcuts; /* of which the model took a shortcut */
} counts_t;

/* Every algorithm and depth for the plan's request: the model's part == every chip's. */
static void compare_plan(const tpu_coll_plan_t *p, counts_t *n)
{
    tpu_err_t err = {0};
    int i, c;

    for (i = 0; i < tpu__nalgos; i++) {
        const tpu_algo_t *algo = &tpu__algos[i];
        static const int depths[] = {1, 2, 4};

        if (algo->kind != p->desc.kind || algo->groups) {
            continue;
        }
        for (c = 0; c < (algo->pipelined ? 3 : 1); c++) {
            tpu_plan_sched_t part, full;
            tpu_coll_result_t rp, rf;
            double tp = -1, tf = -2;
            int rep = tpu__plan_translation_invariant(p) ? 0 : -1;
            tpu_status_t status;

            memset(&part, 0, sizeof(part));
            memset(&full, 0, sizeof(full));
            if (tpu__plan_build(p, algo, depths[c], rep, 1, &part, &err) != TPU_OK) {
                continue; /* the algorithm refuses the request (both ways alike) */
            }
            status = tpu__plan_build(p, algo, depths[c], -1, 0, &full, &err);
            if (status == TPU_ERR_UNSUPPORTED && (part.rep >= 0 || part.orbit)) {
                /* Every chip's tree schedule is over its flow cap where one chip's is not
                 * (allgather_tree.c): nothing to compare with. */
                tpu__plan_sched_fini(&part);
                continue;
            }
            assert_int_equal(status, TPU_OK);
            assert_int_equal(tpu__time_schedule(&p->topo, &p->link, &part, &tp, &rp), TPU_OK);
            assert_int_equal(tpu__time_schedule(&p->topo, &p->link, &full, &tf, &rf), TPU_OK);
            if (tp != tf) {
                print_error("%s %s chunks=%d: %.17g != %.17g\n", tpu_coll_name(p->desc.kind),
                            algo->name, depths[c], tp, tf);
            }
            assert_true(tp == tf);
            tpu_test_same_stats(&rp, &rf);
            assert_int_equal(tpu__plan_sched_pod_flows(&p->topo, &part), full.s.nflows);
            assert_int_equal(tpu__repeat_steps(&part), full.s.nsteps);
            n->compared++;
            n->shortcuts += part.rep >= 0 || part.orbit || part.lines || part.repeat != NULL;
            tpu__plan_sched_fini(&part);
            tpu__plan_sched_fini(&full);
        }
    }
}

static int same_flow(const tpu_flow_t *a, const tpu_flow_t *b)
{
    return a->src == b->src && a->dst == b->dst && a->step == b->step && a->reduce == b->reduce &&
           a->span.off == b->span.off && a->span.dst_off == b->span.dst_off &&
           tpu__span_bytes(&a->span) == tpu__span_bytes(&b->span);
}

/*
 * A rank's own part (issue 13 item 5): the data schedule built for one chip holds
 * exactly the flows of the every-chip schedule that start or end on it, in the
 * same order, and every flow it sends depends on the same flows.
 */
static void compare_part_n(const tpu_coll_plan_t *p, int fewer)
{
    tpu_err_t err = {0};
    tpu_plan_sched_t full, part;
    uint8_t *mine = calloc((size_t)p->topo.nchips, 1);
    int chips[3] = {0, p->topo.nchips / 2, p->topo.nchips - 1}, k;

    if (p->desc.kind == TPU_COLL_P2P) {
        free(mine);
        return; /* one transfer: every rank builds its few flows */
    }
    assert_non_null(mine);
    memset(&full, 0, sizeof(full));
    assert_int_equal(tpu__plan_build(p, p->algo, 1, -1, 0, &full, &err), TPU_OK);
    for (k = 0; k < 3; k++) {
        int c = chips[k];
        int64_t i, j = 0;

        memset(&part, 0, sizeof(part));
        mine[c] = 1;
        assert_int_equal(tpu__plan_build_local(p, p->algo, 1, -1, 0, mine, &part, &err), TPU_OK);
        for (i = 0; i < full.s.nflows; i++) {
            const tpu_flow_t *f = &full.s.flows[i], *g;
            int32_t d;

            if (f->src != c && f->dst != c) {
                continue;
            }
            assert_true(j < part.s.nflows);
            g = &part.s.flows[j++];
            if (!same_flow(f, g) || (f->src == c && f->ndeps != g->ndeps)) {
                print_error(
                    "%s %s chip %d flow %lld: %d>%d step %d deps %d vs %d>%d step %d deps %d\n",
                    tpu_coll_name(p->desc.kind), p->name, c, (long long)i, f->src, f->dst, f->step,
                    f->ndeps, g->src, g->dst, g->step, g->ndeps);
            }
            assert_true(same_flow(f, g));
            if (f->src == c) {
                assert_int_equal(f->ndeps, g->ndeps);
                for (d = 0; d < f->ndeps; d++) {
                    assert_true(same_flow(&full.s.flows[full.s.deps[f->dep_first + d]],
                                          &part.s.flows[part.s.deps[g->dep_first + d]]));
                }
            }
        }
        if (j != part.s.nflows) {
            print_error("%s %s chip %d: %lld flows of %lld\n", tpu_coll_name(p->desc.kind), p->name,
                        c, (long long)j, (long long)part.s.nflows);
        }
        assert_int_equal(j, part.s.nflows);
        if (fewer) {
            /* Only a part: the rank does not build the others' flows. */
            assert_true(part.s.nflows < full.s.nflows);
        }
        mine[c] = 0;
        tpu__plan_sched_fini(&part);
    }
    tpu__plan_sched_fini(&full);
    free(mine);
}

static void compare_part(const tpu_coll_plan_t *p)
{
    compare_part_n(p, 0);
}

/* Whole-element block sizes that every collective takes over a group of 'group'. */
static void run_case(const char *shape, const char *wrap, tpu_coll_kind_t kind, const char *axes,
                     int64_t elems, counts_t *n)
{
    tpu_err_t err = {0};
    tpu_topo_t topo;
    tpu_link_model_t link;
    tpu_coll_desc_t d;
    tpu_coll_plan_t *plan = NULL;
    unsigned mask;
    int group;

    if (!tpu_test_model_pod(&topo, &link, shape, wrap) ||
        tpu_topo_parse_axes(&topo, axes, &mask, &err) != TPU_OK) {
        return;
    }
    group = tpu_topo_group_size(&topo, mask);
    tpu_coll_desc_init(&d);
    d.kind = kind;
    d.axes = mask;
    d.bytes =
        (uint64_t)(elems * 4 * (kind == TPU_COLL_PPERMUTE || kind == TPU_COLL_P2P ? 1 : group));
    if (tpu_coll_plan_create(&topo, &link, &d, &plan, &err) != TPU_OK) {
        print_error("%s %s %s over %s, %lld elements: %s\n", shape, wrap, tpu_coll_name(kind), axes,
                    (long long)elems, err.msg);
        fail();
    }
    compare_plan(plan, n);
    if (elems == 3) {
        compare_part(plan);
    }
    tpu_coll_plan_destroy(plan);
}

static void run_shapes(const char *const *shapes, int nshapes, const int64_t *sizes, int nsizes)
{
    static const char *const wraps[] = {"none", "all", "x", "y,z"};
    static const char *const axes[] = {"x,y,z", "x,y", "y", "x,z"};
    counts_t n = {0, 0};
    int s, w, k, a, e;

    for (s = 0; s < nshapes; s++) {
        for (w = 0; w < 4; w++) {
            for (k = 0; k < TPU_COLL_COUNT; k++) {
                for (a = 0; a < 4; a++) {
                    for (e = 0; e < nsizes; e++) {
                        char ax[16];

                        /* 1D and 2D shapes: the axes they have. */
                        snprintf(ax, sizeof(ax), "%s", axes[a]);
                        if (strchr(shapes[s], 'x') == NULL) {
                            snprintf(ax, sizeof(ax), "x");
                        } else if (strchr(strchr(shapes[s], 'x') + 1, 'x') == NULL &&
                                   strchr(ax, 'z') != NULL) {
                            snprintf(ax, sizeof(ax), "%s", a == 0 ? "x,y" : "x");
                        }
                        if (k == TPU_COLL_PPERMUTE) {
                            ax[1] = '\0'; /* a shift moves along one axis */
                        }
                        run_case(shapes[s], wraps[w], (tpu_coll_kind_t)k, ax, sizes[e], &n);
                    }
                }
            }
        }
    }
    assert_true(n.compared > 0);
    assert_true(n.shortcuts * 2 > n.compared); /* the shortcuts are what is tested */
}

static void test_lines_1d_2d(void **state)
{
    static const char *const shapes[] = {"8", "7", "4x4", "3x5", "6x4", "8x2"};
    static const int64_t sizes[] = {1, 3, 1000};

    (void)state;
    run_shapes(shapes, 6, sizes, 3);
}

static void test_classes_3d(void **state)
{
    static const char *const shapes[] = {"2x3x4", "4x4x4", "6x4x2", "3x5x2"};
    static const int64_t sizes[] = {1, 3, 1000};

    (void)state;
    run_shapes(shapes, 4, sizes, 3);
}

/*
 * Lines longer than 64 chips: a route along an open axis of 130 crosses up to
 * 129 links (the line timing once counted only the first 64 of them, which left
 * the routes from the ends off the middle link, and its all-to-all came out too
 * fast).  The direct all-to-all from its lines against the every-chip walk, bit
 * for bit.
 */
static void test_lines_long_axis(void **state)
{
    counts_t n = {0, 0};

    (void)state;
    run_case("130", "none", TPU_COLL_ALL_TO_ALL, "x", 3, &n);
    run_case("130x2", "y", TPU_COLL_ALL_TO_ALL, "x,y", 3, &n);
    assert_true(n.compared > 0 && n.shortcuts == n.compared);
}

static void test_classes_8x8x8(void **state)
{
    static const char *const shapes[] = {"8x8x8"};
    static const int64_t sizes[] = {3};

    (void)state;
    run_shapes(shapes, 1, sizes, 1);
}

static void test_classes_8x6x7(void **state)
{
    static const char *const shapes[] = {"8x6x7"};
    static const int64_t sizes[] = {3};

    (void)state;
    run_shapes(shapes, 1, sizes, 1);
}

/*
 * Two groups of an even pod, the even chips and the odd ones (no torus axes),
 * listed in 'ids' (room for every chip).  Returns the group size.
 */
static int even_odd(const tpu_topo_t *topo, int32_t *ids, tpu_groups_t *groups)
{
    tpu_err_t err = {0};
    int sizes[2], c;

    for (c = 0; c < topo->nchips; c++) {
        ids[c / 2 + (c % 2) * (topo->nchips / 2)] = c;
    }
    sizes[0] = sizes[1] = topo->nchips / 2;
    assert_int_equal(tpu_groups_from_lists(ids, sizes, 2, groups, &err), TPU_OK);
    return topo->nchips / 2;
}

/*
 * A rank's own part for the group algorithms and explicit ppermute pairs (issue 13
 * item 5): named over torus axes and over groups that are not (every other chip,
 * a strided set), on open and wrapped pods.  The part holds exactly the flows of
 * every chip's schedule that touch its chip, with the same dependencies, and
 * fewer flows than the whole; the modeled time is the plan's walk, which the part
 * does not change.
 */
static void part_case(const char *shape, const char *wrap, tpu_coll_kind_t kind, const char *algo,
                      int strided)
{
    tpu_err_t err = {0};
    tpu_topo_t topo;
    tpu_link_model_t link;
    tpu_coll_desc_t d;
    tpu_coll_plan_t *plan = NULL;
    tpu_groups_t groups;
    int32_t *ids = NULL;
    int c, group;

    assert_true(tpu_test_model_pod(&topo, &link, shape, wrap));
    memset(&groups, 0, sizeof(groups));
    tpu_coll_desc_init(&d);
    d.kind = kind;
    snprintf(d.algo, sizeof(d.algo), "%s", algo);
    d.axes = kind == TPU_COLL_PPERMUTE ? 1u : (1u << topo.naxes) - 1;
    group = kind == TPU_COLL_PPERMUTE ? 1 : topo.nchips;
    if (strided && kind == TPU_COLL_PPERMUTE) {
        /* Chip c to chip c + 3 (mod the pod): pairs that are no torus shift. */
        ids = malloc((size_t)topo.nchips * 2 * sizeof(int32_t));
        assert_non_null(ids);
        for (c = 0; c < topo.nchips; c++) {
            ids[2 * c] = c;
            ids[2 * c + 1] = (c + 3) % topo.nchips;
        }
        d.pairs = ids;
        d.npairs = topo.nchips;
    } else if (strided) {
        ids = malloc((size_t)topo.nchips * sizeof(int32_t));
        assert_non_null(ids);
        group = even_odd(&topo, ids, &groups);
        d.groups = &groups;
    }
    d.bytes = (uint64_t)(3 * 4 * group);
    if (tpu_coll_plan_create(&topo, &link, &d, &plan, &err) != TPU_OK) {
        print_error("%s %s %s %s: %s\n", shape, wrap, tpu_coll_name(kind), algo, err.msg);
        fail();
    }
    assert_string_equal(plan->algo->name, algo);
    compare_part_n(plan, 1);
    tpu_coll_plan_destroy(plan);
    tpu_groups_fini(&groups);
    free(ids);
}

/* The group algorithms, each with its collective; ppermute's pairs last. */
static const struct {
    tpu_coll_kind_t kind;
    const char *algo;
} group_algos[] = {
    {TPU_COLL_ALL_GATHER, "group_ring"},
    {TPU_COLL_ALL_GATHER, "group_direct"},
    {TPU_COLL_REDUCE_SCATTER, "group_ring"},
    {TPU_COLL_REDUCE_SCATTER, "group_direct"},
    {TPU_COLL_PSUM, "group_rs_ag"},
    {TPU_COLL_PSUM, "group_direct"},
    {TPU_COLL_ALL_TO_ALL, "group_direct"},
    {TPU_COLL_PSUM, "group_tree"},
    {TPU_COLL_PPERMUTE, "pairs"},
};
#define N_GROUP_ALGOS ((int)(sizeof(group_algos) / sizeof(group_algos[0])))

static void test_group_parts(void **state)
{
    static const char *const shapes[][2] = {
        {"4x4", "none"}, {"4x4", "all"}, {"6x4", "x"}, {"4x2x3", "none"}, {"4x4x2", "all"}};
    int k, s, strided;

    (void)state;
    for (k = 0; k < N_GROUP_ALGOS; k++) {
        for (s = 0; s < (int)(sizeof(shapes) / sizeof(shapes[0])); s++) {
            for (strided = 0; strided < 2; strided++) {
                part_case(shapes[s][0], shapes[s][1], group_algos[k].kind, group_algos[k].algo,
                          strided);
            }
        }
    }
}

/* A transport that hosts one chip and moves nothing: only run objects are built. */
static void no_destroy(tpu_xport_t *x)
{
    (void)x;
}

/*
 * A rank's modeled times from the per-chip ends of the selector's walk
 * (schedule.h) against a second walk of the model schedule (the table switched
 * off), compared with ==: the collective's end and the rank's own end, for chips
 * at the start, middle and end of the pod, on every-chip and domain (orbit)
 * schedules, axes and groups.  Returns how many plans carried the table.
 */
static int ends_case(const char *shape, const char *wrap, tpu_coll_kind_t kind, const char *axes,
                     const char *algo, int strided)
{
    static tpu_xport_ops_t ops;
    tpu_err_t err = {0};
    tpu_topo_t topo;
    tpu_link_model_t link;
    tpu_coll_desc_t d;
    tpu_coll_plan_t *plan = NULL;
    tpu_groups_t groups;
    int32_t ids[64];
    int k, group, had;

    assert_true(tpu_test_model_pod(&topo, &link, shape, wrap));
    assert_true(topo.nchips <= 64);
    if (strided && topo.nchips % 2 != 0) {
        return 0; /* two halves need an even pod */
    }
    memset(&groups, 0, sizeof(groups));
    tpu_coll_desc_init(&d);
    d.kind = kind;
    snprintf(d.algo, sizeof(d.algo), "%s", algo);
    assert_int_equal(tpu_topo_parse_axes(&topo, axes, &d.axes, &err), TPU_OK);
    group = tpu_topo_group_size(&topo, d.axes);
    if (strided) {
        group = even_odd(&topo, ids, &groups);
        d.groups = &groups;
    }
    d.bytes = (uint64_t)(3 * 4 * (kind == TPU_COLL_PPERMUTE ? 1 : group));
    if (tpu_coll_plan_create(&topo, &link, &d, &plan, &err) != TPU_OK) {
        print_error("%s %s %s %s: %s\n", shape, wrap, tpu_coll_name(kind), algo, err.msg);
        fail();
    }
    had = plan->model.ends != NULL;
    ops.size = sizeof(ops);
    ops.name = "one-chip";
    ops.destroy = no_destroy;
    for (k = 0; k < 3; k++) {
        int chip = k == 0 ? 0 : k == 1 ? topo.nchips / 2 : topo.nchips - 1;
        tpu_xport_t x;
        tpu_coll_exec_t *e1 = NULL, *e2 = NULL;
        double end1, local1, end2, local2;

        memset(&x, 0, sizeof(x));
        x.ops = &ops;
        x.nchips = topo.nchips;
        x.nlocal = 1;
        x.local_chips = &chip;
        x.tag_ub = 2147483647;
        assert_int_equal(tpu_coll_exec_create(plan, &x, &e1, &err), TPU_OK);
        if (had) {
            plan->model.ends->filled = 0; /* the walk, as without the table */
        }
        assert_int_equal(tpu_coll_exec_create(plan, &x, &e2, &err), TPU_OK);
        if (had) {
            plan->model.ends->filled = 1;
        }
        tpu__exec_times(e1, &end1, &local1);
        tpu__exec_times(e2, &end2, &local2);
        if (end1 != end2 || local1 != local2) {
            print_error("%s %s %s %s chip %d: %.17g %.17g != %.17g %.17g\n", shape, wrap,
                        tpu_coll_name(kind), plan->name, chip, end1, local1, end2, local2);
        }
        assert_true(end1 == end2);
        assert_true(local1 == local2);
        assert_true(local1 <= end1);
        tpu_coll_exec_destroy(e1);
        tpu_coll_exec_destroy(e2);
    }
    tpu_coll_plan_destroy(plan);
    tpu_groups_fini(&groups);
    return had;
}

static void test_rank_ends(void **state)
{
    static const struct {
        tpu_coll_kind_t kind;
        const char *axes, *algo;
        int strided;
    } cases[] = {
        {TPU_COLL_PSUM, "x,y", "", 0},
        {TPU_COLL_ALL_GATHER, "y", "", 0},
        {TPU_COLL_REDUCE_SCATTER, "x", "", 0},
        {TPU_COLL_ALL_GATHER, "x,y", "axis_by_axis", 0},
        {TPU_COLL_PPERMUTE, "x", "", 0},
        {TPU_COLL_PPERMUTE, "x", "pairs", 0},
        {TPU_COLL_ALL_TO_ALL, "x,y", "group_direct", 0},
        {TPU_COLL_PSUM, "x,y", "group_direct", 1},
        {TPU_COLL_ALL_GATHER, "x,y", "group_ring", 1},
        {TPU_COLL_REDUCE_SCATTER, "x,y", "group_direct", 1},
        {TPU_COLL_PSUM, "x,y", "group_rs_ag", 0},
        {TPU_COLL_PSUM, "x", "group_rs_ag", 0},
        {TPU_COLL_ALL_TO_ALL, "y", "group_direct", 0},
        {TPU_COLL_PSUM, "x,y", "group_tree", 1},
        {TPU_COLL_PSUM, "x", "group_tree", 0},
    };
    static const char *const shapes[][2] = {
        {"4x4", "none"}, {"6x4", "x"}, {"3x5", "none"}, {"4x4", "all"}, {"8x2", "y"}};
    int k, s, had = 0;

    (void)state;
    for (k = 0; k < (int)(sizeof(cases) / sizeof(cases[0])); k++) {
        for (s = 0; s < (int)(sizeof(shapes) / sizeof(shapes[0])); s++) {
            had += ends_case(shapes[s][0], shapes[s][1], cases[k].kind, cases[k].axes,
                             cases[k].algo, cases[k].strided);
        }
    }
    assert_true(had > 20); /* the table is what is tested */
}

/*
 * Orbit timing of the group algorithms on open and mixed pods (issue 13 item 5):
 * groups that repeat along an open axis, each inside one window of the period
 * (parts of an axis, an axis outside the groups), are built and timed from the
 * chips of one domain.  Against the build of every chip, with ==: the modeled
 * time, every per-axis statistic, the pod's flows and steps; the domain build
 * holds fewer flows; the plan's own model (what the selector walked) gives the
 * same time.  Groups of a mesh axis and group algorithms named over whole axes
 * (the groups of those axes), every group algorithm of the collective; over
 * whole axes group_direct is timed from its lines instead (lines.c), compared
 * the same way.  Returns 1 for a domain, 2 for lines, else 0.
 */
static int orbit_case(const char *shape, const char *wrap, const char *mesh_spec, const char *axes,
                      tpu_coll_kind_t kind, const char *algo)
{
    int flags = tpu_test_model_case(shape, wrap, NULL, mesh_spec, axes, kind, algo, 3 * 4, 0);

    /* group_direct over whole axes: its lines (lines.c), cheaper than a domain (2). */
    return (flags & TPU_TEST_LINES) ? 2 : flags & TPU_TEST_ORBIT;
}

static void test_orbit_open_groups(void **state)
{
    static const struct {
        const char *shape, *wrap, *mesh, *axes;
        int orbit; /* 1: the groups repeat along an open axis */
    } cases[] = {
        {"8x8x8", "none", "data=16,model=32", "model", 1},
        {"8x8x8", "none", "data=16,model=32", "data", 1},
        {"8x8x8", "x", "data=16,model=32", "model", 1},
        {"4x4x4", "none", "a=8,b=8", "a", 1},
        {"6x6", "none", "a=4,b=9", "b", 1},
        {"12", "none", "a=3,b=4", "b", 1},
        {"6x4x2", "y", "a=6,b=8", "b", 1},
        {"4x6", "none", "a=2,b=12", "b", 1},
        {"4x4", "none", NULL, "x", 1},
        {"6x4x2", "none", NULL, "y", 1},
        {"8x4x4", "z", NULL, "x,z", 1},
        {"3x5", "none", NULL, "y", 1},
        {"4x4", "none", NULL, "x,y", 0},
    };
    int c, k;

    (void)state;
    for (c = 0; c < (int)(sizeof(cases) / sizeof(cases[0])); c++) {
        /* The group algorithms (ppermute's pairs, last, take no groups). */
        for (k = 0; k < N_GROUP_ALGOS - 1; k++) {
            int orbit = orbit_case(cases[c].shape, cases[c].wrap, cases[c].mesh, cases[c].axes,
                                   group_algos[k].kind, group_algos[k].algo);

            /* The tree is not alike under the rotations of the member order the
             * symmetries may make: built for every chip (build.c). */
            if (strcmp(group_algos[k].algo, "group_tree") == 0) {
                assert_int_equal(orbit, 0);
                continue;
            }
            if (orbit == 2) {
                assert_string_equal(group_algos[k].algo, "group_direct");
                continue;
            }
            if (orbit != cases[c].orbit) {
                print_error("%s %s %s: orbit %d\n", cases[c].shape, cases[c].wrap, cases[c].axes,
                            orbit);
            }
            assert_int_equal(orbit, cases[c].orbit);
        }
    }
}

/*
 * Groups, one ctest entry each (argv[1]: core, the default; 8x8x8 and 8x6x7:
 * those pods, a few minutes each under AddressSanitizer; long: the lines longer
 * than 64 chips; or all).
 */
int main(int argc, char **argv)
{
    const struct CMUnitTest core[] = {
        cmocka_unit_test(test_lines_1d_2d),       cmocka_unit_test(test_classes_3d),
        cmocka_unit_test(test_group_parts),       cmocka_unit_test(test_rank_ends),
        cmocka_unit_test(test_orbit_open_groups),
    };
    const struct CMUnitTest cube[] = {
        cmocka_unit_test(test_classes_8x8x8),
    };
    const struct CMUnitTest odd[] = {
        cmocka_unit_test(test_classes_8x6x7),
    };
    const struct CMUnitTest lines[] = {
        cmocka_unit_test(test_lines_long_axis),
    };
    const tpu_test_group_t groups[] = {
        {"core", "classes core", core, sizeof core / sizeof core[0], NULL, NULL},
        {"8x8x8", "classes 8x8x8", cube, sizeof cube / sizeof cube[0], NULL, NULL},
        {"8x6x7", "classes 8x6x7", odd, sizeof odd / sizeof odd[0], NULL, NULL},
        {"long", "classes long", lines, sizeof lines / sizeof lines[0], NULL, NULL},
    };

    return tpu_test_main_groups(argc, argv, groups, sizeof groups / sizeof groups[0]);
}
