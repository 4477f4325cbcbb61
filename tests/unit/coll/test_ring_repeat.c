/*
 * The rings' compact model schedules (timing_repeat.c, issue 30 item 6) against
 * the walk of every step.  A ring's model schedule holds its first, second and
 * last steps, the second run floor(G/2) - 2 times; here it is built and walked
 * beside the schedule of every step of every chip, and the two must give the
 * same modeled time, per-axis statistics, flows and steps (==): the group ring
 * all-gather and reduce-scatter, the group ring psum and the snake's three, on
 * open, mixed and wrapped 2D and 3D pods, over whole axes and over groups of a
 * mesh axis (orbit timing), with blocks of an even number of elements (every run
 * of the middle step alike: the shortcut, with the message starts of the ports
 * that start two messages a run timed one by one) and of an odd one (the halves
 * of an even ring's last step differ, so the reduce-scatter's runs after it do
 * not start together: the runs are walked one by one), without and with message
 * starts, a launch cost, a link efficiency and a finite reduction rate.  The
 * compact form must hold fewer flows (else the test would compare a schedule
 * with itself).  And one time worked out by hand: the ring of 16 chips of a
 * wrapped line.
 */
#include "tpu/coll.h"
#include "tpu/mesh.h"
#include "tpu/topo.h"

#include "build.h"
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

/* Message starts that queue on a port, a launch, a slower link, a VPU. */
static void with_starts(tpu_link_model_t *link)
{
    link->msg_cost = 0.4e-6;
    link->launch = 2.5e-6;
    link->ici_efficiency = 0.88;
    link->reduce_bw = 60e9;
}

/*
 * One request: the compact model schedule == every step of every chip
 * (model_case.c).  Returns 1 when compared, 0 when the snake refuses the shape (a
 * wrapped axis, an odd group).
 */
static int compare(const char *shape, const char *wrap, int starts, const char *mesh_spec,
                   const char *axes, tpu_coll_kind_t kind, const char *algo, int elems)
{
    int flags = tpu_test_model_case(shape, wrap, starts ? with_starts : NULL, mesh_spec, axes, kind,
                                    algo, (uint64_t)elems * 4, strcmp(algo, "snake") == 0);

    if (flags < 0) {
        return 0;
    }
    assert_true(flags & TPU_TEST_REPEAT);
    return 1;
}

static const struct {
    tpu_coll_kind_t kind;
    const char *algo;
} rings[] = {
    {TPU_COLL_ALL_GATHER, "group_ring"}, {TPU_COLL_REDUCE_SCATTER, "group_ring"},
    {TPU_COLL_PSUM, "group_rs_ag"},      {TPU_COLL_ALL_GATHER, "snake"},
    {TPU_COLL_REDUCE_SCATTER, "snake"},  {TPU_COLL_PSUM, "snake"},
};

/* Every ring over every axis of small open, mixed and wrapped pods. */
static void test_whole_axes(void **state)
{
    static const struct {
        const char *shape, *wrap, *axes;
    } pods[] = {
        {"4x4", "none", "x,y"},     {"4x4", "x", "x,y"},       {"4x4", "all", "x,y"},
        {"3x5", "none", "x,y"},     {"3x5", "all", "x,y"},     {"8x2", "none", "x,y"},
        {"4x3x5", "none", "x,y,z"}, {"4x3x5", "x,z", "x,y,z"}, {"4x3x5", "all", "x,y,z"},
        {"4x4x4", "none", "x,y,z"}, {"4x4x4", "x,z", "x,y,z"}, {"4x4x4", "all", "x,y,z"},
        {"4x4x4", "none", "y,z"},
    };
    /* Blocks of 64 and 3 elements (messages shorter than their start), 8,192 (longer:
     * a port's starts then queue only where it starts two messages per run). */
    static const int elems[] = {64, 3, 8192};
    size_t p, r;
    int e, starts, n = 0, snakes = 0;

    (void)state;
    for (p = 0; p < sizeof(pods) / sizeof(pods[0]); p++) {
        for (r = 0; r < sizeof(rings) / sizeof(rings[0]); r++) {
            for (e = 0; e < 3; e++) {
                for (starts = 0; starts < 2; starts++) {
                    int done = compare(pods[p].shape, pods[p].wrap, starts, NULL, pods[p].axes,
                                       rings[r].kind, rings[r].algo, elems[e]);

                    n += done;
                    snakes += done && strcmp(rings[r].algo, "snake") == 0;
                }
            }
        }
    }
    /* The snake takes the open pods of an even group: 4x4, 8x2, 4x3x5, 4x4x4 (twice). */
    assert_int_equal(snakes, 5 * 3 * 3 * 2);
    assert_int_equal(n, 13 * 3 * 3 * 2 + snakes);
}

/* The group rings over groups of a mesh axis (orbit timing of a domain's chips). */
static void test_mesh_groups(void **state)
{
    static const struct {
        const char *shape, *wrap, *mesh, *axes;
    } cases[] = {
        {"4x4x4", "none", "a=8,b=8", "b"},
        {"4x4x4", "all", "a=8,b=8", "a"},
        {"8x4x4", "z", "data=16,model=8", "data"},
        {"6x6", "none", "a=4,b=9", "b"},
    };
    size_t c, r;
    int starts;

    (void)state;
    for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        for (r = 0; r < 3; r++) {
            for (starts = 0; starts < 2; starts++) {
                assert_int_equal(compare(cases[c].shape, cases[c].wrap, starts, cases[c].mesh,
                                         cases[c].axes, rings[r].kind, rings[r].algo, 6),
                                 1);
            }
        }
    }
}

/*
 * By hand: the group ring all-gather over a wrapped line of 16 chips, blocks of
 * B = 9,000 bytes (2,250 f32), W = 90 GB/s (45 GB/s each way), alpha = 1 us, no
 * message cost.  Every hop is one link of its own: 7 full steps of B / 45e9 =
 * 0.2 us, the last step's halves (1,125 elements each way) 0.1 us, and a chain of
 * 8 hops: 1.5 + 8 = 9.5 us.
 */
static void test_by_hand(void **state)
{
    tpu_err_t err = {0};
    tpu_topo_t topo;
    tpu_link_model_t link;
    tpu_coll_desc_t d;
    tpu_coll_plan_t *plan = NULL;
    tpu_coll_result_t res;

    (void)state;
    assert_true(tpu_test_model_pod(&topo, &link, "16", "all"));
    tpu_coll_desc_init(&d);
    d.kind = TPU_COLL_ALL_GATHER;
    d.axes = 1u;
    d.bytes = 16 * 9000;
    snprintf(d.algo, sizeof(d.algo), "group_ring");
    assert_int_equal(tpu_coll_plan_create(&topo, &link, &d, &plan, &err), TPU_OK);
    assert_non_null(plan->model.repeat);
    assert_int_equal(tpu_coll_plan_model(plan, &res, &err), TPU_OK);
    assert_true(res.modeled_us > 9.5 * (1 - 1e-12) && res.modeled_us < 9.5 * (1 + 1e-12));
    assert_int_equal(res.steps, 8);
    assert_int_equal(res.flows, 2 * 16 * 8); /* the half step: 2 flows per chip too */
    tpu_coll_plan_destroy(plan);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole_axes),
        cmocka_unit_test(test_mesh_groups),
        cmocka_unit_test(test_by_hand),
    };

    return tpu_test_main(argc, argv, "ring_repeat", tests, sizeof tests / sizeof tests[0]);
}
