/*
 * Faults in the model (include/tpu/fault.h): the text of a fault and every error,
 * the tables and the cut check, routes around failed links, and modeled times
 * computed by hand for a slow link, a failed link, a slow chip and a slow DCN
 * NIC; the same modeled time from the model, the sim and the loopback transports
 * with the data still correct; the YAML 'faults:' list with its positions; the
 * heatmap's marks.
 *
 * The link model of every timed case: W = 100e9 B/s per link (50e9 each way),
 * alpha = 1 us per hop, DCN 12.5e9 B/s per chip with 10 us latency.  A flow of B
 * bytes over h hops alone on its links takes h * alpha + B / (W/2).
 */
#include "tpu/coll.h"
#include "tpu/fault.h"
#include "tpu/pod.h"

#include "config_yaml.h"
#include "svg.h"
#include "test_coll.h"
#include "test_main.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define MIB 1048576.0

static void make_link(tpu_link_model_t *link, const int *host_dims)
{
    int a;

    memset(link, 0, sizeof(*link));
    link->ici_bw = 100e9;
    link->ici_latency = 1e-6;
    link->dcn_bw = 12.5e9;
    link->dcn_latency = 10e-6;
    for (a = 0; a < TPU_MAX_AXES; a++) {
        link->host_dims[a] = host_dims != NULL ? host_dims[a] : 1;
    }
}

/* Faults from their text, checked against 'topo'; NULL and the message in 'err' on error. */
static tpu_faults_t *faults_of(const tpu_topo_t *topo, const tpu_link_model_t *link,
                               const char *const *texts, int n, tpu_err_t *err)
{
    tpu_fault_t list[8];
    tpu_faults_t *f = NULL;
    int i;

    for (i = 0; i < n; i++) {
        assert_int_equal(tpu_fault_parse(texts[i], &list[i], err), TPU_OK);
    }
    if (tpu_faults_create(topo, link->host_dims, list, n, &f, err) != TPU_OK) {
        return NULL;
    }
    return f;
}

/*
 * Modeled microseconds of a ppermute of 1 MiB by +1 over 'axes' on 'shape' ('wrap',
 * 'slices', one host per block 'host_dims', NULL: per chip) with the link model of
 * make_link() and the fault 'fault' (NULL: none).
 */
static double ppermute_us(const char *shape, const char *wrap, int slices, const int *host_dims,
                          unsigned axes, const char *fault)
{
    tpu_topo_t topo;
    tpu_link_model_t link;
    tpu_coll_desc_t d;
    tpu_err_t err = {0};
    tpu_faults_t *f = NULL;
    tpu_coll_plan_t *plan = NULL;
    tpu_coll_result_t res;

    tpu_test_topo(&topo, shape, wrap, slices);
    make_link(&link, host_dims);
    if (fault != NULL) {
        f = faults_of(&topo, &link, &fault, 1, &err);
        assert_non_null(f);
        link.faults = f;
    }
    tpu_coll_desc_init(&d);
    d.kind = TPU_COLL_PPERMUTE;
    d.axes = axes;
    d.shift = 1;
    d.bytes = (uint64_t)MIB;
    if (tpu_coll_plan_create(&topo, &link, &d, &plan, &err) != TPU_OK) {
        fail_msg("plan: %s", err.msg);
    }
    assert_int_equal(tpu_coll_plan_model(plan, &res, &err), TPU_OK);
    tpu_coll_plan_destroy(plan);
    tpu_faults_destroy(f);
    return res.modeled_us;
}

static void assert_us(double got, double want)
{
    if (!(got > want * (1 - 1e-12) && got < want * (1 + 1e-12))) {
        fail_msg("modeled %.12g us, computed by hand %.12g us", got, want);
    }
}

/* ---- the text of a fault ---- */

static void test_parse(void **state)
{
    static const struct {
        const char *text, *msg;
    } bad[] = {
        {"slow-link", "expected KIND:key=value"},
        {"slow-lnk:chip=1", "unknown fault kind 'slow-lnk'"},
        {"slow-link:chip=1,dir=+x", "slow-link needs 'factor'"},
        {"slow-link:chip=1,factor=0.5", "slow-link needs 'dir'"},
        {"link-down:dir=+x", "link-down needs 'chip'"},
        {"slow-nic:factor=0.5", "slow-nic needs 'host'"},
        {"link-down:chip=1,dir=+x,factor=0.5", "link-down takes no key 'factor'"},
        {"slow-chip:chip=1,factor=0.5,dir=+x", "slow-chip takes no key 'dir'"},
        {"slow-link:chip=1,dir=+x,factor=0.5,chip=2", "key 'chip' given twice"},
        {"slow-link:chip=1,dir=x,factor=0.5", "bad link direction 'x'"},
        {"slow-link:chip=1,dir=+w,factor=0.5", "bad link direction '+w'"},
        {"slow-link:chip=1,dir=+x,factor=0", "a link that carries nothing is link-down"},
        {"slow-link:chip=1,dir=+x,factor=1.5", "at most 1"},
        {"slow-link:chip=1,dir=+x,factor=nan", "at most 1"},
        {"slow-link:chip=1,dir=+x,factor=", "got ''"},
        {"slow-chip:chip=-1,factor=0.5", "is not a chip id"},
        {"slow-chip:chip=(1,2,3,4,5),factor=0.5", "is not a chip id"},
        {"slow-chip:chip=(1,x),factor=0.5", "is not a chip id"},
        {"slow-chip:chip=99999999,factor=0.5", "is not a chip id"},
        {"link-down:chip=1,dir=+x,both=maybe", "both takes yes or no"},
        {"slow-nic:host=h,factor=0.5", "is not a host index"},
        {"slow-nic:host=1;factor=0.5", "is not a host index"},
        {"slow-nic:host", "is not key=value"},
    };
    tpu_fault_t f;
    tpu_err_t err = {0};
    size_t i;

    (void)state;
    assert_int_equal(tpu_fault_parse("slow-link:chip=5,dir=-y,factor=0.25,both=yes", &f, &err),
                     TPU_OK);
    assert_int_equal(f.kind, TPU_FAULT_SLOW_LINK);
    assert_int_equal(f.chip, 5);
    assert_int_equal(f.axis, 1);
    assert_int_equal(f.dir, -1);
    assert_int_equal(f.both, 1);
    assert_true(f.factor == 0.25);
    assert_int_equal(tpu_fault_parse("link-down:chip=(1,2),dir=+z", &f, &err), TPU_OK);
    assert_int_equal(f.chip, -1);
    assert_int_equal(f.ncoords, 2);
    assert_int_equal(f.coords[0], 1);
    assert_int_equal(f.coords[1], 2);
    assert_int_equal(f.axis, 2);
    assert_int_equal(f.both, 0);
    assert_int_equal(tpu_fault_parse("slow-nic:host=3,factor=1", &f, &err), TPU_OK);
    assert_int_equal(f.host, 3);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        tpu_err_clear(&err);
        assert_int_equal(tpu_fault_parse(bad[i].text, &f, &err), TPU_ERR_INVALID);
        if (strstr(err.msg, bad[i].msg) == NULL || strncmp(err.msg, "fault '", 7) != 0) {
            fail_msg("'%s': message '%s' lacks '%s'", bad[i].text, err.msg, bad[i].msg);
        }
    }
}

/* ---- the tables and the checks against the pod ---- */

static void test_bad_against_pod(void **state)
{
    static const struct {
        const char *shape, *wrap, *text, *msg;
    } bad[] = {
        {"4x4", "none", "slow-chip:chip=16,factor=0.5", "chip 16 is outside the pod of 16 chips"},
        {"4x4", "none", "slow-chip:chip=(4,0),factor=0.5", "outside the pod"},
        {"4x4", "none", "slow-chip:chip=(1,2,3),factor=0.5", "need 2 values"},
        {"4x4", "none", "link-down:chip=3,dir=+y", "has no +y link (axis y does not wrap"},
        {"4x4", "none", "link-down:chip=(0,0),dir=-x", "has no -x link"},
        {"4x4", "none", "link-down:chip=0,dir=+z", "no links along z (no such axis)"},
        {"4x1", "none", "link-down:chip=0,dir=+y", "no links along y (1 chip)"},
        {"4x4", "none", "slow-nic:host=16,factor=0.5", "host 16 is outside the pod of 16 hosts"},
    };
    tpu_topo_t topo;
    tpu_link_model_t link;
    tpu_err_t err = {0};
    size_t i;

    (void)state;
    make_link(&link, NULL);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        tpu_test_topo(&topo, bad[i].shape, bad[i].wrap, 1);
        tpu_err_clear(&err);
        assert_null(faults_of(&topo, &link, &bad[i].text, 1, &err));
        assert_int_equal(err.status, TPU_ERR_INVALID);
        if (strstr(err.msg, bad[i].msg) == NULL) {
            fail_msg("'%s' on %s: message '%s' lacks '%s'", bad[i].text, bad[i].shape, err.msg,
                     bad[i].msg);
        }
    }
}

static void test_tables(void **state)
{
    static const char *const texts[] = {
        "slow-link:chip=1,dir=+x,factor=0.5,both=yes", "link-down:chip=(3,3),dir=+y",
        "slow-chip:chip=5,factor=0.5", "slow-chip:chip=5,factor=0.5",
        "slow-nic:host=2,factor=0.25"};
    tpu_topo_t topo;
    tpu_link_model_t link;
    tpu_err_t err = {0};
    tpu_faults_t *f;
    char buf[160];
    int l;

    (void)state;
    tpu_test_topo(&topo, "4x4", "all", 1);
    make_link(&link, NULL);
    f = faults_of(&topo, &link, texts, 5, &err);
    assert_non_null(f);
    assert_int_equal(tpu_faults_count(f), 5);
    assert_int_equal(tpu_faults_down_count(f), 1);
    /* chip 1 = (0,1); its +x link and the link back from (1,1) = chip 5, which is slow. */
    assert_true(tpu_faults_link_factor(f, tpu_topo_link(&topo, 1, 0, 1)) == 0.5);
    assert_true(tpu_faults_link_factor(f, tpu_topo_link(&topo, 5, 0, -1)) == 0.5 * 0.25);
    assert_true(tpu_faults_link_factor(f, tpu_topo_link(&topo, 1, 0, -1)) == 1);
    assert_true(tpu_faults_link_factor(f, tpu_topo_link(&topo, 15, 1, 1)) == 0);
    /* Two slow-chip faults on chip 5 multiply: 0.25 on every link leaving it. */
    assert_true(tpu_faults_chip_factor(f, 5) == 0.25);
    assert_true(tpu_faults_link_factor(f, tpu_topo_link(&topo, 5, 1, 1)) == 0.25);
    assert_true(tpu_faults_link_factor(f, tpu_topo_link(&topo, 4, 1, 1)) == 1);
    assert_true(tpu_faults_slowest_chip(f) == 0.25);
    assert_true(tpu_faults_nic_factor(f, 2) == 0.25);
    assert_true(tpu_faults_nic_factor(f, 1) == 1);
    assert_int_equal(tpu_faults_get(f, 1)->chip, 15); /* (3,3) resolved */
    tpu_fault_str(&topo, tpu_faults_get(f, 0), buf, sizeof(buf));
    assert_string_equal(buf, "slow-link chip 1 (0,1) +x both ways factor 0.5");
    tpu_fault_str(&topo, tpu_faults_get(f, 1), buf, sizeof(buf));
    assert_string_equal(buf, "link-down chip 15 (3,3) +y");
    tpu_fault_str(&topo, tpu_faults_get(f, 4), buf, sizeof(buf));
    assert_string_equal(buf, "slow-nic host 2 factor 0.25");
    for (l = 0; l < topo.nlinks; l++) {
        assert_true(tpu_faults_link_factor(NULL, l) == 1);
    }
    tpu_faults_destroy(f);
    tpu_faults_destroy(NULL);
}

/* ---- cuts ---- */

static void test_cut(void **state)
{
    static const char *const ring_cut[] = {"link-down:chip=0,dir=+x,both=yes",
                                           "link-down:chip=2,dir=+x,both=yes"};
    static const char *const one_way[] = {"link-down:chip=1,dir=+x"};
    static const char *const grid[] = {"link-down:chip=(1,0),dir=+x,both=yes"};
    tpu_topo_t topo;
    tpu_link_model_t link;
    tpu_err_t err = {0};
    tpu_faults_t *f;

    (void)state;
    make_link(&link, NULL);
    /* An open line of 4: 1 -> 2 failed leaves no way from chip 1 to chip 2. */
    tpu_test_topo(&topo, "4", "none", 1);
    assert_null(faults_of(&topo, &link, one_way, 1, &err));
    assert_int_equal(err.status, TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "the failed links cut the torus: no route from chip 1 (1) "
                                    "to chip 2 (2); the cut is the failed link chip 1 (1) +x"));
    /* A ring of 4 keeps its other way round. */
    tpu_test_topo(&topo, "4", "all", 1);
    f = faults_of(&topo, &link, one_way, 1, &err);
    assert_non_null(f);
    tpu_faults_destroy(f);
    /* Two cables of the ring, both ways: chips 1 and 2 are cut from 3 and 0. */
    tpu_err_clear(&err);
    assert_null(faults_of(&topo, &link, ring_cut, 2, &err));
    assert_non_null(strstr(err.msg, "cut the torus: no route from chip 0 (0) to chip 1 (1)"));
    assert_non_null(strstr(err.msg, "failed links chip 0 (0) +x, chip 3 (3) -x"));
    /* A 4x4 without wrap keeps a way round through y. */
    tpu_test_topo(&topo, "4x4", "none", 1);
    f = faults_of(&topo, &link, grid, 1, &err);
    assert_non_null(f);
    tpu_faults_destroy(f);
    /* Two slices: each slice is checked on its own. */
    tpu_test_topo(&topo, "4", "none", 2);
    {
        static const char *const second[] = {"link-down:chip=(1,2),dir=+x"};

        tpu_err_clear(&err);
        assert_null(faults_of(&topo, &link, second, 1, &err));
        assert_non_null(strstr(err.msg, "chip 6 (slice 1: 2) to chip 7 (slice 1: 3)"));
    }
}

/* ---- routes ---- */

/* The directed links of 'r', checked to join its ends and avoid failed links. */
static void check_route(const tpu_topo_t *topo, const tpu_faults_t *f, const tpu_route_t *r)
{
    int links[64], n = tpu_topo_route_links(topo, r, links, 64), i, chip = r->src;

    assert_int_equal(n, r->nhops);
    for (i = 0; i < n; i++) {
        int src, axis, dir, dst;

        tpu_topo_link_ends(topo, links[i], &src, &axis, &dir, &dst);
        assert_int_equal(src, chip);
        assert_true(tpu_faults_link_factor(f, links[i]) > 0);
        chip = dst;
    }
    assert_int_equal(chip, r->dst);
}

static void test_routes(void **state)
{
    static const char *const ring[] = {"link-down:chip=1,dir=+x"};
    static const char *const grid[] = {"link-down:chip=(1,0),dir=+x"};
    tpu_topo_t topo;
    tpu_link_model_t link;
    tpu_err_t err = {0};
    tpu_faults_t *f;
    tpu_route_t r;
    int32_t scratch[64];

    (void)state;
    make_link(&link, NULL);
    /* Ring of 4, 1 -> 2 failed: 1 -> 2 goes the other way, 1 -> 0 -> 3 -> 2, 3 hops. */
    tpu_test_topo(&topo, "4", "all", 1);
    f = faults_of(&topo, &link, ring, 1, &err);
    assert_int_equal(tpu_faults_route(f, &topo, 1, 2, NULL, 1, scratch, &r), 0);
    assert_int_equal(r.nhops, 3);
    assert_int_equal(r.nseg, 1);
    assert_int_equal(r.seg[0].dir, -1);
    check_route(&topo, f, &r);
    /* 0 -> 2 (the tie at n/2) asked +x: the other minimal route, -x, 2 hops. */
    assert_int_equal(tpu_faults_route(f, &topo, 0, 2, NULL, 1, scratch, &r), 0);
    assert_int_equal(r.nhops, 2);
    assert_int_equal(r.seg[0].dir, -1);
    /* 0 -> 1 does not cross the failed link: unchanged. */
    assert_int_equal(tpu_faults_route(f, &topo, 0, 1, NULL, 1, scratch, &r), 0);
    assert_int_equal(r.nhops, 1);
    assert_int_equal(r.seg[0].dir, 1);
    tpu_faults_destroy(f);

    /* 4x4 open, (1,0) -> (2,0) failed: every minimal route crosses it, so one step up
     * y, across, and back: +y 1, +x 1, -y 1 (x is tried first, + before -). */
    tpu_test_topo(&topo, "4x4", "none", 1);
    f = faults_of(&topo, &link, grid, 1, &err);
    assert_int_equal(tpu_faults_route(f, &topo, 4, 8, NULL, 1, scratch, &r), 0);
    assert_int_equal(r.nhops, 3);
    assert_int_equal(r.nseg, 3);
    assert_int_equal(r.seg[0].axis, 1);
    assert_int_equal(r.seg[0].dir, 1);
    assert_int_equal(r.seg[1].axis, 0);
    assert_int_equal(r.seg[2].dir, -1);
    check_route(&topo, f, &r);
    /* (0,0) -> (3,0): 3 hops along x, plus 2 to step round the failed link. */
    assert_int_equal(tpu_faults_route(f, &topo, 0, 12, NULL, 1, scratch, &r), 0);
    assert_int_equal(r.nhops, 5);
    check_route(&topo, f, &r);
    /* (1,0) -> (2,1): the y-first minimal route avoids it (2 hops). */
    assert_int_equal(tpu_faults_route(f, &topo, 4, 9, NULL, 1, scratch, &r), 0);
    assert_int_equal(r.nhops, 2);
    assert_int_equal(r.seg[0].axis, 1);
    check_route(&topo, f, &r);
    tpu_faults_destroy(f);
}

/* ---- modeled times by hand ---- */

/*
 * Ring of 4 (wrapped), ppermute by +1 of B = 1 MiB: four flows, one hop each on
 * its own +x link.  Without faults each takes alpha + B/(W/2) = 1 + 20.97152 =
 * 21.97152 us.  With the link 1 -> 2 at factor 0.5 that flow drains at W/4:
 * 1 + 41.94304 = 42.94304 us, twice the bandwidth term, and the collective ends
 * with it.
 */
static void test_slow_link(void **state)
{
    (void)state;
    assert_us(ppermute_us("4", "all", 1, NULL, 1, NULL), 1 + MIB / 50e9 * 1e6);
    assert_us(ppermute_us("4", "all", 1, NULL, 1, "slow-link:chip=1,dir=+x,factor=0.5"),
              1 + MIB / 25e9 * 1e6);
}

/*
 * The same ppermute with the link 1 -> 2 failed: that flow goes 1 -> 0 -> 3 -> 2
 * over the -x links, which carry nothing else: 3 alpha + B/(W/2) = 3 + 20.97152 =
 * 23.97152 us.
 */
static void test_link_down(void **state)
{
    (void)state;
    assert_us(ppermute_us("4", "all", 1, NULL, 1, "link-down:chip=1,dir=+x"), 3 + MIB / 50e9 * 1e6);
}

/*
 * The link timer (remote copies of kernels) on the same ring: a copy of 1 MiB
 * from chip 1 to chip 2 takes the route the link model times.  Without the fault:
 * 1 hop, arrival 1 + 20.97152 = 21.97152 us; with the link 1 -> 2 failed: the
 * detour 1 -> 0 -> 3 -> 2, 3 hops, arrival 3 + 20.97152 = 23.97152 us.  Either way
 * the bytes have left chip 1 after B/(W/2) = 20.97152 us (its first link drained).
 */
static void test_link_timer_detour(void **state)
{
    static const char *const down[] = {"link-down:chip=1,dir=+x"};
    tpu_topo_t topo;
    tpu_link_model_t link;
    tpu_err_t err = {0};
    tpu_coll_link_timer_t *timer = NULL;
    tpu_faults_t *f;
    double left, arrival;
    int hops = -1, pass;

    (void)state;
    tpu_test_topo(&topo, "4", "all", 1);
    make_link(&link, NULL);
    f = faults_of(&topo, &link, down, 1, &err);
    for (pass = 0; pass < 2; pass++) {
        link.faults = pass == 0 ? NULL : f;
        assert_int_equal(tpu_coll_link_timer_create(&topo, &link, &timer, &err), TPU_OK);
        tpu_coll_link_timer_flow(timer, 1, 2, (uint64_t)MIB, 0, &left, &arrival, &hops);
        assert_int_equal(hops, pass == 0 ? 1 : 3);
        assert_us(arrival * 1e6, (pass == 0 ? 1 : 3) + MIB / 50e9 * 1e6);
        assert_us(left * 1e6, MIB / 50e9 * 1e6);
        tpu_coll_link_timer_destroy(timer);
    }
    tpu_faults_destroy(f);
}

/*
 * A slow chip: chip 2 at factor 0.25 sends its flow (2 -> 3) at W/2 * 0.25:
 * 1 + 83.88608 = 84.88608 us.
 */
static void test_slow_chip(void **state)
{
    (void)state;
    assert_us(ppermute_us("4", "all", 1, NULL, 1, "slow-chip:chip=2,factor=0.25"),
              1 + MIB / 12.5e9 * 1e6);
}

/*
 * Two slices of 2 chips, one host per slice (host_dims 2): a host's NICs carry
 * 2 x 12.5e9 B/s each way.  ppermute over dcn by 1: every chip sends B to the
 * chip with its coordinates in the other slice, so each host's egress and
 * ingress carry 2B: each flow takes 10 + 2B / 25e9 = 10 + 83.88608 = 93.88608 us.
 * Host 0's NICs at factor 0.5 (12.5e9 B/s): 10 + 2B / 12.5e9 = 177.77216 us, for
 * the flows out of slice 0 (its egress) and into it (its ingress) alike.
 */
static void test_slow_nic(void **state)
{
    static const int hosts[TPU_MAX_AXES] = {2, 1, 1};

    (void)state;
    assert_us(ppermute_us("2", "none", 2, hosts, TPU_AXIS_MASK_DCN, NULL),
              10 + 2 * MIB / 25e9 * 1e6);
    assert_us(ppermute_us("2", "none", 2, hosts, TPU_AXIS_MASK_DCN, "slow-nic:host=0,factor=0.5"),
              10 + 2 * MIB / 12.5e9 * 1e6);
}

/*
 * With a fault the representative and orbit shortcuts are off; a fault at factor
 * 1 changes no time, so the full walk must give the representative's time bit for
 * bit (linkmodel.c).
 */
static void note_rep(void *user, const tpu_coll_flow_event_t *ev)
{
    *(int *)user |= ev->representative;
}

static void test_shortcuts_off(void **state)
{
    tpu_coll_observer_t obs;
    int walked_rep = 0;
    static const char *const idle[] = {"slow-link:chip=0,dir=+x,factor=1"};
    tpu_topo_t topo;
    tpu_link_model_t link;
    tpu_coll_desc_t d;
    tpu_coll_plan_t *plan = NULL;
    tpu_coll_result_t rep, full;
    tpu_err_t err = {0};
    tpu_faults_t *f;

    (void)state;
    tpu_test_topo(&topo, "4x4", "all", 1);
    make_link(&link, NULL);
    tpu_coll_desc_init(&d);
    d.kind = TPU_COLL_ALL_TO_ALL;
    d.axes = 3;
    d.bytes = 1 << 20;
    memset(&obs, 0, sizeof(obs));
    obs.on_flow = note_rep;
    obs.user = &walked_rep;
    assert_int_equal(tpu_coll_plan_create(&topo, &link, &d, &plan, &err), TPU_OK);
    assert_int_equal(tpu_coll_plan_model_observed(plan, &obs, &rep, &err), TPU_OK);
    assert_int_equal(walked_rep, 1); /* the representative walk without faults */
    walked_rep = 0;
    tpu_coll_plan_destroy(plan);
    f = faults_of(&topo, &link, idle, 1, &err);
    link.faults = f;
    assert_int_equal(tpu_coll_plan_create(&topo, &link, &d, &plan, &err), TPU_OK);
    assert_int_equal(tpu_coll_plan_model_observed(plan, &obs, &full, &err), TPU_OK);
    tpu_coll_plan_destroy(plan);
    /* Both count the whole pod's flows (issue 13 item 7): walked for every chip, or
     * one chip's walked and counted for all. */
    assert_true(full.flows == rep.flows);
    assert_int_equal(walked_rep, 0); /* every chip's flows, not one chip's */
    assert_true(full.modeled_us == rep.modeled_us);
    tpu_faults_destroy(f);
}

/* ---- model == sim == loopback, data correct ---- */

static void test_transports(void **state)
{
    static const char *const faults[] = {"link-down:chip=(1,1),dir=+x,both=yes",
                                         "slow-link:chip=(2,3),dir=-y,factor=0.3",
                                         "slow-chip:chip=6,factor=0.6"};
    static const tpu_coll_kind_t kinds[] = {TPU_COLL_PSUM,           TPU_COLL_ALL_GATHER,
                                            TPU_COLL_REDUCE_SCATTER, TPU_COLL_ALL_TO_ALL,
                                            TPU_COLL_PPERMUTE,       TPU_COLL_P2P};
    static const char *const wraps[] = {"all", "none"};
    tpu_topo_t topo;
    tpu_link_model_t link;
    tpu_err_t err = {0};
    size_t k, w;

    (void)state;
    make_link(&link, NULL);
    for (w = 0; w < 2; w++) {
        tpu_faults_t *f;

        tpu_test_topo(&topo, "4x4", wraps[w], 1);
        f = faults_of(&topo, &link, faults, 3, &err);
        assert_non_null(f);
        link.faults = f;
        for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
            tpu_coll_desc_t d;
            tpu_coll_plan_t *plan = NULL;
            char label[64];

            tpu_coll_desc_init(&d);
            d.kind = kinds[k];
            d.axes = kinds[k] == TPU_COLL_PPERMUTE ? 1 : 3;
            d.shift = 1;
            d.src = 5;
            d.dst = 6; /* across the failed link */
            d.bytes = 64 * 1024;
            if (tpu_coll_plan_create(&topo, &link, &d, &plan, &err) != TPU_OK) {
                fail_msg("%s: %s", tpu_coll_name(d.kind), err.msg);
            }
            snprintf(label, sizeof(label), "%s wrap %s", tpu_coll_name(d.kind), wraps[w]);
            tpu_test_check_transports(plan, &topo, label);
            tpu_coll_plan_destroy(plan);
        }
        link.faults = NULL;
        tpu_faults_destroy(f);
    }
}

/* ---- the pod ---- */

static void test_pod(void **state)
{
    tpu_pod_spec_t spec;
    tpu_pod_t *pod = NULL;
    tpu_fault_t f[2];
    tpu_err_t err = {0};

    (void)state;
    assert_int_equal(tpu_fault_parse("link-down:chip=(1,1),dir=+x", &f[0], &err), TPU_OK);
    assert_int_equal(tpu_fault_parse("slow-chip:chip=2,factor=0.5", &f[1], &err), TPU_OK);
    tpu_pod_spec_init(&spec);
    spec.shape = "4x4";
    spec.faults = f;
    spec.nfaults = 2;
    assert_int_equal(tpu_pod_create(&spec, &pod, &err), TPU_OK);
    assert_non_null(tpu_pod_faults(pod));
    assert_ptr_equal(tpu_pod_link(pod)->faults, tpu_pod_faults(pod));
    assert_int_equal(tpu_faults_get(tpu_pod_faults(pod), 0)->chip, 5);
    tpu_pod_destroy(pod);
    /* A 4 without wrap is cut by its failed link. */
    spec.shape = "4";
    spec.nfaults = 1;
    assert_int_equal(tpu_fault_parse("link-down:chip=2,dir=-x", &f[0], &err), TPU_OK);
    assert_int_equal(tpu_pod_create(&spec, &pod, &err), TPU_ERR_INVALID);
    assert_null(pod);
    assert_non_null(strstr(err.msg, "cut the torus"));
    tpu_pod_spec_init(&spec);
    assert_int_equal(tpu_pod_create(&spec, &pod, &err), TPU_OK);
    assert_null(tpu_pod_faults(pod));
    assert_null(tpu_pod_link(pod)->faults);
    tpu_pod_destroy(pod);
}

/* ---- YAML ---- */

static void test_yaml(void **state)
{
    static const char good[] = "topology: 4x4\n"
                               "faults:\n"
                               "  - kind: slow-link\n"
                               "    chip: 5\n"
                               "    dir: +x\n"
                               "    factor: 0.5\n"
                               "    both: yes\n"
                               "  - {kind: link-down, chip: [1, 2], dir: -y}\n"
                               "  - {kind: slow-chip, chip: 0, factor: 0.25}\n"
                               "  - {kind: slow-nic, host: 1, factor: 1}\n";
    static const struct {
        const char *text, *msg;
    } bad[] = {
        {"faults: 3\n", "t.yaml:1:9: 'faults' takes a list of faults"},
        {"faults:\n", "'faults' takes a list of faults such as"},
        {"faults:\n  - link-down\n", "t.yaml:2:5: a fault must be a mapping"},
        {"faults:\n  - {chip: 1, dir: +x}\n", "t.yaml:2:5: a fault needs 'kind:'"},
        {"faults:\n  - {kind: slow-lnk}\n", "t.yaml:2:12: unknown fault kind 'slow-lnk'"},
        {"faults:\n  - {kind: link-down, chip: 1}\n", "t.yaml:2:5: a link-down fault needs 'dir'"},
        {"faults:\n  - {kind: link-down, chip: 1, dir: +x, factor: 0.5}\n",
         "t.yaml:2:41: 'factor' does not apply to a link-down fault"},
        {"faults:\n  - {kind: link-down, chip: 1, dir: +x, hostt: 2}\n",
         "unknown key 'hostt' in a fault (did you mean 'host'?)"},
        {"faults:\n  - {kind: link-down, chip: 1, dir: +x, dir: -x}\n", "duplicate key 'dir'"},
        {"faults:\n  - {kind: link-down, chip: 1, dir: x}\n",
         "t.yaml:2:37: 'dir': bad link direction 'x'"},
        {"faults:\n  - {kind: slow-chip, chip: -1, factor: 0.5}\n",
         "'chip' takes a whole number from 0, got '-1'"},
        {"faults:\n  - {kind: slow-chip, chip: [], factor: 0.5}\n", "'chip' is an empty list"},
        {"faults:\n  - {kind: slow-chip, chip: [1,2,3,4,5], factor: 0.5}\n",
         "'chip' has at most 4 coordinates"},
        {"faults:\n  - {kind: slow-chip, chip: 1, factor: 2}\n", "'factor' must be above 0 and"},
        {"faults:\n  - {kind: slow-chip, chip: 1, factor: 0}\n", "'factor' must be positive"},
        {"faults:\n  - {kind: slow-chip, chip: 1, factor: '0.5'}\n", "not the quoted string"},
        {"faults:\n  - {kind: link-down, chip: 1, dir: +x, both: maybe}\n",
         "'both' takes yes or no, got 'maybe'"},
        {"faults:\n  - {kind: slow-nic, host: x, factor: 0.5}\n", "'host' takes a whole number"},
    };
    app_config_t cfg;
    tpu_err_t err = {0};
    size_t i;

    (void)state;
    app_config_init(&cfg);
    assert_int_equal(app_config_load_string(good, strlen(good), "t.yaml", &cfg, &err), TPU_OK);
    assert_int_equal(cfg.nfaults, 4);
    assert_int_equal(cfg.faults[0].kind, TPU_FAULT_SLOW_LINK);
    assert_int_equal(cfg.faults[0].chip, 5);
    assert_int_equal(cfg.faults[0].both, 1);
    assert_true(cfg.faults[0].factor == 0.5);
    assert_int_equal(cfg.faults[1].kind, TPU_FAULT_LINK_DOWN);
    assert_int_equal(cfg.faults[1].ncoords, 2);
    assert_int_equal(cfg.faults[1].coords[1], 2);
    assert_int_equal(cfg.faults[1].dir, -1);
    assert_int_equal(cfg.faults[1].axis, 1);
    assert_int_equal(cfg.faults[3].host, 1);
    assert_string_equal(cfg.fault_at[1], "t.yaml:8:5");
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        app_config_init(&cfg);
        tpu_err_clear(&err);
        assert_int_equal(
            app_config_load_string(bad[i].text, strlen(bad[i].text), "t.yaml", &cfg, &err),
            TPU_ERR_CONFIG);
        if (strstr(err.msg, bad[i].msg) == NULL) {
            fail_msg("'%s': message '%s' lacks '%s'", bad[i].text, err.msg, bad[i].msg);
        }
    }
}

/* ---- the heatmap ---- */

static void test_svg(void **state)
{
    static const char *const texts[] = {"link-down:chip=1,dir=+x",
                                        "slow-link:chip=2,dir=-x,"
                                        "factor=0.5",
                                        "slow-chip:chip=3,factor=0.5"};
    char path[] = "/tmp/test_faults_XXXXXX";
    int fd = mkstemp(path);
    tpu_topo_t topo;
    tpu_link_model_t link;
    tpu_err_t err = {0};
    tpu_faults_t *f;
    double bytes[64] = {0};
    char *text;
    long n;
    FILE *in;

    (void)state;
    assert_true(fd >= 0);
    close(fd);
    tpu_test_topo(&topo, "4", "all", 1);
    make_link(&link, NULL);
    f = faults_of(&topo, &link, texts, 3, &err);
    bytes[0] = 1000;
    assert_int_equal(app_svg_heatmap(path, &topo, f, bytes, NULL, 0, "t", &err), TPU_OK);
    in = fopen(path, "r");
    fseek(in, 0, SEEK_END);
    n = ftell(in);
    rewind(in);
    text = calloc(1, (size_t)n + 1);
    assert_int_equal(fread(text, 1, (size_t)n, in), (size_t)n);
    fclose(in);
    assert_non_null(strstr(text, "failed link (no traffic, routed around)"));
    assert_non_null(strstr(text, "slow link (dashed orange"));
    assert_non_null(strstr(text, "fault: link-down chip 1 (1) +x"));
    assert_non_null(strstr(text, "class=\"failed\""));
    assert_non_null(strstr(text, "class=\"chip slow-chip\""));
    assert_non_null(strstr(text, "stroke=\"#ff7f0e\" stroke-width=\"1.8\" stroke-dasharray"));
    free(text);
    unlink(path);
    tpu_faults_destroy(f);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),         cmocka_unit_test(test_bad_against_pod),
        cmocka_unit_test(test_tables),        cmocka_unit_test(test_cut),
        cmocka_unit_test(test_routes),        cmocka_unit_test(test_slow_link),
        cmocka_unit_test(test_link_down),     cmocka_unit_test(test_link_timer_detour),
        cmocka_unit_test(test_slow_chip),     cmocka_unit_test(test_slow_nic),
        cmocka_unit_test(test_shortcuts_off), cmocka_unit_test(test_transports),
        cmocka_unit_test(test_pod),           cmocka_unit_test(test_yaml),
        cmocka_unit_test(test_svg),
    };

    return tpu_test_main(argc, argv, "model faults", tests, sizeof tests / sizeof tests[0]);
}
