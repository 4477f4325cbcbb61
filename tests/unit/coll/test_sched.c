/*
 * The schedule container (collectives/schedule.c): tpu__sched_reserve() makes room
 * for exactly what it is asked (the amortised doubling is for appends past it),
 * and the torus all-gather reserves exactly the flows it builds, counted by hand:
 * on a ring of n chips (bidirectional) a chip receives 2 * floor(n/2) flows, on an
 * open line of n chips n - 1 (one per other chip, from its side).  Before, the
 * all-gather reserved 2 (n - 1) per open axis: twice its flows on an open mesh.
 */
#include "tpu/coll.h"
#include "tpu/topo.h"

#include "algo.h"
#include "algorithms/allgather_torus.h"
#include "schedule.h"
#include "test_main.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

static void add_flows(tpu_sched_t *s, int n)
{
    tpu_flow_t f;
    int i;

    memset(&f, 0, sizeof(f));
    f.dst = 1;
    for (i = 0; i < n; i++) {
        assert_true(tpu__sched_add(s, &f) >= 0);
    }
}

static void test_reserve_exact(void **state)
{
    tpu_sched_t s;

    (void)state;
    tpu__sched_init(&s);
    assert_int_equal(tpu__sched_reserve(&s, 1000, 500), TPU_OK);
    assert_int_equal(s.cap_flows, 1000);
    assert_int_equal(s.cap_deps, 500);
    add_flows(&s, 10);
    /* Room enough already: nothing moves. */
    assert_int_equal(tpu__sched_reserve(&s, 990, 0), TPU_OK);
    assert_int_equal(s.cap_flows, 1000);
    /* 10 flows + 991 more: 1001, not twice anything. */
    assert_int_equal(tpu__sched_reserve(&s, 991, 0), TPU_OK);
    assert_int_equal(s.cap_flows, 1001);
    assert_int_equal(s.cap_deps, 500);
    /* Appends past the reserve grow by doubling (amortised). */
    add_flows(&s, 991);
    assert_int_equal(s.cap_flows, 1001);
    add_flows(&s, 1);
    assert_int_equal(s.cap_flows, 2002);
    assert_int_equal(s.nflows, 1002);
    tpu__sched_fini(&s);
}

/* The one-order torus all-gather of 'dims' (wrap 'wrap') over every axis: its flows
 * and the room it reserved. */
static void check_allgather(int d0, int d1, int wrap, int64_t want_flows)
{
    int dims[TPU_MAX_AXES] = {d0, d1, 1}, wraps[TPU_MAX_AXES] = {wrap, wrap, 0};
    tpu_topo_t topo;
    tpu_link_model_t link;
    tpu_coll_desc_t desc;
    tpu_algo_args_t args;
    tpu_sched_t s;
    tpu_err_t err = {0};

    assert_int_equal(tpu_topo_init(&topo, d1 > 1 ? 2 : 1, dims, wraps, 1, NULL), TPU_OK);
    memset(&link, 0, sizeof(link));
    link.ici_bw = 2e9;
    link.ici_latency = 1e-6;
    link.ici_efficiency = 1;
    link.host_dims[0] = link.host_dims[1] = link.host_dims[2] = 1;
    memset(&desc, 0, sizeof(desc));
    desc.kind = TPU_COLL_ALL_GATHER;
    memset(&args, 0, sizeof(args));
    args.topo = &topo;
    args.link = &link;
    args.desc = &desc;
    args.mask = d1 > 1 ? 3u : 1u;
    args.group = d0 * d1;
    args.shard = 4096;
    args.elem = 4;
    args.chunks = 1;
    args.rep = -1;
    tpu__sched_init(&s);
    assert_int_equal(tpu__allgather_phases(&args, 1, &s, &err), TPU_OK);
    assert_int_equal(s.nflows, want_flows);
    assert_int_equal(s.cap_flows, s.nflows);
    tpu__sched_fini(&s);
}

static void test_allgather_reserves_what_it_builds(void **state)
{
    (void)state;
    /* Open line of 4: each chip receives 3 flows; 4 chips. */
    check_allgather(4, 1, 0, 4 * 3);
    /* Open line of 5: 5 x 4. */
    check_allgather(5, 1, 0, 5 * 4);
    /* Ring of 4: 2 steps, two flows each (the last step's block in halves): 4 x 4. */
    check_allgather(4, 1, 1, 4 * 4);
    /* Ring of 5: 2 steps of two flows: 5 x 4. */
    check_allgather(5, 1, 1, 5 * 4);
    /* Open 4x4 over x,y: 3 + 3 flows per chip, 16 chips. */
    check_allgather(4, 4, 0, 16 * 6);
    /* Open 3x5: 2 + 4 per chip, 15 chips. */
    check_allgather(3, 5, 0, 15 * 6);
    /* Torus 4x4: 4 + 4 per chip. */
    check_allgather(4, 4, 1, 16 * 8);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reserve_exact),
        cmocka_unit_test(test_allgather_reserves_what_it_builds),
    };

    return tpu_test_main(argc, argv, "sched", tests, sizeof tests / sizeof tests[0]);
}
