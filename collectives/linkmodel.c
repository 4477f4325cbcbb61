/*
 * The link model (DESIGN.md section 3).
 *
 * Resources: every directed ICI link, and two per TPU host for DCN (the host's
 * egress and ingress NICs).  One direction of an ICI link carries half the
 * published bidirectional bandwidth W; a host's NICs carry dcn_bw times the
 * number of chips of the host, which they share.
 *
 * A flow of B bytes over h hops takes  h * alpha + B / bw  (cut-through: the
 * latency of every hop is paid once, the bytes cross at the bottleneck rate).
 * Flows of one step that cross a resource share it: the resource's load is the
 * sum of their bytes, and a flow is done when the most loaded resource on its
 * route has drained:
 *
 *     arrival = start + hops * alpha + max over route resources (load / bw)
 *
 * For k equal flows this is equal sharing (each at bw / k); for unequal ones it is
 * the finish time of the largest under processor sharing.  The sharing is
 * computed from the schedule, which every chip knows, never measured.
 *
 * A flow starts when its data is at its source (the arrival of the flows it
 * depends on) and its first resource is free of the previous steps' traffic.
 * That is what pipelines chunked schedules: the latency of a hop overlaps the
 * next chunk's bytes, and only the bandwidth of a link serialises them.
 *
 * Everything is a pure function of the schedule and the constants, evaluated in
 * a fixed order, so every transport gets bit-identical times.
 *
 * Representative mode.  When every selected axis wraps and no flow crosses DCN,
 * the pod looks the same from every chip: the schedule is a set of templates
 * that every chip runs translated, and every chip's clock is the same.  Then one
 * chip's flows are enough.  A template whose route makes h hops in the class
 * (axis a, direction d) puts its bytes h times on the links of that class, spread
 * evenly by translation, so each link of the class carries
 *     load(a, d) = sum over templates of bytes * h(a, d),
 * exactly the sum the full schedule adds up link by link (bytes are integers, so
 * the sums are exact), and every time below comes out bit for bit the same.
 * That is what lets 'tpuemu model' time an all-to-all of 8,960 chips.
 *
 * Faults (tpu/fault.h, link->faults): a resource's bandwidth is multiplied by its
 * factor (a slow link, the links of a slow chip, a slow host's NICs), and routes
 * come from tpu_faults_route(), which goes around failed links.  Faults break
 * the symmetry the representative and orbit modes rely on, so a plan with
 * faults walks every chip's flows (plan.h, tpu__plan_translation_invariant).
 */
#include "linkmodel.h"

#include "tpu/alloc.h"

#include <string.h>

/* The resource of a class (axis, direction) in representative mode. */
static int class_of(int axis, int dir)
{
    return 2 * axis + (dir < 0);
}

tpu_status_t tpu__linkmodel_init(tpu_linkmodel_t *lm, const tpu_topo_t *topo,
                                 const tpu_link_model_t *link, int classes)
{
    int h, c;

    memset(lm, 0, sizeof(*lm));
    lm->topo = topo;
    lm->link = *link;
    lm->classes = classes;
    lm->nics = classes ? 0 : 2 * tpu_topo_host_count(topo, link->host_dims);
    lm->nres = classes ? 2 * TPU_MAX_AXES : topo->nlinks + lm->nics;
    lm->load = tpu__calloc((size_t)lm->nres, sizeof(double));
    lm->free_at = tpu__calloc((size_t)lm->nres + (size_t)topo->nchips, sizeof(double));
    lm->busy = tpu__calloc((size_t)lm->nres, sizeof(double));
    lm->nic_bw = tpu__calloc((size_t)lm->nics + 1, sizeof(double));
    lm->touched = tpu__malloc((size_t)lm->nres * sizeof(int));
    if (lm->load == NULL || lm->free_at == NULL || lm->busy == NULL || lm->nic_bw == NULL ||
        lm->touched == NULL) {
        tpu__linkmodel_fini(lm);
        return TPU_ERR_NO_MEMORY;
    }
    for (c = 0; c < topo->nchips && !classes; c++) {
        h = tpu_topo_host_of(topo, link->host_dims, c);
        lm->nic_bw[2 * h] += link->dcn_bw;
        lm->nic_bw[2 * h + 1] += link->dcn_bw;
    }
    for (h = 0; h < lm->nics / 2 && link->faults != NULL; h++) {
        lm->nic_bw[2 * h] *= tpu_faults_nic_factor(link->faults, h);
        lm->nic_bw[2 * h + 1] *= tpu_faults_nic_factor(link->faults, h);
    }
    if (tpu_faults_down_count(link->faults) > 0) {
        lm->route_scratch = tpu__malloc((size_t)topo->chips_per_slice * 2 * sizeof(int32_t));
        if (lm->route_scratch == NULL) {
            tpu__linkmodel_fini(lm);
            return TPU_ERR_NO_MEMORY;
        }
    }
    return TPU_OK;
}

void tpu__linkmodel_fini(tpu_linkmodel_t *lm)
{
    tpu__free(lm->load);
    tpu__free(lm->free_at);
    tpu__free(lm->busy);
    tpu__free(lm->nic_bw);
    tpu__free(lm->touched);
    tpu__free(lm->orbit);
    tpu__free(lm->route_scratch);
    memset(lm, 0, sizeof(*lm));
}

tpu_status_t tpu__linkmodel_set_orbits(tpu_linkmodel_t *lm, const int *period)
{
    const tpu_topo_t *topo = lm->topo;
    int l;

    lm->orbit = tpu__malloc((size_t)(topo->nlinks > 0 ? topo->nlinks : 1) * sizeof(int32_t));
    if (lm->orbit == NULL) {
        return TPU_ERR_NO_MEMORY;
    }
    for (l = 0; l < topo->nlinks; l++) {
        int src, axis, dir, dst, c[TPU_MAX_AXES], a;

        tpu_topo_link_ends(topo, l, &src, &axis, &dir, &dst);
        tpu_topo_coords(topo, src, c);
        for (a = 0; a < TPU_MAX_AXES; a++) {
            c[a] %= period[a];
        }
        lm->orbit[l] =
            tpu_topo_link(topo, tpu_topo_chip(topo, tpu_topo_slice_of(topo, src), c), axis, dir);
    }
    return TPU_OK;
}

/* The resource that carries ICI link 'l': itself, or the link standing for its orbit. */
static int link_res(const tpu_linkmodel_t *lm, int l)
{
    return lm->orbit != NULL ? lm->orbit[l] : l;
}

static double res_bw(const tpu_linkmodel_t *lm, int r)
{
    if (lm->classes) {
        return lm->link.ici_bw / 2;
    }
    if (r < lm->topo->nlinks) {
        return lm->link.ici_bw / 2 * tpu_faults_link_factor(lm->link.faults, r);
    }
    return lm->nic_bw[r - lm->topo->nlinks];
}

/* The ICI route of a flow, from 'from' (the chip where its ICI part starts). */
static void flow_route(const tpu_linkmodel_t *lm, const tpu_flow_t *f, int from, tpu_route_t *route)
{
    tpu_faults_route(lm->link.faults, lm->topo, from, f->dst, tpu__axis_orders[f->order], f->tie,
                     lm->route_scratch, route);
}

/* Where the ICI part of flow 'f' starts: its src, or after DCN the chip in dst's slice. */
static int ici_start(const tpu_linkmodel_t *lm, const tpu_flow_t *f)
{
    int c[TPU_MAX_AXES];

    if (f->kind != TPU_ROUTE_DCN) {
        return f->src;
    }
    tpu_topo_coords(lm->topo, f->src, c);
    return tpu_topo_chip(lm->topo, tpu_topo_slice_of(lm->topo, f->dst), c);
}

static void add_load(tpu_linkmodel_t *lm, int r, double bytes)
{
    if (lm->load[r] == 0) {
        lm->touched[lm->ntouched++] = r;
    }
    lm->load[r] += bytes;
}

void tpu__linkmodel_load_step(tpu_linkmodel_t *lm, const tpu_sched_t *sched, int64_t first,
                              int64_t last)
{
    int64_t i;

    for (i = first; i < last; i++) {
        const tpu_flow_t *f = &sched->flows[i];
        double bytes = (double)tpu__span_bytes(&f->span);
        tpu_route_t route;
        int chip, s, h;

        if (bytes == 0) {
            continue;
        }
        if (lm->classes) {
            flow_route(lm, f, f->src, &route);
            for (s = 0; s < route.nseg; s++) {
                add_load(lm, class_of(route.seg[s].axis, route.seg[s].dir),
                         bytes * route.seg[s].hops);
            }
            continue;
        }
        if (f->kind == TPU_ROUTE_DCN) {
            int nl = lm->topo->nlinks;
            int hs = tpu_topo_host_of(lm->topo, lm->link.host_dims, f->src);
            int hd = tpu_topo_host_of(lm->topo, lm->link.host_dims, ici_start(lm, f));

            add_load(lm, nl + 2 * hs, bytes);
            add_load(lm, nl + 2 * hd + 1, bytes);
        }
        chip = ici_start(lm, f);
        flow_route(lm, f, chip, &route);
        for (s = 0; s < route.nseg; s++) {
            for (h = 0; h < route.seg[s].hops; h++) {
                add_load(lm,
                         link_res(lm, tpu_topo_link(lm->topo, chip, route.seg[s].axis,
                                                    route.seg[s].dir)),
                         bytes);
                chip = tpu_topo_neighbor(lm->topo, chip, route.seg[s].axis, route.seg[s].dir);
            }
        }
    }
}

/*
 * The first resource a flow loads, and the "port" whose free time orders the
 * source's sends: the first link for ICI; for DCN the source chip's own DCN port
 * (an id after all resources), so that a chip's clock depends only on its own
 * sends and the loads of the schedule, never on another chip's start times.
 * Returns 0 for an empty flow.
 */
static int first_res(const tpu_linkmodel_t *lm, const tpu_flow_t *f, int *res_p, int *port_p)
{
    tpu_route_t route;

    if (tpu__span_bytes(&f->span) == 0) {
        return 0;
    }
    if (f->kind == TPU_ROUTE_DCN) {
        *res_p = lm->topo->nlinks + 2 * tpu_topo_host_of(lm->topo, lm->link.host_dims, f->src);
        *port_p = lm->nres + f->src;
        return 1;
    }
    flow_route(lm, f, f->src, &route);
    if (route.nseg == 0) {
        return 0;
    }
    if (lm->classes) {
        *res_p = class_of(route.seg[0].axis, route.seg[0].dir);
        *port_p = *res_p;
        return 1;
    }
    *res_p = link_res(lm, tpu_topo_link(lm->topo, f->src, route.seg[0].axis, route.seg[0].dir));
    *port_p = *res_p;
    return 1;
}

void tpu__linkmodel_time_flow(const tpu_linkmodel_t *lm, const tpu_flow_t *f, double ready,
                              double *start_p, double *arrival_p)
{
    double start = ready, drain = 0, lat = 0;
    int r, port;
    tpu_route_t route;
    int chip, s, h;

    if (!first_res(lm, f, &r, &port)) {
        *start_p = ready;
        *arrival_p = ready;
        return;
    }
    if (lm->free_at[port] > start) {
        start = lm->free_at[port];
    }
    if (lm->classes) {
        flow_route(lm, f, f->src, &route);
        for (s = 0; s < route.nseg; s++) {
            double d = lm->load[class_of(route.seg[s].axis, route.seg[s].dir)] / res_bw(lm, 0);

            if (d > drain) {
                drain = d;
            }
            /* The same additions, in the same order, as the full mode's hop by hop. */
            for (h = 0; h < route.seg[s].hops; h++) {
                lat += lm->link.ici_latency;
            }
        }
        *start_p = start;
        *arrival_p = start + lat + drain;
        return;
    }
    if (f->kind == TPU_ROUTE_DCN) {
        int nl = lm->topo->nlinks;
        int hs = tpu_topo_host_of(lm->topo, lm->link.host_dims, f->src);
        int hd = tpu_topo_host_of(lm->topo, lm->link.host_dims, ici_start(lm, f));
        double d1 = lm->load[nl + 2 * hs] / res_bw(lm, nl + 2 * hs);
        double d2 = lm->load[nl + 2 * hd + 1] / res_bw(lm, nl + 2 * hd + 1);

        drain = d1 > d2 ? d1 : d2;
        lat += lm->link.dcn_latency;
    }
    chip = ici_start(lm, f);
    flow_route(lm, f, chip, &route);
    for (s = 0; s < route.nseg; s++) {
        for (h = 0; h < route.seg[s].hops; h++) {
            int l =
                link_res(lm, tpu_topo_link(lm->topo, chip, route.seg[s].axis, route.seg[s].dir));
            double d = lm->load[l] / res_bw(lm, l);

            if (d > drain) {
                drain = d;
            }
            lat += lm->link.ici_latency;
            chip = tpu_topo_neighbor(lm->topo, chip, route.seg[s].axis, route.seg[s].dir);
        }
    }
    *start_p = start;
    *arrival_p = start + lat + drain;
}

void tpu__linkmodel_commit_flow(tpu_linkmodel_t *lm, const tpu_flow_t *f, double start)
{
    int r, port;
    double end;

    if (!first_res(lm, f, &r, &port)) {
        return;
    }
    end = start + lm->load[r] / res_bw(lm, r);
    if (end > lm->free_at[port]) {
        lm->free_at[port] = end;
    }
}

void tpu__linkmodel_end_step(tpu_linkmodel_t *lm)
{
    int i;

    for (i = 0; i < lm->ntouched; i++) {
        int r = lm->touched[i];

        lm->busy[r] += lm->load[r] / res_bw(lm, r);
        lm->load[r] = 0;
    }
    lm->ntouched = 0;
}

void tpu__linkmodel_stats(const tpu_linkmodel_t *lm, double total_s, tpu_coll_result_t *res)
{
    int r;

    memset(res->axis, 0, sizeof(res->axis));
    for (r = 0; r < lm->nres; r++) {
        int axis = TPU_AXIS_DCN, src, dir, dst;
        double busy_us = lm->busy[r] * 1e6;

        if (lm->classes) {
            axis = r / 2;
        } else if (r < lm->topo->nlinks) {
            tpu_topo_link_ends(lm->topo, r, &src, &axis, &dir, &dst);
        }
        if (busy_us > res->axis[axis].busy_us) {
            res->axis[axis].busy_us = busy_us;
            res->axis[axis].bytes = lm->busy[r] * res_bw(lm, r);
        }
    }
    for (r = 0; r <= TPU_MAX_AXES; r++) {
        res->axis[r].utilisation = total_s > 0 ? res->axis[r].busy_us / (total_s * 1e6) : 0;
    }
}

int tpu__linkmodel_flow_links(const tpu_linkmodel_t *lm, const tpu_flow_t *f, int32_t *links,
                              int cap, int *src_host_p, int *dst_host_p)
{
    tpu_route_t route;
    int chip, s, h, n = 0;

    *src_host_p = *dst_host_p = -1;
    if (f->kind == TPU_ROUTE_DCN && !lm->classes) {
        *src_host_p = tpu_topo_host_of(lm->topo, lm->link.host_dims, f->src);
        *dst_host_p = tpu_topo_host_of(lm->topo, lm->link.host_dims, ici_start(lm, f));
    }
    chip = lm->classes ? f->src : ici_start(lm, f);
    flow_route(lm, f, chip, &route);
    for (s = 0; s < route.nseg; s++) {
        for (h = 0; h < route.seg[s].hops && n < cap; h++) {
            links[n++] = tpu_topo_link(lm->topo, chip, route.seg[s].axis, route.seg[s].dir);
            chip = tpu_topo_neighbor(lm->topo, chip, route.seg[s].axis, route.seg[s].dir);
        }
    }
    return n;
}

double tpu__linkmodel_bw(const tpu_linkmodel_t *lm, int r)
{
    return res_bw(lm, r);
}
