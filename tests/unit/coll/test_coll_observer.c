/*
 * The observer of the timing walk (tpu_coll_observer_t): what it is told must be
 * what the walk did, and telling it must not change the modeled time.
 *   - a ppermute by +1 along x on a wrapped 4x4 (1 MiB per chip): 16 flows of
 *     1 MiB, each over the one +x link of its source; every +x link carries
 *     1 MiB and is busy 1 MiB / (W/2); every other link carries nothing (by hand);
 *   - the representative walk (one chip's flows) and the every-chip walk give the
 *     same modeled time, the same link totals, and the same time as no observer;
 *   - on an open 4x3 psum and a two-slice all-gather over DCN: every flow's links
 *     form a path from its source (or, after DCN, the chip with the source's
 *     coordinates in the destination's slice) to its destination, link totals
 *     equal the sum of bytes over the flows that crossed them, NIC totals the sum
 *     of the DCN flows' bytes of each host, the last arrival is the modeled time;
 *   - a run over the loopback transport with the observer in its options reports
 *     the same flows, with the same times, as the model's every-chip walk.
 */
#include "tpu/coll.h"
#include "tpu/groups.h"
#include "tpu/mesh.h"
#include "tpu/topo.h"

#include "test_main.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define MAX_FLOWS 4096

typedef struct seen {
    const tpu_topo_t *topo;
    int nflows;
    int32_t src[MAX_FLOWS], dst[MAX_FLOWS];
    double start[MAX_FLOWS], end[MAX_FLOWS];
    int64_t flow[MAX_FLOWS];
    double max_end;
    double *flow_bytes; /* per link: sum of the bytes of flows that crossed it */
    double *link_bytes; /* per link: the walk's totals */
    double *link_busy;
    double nic_flow[64][2]; /* per host: DCN bytes of flows (egress, ingress) */
    double nic_bytes[64][2];
    int nlink_events, nnic_events, rep;
} seen_t;

static void on_flow(void *user, const tpu_coll_flow_event_t *ev)
{
    seen_t *s = user;
    int k, src, axis, dir, dst, c[TPU_MAX_AXES];
    int chip = ev->src;

    assert_true(ev->bytes > 0);
    assert_true(ev->start_s >= 0);
    assert_true(ev->end_s >= ev->start_s);
    if (ev->dcn) {
        assert_true(ev->src_host >= 0 && ev->src_host < 64 && ev->dst_host >= 0);
        s->nic_flow[ev->src_host][0] += (double)ev->bytes;
        s->nic_flow[ev->dst_host][1] += (double)ev->bytes;
        tpu_topo_coords(s->topo, ev->src, c);
        chip = tpu_topo_chip(s->topo, tpu_topo_slice_of(s->topo, ev->dst), c);
    } else {
        assert_int_equal(ev->src_host, -1);
        assert_int_equal(ev->dst_host, -1);
    }
    for (k = 0; k < ev->nlinks; k++) {
        tpu_topo_link_ends(s->topo, ev->links[k], &src, &axis, &dir, &dst);
        assert_int_equal(src, chip);
        chip = dst;
        s->flow_bytes[ev->links[k]] += (double)ev->bytes;
    }
    if (!ev->representative) {
        assert_int_equal(chip, ev->dst);
    }
    s->rep |= ev->representative;
    if (ev->end_s > s->max_end) {
        s->max_end = ev->end_s;
    }
    assert_true(s->nflows < MAX_FLOWS);
    s->src[s->nflows] = ev->src;
    s->dst[s->nflows] = ev->dst;
    s->start[s->nflows] = ev->start_s;
    s->end[s->nflows] = ev->end_s;
    s->flow[s->nflows] = ev->flow;
    s->nflows++;
}

static void on_link(void *user, const tpu_coll_link_event_t *ev)
{
    seen_t *s = user;

    assert_true(ev->bytes >= 0 && ev->busy_s >= 0);
    if (ev->link >= 0) {
        assert_true(ev->link < s->topo->nlinks);
        assert_int_equal(ev->host, -1);
        s->link_bytes[ev->link] = ev->bytes;
        s->link_busy[ev->link] = ev->busy_s;
        s->nlink_events++;
    } else {
        assert_true(ev->host >= 0 && ev->host < 64);
        s->nic_bytes[ev->host][ev->egress ? 0 : 1] = ev->bytes;
        s->nnic_events++;
    }
}

static void seen_init(seen_t *s, const tpu_topo_t *topo)
{
    memset(s, 0, sizeof(*s));
    s->topo = topo;
    s->flow_bytes = calloc((size_t)topo->nlinks, sizeof(double));
    s->link_bytes = calloc((size_t)topo->nlinks, sizeof(double));
    s->link_busy = calloc((size_t)topo->nlinks, sizeof(double));
    assert_non_null(s->flow_bytes);
    assert_non_null(s->link_bytes);
    assert_non_null(s->link_busy);
}

static void seen_fini(seen_t *s)
{
    free(s->flow_bytes);
    free(s->link_bytes);
    free(s->link_busy);
}

static void make(tpu_topo_t *topo, tpu_link_model_t *link, const char *shape, const char *wrap,
                 int slices)
{
    tpu_err_t err = {0};
    int dims[TPU_MAX_AXES], w[TPU_MAX_AXES], naxes, is_auto, a;

    assert_int_equal(tpu_topo_parse_shape(shape, dims, &naxes, &err), TPU_OK);
    assert_int_equal(tpu_topo_parse_wrap(wrap, naxes, w, &is_auto, &err), TPU_OK);
    assert_int_equal(tpu_topo_init(topo, naxes, dims, w, slices, &err), TPU_OK);
    memset(link, 0, sizeof(*link));
    link->ici_bw = 100e9; /* 50 GB/s each way */
    link->ici_latency = 1e-6;
    link->dcn_bw = 12.5e9;
    link->dcn_latency = 10e-6;
    for (a = 0; a < TPU_MAX_AXES; a++) {
        link->host_dims[a] = a < naxes ? (dims[a] % 2 == 0 ? 2 : 1) : 1;
    }
}

/* Model 'plan' with an observer; returns the modeled time. */
static double model(const tpu_coll_plan_t *plan, seen_t *s, int every_chip)
{
    tpu_err_t err = {0};
    tpu_coll_observer_t obs;
    tpu_coll_result_t res;

    memset(&obs, 0, sizeof(obs));
    obs.on_flow = on_flow;
    obs.on_link = on_link;
    obs.user = s;
    obs.every_chip = every_chip;
    assert_int_equal(tpu_coll_plan_model_observed(plan, &obs, &res, &err), TPU_OK);
    assert_int_equal(s->nlink_events, s->topo->nlinks);
    return res.modeled_us;
}

static void test_ppermute_by_hand(void **state)
{
    tpu_err_t err = {0};
    tpu_topo_t topo;
    tpu_link_model_t link;
    tpu_coll_desc_t d;
    tpu_coll_plan_t *plan = NULL;
    tpu_coll_result_t res;
    seen_t rep, all;
    const double mib = 1048576.0;
    double t_rep, t_all;
    int l;

    (void)state;
    make(&topo, &link, "4x4", "all", 1);
    tpu_coll_desc_init(&d);
    d.kind = TPU_COLL_PPERMUTE;
    d.axes = 1u << 0;
    d.shift = 1;
    d.bytes = 1048576;
    d.chunks = 1;
    assert_int_equal(tpu_coll_plan_create(&topo, &link, &d, &plan, &err), TPU_OK);
    assert_int_equal(tpu_coll_plan_model(plan, &res, &err), TPU_OK);
    seen_init(&rep, &topo);
    seen_init(&all, &topo);
    t_rep = model(plan, &rep, 0);
    t_all = model(plan, &all, 1);
    assert_true(t_rep == res.modeled_us);
    assert_true(t_all == res.modeled_us);
    assert_true(all.max_end * 1e6 == res.modeled_us);
    assert_int_equal(all.nflows, 16);
    assert_int_equal(all.rep, 0);
    assert_int_equal(rep.rep, 1);
    assert_true(rep.nflows >= 1 && rep.nflows < 16);
    for (l = 0; l < topo.nlinks; l++) {
        int src, axis, dir, dst;
        double want;

        tpu_topo_link_ends(&topo, l, &src, &axis, &dir, &dst);
        want = (axis == 0 && dir == 1) ? mib : 0;
        assert_true(all.link_bytes[l] == want);
        assert_true(all.flow_bytes[l] == want);
        assert_true(rep.link_bytes[l] == want);
        assert_true(all.link_busy[l] == want / 50e9);
        assert_true(rep.link_busy[l] == want / 50e9);
    }
    assert_int_equal(all.nnic_events, 2 * 4); /* 2x2 chips per host: 4 hosts */
    seen_fini(&rep);
    seen_fini(&all);
    tpu_coll_plan_destroy(plan);
}

/* Flows form paths, link and NIC totals add up, the last arrival is the time. */
static void check_sums(const char *shape, const char *wrap, int slices, tpu_coll_kind_t kind,
                       unsigned axes)
{
    tpu_err_t err = {0};
    tpu_topo_t topo;
    tpu_link_model_t link;
    tpu_coll_desc_t d;
    tpu_coll_plan_t *plan = NULL;
    tpu_coll_result_t res;
    seen_t s;
    int l, h, ndcn = 0;

    make(&topo, &link, shape, wrap, slices);
    tpu_coll_desc_init(&d);
    d.kind = kind;
    d.axes = axes;
    d.bytes = 96 * 1024;
    assert_int_equal(tpu_coll_plan_create(&topo, &link, &d, &plan, &err), TPU_OK);
    assert_int_equal(tpu_coll_plan_model(plan, &res, &err), TPU_OK);
    seen_init(&s, &topo);
    assert_true(model(plan, &s, 1) == res.modeled_us);
    assert_true(s.max_end * 1e6 == res.modeled_us);
    for (l = 0; l < topo.nlinks; l++) {
        assert_true(s.link_bytes[l] == s.flow_bytes[l]);
        /* A sum over steps of load / bw: equal up to rounding. */
        assert_true(fabs(s.link_busy[l] - s.link_bytes[l] / 50e9) <= 1e-12 * s.link_busy[l]);
    }
    for (h = 0; h < 64; h++) {
        assert_true(s.nic_bytes[h][0] == s.nic_flow[h][0]);
        assert_true(s.nic_bytes[h][1] == s.nic_flow[h][1]);
        ndcn += s.nic_bytes[h][0] > 0;
    }
    if (axes & TPU_AXIS_MASK_DCN) {
        assert_true(ndcn > 0);
    }
    seen_fini(&s);
    tpu_coll_plan_destroy(plan);
}

static void test_open_psum(void **state)
{
    (void)state;
    check_sums("4x3", "none", 1, TPU_COLL_PSUM, 3u);
}

static void test_dcn_all_gather(void **state)
{
    (void)state;
    check_sums("2x2", "none", 2, TPU_COLL_ALL_GATHER, 3u | TPU_AXIS_MASK_DCN);
}

/* A run reports the flows the model's every-chip walk reports, at the same times. */
static void test_run_matches_model(void **state)
{
    tpu_err_t err = {0};
    tpu_topo_t topo;
    tpu_link_model_t link;
    tpu_coll_desc_t d;
    tpu_coll_plan_t *plan = NULL;
    tpu_coll_exec_t *exec = NULL;
    tpu_xport_t *x = NULL;
    tpu_coll_observer_t obs;
    tpu_coll_run_opts_t opts;
    seen_t m, r;
    void **in, **out;
    uint64_t inb, outb;
    double us;
    int c, i, j;

    (void)state;
    make(&topo, &link, "4x2", "x", 1);
    tpu_coll_desc_init(&d);
    d.kind = TPU_COLL_ALL_GATHER;
    d.axes = 3u;
    d.bytes = 8 * 1024;
    assert_int_equal(tpu_coll_plan_create(&topo, &link, &d, &plan, &err), TPU_OK);
    seen_init(&m, &topo);
    seen_init(&r, &topo);
    model(plan, &m, 1);
    tpu_coll_plan_sizes(plan, &inb, &outb);
    in = calloc((size_t)topo.nchips, sizeof(void *));
    out = calloc((size_t)topo.nchips, sizeof(void *));
    for (c = 0; c < topo.nchips; c++) {
        in[c] = calloc(1, inb);
        out[c] = calloc(1, outb);
    }
    assert_int_equal(tpu_xport_loopback_create(topo.nchips, &x, &err), TPU_OK);
    assert_int_equal(tpu_coll_exec_create(plan, x, &exec, &err), TPU_OK);
    memset(&obs, 0, sizeof(obs));
    obs.on_flow = on_flow;
    obs.on_link = on_link;
    obs.user = &r;
    memset(&opts, 0, sizeof(opts));
    opts.check_peers = 1;
    opts.observer = &obs;
    assert_int_equal(tpu_coll_exec_run(exec, &opts, in, out, &us, &err), TPU_OK);
    assert_true(us == m.max_end * 1e6);
    assert_int_equal(r.nflows, m.nflows);
    for (i = 0; i < m.nflows; i++) {
        for (j = 0; j < r.nflows && r.flow[j] != m.flow[i]; j++) {
        }
        assert_true(j < r.nflows);
        assert_int_equal(r.src[j], m.src[i]);
        assert_int_equal(r.dst[j], m.dst[i]);
        assert_true(r.start[j] == m.start[i]);
        assert_true(r.end[j] == m.end[i]);
    }
    for (c = 0; c < topo.nchips; c++) {
        free(in[c]);
        free(out[c]);
    }
    free(in);
    free(out);
    tpu_coll_exec_destroy(exec);
    tpu_xport_destroy(x);
    seen_fini(&m);
    seen_fini(&r);
    tpu_coll_plan_destroy(plan);
}

/*
 * Periodic groups (a mesh a=4,b=9 on a wrapped 6x6, groups over b): the model
 * times one period's flows (orbit timing), yet every link's totals equal those
 * of the walk over every chip, and so does the modeled time.
 */
static void test_orbit_links(void **state)
{
    tpu_err_t err = {0};
    tpu_topo_t topo;
    tpu_link_model_t link;
    tpu_mesh_t *mesh = NULL;
    tpu_groups_t g;
    tpu_coll_desc_t d;
    tpu_coll_plan_t *plan = NULL;
    seen_t part, all;
    int l;

    (void)state;
    make(&topo, &link, "6x6", "all", 1);
    assert_int_equal(tpu_mesh_create(&topo, "a=4,b=9", NULL, 0, &mesh, &err), TPU_OK);
    assert_int_equal(tpu_mesh_groups(mesh, "b", &g, &err), TPU_OK);
    tpu_coll_desc_init(&d);
    d.kind = TPU_COLL_ALL_GATHER;
    d.groups = &g;
    d.bytes = 9 * 1024;
    assert_int_equal(tpu_coll_plan_create(&topo, &link, &d, &plan, &err), TPU_OK);
    seen_init(&part, &topo);
    seen_init(&all, &topo);
    assert_true(model(plan, &part, 0) == model(plan, &all, 1));
    assert_true(all.nflows > part.nflows);
    assert_int_equal(part.rep, 1);
    for (l = 0; l < topo.nlinks; l++) {
        assert_true(part.link_bytes[l] == all.link_bytes[l]);
        assert_true(part.link_busy[l] == all.link_busy[l]);
    }
    seen_fini(&part);
    seen_fini(&all);
    tpu_coll_plan_destroy(plan);
    tpu_groups_fini(&g);
    tpu_mesh_destroy(mesh);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ppermute_by_hand), cmocka_unit_test(test_open_psum),
        cmocka_unit_test(test_dcn_all_gather),   cmocka_unit_test(test_run_matches_model),
        cmocka_unit_test(test_orbit_links),
    };

    return tpu_test_main(argc, argv, "coll observer", tests, sizeof tests / sizeof tests[0]);
}
