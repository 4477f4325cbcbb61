/*
 * The psum tpu__reversed() builds from an all-gather: the reversal
 * (tpu__sched_reverse()), then the all-gather after a barrier
 * (tpu__sched_concat()), checked flow by flow and dependency by dependency against a four-flow
 * all-gather on a line of three chips worked by hand.  The all-gather (step 0: A 0->1, C 2->1, D
 * 2->0; step 1: B 1->2 after A) turns round into B' 2->1 (step 0), A' 1->0 after B', C' 1->2 and D'
 * 0->2 (step 1); the gather follows at steps 2 and 3, A after the flows into chip 0 (A'), C and D
 * after those into chip 2 (C', D': one shared list), B after A.  With 'local' only the marked
 * chips' gather flows wait for them.
 */
#include "tpu/coll.h"

#include "algorithms/reversed.h"
#include "schedule.h"
#include "test_main.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

/* Flow positions in the all-gather as written. */
enum {
    A,
    C,
    D,
    B
};

static void add(tpu_sched_t *s, int src, int dst, int step, int64_t off, const int32_t *dep)
{
    tpu_flow_t f;
    int64_t i;

    memset(&f, 0, sizeof(f));
    f.src = src;
    f.dst = dst;
    f.step = step;
    f.order = 0; /* x, y, z */
    f.tie = 1;
    f.span.off = off;
    f.span.dst_off = off + 100;
    f.span.len = 8;
    f.span.count[0] = f.span.count[1] = f.span.count[2] = 1;
    i = tpu__sched_add(s, &f);
    assert_true(i >= 0);
    if (dep != NULL) {
        assert_int_equal(tpu__sched_add_deps(s, i, dep, 1), TPU_OK);
    }
}

static void build_allgather(tpu_sched_t *s)
{
    int32_t a = A;

    tpu__sched_init(s);
    add(s, 0, 1, 0, 0, NULL);  /* A */
    add(s, 2, 1, 0, 16, NULL); /* C */
    add(s, 2, 0, 0, 16, NULL); /* D */
    add(s, 1, 2, 1, 0, &a);    /* B, after A */
}

/* The hand all-gather as an algorithm's builder. */
static tpu_status_t hand_allgather(const tpu_algo_args_t *args, tpu_sched_t *s, tpu_err_t *err)
{
    (void)args;
    (void)err;
    build_allgather(s);
    return TPU_OK;
}

/* The psum of the hand all-gather into 's' by tpu__reversed() itself. */
static tpu_status_t psum(tpu_sched_t *s, const uint8_t *local)
{
    tpu_algo_args_t args;
    tpu_err_t err = {0};

    memset(&args, 0, sizeof(args));
    args.local = local;
    tpu__sched_init(s);
    return tpu__reversed(&args, hand_allgather, 1, s, &err);
}

/* A flow as worked by hand: its ends, step, reduction and dependency list. */
typedef struct want {
    int src, dst, step, reduce, ndeps;
    int32_t deps[2];
} want_t;

/* The psum's eight flows, in order. */
static void check_flows(const tpu_sched_t *s, const want_t *want)
{
    int i, k;

    assert_int_equal(s->nflows, 8);
    for (i = 0; i < 8; i++) {
        const tpu_flow_t *f = &s->flows[i];

        assert_int_equal(f->src, want[i].src);
        assert_int_equal(f->dst, want[i].dst);
        assert_int_equal(f->step, want[i].step);
        assert_int_equal(f->reduce, want[i].reduce);
        assert_int_equal(f->ndeps, want[i].ndeps);
        for (k = 0; k < want[i].ndeps; k++) {
            assert_int_equal(s->deps[f->dep_first + k], want[i].deps[k]);
        }
    }
}

static void test_psum_by_hand(void **state)
{
    /* The reduce-scatter: B', then A' after B', C', D' (the order of the all-gather's
     * step); the gather: A after A' (into chip 0), C and D after C' and D', B after A. */
    static const want_t want[8] = {
        {2, 1, 0, 1, 0, {0}},    {1, 0, 1, 1, 1, {0}}, {1, 2, 1, 1, 0, {0}},
        {0, 2, 1, 1, 0, {0}},    {0, 1, 2, 0, 1, {1}}, {2, 1, 2, 0, 2, {2, 3}},
        {2, 0, 2, 0, 2, {2, 3}}, {1, 2, 3, 0, 1, {4}},
    };
    tpu_sched_t s;

    (void)state;
    assert_int_equal(psum(&s, NULL), TPU_OK);
    assert_int_equal(s.nsteps, 4);
    assert_int_equal(s.barrier, 2);
    check_flows(&s, want);
    /* Turned round: the spans' ends swapped, the axis order z, y, x, the other way. */
    assert_int_equal(s.flows[2].span.off, 116);
    assert_int_equal(s.flows[2].span.dst_off, 16);
    assert_int_equal(s.flows[2].order, 5);
    assert_int_equal(s.flows[2].tie, -1);
    assert_int_equal(s.flows[7].span.off, 0);
    assert_int_equal(s.flows[7].span.dst_off, 100);
    /* C and D read one list: 1 + 1 + 2 + 1 dependencies in all. */
    assert_int_equal(s.flows[5].dep_first, s.flows[6].dep_first);
    assert_true(s.shared_deps);
    assert_int_equal(s.ndeps, 5);
    tpu__sched_fini(&s);
}

static void test_psum_local(void **state)
{
    /* Chip 0's gather flow waits for A'; chip 2's (not marked) for nothing; B for A. */
    static const want_t want[8] = {
        {2, 1, 0, 1, 0, {0}}, {1, 0, 1, 1, 1, {0}}, {1, 2, 1, 1, 0, {0}}, {0, 2, 1, 1, 0, {0}},
        {0, 1, 2, 0, 1, {1}}, {2, 1, 2, 0, 0, {0}}, {2, 0, 2, 0, 0, {0}}, {1, 2, 3, 0, 1, {4}},
    };
    const uint8_t local[3] = {1, 0, 0};
    tpu_sched_t s;

    (void)state;
    assert_int_equal(psum(&s, local), TPU_OK);
    check_flows(&s, want);
    assert_int_equal(s.ndeps, 3);
    tpu__sched_fini(&s);
}

/* The reduce-scatter alone (tpu__sched_reverse_in_place()) is the psum's first half. */
static void test_reverse_is_first_half(void **state)
{
    tpu_sched_t ps, rs;
    int i;

    (void)state;
    build_allgather(&rs);
    assert_int_equal(psum(&ps, NULL), TPU_OK);
    assert_int_equal(tpu__sched_reverse_in_place(&rs), TPU_OK);
    assert_int_equal(rs.nflows, 4);
    assert_int_equal(rs.nsteps, 2);
    assert_int_equal(rs.barrier, 0);
    for (i = 0; i < 4; i++) {
        const tpu_flow_t *f = &rs.flows[i], *g = &ps.flows[i];

        assert_int_equal(f->src, g->src);
        assert_int_equal(f->dst, g->dst);
        assert_int_equal(f->step, g->step);
        assert_int_equal(f->reduce, g->reduce);
        assert_int_equal(f->order, g->order);
        assert_int_equal(f->tie, g->tie);
        assert_int_equal(f->span.off, g->span.off);
        assert_int_equal(f->span.dst_off, g->span.dst_off);
        assert_int_equal(f->ndeps, g->ndeps);
        assert_int_equal(f->dep_first, g->dep_first);
    }
    assert_int_equal(rs.ndeps, 1);
    assert_int_equal(rs.deps[0], ps.deps[0]);
    tpu__sched_fini(&ps);
    tpu__sched_fini(&rs);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_psum_by_hand),
        cmocka_unit_test(test_psum_local),
        cmocka_unit_test(test_reverse_is_first_half),
    };

    return tpu_test_main(argc, argv, "sched_psum", tests, sizeof tests / sizeof tests[0]);
}
