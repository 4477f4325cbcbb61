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
    tpu_link_model_t l;

    memset(&l, 0, sizeof(l));
    l.ici_bw = 2e9;
    l.ici_latency = 1e-6;
    l.dcn_bw = 1e9;
    l.dcn_latency = 10e-6;
    l.pcie_bw = 1e10;
    l.ici_efficiency = 1;
    l.host_dims[0] = l.host_dims[1] = l.host_dims[2] = 1;
    return l;
}

static void line(tpu_topo_t *t, int n, int slices)
{
    int dims[TPU_MAX_AXES] = {n, 1, 1}, wrap[TPU_MAX_AXES] = {0, 0, 0};

    assert_int_equal(tpu_topo_init(t, 1, dims, wrap, slices, NULL), TPU_OK);
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
    memset(&ps, 0, sizeof(ps));
    tpu__sched_init(&ps.s);
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
    memset(&ps, 0, sizeof(ps));
    tpu__sched_init(&ps.s);
    x = (int32_t)add(&ps.s, 0, 1, 0, 1000, 0, TPU_ROUTE_ICI, NULL, 0);
    add(&ps.s, 1, 2, 1, 1000, 0, TPU_ROUTE_ICI, &x, 1);
    add(&ps.s, 1, 2, 1, 1000, 0, TPU_ROUTE_ICI, NULL, 0);
    near(time_us(&t, &l, &ps), 4.0);
}

/*
 * Every idle gap is kept, however many there are.  Line 0-1-2.  A chain C_0 ..
 * C_9 of 1000 B blocks 2->1, C_i at step i after C_(i-1): each starts when the
 * one before arrives (link 2->1 is free again 1 us after a start), so C_i runs
 * [2i, 2i + 1) and arrives at 2i + 1 + 1 = 2(i + 1) us.  Chip 1 forwards 500 B of
 * each to chip 0, G_i at step i + 1 after C_i: link 1->0 is busy [2(i + 1),
 * 2(i + 1) + 0.5), ten intervals [2, 2.5), [4, 4.5), ... [20, 20.5) with gaps of
 * 1.5 us between them.  Last, at step 11, Z: chip 1's own 30000 B to chip 0 (30
 * us of link), its data there at 0: it fills the gaps of link 1->0 from 0 on,
 * skipping the ten busy halves (5 us) that lie before its work is done, so it
 * finishes at 0 + 30 + 5 = 35 us and arrives at 35 + 1 = 36 us, the end of the
 * collective (G_9 arrives at 20 + 0.5 + 1 = 21.5 us).  (Keeping only the last 8
 * intervals merged [2, 2.5), [4, 4.5) and [6, 6.5) into [2, 6.5) and counted its
 * 3 us of gaps as busy: 39 us.)
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
    memset(&ps, 0, sizeof(ps));
    tpu__sched_init(&ps.s);
    for (i = 0; i < 10; i++) {
        c[i] = (int32_t)add(&ps.s, 2, 1, i, 1000, 0, TPU_ROUTE_ICI, i > 0 ? &c[i - 1] : NULL,
                            i > 0 ? 1 : 0);
        add(&ps.s, 1, 0, i + 1, 500, 0, TPU_ROUTE_ICI, &c[i], 1);
    }
    add(&ps.s, 1, 0, 11, 30000, 0, TPU_ROUTE_ICI, NULL, 0);
    near(time_us(&t, &l, &ps), 36.0);
}

/* Two chunks c0, c1 of 1000 B down the line 0->1->2->3, forwarded hop by hop. */
static void chain(tpu_plan_sched_t *ps)
{
    int32_t c0h0, c1h0, c0h1, c1h1, c0h2;

    memset(ps, 0, sizeof(*ps));
    tpu__sched_init(&ps->s);
    c0h0 = (int32_t)add(&ps->s, 0, 1, 0, 1000, 0, TPU_ROUTE_ICI, NULL, 0);
    c1h0 = (int32_t)add(&ps->s, 0, 1, 1, 1000, 0, TPU_ROUTE_ICI, NULL, 0);
    c0h1 = (int32_t)add(&ps->s, 1, 2, 1, 1000, 0, TPU_ROUTE_ICI, &c0h0, 1);
    c1h1 = (int32_t)add(&ps->s, 1, 2, 2, 1000, 0, TPU_ROUTE_ICI, &c1h0, 1);
    c0h2 = (int32_t)add(&ps->s, 2, 3, 2, 1000, 0, TPU_ROUTE_ICI, &c0h1, 1);
    add(&ps->s, 2, 3, 3, 1000, 0, TPU_ROUTE_ICI, &c1h1, 1);
    (void)c0h2;
}

/*
 * The pipelined chain, no message cost (start, arrival = start + 1 us hop + 1 us
 * of bytes; a port is free again once its bytes have left):
 *   c0h0 0 -> 2   (port 0->1 free at 1)
 *   c1h0 1 -> 3   (waits for the port)     c0h1 2 -> 4   (port 1->2 free at 3)
 *   c1h1 3 -> 5   (port 1->2 free at 4)    c0h2 4 -> 6   (port 2->3 free at 5)
 *   c1h2 5 -> 7                                          -> 7 us.
 * With a message start of 0.5 us a port carries each message for 1.5 us (its
 * arrival is still start + 1 us hop + 1 us: one start is in the hop latency):
 *   c0h0 0 -> 2 (free 1.5)     c1h0 1.5 -> 3.5 (free 3)   c0h1 2 -> 4 (free 3.5)
 *   c1h1 3.5 -> 5.5 (free 5)   c0h2 4 -> 6 (free 5.5)     c1h2 5.5 -> 7.5 -> 7.5 us.
 */
static void test_pipelined_chain_and_message_cost(void **state)
{
    tpu_link_model_t l = easy_link();
    tpu_plan_sched_t ps;
    tpu_topo_t t;

    (void)state;
    line(&t, 4, 1);
    chain(&ps);
    near(time_us(&t, &l, &ps), 7.0);
    l.msg_cost = 0.5e-6;
    chain(&ps);
    near(time_us(&t, &l, &ps), 7.5);
}

/*
 * Message starts in one step, 0.5 us each: chip 0 sends A (1000 B to chip 1) and
 * B (1000 B to chip 2), both over its port 0->1 (2000 B: 2 us).
 *   one stream (one batch, one start, inside the hop latency):
 *     A: 1 hop + 2 us = 3 us; B: 2 hops + max(2 us, 1 us on 1->2) = 4 us -> 4 us;
 *   two streams (two batches: the port is held 0.5 us more):
 *     A: 1 + 2.5 = 3.5 us; B: 2 + 2.5 = 4.5 us -> 4.5 us.
 */
static void test_message_batches(void **state)
{
    tpu_link_model_t l = easy_link();
    tpu_plan_sched_t ps;
    tpu_topo_t t;
    int stream;

    (void)state;
    l.msg_cost = 0.5e-6;
    line(&t, 3, 1);
    for (stream = 0; stream < 2; stream++) {
        memset(&ps, 0, sizeof(ps));
        tpu__sched_init(&ps.s);
        add_s(&ps.s, 0, 1, 0, 1000, 0, TPU_ROUTE_ICI, NULL, 0, 0);
        add_s(&ps.s, 0, 2, 0, 1000, 0, TPU_ROUTE_ICI, NULL, 0, stream);
        near(time_us(&t, &l, &ps), stream ? 4.5 : 4.0);
    }
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
    memset(&ps, 0, sizeof(ps));
    tpu__sched_init(&ps.s);
    add(&ps.s, 0, 1, 0, 1000, 1, TPU_ROUTE_ICI, NULL, 0);
    near(time_us(&t, &l, &ps), 3.0);
    memset(&ps, 0, sizeof(ps));
    tpu__sched_init(&ps.s);
    add(&ps.s, 0, 1, 0, 1000, 1, TPU_ROUTE_ICI, NULL, 0);
    add(&ps.s, 2, 1, 0, 1000, 1, TPU_ROUTE_ICI, NULL, 0);
    near(time_us(&t, &l, &ps), 5.0);
    memset(&ps, 0, sizeof(ps));
    tpu__sched_init(&ps.s);
    add(&ps.s, 0, 1, 0, 1000, 0, TPU_ROUTE_ICI, NULL, 0);
    add(&ps.s, 2, 1, 0, 1000, 0, TPU_ROUTE_ICI, NULL, 0);
    near(time_us(&t, &l, &ps), 2.0);
}

/* Every chip of slice 0 (one host of 4 chips) sends 1000 B to its twin in slice 1. */
static void dcn_all(tpu_plan_sched_t *ps, int nsend)
{
    int c;

    memset(ps, 0, sizeof(*ps));
    tpu__sched_init(&ps->s);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_flows_share_a_link),
        cmocka_unit_test(test_no_overlap_no_slowdown),
        cmocka_unit_test(test_many_gaps),
        cmocka_unit_test(test_pipelined_chain_and_message_cost),
        cmocka_unit_test(test_message_batches),
        cmocka_unit_test(test_reduction_cost),
        cmocka_unit_test(test_dcn_host_path),
        cmocka_unit_test(test_cross_slice_p2p),
        cmocka_unit_test(test_calibrated_measurements),
        cmocka_unit_test(test_snake_ring_by_hand),
        cmocka_unit_test(test_model_with_other_constants),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
