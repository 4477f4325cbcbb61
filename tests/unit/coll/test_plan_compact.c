/*
 * Compact model schedules against the exact flow lists they stand for (issue 30
 * item 6).  A psum's gather flows from one chip and stream share one dependency
 * list (tpu__sched_concat()): the direct group psum holds one list of G - 1 per
 * chip instead of G - 1 copies.  Here the plan's model schedule is copied with
 * every flow given a list of its own (the exact form, as before the sharing) and
 * both are walked with an observer: the modeled time, every flow's start and
 * end, every link's bytes and busy time must be equal (==), on open, mixed and
 * wrapped pods, 2D and 3D, over groups of a mesh axis and over named whole axes
 * (there the every-chip schedule: the plan itself holds line tables, lines.c).
 * The compact form must also be smaller (else the test would compare a schedule
 * with itself).  And the walk's routes from its table of coordinates equal
 * tpu_topo_route()'s links for every pair of chips, axis order and tie.
 */
#include "tpu/chip.h"
#include "tpu/coll.h"
#include "tpu/mesh.h"
#include "tpu/topo.h"

#include "build.h"
#include "linkmodel.h"
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

/* What the observer saw of one walk. */
typedef struct seen {
    int64_t nflows;
    double *start, *end; /* per flow */
    int nlinks;
    double *bytes, *busy; /* per ICI link */
} seen_t;

static void on_flow(void *user, const tpu_coll_flow_event_t *ev)
{
    seen_t *s = user;

    assert_true(ev->flow >= 0 && ev->flow < s->nflows);
    s->start[ev->flow] = ev->start_s;
    s->end[ev->flow] = ev->end_s;
}

static void on_link(void *user, const tpu_coll_link_event_t *ev)
{
    seen_t *s = user;

    if (ev->link >= 0) {
        assert_true(ev->link < s->nlinks);
        s->bytes[ev->link] = ev->bytes;
        s->busy[ev->link] = ev->busy_s;
    }
}

static void seen_init(seen_t *s, int64_t nflows, int nlinks)
{
    s->nflows = nflows;
    s->nlinks = nlinks;
    s->start = calloc((size_t)nflows + 1, sizeof(double));
    s->end = calloc((size_t)nflows + 1, sizeof(double));
    s->bytes = calloc((size_t)nlinks + 1, sizeof(double));
    s->busy = calloc((size_t)nlinks + 1, sizeof(double));
    assert_non_null(s->start);
    assert_non_null(s->end);
    assert_non_null(s->bytes);
    assert_non_null(s->busy);
}

static void seen_fini(seen_t *s)
{
    free(s->start);
    free(s->end);
    free(s->bytes);
    free(s->busy);
}

/* 'in' with every flow given a dependency list of its own: the exact form. */
static void expand(const tpu_plan_sched_t *in, tpu_plan_sched_t *out)
{
    int64_t i, nd = 0;

    memset(out, 0, sizeof(*out));
    tpu__sched_init(&out->s);
    for (i = 0; i < in->s.nflows; i++) {
        nd += in->s.flows[i].ndeps;
    }
    assert_int_equal(tpu__sched_reserve(&out->s, in->s.nflows, nd), TPU_OK);
    for (i = 0; i < in->s.nflows; i++) {
        const tpu_flow_t *f = &in->s.flows[i];
        int64_t k = tpu__sched_add(&out->s, f);

        assert_true(k == i);
        assert_int_equal(tpu__sched_add_deps(&out->s, k, in->s.deps + f->dep_first, f->ndeps),
                         TPU_OK);
    }
    out->s.barrier = in->s.barrier;
    out->rep = in->rep;
    out->orbit = in->orbit;
    memcpy(out->period, in->period, sizeof(out->period));
    out->reflect = in->reflect;
    assert_int_equal(tpu__plan_sched_index(out), TPU_OK);
}

/* Walk 'ps' with an observer into 'seen'; returns the modeled seconds. */
static double walk(const tpu_coll_plan_t *p, const tpu_plan_sched_t *ps, seen_t *seen)
{
    tpu_coll_observer_t obs;
    tpu_coll_result_t res;
    double t = -1;

    memset(&obs, 0, sizeof(obs));
    obs.on_flow = on_flow;
    obs.on_link = on_link;
    obs.user = seen;
    assert_int_equal(tpu__time_schedule_observed(&p->topo, &p->link, ps, &obs, &t, &res), TPU_OK);
    return t;
}

/* One case: a direct group psum, its shared lists against the expanded ones.
 * 'mesh_spec' NULL: named over the whole axes 'axes'. */
static void compact_case(const char *shape, const char *wrap, const char *mesh_spec,
                         const char *axes)
{
    tpu_err_t err = {0};
    tpu_chip_spec_t chip;
    tpu_topo_t topo;
    tpu_link_model_t link;
    tpu_coll_desc_t d;
    tpu_coll_plan_t *plan = NULL;
    tpu_mesh_t *mesh = NULL;
    tpu_groups_t groups;
    tpu_plan_sched_t exact, all, *ps;
    seen_t a, b;
    int64_t i;
    double ta, tb;

    tpu_test_topo(&topo, shape, wrap, 1);
    assert_int_equal(tpu_chip_preset("v5p", &chip, NULL), TPU_OK);
    tpu_chip_link_model(&chip, &link);
    memset(&groups, 0, sizeof(groups));
    tpu_coll_desc_init(&d);
    d.kind = TPU_COLL_PSUM;
    snprintf(d.algo, sizeof(d.algo), "%s", "group_direct");
    tpu_test_coll_target(&topo, mesh_spec, axes, 256 * 4, &mesh, &groups, &d);
    if (tpu_coll_plan_create(&topo, &link, &d, &plan, &err) != TPU_OK) {
        print_error("%s %s %s: %s\n", shape, wrap, axes, err.msg);
        fail();
    }
    /* The compact form is what the plan holds, and it is smaller.  Named over whole
     * axes the plan holds line tables (lines.c): its every-chip schedule then. */
    memset(&all, 0, sizeof(all));
    if (plan->model.lines) {
        assert_int_equal(tpu__plan_build(plan, plan->algo, 1, -1, 0, &all, &err), TPU_OK);
    }
    ps = plan->model.lines ? &all : &plan->model;
    assert_int_equal(ps->s.shared_deps, 1);
    expand(ps, &exact);
    assert_true(ps->s.ndeps < exact.s.ndeps);
    assert_int_equal(ps->s.nflows, exact.s.nflows);
    seen_init(&a, ps->s.nflows, topo.nlinks);
    seen_init(&b, exact.s.nflows, topo.nlinks);
    ta = walk(plan, ps, &a);
    tb = walk(plan, &exact, &b);
    if (ta != tb) {
        print_error("%s %s %s: compact %.17g s, exact %.17g s\n", shape, wrap, axes, ta, tb);
    }
    assert_true(ta == tb);
    for (i = 0; i < a.nflows; i++) {
        assert_true(a.start[i] == b.start[i]);
        assert_true(a.end[i] == b.end[i]);
    }
    for (i = 0; i < a.nlinks; i++) {
        assert_true(a.bytes[i] == b.bytes[i]);
        assert_true(a.busy[i] == b.busy[i]);
    }
    seen_fini(&a);
    seen_fini(&b);
    tpu__plan_sched_fini(&exact);
    tpu__plan_sched_fini(&all);
    tpu_coll_plan_destroy(plan);
    tpu_groups_fini(&groups);
    tpu_mesh_destroy(mesh);
}

static void test_shared_lists_time_as_exact(void **state)
{
    (void)state;
    /* 2D open and wrapped, groups of a mesh axis and a named whole axis. */
    compact_case("4x4", "none", "data=2,model=8", "model");
    compact_case("4x4", "all", "data=4,model=4", "model");
    compact_case("4x6", "none", NULL, "x,y");
    /* 3D: open, mixed (x and z wrapped), wrapped. */
    compact_case("4x4x4", "none", "data=4,model=16", "model");
    compact_case("4x4x4", "x,z", "data=8,model=8", "model");
    compact_case("4x4x4", "x,z", NULL, "x,y,z");
    compact_case("2x4x6", "all", "data=6,model=8", "model");
    compact_case("4x4x4", "all", NULL, "y,z");
}

/* The ICI links of a flow from the walk (tpu__linkmodel_flow_resources()). */
static int walk_links(tpu_linkmodel_t *lm, const tpu_flow_t *f, int32_t *out)
{
    double lat;
    int n = tpu__linkmodel_flow_resources(lm, f, &lat), k;

    for (k = 0; k < n; k++) {
        out[k] = lm->rres[k];
    }
    return n;
}

/* Every pair, order and tie of one pod: the table's route == tpu_topo_route(). */
static void route_case(int naxes, const int *dims, const int *wrap)
{
    tpu_chip_spec_t chip;
    tpu_link_model_t link;
    tpu_linkmodel_t lm;
    tpu_topo_t t;
    int32_t got[64];
    int want[64], src, dst, o, tie;

    assert_int_equal(tpu_chip_preset("v5p", &chip, NULL), TPU_OK);
    tpu_chip_link_model(&chip, &link);
    link.reduce_bw = 0; /* no VPU resource after the links */
    assert_int_equal(tpu_topo_init(&t, naxes, dims, wrap, 1, NULL), TPU_OK);
    assert_int_equal(tpu__linkmodel_init(&lm, &t, &link, 0), TPU_OK);
    for (src = 0; src < t.nchips; src++) {
        for (dst = 0; dst < t.nchips; dst++) {
            for (o = 0; o < 6; o++) {
                for (tie = -1; tie <= 1; tie += 2) {
                    tpu_flow_t f;
                    tpu_route_t r;
                    int n, m, k;

                    memset(&f, 0, sizeof(f));
                    f.src = src;
                    f.dst = dst;
                    f.order = (uint8_t)o;
                    f.tie = (int8_t)tie;
                    f.span.len = 8;
                    f.span.count[0] = f.span.count[1] = f.span.count[2] = 1;
                    n = walk_links(&lm, &f, got);
                    tpu_topo_route(&t, src, dst, tpu__axis_orders[o], tie, &r);
                    m = tpu_topo_route_links(&t, &r, want, 64);
                    assert_int_equal(n, m);
                    for (k = 0; k < n; k++) {
                        assert_int_equal(got[k], want[k]);
                    }
                }
            }
        }
    }
    tpu__linkmodel_fini(&lm);
}

static void test_table_routes(void **state)
{
    static const int shapes[][3] = {{4, 4, 4}, {5, 4, 6}, {2, 3, 4}, {6, 1, 3}};
    static const int wraps[][3] = {{0, 0, 0}, {1, 0, 1}, {1, 1, 1}, {0, 1, 0}};
    static const int flat[2] = {6, 5}, flat_wrap[][2] = {{0, 0}, {1, 1}, {1, 0}};
    int s, w;

    (void)state;
    for (s = 0; s < (int)(sizeof(shapes) / sizeof(shapes[0])); s++) {
        for (w = 0; w < (int)(sizeof(wraps) / sizeof(wraps[0])); w++) {
            route_case(3, shapes[s], wraps[w]);
        }
    }
    for (w = 0; w < (int)(sizeof(flat_wrap) / sizeof(flat_wrap[0])); w++) {
        route_case(2, flat, flat_wrap[w]);
    }
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shared_lists_time_as_exact),
        cmocka_unit_test(test_table_routes),
    };

    return tpu_test_main(argc, argv, "plan_compact", tests, sizeof tests / sizeof tests[0]);
}
