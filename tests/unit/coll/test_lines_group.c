/*
 * Line timing of group_direct over whole torus axes (collectives/lines.c; issue 30
 * item 6) against the walk over every chip's flows, compared with == on doubles:
 * the all-gather, its time reversal the reduce-scatter, the psum (the reversal,
 * then the all-gather after a barrier) and the all-to-all, on open, mixed and
 * wrapped pods of one to three axes, over every axis and over a part of them,
 * with blocks of 1, 3 and 1000 elements and a padded psum.  Compared: the modeled
 * time, every per-axis statistic, the pod's flows and steps, a chip's own end
 * (lines.c with the chip's own flows against the walk's local end), and the run
 * object's two ends (exec_times.c, a host plan moving the bytes of the reduce-
 * scatter and psum), every link's totals told to an observer (with the lines' own
 * flows), with a second link model whose VPU binds the reductions,
 * whose message starts outlast a psum's first step (its gather flows wait for
 * their engines) and which adds a launch cost.
 *
 * And figures worked out by hand on a line of 4 chips, open and wrapped, and the
 * 8,960-chip pods of issue 30: every group_direct plan is made (not refused), from
 * its lines, with the flows of every member pair.
 */
#include "tpu/coll.h"
#include "tpu/topo.h"
#include "tpu/xport.h"

#include "build.h"
#include "exec.h"
#include "lines.h"
#include "plan.h"
#include "test_coll.h"
#include "test_main.h"
#include "timing.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static const tpu_coll_kind_t kinds[] = {TPU_COLL_ALL_GATHER, TPU_COLL_REDUCE_SCATTER, TPU_COLL_PSUM,
                                        TPU_COLL_ALL_TO_ALL};
#define NKINDS ((int)(sizeof(kinds) / sizeof(kinds[0])))

/* The pod 'shape' with 'wrap' (0 when the wrap names an axis it lacks) and link model
 * 'variant': 0 plain, 1 a slow VPU, slow message starts, a launch cost, efficiency. */
static int make(tpu_topo_t *topo, tpu_link_model_t *link, const char *shape, const char *wrap,
                int variant)
{
    if (!tpu_test_model_pod(topo, link, shape, wrap)) {
        return 0;
    }
    if (variant == 1) {
        link->reduce_bw = 2e9;
        link->msg_cost = 30e-6;
        link->launch = 2.5e-6;
        link->ici_efficiency = 0.88;
    }
    return 1;
}

/* group_direct of 'kind' over 'axes' of the pod, 'elems' elements per block (psum:
 * one less in all, padded), or NULL when the wrap or the axes do not fit the shape. */
static tpu_coll_plan_t *group_plan(const tpu_topo_t *topo, const tpu_link_model_t *link,
                                   tpu_coll_kind_t kind, const char *axes, int64_t elems)
{
    tpu_err_t err = {0};
    tpu_coll_desc_t d;
    tpu_coll_plan_t *plan = NULL;
    int group;

    tpu_coll_desc_init(&d);
    d.kind = kind;
    snprintf(d.algo, sizeof(d.algo), "group_direct");
    if (tpu_topo_parse_axes(topo, axes, &d.axes, &err) != TPU_OK) {
        return NULL;
    }
    group = tpu_topo_group_size(topo, d.axes);
    if (group < 2) {
        return NULL;
    }
    d.bytes = (uint64_t)(elems * 4 * group - (kind == TPU_COLL_PSUM && elems > 1 ? 4 : 0));
    if (tpu_coll_plan_create(topo, link, &d, &plan, &err) != TPU_OK) {
        print_error("%s over %s, %lld elements: %s\n", tpu_coll_name(kind), axes, (long long)elems,
                    err.msg);
        fail();
    }
    return plan;
}

static void no_destroy(tpu_xport_t *x)
{
    (void)x;
}

/*
 * The run object's ends for a transport hosting 'chip' alone (-1: every chip),
 * moving bytes (so the host plans of the reduce-scatter and psum apply), against
 * the walk 't' of every chip's schedule 'full'.
 */
static void exec_ends(const tpu_coll_plan_t *plan, const tpu_timing_t *t,
                      const tpu_plan_sched_t *full, int chip)
{
    static tpu_xport_ops_t ops;
    tpu_err_t err = {0};
    tpu_xport_t x;
    tpu_coll_exec_t *e = NULL;
    int n = plan->topo.nchips, *chips = malloc((size_t)n * sizeof(int)), c;
    uint8_t *mark = calloc((size_t)n, 1);
    double end, local;

    assert_non_null(chips);
    assert_non_null(mark);
    for (c = 0; c < n; c++) {
        chips[c] = c;
        mark[c] = chip < 0 || c == chip;
    }
    ops.size = sizeof(ops);
    ops.name = "no-op";
    ops.destroy = no_destroy;
    memset(&x, 0, sizeof(x));
    x.ops = &ops;
    x.nchips = n;
    x.nlocal = chip < 0 ? n : 1;
    x.local_chips = chip < 0 ? chips : &chips[chip];
    x.moves_data = 1;
    x.tag_ub = 2147483647;
    assert_int_equal(tpu_coll_exec_create(plan, &x, &e, &err), TPU_OK);
    tpu__exec_times(e, &end, &local);
    if (end != tpu__timing_local_end(t, &full->s, NULL) ||
        local != tpu__timing_local_end(t, &full->s, mark)) {
        print_error("%s chip %d: run %.17g %.17g, walk %.17g %.17g\n", plan->name, chip, end, local,
                    tpu__timing_local_end(t, &full->s, NULL),
                    tpu__timing_local_end(t, &full->s, mark));
    }
    assert_true(end == tpu__timing_local_end(t, &full->s, NULL));
    assert_true(local == tpu__timing_local_end(t, &full->s, mark));
    tpu_coll_exec_destroy(e);
    free(chips);
    free(mark);
}

/* A chip's own end from the lines (its own flows of the model) == the walk's. */
static void own_end(const tpu_coll_plan_t *plan, const tpu_timing_t *t,
                    const tpu_plan_sched_t *full, int chip)
{
    tpu_err_t err = {0};
    tpu_plan_sched_t own;
    uint8_t *mark = calloc((size_t)plan->topo.nchips, 1);
    double end, local, walk;

    assert_non_null(mark);
    mark[chip] = 1;
    memset(&own, 0, sizeof(own));
    assert_int_equal(tpu__plan_build_local(plan, plan->algo, 1, -1, 0, mark, &own, &err), TPU_OK);
    assert_int_equal(tpu__lines_time_own(&plan->topo, &plan->link, &plan->model, &own.s, mark,
                                         &local, &end, NULL),
                     TPU_OK);
    walk = tpu__timing_local_end(t, &full->s, mark);
    if (local != walk) {
        print_error("%s chip %d: lines %.17g, walk %.17g\n", plan->name, chip, local, walk);
    }
    assert_true(local == walk);
    assert_true(end == tpu__timing_local_end(t, &full->s, NULL));
    tpu__plan_sched_fini(&own);
    free(mark);
}

/* What an observer saw: every ICI link's totals, and the flows. */
typedef struct seen {
    double *bytes, *busy;
    int64_t flows, representative;
    double last_end;
} seen_t;

static void seen_flow(void *user, const tpu_coll_flow_event_t *ev)
{
    seen_t *s = user;

    s->flows++;
    s->representative += ev->representative;
    s->last_end = ev->end_s > s->last_end ? ev->end_s : s->last_end;
}

static void seen_link(void *user, const tpu_coll_link_event_t *ev)
{
    seen_t *s = user;

    if (ev->link >= 0) {
        s->bytes[ev->link] = ev->bytes;
        s->busy[ev->link] = ev->busy_s;
    }
}

/*
 * The lines told to an observer (what `model --heatmap` draws past the budget of
 * every chip's flows, plan.c): every link's bytes and busy time == the every-chip
 * walk's, the same modeled time, one representative flow per class combination,
 * none ending after the collective.
 */
static void observed_links(const tpu_coll_plan_t *plan, const tpu_plan_sched_t *full)
{
    int n = plan->topo.nlinks, l;
    seen_t a, b;
    tpu_coll_observer_t oa, ob;
    double ta = -1, tb = -2;

    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    a.bytes = calloc((size_t)n + 1, sizeof(double));
    a.busy = calloc((size_t)n + 1, sizeof(double));
    b.bytes = calloc((size_t)n + 1, sizeof(double));
    b.busy = calloc((size_t)n + 1, sizeof(double));
    assert_true(a.bytes != NULL && a.busy != NULL && b.bytes != NULL && b.busy != NULL);
    memset(&oa, 0, sizeof(oa));
    oa.on_flow = seen_flow;
    oa.on_link = seen_link;
    ob = oa;
    oa.user = &a;
    ob.user = &b;
    assert_int_equal(
        tpu__time_schedule_observed(&plan->topo, &plan->link, &plan->model, &oa, &ta, NULL),
        TPU_OK);
    assert_int_equal(tpu__time_schedule_observed(&plan->topo, &plan->link, full, &ob, &tb, NULL),
                     TPU_OK);
    assert_true(ta == tb);
    for (l = 0; l < n; l++) {
        assert_true(a.bytes[l] == b.bytes[l]);
        assert_true(a.busy[l] == b.busy[l]);
    }
    assert_true(a.flows > 0 && a.flows <= full->s.nflows);
    assert_int_equal(a.representative, a.flows);
    assert_true(a.last_end <= ta);
    free(a.bytes);
    free(a.busy);
    free(b.bytes);
    free(b.busy);
}

/* One plan: its lines against the walk of every chip's flows.  Returns 1 when compared. */
static int compare(const char *shape, const char *wrap, int variant, tpu_coll_kind_t kind,
                   const char *axes, int64_t elems)
{
    tpu_err_t err = {0};
    tpu_topo_t topo;
    tpu_link_model_t link;
    tpu_coll_plan_t *plan;
    tpu_plan_sched_t full;
    tpu_coll_result_t rl, rf, rm;
    tpu_timing_t t;
    double tl = -1, tf = -2;

    if (!make(&topo, &link, shape, wrap, variant) ||
        (plan = group_plan(&topo, &link, kind, axes, elems)) == NULL) {
        return 0;
    }
    assert_string_equal(plan->algo->name, "group_direct");
    assert_int_equal(plan->model.lines, 1);
    memset(&full, 0, sizeof(full));
    assert_int_equal(tpu__plan_build(plan, plan->algo, 1, -1, 0, &full, &err), TPU_OK);
    assert_int_equal(full.lines, 0);
    assert_int_equal(full.orbit, 0);
    assert_int_equal(tpu__time_schedule(&topo, &link, &plan->model, &tl, &rl), TPU_OK);
    assert_int_equal(tpu__time_schedule(&topo, &link, &full, &tf, &rf), TPU_OK);
    assert_int_equal(tpu_coll_plan_model(plan, &rm, &err), TPU_OK);
    if (tl != tf || rm.modeled_us != tf * 1e6) {
        print_error("%s %s link %d %s over %s, %lld elements: lines %.17g, walk %.17g\n", shape,
                    wrap, variant, tpu_coll_name(kind), axes, (long long)elems, tl, tf);
    }
    assert_true(tl == tf);
    assert_true(rm.modeled_us == tf * 1e6);
    tpu_test_same_stats(&rl, &rf);
    assert_int_equal(tpu__plan_sched_pod_flows(&topo, &plan->model), full.s.nflows);
    assert_int_equal(rm.flows, full.s.nflows);
    assert_int_equal(plan->model.s.nsteps, full.s.nsteps);
    assert_int_equal(tpu_coll_plan_model_flows(plan), 0);
    assert_int_equal(tpu__timing_init(&t, &topo, &link, &full), TPU_OK);
    assert_int_equal(tpu__timing_walk(&t, &full), TPU_OK);
    own_end(plan, &t, &full, 0);
    own_end(plan, &t, &full, topo.nchips - 1);
    if (elems == 3) {
        exec_ends(plan, &t, &full, topo.nchips / 2);
        exec_ends(plan, &t, &full, -1);
        observed_links(plan, &full);
    }
    tpu__timing_fini(&t);
    tpu__plan_sched_fini(&full);
    tpu_coll_plan_destroy(plan);
    return 1;
}

static void run_shapes(const char *const *shapes, int nshapes)
{
    static const char *const wraps[] = {"none", "all", "x", "y,z", "x,z"};
    static const char *const axes[] = {"x,y,z", "x,z", "y"};
    static const int64_t elems[] = {1, 3, 1000};
    int s, w, v, k, a, e, n = 0;

    for (s = 0; s < nshapes; s++) {
        for (w = 0; w < 5; w++) {
            for (v = 0; v < 2; v++) {
                for (k = 0; k < NKINDS; k++) {
                    for (a = 0; a < 3; a++) {
                        for (e = 0; e < 3; e++) {
                            n += compare(shapes[s], wraps[w], v, kinds[k], axes[a], elems[e]);
                        }
                    }
                }
            }
        }
    }
    assert_true(n > 0);
}

static void test_lines_group_2d(void **state)
{
    static const char *const shapes[] = {"8", "5", "4x4", "3x5", "6x4", "2x6"};

    (void)state;
    run_shapes(shapes, 6);
}

static void test_lines_group_3d(void **state)
{
    static const char *const shapes[] = {"4x3x5", "4x4x4", "2x3x4"};

    (void)state;
    run_shapes(shapes, 3);
}

/*
 * A line of 4 chips, 1000-byte blocks, 1e9 bytes/s each way per link, 1 us per hop
 * (tpu_test_easy_link).  Open: the middle link carries 4 blocks each way (0,1 ->
 * 2,3), the longest route is 3 hops: 4 + 3 = 7 us for the all-gather, the
 * reduce-scatter and the all-to-all; the psum is both, one after the other: 4 + 4
 * us of bytes, 3 + 3 hops, 14 us.  Wrapped: a link + carries the block to the
 * next chip and the two tie blocks that pass it (the gather goes + at the tie),
 * 3 blocks, 2 hops: 5 us; the scatter goes - at the tie, as loaded; the psum
 * 3 + 3 + 2 + 2 = 10 us; the all-to-all splits the tie blocks, a link carries 2
 * blocks' bytes, 2 + 2 = 4 us.
 */
static void test_lines_group_by_hand(void **state)
{
    static const struct {
        const char *wrap;
        tpu_coll_kind_t kind;
        double us;
    } cases[] = {
        {"none", TPU_COLL_ALL_GATHER, 7}, {"none", TPU_COLL_REDUCE_SCATTER, 7},
        {"none", TPU_COLL_PSUM, 14},      {"none", TPU_COLL_ALL_TO_ALL, 7},
        {"all", TPU_COLL_ALL_GATHER, 5},  {"all", TPU_COLL_REDUCE_SCATTER, 5},
        {"all", TPU_COLL_PSUM, 10},       {"all", TPU_COLL_ALL_TO_ALL, 4},
    };
    int c;

    (void)state;
    for (c = 0; c < (int)(sizeof(cases) / sizeof(cases[0])); c++) {
        tpu_link_model_t link = tpu_test_easy_link();
        tpu_err_t err = {0};
        tpu_topo_t topo;
        tpu_coll_desc_t d;
        tpu_coll_plan_t *plan = NULL;
        tpu_coll_result_t res;
        int dims[TPU_MAX_AXES] = {4, 1, 1}, w[TPU_MAX_AXES] = {0, 0, 0};

        w[0] = strcmp(cases[c].wrap, "all") == 0;
        assert_int_equal(tpu_topo_init(&topo, 1, dims, w, 1, &err), TPU_OK);
        tpu_coll_desc_init(&d);
        d.kind = cases[c].kind;
        d.axes = 1u;
        d.bytes = 4000;
        snprintf(d.algo, sizeof(d.algo), "group_direct");
        assert_int_equal(tpu_coll_plan_create(&topo, &link, &d, &plan, &err), TPU_OK);
        assert_int_equal(plan->model.lines, 1);
        assert_int_equal(tpu_coll_plan_model(plan, &res, &err), TPU_OK);
        if (!(res.modeled_us > cases[c].us - 1e-9 && res.modeled_us < cases[c].us + 1e-9)) {
            print_error("%s %s: %.17g us, by hand %g\n", cases[c].wrap,
                        tpu_coll_name(cases[c].kind), res.modeled_us, cases[c].us);
        }
        assert_true(res.modeled_us > cases[c].us - 1e-9 && res.modeled_us < cases[c].us + 1e-9);
        tpu_coll_plan_destroy(plan);
    }
}

/*
 * The 8,960-chip pods of issue 30 (16x20x28 open, x and z wrapped, wrapped): every
 * group_direct plan over x,y,z is made from its lines, and stands for every member
 * pair's block: 8960 x 8959 flows (the psum twice; the all-to-all's tie halves
 * apart), as the walk would hold them.
 */
static void test_lines_group_pod(void **state)
{
    static const char *const wraps[] = {"none", "x,z", "all"};
    int w, k;

    (void)state;
    for (w = 0; w < 3; w++) {
        for (k = 0; k < NKINDS; k++) {
            tpu_topo_t topo;
            tpu_link_model_t link;
            tpu_coll_plan_t *plan;
            tpu_coll_result_t res;
            tpu_err_t err = {0};

            assert_true(make(&topo, &link, "16x20x28", wraps[w], 0));
            plan = group_plan(&topo, &link, kinds[k], "x,y,z", 32768);
            assert_int_equal(plan->model.lines, 1);
            assert_int_equal(tpu_coll_plan_model(plan, &res, &err), TPU_OK);
            if (kinds[k] != TPU_COLL_ALL_TO_ALL || w == 0) {
                assert_int_equal(res.flows,
                                 (int64_t)8960 * 8959 * (kinds[k] == TPU_COLL_PSUM ? 2 : 1));
            }
            assert_int_equal(res.steps, kinds[k] == TPU_COLL_PSUM ? 2 : 1);
            tpu_coll_plan_destroy(plan);
        }
    }
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lines_group_2d),
        cmocka_unit_test(test_lines_group_3d),
        cmocka_unit_test(test_lines_group_by_hand),
        cmocka_unit_test(test_lines_group_pod),
    };

    return tpu_test_main(argc, argv, "lines group", tests, sizeof(tests) / sizeof(tests[0]));
}
