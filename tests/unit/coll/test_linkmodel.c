/*
 * The link model itself (collectives/linkmodel.c), on schedules written by hand
 * and times computed by hand in the comments: two flows sharing a link, time
 * overlap (two flows on one link at different times do not slow each other),
 * every idle gap a later step can fill (no cap on the busy intervals kept), a
 * pipelined chain, the message start cost (batches and streams), the reduction
 * on the VPU, a DCN NIC shared by a host's chips, a cross-slice transfer at the
 * per-chip DCN bandwidth, and the calibrated mode against the book's three
 * measurements (issue 13 items 1-4).
 *
 * The constants are chosen for easy arithmetic: ici_bw 2e9 B/s both directions,
 * so one direction carries 1e9 B/s and 1000 bytes take 1 us; 1 us per hop.
 */
#include "tpu/chip.h"
#include "tpu/coll.h"
#include "tpu/fault.h"
#include "tpu/topo.h"

#include "schedule.h"
#include "test_coll.h"
#include "test_main.h"
#include "timing.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

static tpu_link_model_t easy_link(void)
{
    return tpu_test_easy_link();
}

static void line(tpu_topo_t *t, int n, int slices)
{
    int dims[TPU_MAX_AXES] = {n, 1, 1}, wrap[TPU_MAX_AXES] = {0, 0, 0};

    assert_int_equal(tpu_topo_init(t, 1, dims, wrap, slices, NULL), TPU_OK);
}

/* An empty schedule, to fill with add() and time (and free) with time_us(). */
static void sched_begin(tpu_plan_sched_t *ps)
{
    memset(ps, 0, sizeof(*ps));
    tpu__sched_init(&ps->s);
}

/* Add flow src->dst of 'bytes' at 'step' of 'stream' after the flows in deps[0..ndeps). */
static int64_t add_s(tpu_sched_t *s, int src, int dst, int step, int64_t bytes, int reduce,
                     int kind, const int32_t *deps, int ndeps, int stream)
{
    tpu_flow_t f;
    int64_t i;

    memset(&f, 0, sizeof(f));
    f.stream = stream;
    f.src = src;
    f.dst = dst;
    f.step = step;
    f.reduce = (uint8_t)reduce;
    f.kind = (uint8_t)kind;
    f.tie = 1;
    f.span.len = bytes;
    f.span.count[0] = f.span.count[1] = f.span.count[2] = 1;
    i = tpu__sched_add(s, &f);
    assert_true(i >= 0);
    if (ndeps > 0) {
        assert_int_equal(tpu__sched_add_deps(s, i, deps, ndeps), TPU_OK);
    }
    return i;
}

static int64_t add(tpu_sched_t *s, int src, int dst, int step, int64_t bytes, int reduce, int kind,
                   const int32_t *deps, int ndeps)
{
    return add_s(s, src, dst, step, bytes, reduce, kind, deps, ndeps, 0);
}

/* The modeled time of the schedule in microseconds. */
static double time_us(const tpu_topo_t *t, const tpu_link_model_t *l, tpu_plan_sched_t *ps)
{
    double sec = -1;

    ps->rep = -1;
    assert_int_equal(tpu__plan_sched_index(ps), TPU_OK);
    assert_int_equal(tpu__time_schedule(t, l, ps, &sec, NULL), TPU_OK);
    tpu__plan_sched_fini(ps);
    return sec * 1e6;
}

static void near(double got, double want)
{
    if (fabs(got - want) > 1e-9 * (1 + want)) {
        fail_msg("got %.12f us, want %.12f us", got, want);
    }
}

/*
 * Line 0-1-2.  A: 0->2 (2 hops), B: 1->2 (1 hop), 1000 bytes each, together.
 * Link 1->2 carries both: 2000 B at 1e9 B/s = 2 us.
 *   A: 2 hops x 1 us + max(1 us on 0->1, 2 us on 1->2) = 4 us
 *   B: 1 hop + 2 us = 3 us                           -> the collective: 4 us.
 */
static void test_two_flows_share_a_link(void **state)
{
    tpu_link_model_t l = easy_link();
    tpu_plan_sched_t ps;
    tpu_topo_t t;

    (void)state;
    line(&t, 3, 1);
    sched_begin(&ps);
    add(&ps.s, 0, 2, 0, 1000, 0, TPU_ROUTE_ICI, NULL, 0);
    add(&ps.s, 1, 2, 0, 1000, 0, TPU_ROUTE_ICI, NULL, 0);
    near(time_us(&t, &l, &ps), 4.0);
}

/*
 * Time overlap.  X: 0->1 at step 0 arrives at 1 + 1 = 2 us.  In step 1, Y: 1->2
 * after X (starts at 2 us) and Z: 1->2 with its data there at 0 us share link
 * 1->2, but Z is on it during [0, 1) and Y during [2, 3): they do not overlap, so
 * neither slows the other: Z arrives at 0 + 1 + 1 = 2 us, Y at 2 + 1 + 1 = 4 us.
 * (Sharing by step would give Y 2 + 1 + 2000 B / 1e9 = 5 us.)
 */
static void test_no_overlap_no_slowdown(void **state)
{
    tpu_link_model_t l = easy_link();
    tpu_plan_sched_t ps;
    tpu_topo_t t;
    int32_t x;

    (void)state;
    line(&t, 3, 1);
    sched_begin(&ps);
    x = (int32_t)add(&ps.s, 0, 1, 0, 1000, 0, TPU_ROUTE_ICI, NULL, 0);
    add(&ps.s, 1, 2, 1, 1000, 0, TPU_ROUTE_ICI, &x, 1);
    add(&ps.s, 1, 2, 1, 1000, 0, TPU_ROUTE_ICI, NULL, 0);
    near(time_us(&t, &l, &ps), 4.0);
}

/*
 * Every idle gap is kept, however many there are.  Line 0-1-2.  A chain C_0 ..
 * C_9 of 1000 B blocks 2->1, C_i at step i after C_(i-1): each starts when the
 * bytes of the one before are through, so C_i's bytes run [i, i + 1), and its
 * chain of hops is i + 1 us.  Chip 1 forwards 500 B of each to chip 0, G_i at
 * step i + 1 after C_i: link 1->0 is busy [i + 1, i + 1.5), ten intervals [1,
 * 1.5), [2, 2.5), ... [10, 10.5) with gaps of 0.5 us between them; G_9's chain
 * is 11 hops.  Last, at step 11, Z: chip 1's own 30000 B to chip 0 (30 us of
 * link), its data there at 0: it fills the idle time of link 1->0 from 0 on, 1
 * us before the first interval and 9 gaps of 0.5 (5.5 us by 10.5), the rest
 * after: its bytes are through at 10.5 + 24.5 = 35 us.  The collective: the
 * bytes' 35 us plus the longest chain, 11 us: 46 us.  (Keeping only the last 8
 * intervals merged the oldest ones and counted two of the gaps as busy: Z's
 * bytes through at 36, 47 us.)
 */
static void test_many_gaps(void **state)
{
    tpu_link_model_t l = easy_link();
    tpu_plan_sched_t ps;
    tpu_topo_t t;
    int32_t c[10];
    int i;

    (void)state;
    line(&t, 3, 1);
    sched_begin(&ps);
    for (i = 0; i < 10; i++) {
        c[i] = (int32_t)add(&ps.s, 2, 1, i, 1000, 0, TPU_ROUTE_ICI, i > 0 ? &c[i - 1] : NULL,
                            i > 0 ? 1 : 0);
        add(&ps.s, 1, 0, i + 1, 500, 0, TPU_ROUTE_ICI, &c[i], 1);
    }
    add(&ps.s, 1, 0, 11, 30000, 0, TPU_ROUTE_ICI, NULL, 0);
    near(time_us(&t, &l, &ps), 46.0);
}

/* Two chunks c0, c1 of 'bytes' down the line 0->1->2->3, forwarded hop by hop. */
static void chain(tpu_plan_sched_t *ps, int64_t bytes)
{
    int32_t c0h0, c1h0, c0h1, c1h1;

    sched_begin(ps);
    c0h0 = (int32_t)add(&ps->s, 0, 1, 0, bytes, 0, TPU_ROUTE_ICI, NULL, 0);
    c1h0 = (int32_t)add(&ps->s, 0, 1, 1, bytes, 0, TPU_ROUTE_ICI, NULL, 0);
    c0h1 = (int32_t)add(&ps->s, 1, 2, 1, bytes, 0, TPU_ROUTE_ICI, &c0h0, 1);
    c1h1 = (int32_t)add(&ps->s, 1, 2, 2, bytes, 0, TPU_ROUTE_ICI, &c1h0, 1);
    add(&ps->s, 2, 3, 2, bytes, 0, TPU_ROUTE_ICI, &c0h1, 1);
    add(&ps->s, 2, 3, 3, bytes, 0, TPU_ROUTE_ICI, &c1h1, 1);
}

/*
 * The pipelined chain.  The walk times the bytes (a flow's "links" time: when its
 * bytes are through its links) and, apart, each flow's chain of latencies (its
 * own hop and its dependencies': 1, 2, 3 us for hops 0, 1, 2); the collective
 * takes the latest bytes plus the longest chain.  1000 B, no message cost:
 *   c0h0 [0, 1]    c1h0 waits for its port: [1, 2]
 *   c0h1 [1, 2]    c1h1 [2, 3]    c0h2 [2, 3]    c1h2 [3, 4]  -> 4 + 3 = 7 us.
 * With a message start of 0.5 us a port's DMA engine starts one batch at a time,
 * in real time (bytes' time + the chain before): c1h0's start waits for c0h0's
 * ([0, 0.5]) but its link is busy until 1 anyway, and every later start finds
 * its engine idle: 7 us again.
 * 100 B chunks (0.1 us of bytes), no message cost: c0h0 [0, .1], c1h0 [.1, .2],
 * c0h1 [.1, .2], c1h1 [.2, .3], c0h2 [.2, .3], c1h2 [.3, .4] -> .4 + 3 = 3.4 us.
 * With 0.5 us starts: c1h0's start waits until .5, .4 us longer than for its
 * link (free at .1): that wait is latency on its chain (1.4 us); c1h1 (ready in
 * real time at .2 + 1.4 = 1.6, when c0h1's start [1.1, 1.6] is done) and c1h2
 * (at 2.7, after c0h2's [2.2, 2.7]) do not wait: the longest chain is c1h2's
 * 3.4 us: .4 + 3.4 = 3.8 us, the second chunk paying one start, once.
 */
static void test_pipelined_chain_and_message_cost(void **state)
{
    tpu_link_model_t l = easy_link();
    tpu_plan_sched_t ps;
    tpu_topo_t t;

    (void)state;
    line(&t, 4, 1);
    chain(&ps, 1000);
    near(time_us(&t, &l, &ps), 7.0);
    chain(&ps, 100);
    near(time_us(&t, &l, &ps), 3.4);
    l.msg_cost = 0.5e-6;
    chain(&ps, 1000);
    near(time_us(&t, &l, &ps), 7.0);
    chain(&ps, 100);
    near(time_us(&t, &l, &ps), 3.8);
}

/*
 * Message starts, 0.5 us each: chip 0 sends A (to chip 1) and B (to chip 2) over
 * its port 0->1, both ready at 0.  The collective takes the bytes' time plus the
 * longest chain of latencies (here B's 2 hops, and what its start waited).
 *   1000 B each, one step (one batch, one start, inside the hop latency): link
 *     0->1 carries 2000 B from 0: 2 us + 2 hops = 4 us;
 *   B a step later (its own batch: its start waits for A's until 0.5): link 0->1
 *     serves A over [0, 1), B over [1, 2): B waited for the link longer than for
 *     its start, which is hidden: 2 + 2 = 4 us;
 *   100 B each, one step: 200 B by 0.2: 0.2 + 2 = 2.2 us;
 *   B a step later: A [0, .1), B [.1, .2) on the link, but its start waited until
 *     .5, .4 us more than the link: its chain is 2.4 us: 0.2 + 2.4 = 2.6 us.
 */
static void test_message_batches(void **state)
{
    static const int64_t bytes[2] = {1000, 100};
    static const double want[2][2] = {{4.0, 4.0}, {2.2, 2.6}};
    tpu_link_model_t l = easy_link();
    tpu_plan_sched_t ps;
    tpu_topo_t t;
    int later, b;

    (void)state;
    l.msg_cost = 0.5e-6;
    line(&t, 3, 1);
    for (b = 0; b < 2; b++) {
        for (later = 0; later < 2; later++) {
            sched_begin(&ps);
            add(&ps.s, 0, 1, 0, bytes[b], 0, TPU_ROUTE_ICI, NULL, 0);
            add(&ps.s, 0, 2, later, bytes[b], 0, TPU_ROUTE_ICI, NULL, 0);
            near(time_us(&t, &l, &ps), want[b][later]);
        }
    }
}

/*
 * Processor sharing: flows of unequal size that start together each get an
 * equal share, so the smaller is through first.  Line 0-1-2: A 0->1 of 1000 B
 * and B 0->1 of 2000 B at once, C 1->2 of 1000 B after A.  Link 0->1: both at
 * half the rate until A is through at 2 (1000 B each), then B alone until 3.
 * A: 2 + 1 = 3 us, B: 3 + 1 = 4 us; C starts at 2 (links time): [2, 3] -> 3 + 2
 * hops = 5 us, the collective.  (Giving A the pair's whole 3 us, as the model did
 * before, made C 6 us.)
 */
static void test_unequal_sharing(void **state)
{
    tpu_link_model_t l = easy_link();
    tpu_plan_sched_t ps;
    tpu_topo_t t;
    int32_t a;

    (void)state;
    line(&t, 3, 1);
    sched_begin(&ps);
    a = (int32_t)add(&ps.s, 0, 1, 0, 1000, 0, TPU_ROUTE_ICI, NULL, 0);
    add(&ps.s, 0, 1, 0, 2000, 0, TPU_ROUTE_ICI, NULL, 0);
    add(&ps.s, 1, 2, 1, 1000, 0, TPU_ROUTE_ICI, &a, 1);
    near(time_us(&t, &l, &ps), 5.0);
}

/*
 * Two flows of one step that reach a link at different times, both held back by
 * an earlier step's work, share the link once it is free: the link never carries
 * more than its bandwidth.  Line 0-1-2, on link 0->1 a chain T1 (1200 B), T2
 * (300 B), T3 (1000 B): links times 1.2, 1.5, 2.5, chains of 1, 2, 3 hops.  Link
 * 1->2 is busy with P1 (1000 B, step 0) over [0, 1] and P2 (1500 B after T2,
 * step 2) over [1.5, 3].  Step 3: A (1000 B after T1) is ready at 1.2, B (1000 B
 * after T3) at 2.5.  A runs [1.2, 1.5] (300 B) and waits for P2; at 3 A (700 B
 * left) and B share: A is through at 3 + 2 x 0.7 = 4.4, B (700 B done by then)
 * at 4.7.  B: 4.7 + 4 hops = 8.7 us, the collective (A: 4.4 + 2 = 6.4).
 * (Timing each flow alone into the link's idle time gave A [3, 3.7] and B [3, 4]
 * at full rate each: 1.7 us of work in 1 us, and B 8 us.)
 */
static void test_share_after_wait(void **state)
{
    tpu_link_model_t l = easy_link();
    tpu_plan_sched_t ps;
    tpu_topo_t t;
    int32_t t1, t2, t3;

    (void)state;
    line(&t, 3, 1);
    sched_begin(&ps);
    t1 = (int32_t)add(&ps.s, 0, 1, 0, 1200, 0, TPU_ROUTE_ICI, NULL, 0);
    add(&ps.s, 1, 2, 0, 1000, 0, TPU_ROUTE_ICI, NULL, 0);
    t2 = (int32_t)add(&ps.s, 0, 1, 1, 300, 0, TPU_ROUTE_ICI, &t1, 1);
    t3 = (int32_t)add(&ps.s, 0, 1, 2, 1000, 0, TPU_ROUTE_ICI, &t2, 1);
    add(&ps.s, 1, 2, 2, 1500, 0, TPU_ROUTE_ICI, &t2, 1);
    add(&ps.s, 1, 2, 3, 1000, 0, TPU_ROUTE_ICI, &t1, 1);
    add(&ps.s, 1, 2, 3, 1000, 0, TPU_ROUTE_ICI, &t3, 1);
    near(time_us(&t, &l, &ps), 8.7);
}

/*
 * A link idle between two flows of one step stays free for a later step.  Line
 * 0-1-2: T 0->1 (5000 B) arrives at 5 (links time), U 2->1 (2000 B) at 2.  Step
 * 1 on link 1->2: A (1000 B, ready at 0) over [0, 1] and B (1000 B after T) over
 * [5, 6]; the link is idle in between.  Step 2: C (3000 B after U) fills [2, 5]:
 * 5 + 2 hops = 7 us; B: 6 + 2 = 8 us, the collective.  (Counting [0, 6] as busy
 * would hold C until 6: 9 + 2 = 11 us.)
 */
static void test_idle_between_flows(void **state)
{
    tpu_link_model_t l = easy_link();
    tpu_plan_sched_t ps;
    tpu_topo_t t;
    int32_t tt, u;

    (void)state;
    line(&t, 3, 1);
    sched_begin(&ps);
    tt = (int32_t)add(&ps.s, 0, 1, 0, 5000, 0, TPU_ROUTE_ICI, NULL, 0);
    u = (int32_t)add(&ps.s, 2, 1, 0, 2000, 0, TPU_ROUTE_ICI, NULL, 0);
    add(&ps.s, 1, 2, 1, 1000, 0, TPU_ROUTE_ICI, NULL, 0);
    add(&ps.s, 1, 2, 1, 1000, 0, TPU_ROUTE_ICI, &tt, 1);
    add(&ps.s, 1, 2, 2, 3000, 0, TPU_ROUTE_ICI, &u, 1);
    near(time_us(&t, &l, &ps), 8.0);
}

/*
 * Reductions on the VPU at 5e8 B/s (1000 B take 2 us), as the bytes arrive:
 *   one flow 0->1 of 1000 B: 1 hop + max(1 us link, 2 us VPU) = 3 us;
 *   0->1 and 2->1 together: each link 1 us, chip 1's VPU 2000 B = 4 us: 1 + 4 = 5 us.
 * Without the reduction (a copy) the pair takes 1 + 1 = 2 us.
 */
static void test_reduction_cost(void **state)
{
    tpu_link_model_t l = easy_link();
    tpu_plan_sched_t ps;
    tpu_topo_t t;

    (void)state;
    l.reduce_bw = 5e8;
    line(&t, 3, 1);
    sched_begin(&ps);
    add(&ps.s, 0, 1, 0, 1000, 1, TPU_ROUTE_ICI, NULL, 0);
    near(time_us(&t, &l, &ps), 3.0);
    sched_begin(&ps);
    add(&ps.s, 0, 1, 0, 1000, 1, TPU_ROUTE_ICI, NULL, 0);
    add(&ps.s, 2, 1, 0, 1000, 1, TPU_ROUTE_ICI, NULL, 0);
    near(time_us(&t, &l, &ps), 5.0);
    sched_begin(&ps);
    add(&ps.s, 0, 1, 0, 1000, 0, TPU_ROUTE_ICI, NULL, 0);
    add(&ps.s, 2, 1, 0, 1000, 0, TPU_ROUTE_ICI, NULL, 0);
    near(time_us(&t, &l, &ps), 2.0);
}

/* Every chip of slice 0 (one host of 4 chips) sends 1000 B to its twin in slice 1. */
static void dcn_all(tpu_plan_sched_t *ps, int nsend)
{
    int c;

    sched_begin(ps);
    for (c = 0; c < nsend; c++) {
        add(&ps->s, c, 4 + c, 0, 1000, 0, TPU_ROUTE_DCN, NULL, 0);
    }
}

/*
 * DCN path: chip -> PCIe/host port (min(1e10, dcn_bw 1e9) = 1e9 B/s, 1 us) ->
 * host NIC -> network (10 us) -> NIC -> host port -> chip.
 *   one chip alone: 10 + 1 us = 11 us: the per-chip DCN bandwidth, not the NIC's;
 *   4 chips, NIC 4 x 1e9 (default): NIC 4000 B / 4e9 = 1 us: 11 us;
 *   4 chips, NIC 2e9 (shared, slower): 4000 B / 2e9 = 2 us: 12 us;
 *   PCIe 5e8 (slower than DCN): 1000 B / 5e8 = 2 us: 12 us.
 */
static void test_dcn_host_path(void **state)
{
    tpu_link_model_t l = easy_link();
    tpu_plan_sched_t ps;
    tpu_topo_t t;

    (void)state;
    l.host_dims[0] = 4;
    line(&t, 4, 2);
    dcn_all(&ps, 1);
    near(time_us(&t, &l, &ps), 11.0);
    dcn_all(&ps, 4);
    near(time_us(&t, &l, &ps), 11.0);
    l.nic_bw = 2e9;
    dcn_all(&ps, 4);
    near(time_us(&t, &l, &ps), 12.0);
    l.nic_bw = 0;
    l.pcie_bw = 5e8;
    dcn_all(&ps, 1);
    near(time_us(&t, &l, &ps), 12.0);
}

/*
 * A cross-slice p2p on v5e through the library: 16 MiB at the per-chip DCN
 * bandwidth 3.125e9 B/s = 5368.709 us, + 10 us DCN latency = 5378.709 us (the
 * message's start is in its latency; before the host path it came out 3.7-7x
 * faster, at the host NIC's 8 x 3.125e9 B/s).
 */
static void test_cross_slice_p2p(void **state)
{
    tpu_chip_spec_t chip;
    tpu_link_model_t link;
    tpu_topo_t t;
    tpu_coll_desc_t d;
    tpu_coll_plan_t *p = NULL;
    tpu_coll_result_t r;
    int dims[TPU_MAX_AXES] = {4, 4, 1}, wrap[TPU_MAX_AXES] = {0, 0, 0};

    (void)state;
    assert_int_equal(tpu_chip_preset("v5e", &chip, NULL), TPU_OK);
    tpu_chip_link_model(&chip, &link);
    assert_int_equal(tpu_topo_init(&t, 2, dims, wrap, 2, NULL), TPU_OK);
    tpu_coll_desc_init(&d);
    d.kind = TPU_COLL_P2P;
    d.bytes = 16777216;
    d.src = 0;
    d.dst = 16;
    assert_int_equal(tpu_coll_plan_create(&t, &link, &d, &p, NULL), TPU_OK);
    assert_int_equal(tpu_coll_plan_model(p, &r, NULL), TPU_OK);
    tpu_coll_plan_destroy(p);
    near(r.modeled_us, 16777216 / 3.125e9 * 1e6 + 10);
}

/*
 * tpu_coll_plan_model_link(): the plan's schedule timed with other constants, one
 * walk.  A ppermute by one around a ring of 4 chips, 1000 bytes: each chip
 * sends one message one hop, every link of the + direction carries 1000 bytes.  With the easy link
 * (1e9 B/s a direction, 1 us a hop): 1 + 1 = 2 us.  At ICI efficiency 0.5 and a
 * launch cost of 3 us: 1 us + 1000 / 0.5e9 = 2 us + 3 us = 6 us.  The plan's own
 * constants give what tpu_coll_plan_model() gives; other faults are refused.
 */
static void test_model_with_other_constants(void **state)
{
    tpu_link_model_t link = easy_link(), slow;
    tpu_topo_t t;
    tpu_coll_desc_t d;
    tpu_coll_plan_t *p = NULL;
    tpu_coll_result_t r, own;
    tpu_faults_t *faults = NULL;
    tpu_err_t err = {0};
    int dims[TPU_MAX_AXES] = {4, 1, 1}, wrap[TPU_MAX_AXES] = {1, 0, 0};

    (void)state;
    assert_int_equal(tpu_topo_init(&t, 1, dims, wrap, 1, NULL), TPU_OK);
    tpu_coll_desc_init(&d);
    d.kind = TPU_COLL_PPERMUTE;
    d.axes = 1;
    d.shift = 1;
    d.bytes = 1000;
    d.dtype = TPU_DTYPE_I32;
    assert_int_equal(tpu_coll_plan_create(&t, &link, &d, &p, NULL), TPU_OK);
    assert_int_equal(tpu_coll_plan_model(p, &own, NULL), TPU_OK);
    near(own.modeled_us, 2.0);
    assert_int_equal(tpu_coll_plan_model_link(p, &link, &r, NULL), TPU_OK);
    assert_true(r.modeled_us == own.modeled_us);
    assert_int_equal(r.flows, own.flows);
    slow = link;
    slow.ici_efficiency = 0.5;
    slow.launch = 3e-6;
    assert_int_equal(tpu_coll_plan_model_link(p, &slow, &r, NULL), TPU_OK);
    near(r.modeled_us, 6.0);
    assert_string_equal(r.algorithm, own.algorithm);
    assert_int_equal(tpu_faults_create(&t, link.host_dims, NULL, 0, &faults, NULL), TPU_OK);
    slow.faults = faults;
    assert_int_equal(tpu_coll_plan_model_link(p, &slow, &r, &err), TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "faults"));
    tpu_faults_destroy(faults);
    tpu_coll_plan_destroy(p);
}

/* Model an all-gather or ppermute on v5e with the calibrated constants. */
static double v5e_calibrated(const char *shape, const char *axes, tpu_coll_kind_t kind,
                             uint64_t bytes)
{
    tpu_chip_spec_t chip;
    tpu_link_model_t link;
    tpu_topo_t t;
    tpu_coll_desc_t d;
    tpu_coll_plan_t *p = NULL;
    tpu_coll_result_t r;
    int dims[TPU_MAX_AXES], wrap[TPU_MAX_AXES], na;

    assert_int_equal(tpu_chip_preset("v5e", &chip, NULL), TPU_OK);
    tpu_chip_link_model(&chip, &link);
    tpu_link_model_calibrate(&link);
    assert_int_equal(tpu_topo_parse_shape(shape, dims, &na, NULL), TPU_OK);
    tpu_topo_wrap_auto(chip.wrap_rule, na, dims, wrap);
    assert_int_equal(tpu_topo_init(&t, na, dims, wrap, 1, NULL), TPU_OK);
    tpu_coll_desc_init(&d);
    d.kind = kind;
    d.shift = 1;
    d.dtype = TPU_DTYPE_BF16;
    d.bytes = bytes;
    assert_int_equal(tpu_topo_parse_axes(&t, axes, &d.axes, NULL), TPU_OK);
    assert_int_equal(tpu_coll_plan_create(&t, &link, &d, &p, NULL), TPU_OK);
    assert_int_equal(tpu_coll_plan_model(p, &r, NULL), TPU_OK);
    tpu_coll_plan_destroy(p);
    return r.modeled_us;
}

/* Line of 40 chips, msg_cost 0.5 us, 1000-byte one-hop flows: step 0 every + link
 * in port order, step 1 two flows out of port order, step 2 thirty - links in
 * the order given ('descending' or not).  See test_engine_sort_reuse. */
static double engine_steps_us(int descending)
{
    tpu_link_model_t l = easy_link();
    tpu_plan_sched_t ps;
    tpu_topo_t t;
    int i;

    l.msg_cost = 0.5e-6;
    line(&t, 40, 1);
    sched_begin(&ps);
    for (i = 0; i < 39; i++) {
        add(&ps.s, i, i + 1, 0, 1000, 0, TPU_ROUTE_ICI, NULL, 0);
    }
    add(&ps.s, 5, 6, 1, 1000, 0, TPU_ROUTE_ICI, NULL, 0);
    add(&ps.s, 1, 2, 1, 1000, 0, TPU_ROUTE_ICI, NULL, 0);
    for (i = 0; i < 30; i++) {
        int j = descending ? 29 - i : i;

        add(&ps.s, j + 1, j, 2, 1000, 0, TPU_ROUTE_ICI, NULL, 0);
    }
    return time_us(&t, &l, &ps);
}

/*
 * The message starts' sort keeps its scratch from step to step: a step already
 * in order (39 engines), a small unsorted one, then a larger unsorted one on 30
 * engines.  The engines' group table once kept the size of the small step while
 * the buffer beside it grew, and the third step wrote past its end (AddressSanitizer
 * in check.sh sees it); the sort's result must not depend on the order the flows
 * come in.  By hand: no flow shares a link with another of its step, and every
 * step's flows are ready at 0.  Link 5->6 carries step 0's flow over [0, 1] and
 * step 1's over [1, 2] (its engine, busy with step 0's start over [0, 0.5],
 * starts it at 0.5, within its wait for the link: no latency added), plus one
 * hop: 3 us, the collective (step 2's flows, on free - links: 1 + 1 hop).
 */
static void test_engine_sort_reuse(void **state)
{
    (void)state;
    near(engine_steps_us(1), engine_steps_us(0));
    near(engine_steps_us(1), 3.0);
}

/*
 * The scaling book's v5e measurements ("Sharded Matrices", pop quiz 2, and the
 * all-gather bandwidth plot), each within 10% in the calibrated mode:
 *   {X:8, Y:4} all-gather of bf16[2048, 8192] over Y: 680 us;
 *   the same with E = F = 256 (bf16[256, 256], 128 KiB): ~8 us;
 *   v5e 8x16: ~95% of peak unidirectional bandwidth (4.5e10 B/s) at ~10 MB,
 *   here a 10 MB shift to the neighbour over the wrapped 16-chip axis.
 */
static void test_calibrated_measurements(void **state)
{
    double big, small, shift, frac;

    (void)state;
    big = v5e_calibrated("8x4", "y", TPU_COLL_ALL_GATHER, 2048ull * 8192 * 2);
    small = v5e_calibrated("8x4", "y", TPU_COLL_ALL_GATHER, 256ull * 256 * 2);
    shift = v5e_calibrated("8x16", "y", TPU_COLL_PPERMUTE, 10000000);
    frac = 10e6 / (shift * 1e-6) / 4.5e10;
    printf("calibrated: 680 us -> %.1f us (%+.1f%%), 8 us -> %.2f us (%+.1f%%), 95%% -> %.1f%% "
           "(%+.1f%%)\n",
           big, 100 * (big / 680 - 1), small, 100 * (small / 8 - 1), 100 * frac,
           100 * (frac / 0.95 - 1));
    assert_true(fabs(big / 680 - 1) < 0.10);
    assert_true(fabs(small / 8 - 1) < 0.10);
    assert_true(fabs(frac / 0.95 - 1) < 0.10);
}

/* A collective 'algo' over x,y of an open 'nx' x 'ny' pod with easy_link(), f32: its time, or -1
 * when the algorithm refuses the shape (TPU_ERR_UNSUPPORTED). */
static double open_grid_us(int nx, int ny, tpu_coll_kind_t kind, const char *algo, uint64_t bytes)
{
    tpu_link_model_t link = easy_link();
    int dims[TPU_MAX_AXES] = {nx, ny, 1}, wrap[TPU_MAX_AXES] = {0, 0, 0};
    tpu_topo_t t;
    tpu_coll_desc_t d;
    tpu_coll_plan_t *p = NULL;
    tpu_coll_result_t r;
    tpu_err_t err = {0};

    assert_int_equal(tpu_topo_init(&t, 2, dims, wrap, 1, NULL), TPU_OK);
    tpu_coll_desc_init(&d);
    d.kind = kind;
    d.dtype = TPU_DTYPE_F32;
    d.bytes = bytes;
    d.axes = 3u;
    snprintf(d.algo, sizeof(d.algo), "%s", algo);
    if (tpu_coll_plan_create(&t, &link, &d, &p, &err) != TPU_OK) {
        assert_int_equal(err.status, TPU_ERR_UNSUPPORTED);
        return -1;
    }
    assert_int_equal(tpu_coll_plan_model(p, &r, NULL), TPU_OK);
    tpu_coll_plan_destroy(p);
    return r.modeled_us;
}

/*
 * The snake ring (allgather_snake.c) by hand.  2 x 4 open, 8 blocks of B = 4096
 * bytes, links of 1e9 B/s each way, 1 us per hop: the ring (0,1) (1,1) (1,2)
 * ... is 8 one-link hops, no link shared; steps 1-3 move B each way (1 + 4.096
 * us each), step 4 half a block each way (1 + 2.048 us): 18.336 us, which is
 * the formula 7/8 V / W + D alpha with D = 1 + 3.  The reduce-scatter is its
 * time reversal (the same), the psum twice that: 36.672 us.  3 x 3 has an odd
 * number of chips and no Hamiltonian cycle: refused.
 */
static void test_snake_ring_by_hand(void **state)
{
    (void)state;
    near(open_grid_us(2, 4, TPU_COLL_ALL_GATHER, "snake", 8 * 4096), 18.336);
    near(open_grid_us(2, 4, TPU_COLL_REDUCE_SCATTER, "snake", 8 * 4096), 18.336);
    near(open_grid_us(2, 4, TPU_COLL_PSUM, "snake", 8 * 4096), 36.672);
    assert_true(open_grid_us(3, 3, TPU_COLL_ALL_GATHER, "snake", 9 * 4096) < 0);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_flows_share_a_link),
        cmocka_unit_test(test_no_overlap_no_slowdown),
        cmocka_unit_test(test_many_gaps),
        cmocka_unit_test(test_pipelined_chain_and_message_cost),
        cmocka_unit_test(test_message_batches),
        cmocka_unit_test(test_unequal_sharing),
        cmocka_unit_test(test_share_after_wait),
        cmocka_unit_test(test_idle_between_flows),
        cmocka_unit_test(test_engine_sort_reuse),
        cmocka_unit_test(test_reduction_cost),
        cmocka_unit_test(test_dcn_host_path),
        cmocka_unit_test(test_cross_slice_p2p),
        cmocka_unit_test(test_calibrated_measurements),
        cmocka_unit_test(test_snake_ring_by_hand),
        cmocka_unit_test(test_model_with_other_constants),
    };

    return tpu_test_main(argc, argv, "linkmodel", tests, sizeof tests / sizeof tests[0]);
}
