/*
 * The link model (DESIGN.md section 3).
 *
 * Resources, each with a bandwidth in bytes/s:
 *   - every directed ICI link: half the published bidirectional W, times
 *     ici_efficiency (1 in the default model, below 1 when calibrated);
 *   - per chip, its path to its host's NIC, out and in: PCIe (pcie_bw) and the
 *     chip's own share of the NIC (the book publishes DCN bandwidth per chip,
 *     dcn_bw), one resource at the smaller of the two, which carries that
 *     chip's DCN traffic: a chip alone gets dcn_bw, not its host's whole NIC;
 *   - per TPU host, its NIC out and in (nic_bw, by default its chips x dcn_bw,
 *     the book's per-chip DCN figure), which the host's chips share;
 *   - per chip, the VPU that adds received data into the accumulator (reduce_bw);
 *   - per port (a flow's first resource: a link, or the chip's PCIe path for
 *     DCN), its DMA engine, which starts the messages one after the other.
 *
 * A DCN flow crosses chip -> PCIe -> NIC -> datacenter network (dcn_latency) ->
 * NIC -> PCIe -> the chip of the same coordinates in the other slice, then ICI
 * hops in that slice if it is not the destination itself.
 *
 * Bytes and latency, apart.  As in the published formulas (bandwidth term plus
 * hops), the walk (timing.c) times the bytes of every flow here, with no hop
 * latency, and adds up the latencies along the chains of dependencies apart;
 * the collective takes the latest bytes plus the longest chain.  So a pipeline
 * can keep the links busy but cannot hide a hop.  This file gives each flow of a
 * step its start and the moment its bytes are through (its "links" arrival),
 * and its own latency: hops * alpha (+ dcn_latency), and what its start waited.
 *
 * One flow alone.  A flow (one message) of B bytes starts when its data is at
 * its source and its port has drained what the earlier steps gave it; its bytes
 * are through B / (the smallest bandwidth on its route) later (cut-through: every
 * resource of the route at once, at the bottleneck's rate).
 *
 * Message starts.  A port's DMA engine starts the messages it is given
 * (descriptors, doorbell, completion semaphore), msg_cost each: the messages a
 * port is given at one moment are one batch and cost one start; batches go one
 * after the other, in the order they are ready, in real time (the bytes' time
 * plus the chain of latencies before the flow).  A batch's own start is inside
 * the hop latency (the published 1 us per hop is end to end); what its start
 * waited beyond the wait for its port's link is latency on its chain.  So a
 * start overlaps the bytes before it: only messages that come faster than
 * msg_cost apart, or a deep pipeline of small chunks, pay for their starts.
 *
 * Contention by time overlap: processor sharing.  On each resource the flows of
 * a step that are being served share its bandwidth equally, each from its start
 * until its bytes are through (share(): an event loop in virtual time, exact for
 * flows of unequal size and start), and nothing is served while the resource is
 * busy with an earlier step's work: the steps are priorities, a later step
 * filling the idle time the earlier ones left (the next chunk of a pipeline,
 * ordered later but ready earlier).  Every interval a resource was busy is kept
 * (merged where they touch; no gap between them is counted as busy).  When
 * every flow of the step on a resource starts together with the same bytes the
 * sharing is their sum over the bandwidth (the fast path, the same result).
 *
 * Reductions.  A flow that reduces is through once the destination's VPU has
 * added it.  The VPU reduces the bytes as they land (it reads the accumulator
 * and the bytes and writes the sum: reduce_bw is a chip's HBM bandwidth over the
 * 3 bytes it moves per byte reduced), so the VPU is one more resource on the
 * flow's route, shared like a link.  At the published HBM rates it keeps up with
 * every link into the chip; it binds when reduce_bw is set lower.
 *
 * Diagram, two flows a (4 KiB) and b (8 KiB) sharing link L from one moment:
 *
 *     L   |== a and b share ==|== b alone ==|
 *         start               a through     b through: (4K + 8K) / bw
 *         (a at 8K / bw: half the bandwidth until then)
 *
 * Everything is a pure function of the schedule and the constants, evaluated in
 * a fixed order, so every transport gets bit-identical times.  Byte sums are sums
 * of integers (exact in a double), so their order does not matter.
 *
 * Representative mode.  When every selected axis wraps and no flow crosses DCN,
 * the pod looks the same from every chip: the schedule is a set of templates
 * that every chip runs translated, and every chip's clock is the same.  Then one
 * chip's flows are enough.  A template whose route makes h hops in the class
 * (axis a, direction d) is on each link of that class h times (its h translated
 * copies that cross it), all with the template's start, so each link of the
 * class sees exactly the entries of the full schedule: the template weighs h
 * copies in the sharing (bytes * h), and its engine is the class's.  A chip's
 * VPU sees one translated copy of every reducing template.  Every time comes out
 * bit for bit the same as with the full schedule.  That is what lets 'tpuemu
 * model' time an all-to-all of 8,960 chips.
 */
#include "linkmodel.h"

#include "alloc.h"
#include "linkmodel_busy.h"
#include "linkmodel_share.h"
#include "linkmodel_starts.h"

#include <stdlib.h>
#include <string.h>

/* The resource of a class (axis, direction) in representative mode. */
static int class_of(int axis, int dir)
{
    return 2 * axis + (dir < 0);
}

tpu_status_t tpu__linkmodel_init(tpu_linkmodel_t *lm, const tpu_topo_t *topo,
                                 const tpu_link_model_t *link, int classes)
{
    double eff = link->ici_efficiency > 0 ? link->ici_efficiency : 1;
    int r, c, hosts, a, route_cap = 8;
    size_t n;

    memset(lm, 0, sizeof(*lm));
    lm->topo = topo;
    lm->link = *link;
    lm->classes = classes;
    lm->step_id = 1; /* no stamp yet: every resource's scratch starts a step */
    hosts = classes ? 0 : tpu_topo_host_count(topo, link->host_dims);
    if (classes) {
        lm->port0 = lm->nic0 = lm->vpu0 = 2 * TPU_MAX_AXES;
        lm->eng0 = lm->vpu0 + 1;
        lm->nres = lm->eng0 + lm->port0;
    } else {
        lm->port0 = topo->nlinks;
        lm->nic0 = lm->port0 + 2 * topo->nchips;
        lm->vpu0 = lm->nic0 + 2 * hosts;
        lm->eng0 = lm->vpu0 + topo->nchips;
        lm->nres = lm->eng0 + lm->nic0;
    }
    for (a = 0; a < topo->naxes; a++) {
        route_cap += topo->dims[a];
    }
    n = (size_t)lm->nres;
    lm->bw = tpu__calloc(n, sizeof(double));
    lm->free = tpu__calloc(n, sizeof(double));
    lm->busy = tpu__calloc(n, sizeof(double));
    lm->bytes = tpu__calloc(n, sizeof(double));
    /* The step's scratch is set when a step first touches a resource (its stamp)
     * and a resource's intervals are read up to niv: neither needs clearing, so
     * a pod's worth of them costs nothing until it is used. */
    lm->sum = tpu__malloc(n * sizeof(double));
    lm->s0 = tpu__malloc(n * sizeof(double));
    lm->e0 = tpu__malloc(n * sizeof(double));
    lm->nfree = tpu__malloc(n * sizeof(double));
    lm->iv = tpu__malloc(n * 2 * TPU_LM_IV_INLINE * sizeof(double));
    lm->ivx = tpu__calloc(n, sizeof(double *));
    lm->niv = tpu__calloc(n, sizeof(int32_t));
    lm->civ = tpu__calloc(n, sizeof(int32_t));
    lm->ivhint = tpu__calloc(n, sizeof(int32_t));
    lm->ivend = tpu__malloc(n * sizeof(double));
    lm->stamp = tpu__calloc(n, sizeof(int32_t));
    lm->mixed = tpu__malloc(n);
    lm->touched = tpu__malloc(n * sizeof(int32_t));
    lm->xyz =
        tpu__malloc((size_t)(topo->nchips > 0 ? topo->nchips : 1) * TPU_MAX_AXES * sizeof(int16_t));
    lm->rres = tpu__calloc((size_t)route_cap, sizeof(int32_t));
    lm->rw = tpu__calloc((size_t)route_cap, sizeof(double));
    if (lm->bw == NULL || lm->free == NULL || lm->busy == NULL || lm->bytes == NULL ||
        lm->sum == NULL || lm->s0 == NULL || lm->e0 == NULL || lm->nfree == NULL ||
        lm->iv == NULL || lm->ivx == NULL || lm->niv == NULL || lm->civ == NULL ||
        lm->ivhint == NULL || lm->ivend == NULL || lm->stamp == NULL || lm->mixed == NULL ||
        lm->touched == NULL || lm->xyz == NULL || lm->rres == NULL || lm->rw == NULL) {
        tpu__linkmodel_fini(lm);
        return TPU_ERR_NO_MEMORY;
    }
    for (c = 0; c < topo->nchips; c++) {
        int xyz[TPU_MAX_AXES];

        tpu_topo_coords(topo, c, xyz);
        for (a = 0; a < TPU_MAX_AXES; a++) {
            lm->xyz[(size_t)c * TPU_MAX_AXES + a] = (int16_t)xyz[a];
        }
    }
    for (r = 0; r < lm->port0; r++) {
        lm->bw[r] = link->ici_bw / 2 * eff;
        if (!classes && link->faults != NULL) {
            lm->bw[r] *= tpu_faults_link_factor(link->faults, r);
        }
    }
    for (c = 0; c < (classes ? 0 : topo->nchips); c++) {
        int h = tpu_topo_host_of(topo, link->host_dims, c);

        /* The chip's path to the NIC: PCIe (pcie_bw; 0: not modeled) and the chip's
         * own share of the NIC, the book's per-chip DCN figure (dcn_bw). */
        double port =
            link->pcie_bw > 0 && link->pcie_bw < link->dcn_bw ? link->pcie_bw : link->dcn_bw;

        lm->bw[lm->port0 + 2 * c] = lm->bw[lm->port0 + 2 * c + 1] = port;
        /* The NIC: nic_bw, or the sum of its chips' dcn_bw. */
        lm->bw[lm->nic0 + 2 * h] += link->nic_bw > 0 ? 0 : link->dcn_bw;
        lm->bw[lm->nic0 + 2 * h + 1] += link->nic_bw > 0 ? 0 : link->dcn_bw;
    }
    for (r = lm->nic0; r < lm->vpu0 && link->nic_bw > 0; r++) {
        lm->bw[r] = link->nic_bw;
    }
    for (r = lm->nic0; r < lm->vpu0 && link->faults != NULL; r++) {
        lm->bw[r] *= tpu_faults_nic_factor(link->faults, (r - lm->nic0) / 2);
    }
    if (tpu_faults_down_count(link->faults) > 0) {
        lm->route_scratch = tpu__malloc((size_t)topo->chips_per_slice * 2 * sizeof(int32_t));
        if (lm->route_scratch == NULL) {
            tpu__linkmodel_fini(lm);
            return TPU_ERR_NO_MEMORY;
        }
    }
    for (r = lm->vpu0; r < lm->eng0; r++) {
        /* reduce_bw 0: reductions are not modeled (an infinite VPU). */
        lm->bw[r] = link->reduce_bw > 0 ? link->reduce_bw : 0;
    }
    return TPU_OK;
}

void tpu__linkmodel_fini(tpu_linkmodel_t *lm)
{
    int r;

    tpu__free(lm->bw);
    tpu__free(lm->free);
    tpu__free(lm->busy);
    tpu__free(lm->bytes);
    tpu__free(lm->sum);
    tpu__free(lm->s0);
    tpu__free(lm->e0);
    tpu__free(lm->nfree);
    for (r = 0; lm->ivx != NULL && r < lm->nres; r++) {
        tpu__free(lm->ivx[r]);
    }
    tpu__free(lm->ivx);
    tpu__free(lm->iv);
    tpu__free(lm->niv);
    tpu__free(lm->civ);
    tpu__free(lm->ivhint);
    tpu__free(lm->ivend);
    tpu__free(lm->sortbuf);
    tpu__free(lm->runs);
    tpu__free(lm->stamp);
    tpu__free(lm->mixed);
    tpu__free(lm->touched);
    tpu__free(lm->rres);
    tpu__free(lm->rw);
    tpu__free(lm->st);
    tpu__free(lm->lat);
    tpu__free(lm->md);
    tpu__free(lm->wait);
    tpu__free(lm->roff);
    tpu__free(lm->sres);
    tpu__free(lm->sw);
    tpu__free(lm->ent);
    tpu__free(lm->ent2);
    tpu__free(lm->batch);
    tpu__free(lm->batch2);
    tpu__free(lm->bgroup);
    tpu__free(lm->eslot);
    tpu__free(lm->estamp);
    tpu__free(lm->engs);
    tpu__free(lm->szl);
    tpu__free(lm->nsz);
    tpu__free(lm->act);
    tpu__free(lm->segs);
    tpu__free(lm->bstart);
    tpu__free(lm->slot);
    tpu__free(lm->orbit);
    tpu__free(lm->orbit_chip);
    tpu__free(lm->route_scratch);
    tpu__free(lm->xyz);
    memset(lm, 0, sizeof(*lm));
}

/*
 * The directed link from the chip at coordinates 'c' of 'slice' along 'axis' in
 * direction 'dir', or -1 when there is none: tpu_topo_link() from coordinates
 * already known (set_orbits() visits every link of the pod once per walk).
 */
static int link_at(const tpu_topo_t *topo, int slice, const int *c, int axis, int dir)
{
    const int *span;
    int n = topo->dims[axis], d = dir > 0 ? 0 : 1, p = c[axis], idx;

    if (n < 2 || ((p + dir < 0 || p + dir >= n) && !topo->wrap[axis])) {
        return -1;
    }
    if (d == 1 && !topo->wrap[axis]) {
        p -= 1;
    }
    span = topo->link_span[axis][d];
    idx = axis == 0   ? (p * span[1] + c[1]) * span[2] + c[2]
          : axis == 1 ? (c[0] * span[1] + p) * span[2] + c[2]
                      : (c[0] * span[1] + c[1]) * span[2] + p;
    return slice * topo->links_per_slice + topo->link_base[axis][d] + idx;
}

tpu_status_t tpu__linkmodel_set_orbits(tpu_linkmodel_t *lm, const int *period, unsigned reflect)
{
    const tpu_topo_t *topo = lm->topo;
    int l, ch = 0, s, c[TPU_MAX_AXES], ic[TPU_MAX_AXES], a, d;

    lm->orbit = tpu__malloc((size_t)(topo->nlinks > 0 ? topo->nlinks : 1) * sizeof(int32_t));
    lm->orbit_chip = tpu__malloc((size_t)topo->nchips * sizeof(int32_t));
    if (lm->orbit == NULL || lm->orbit_chip == NULL) {
        return TPU_ERR_NO_MEMORY;
    }
    for (l = 0; l < topo->nlinks; l++) {
        lm->orbit[l] = l;
    }
    /* Every chip in id order (coordinates counted, not divided out): the chip that
     * stands for it is its image under the symmetry that maps it into the domain
     * (translations by multiples of 'period', reflections i -> n-1-i of the axes
     * of 'reflect'), and every link it sends on stands for itself at that image,
     * in the direction a reflection of the link's own axis turns it to. */
    for (s = 0; s < topo->slices; s++) {
        for (c[0] = 0; c[0] < topo->dims[0]; c[0]++) {
            for (c[1] = 0; c[1] < topo->dims[1]; c[1]++) {
                for (c[2] = 0; c[2] < topo->dims[2]; c[2]++, ch++) {
                    unsigned flip = 0;

                    for (a = 0; a < TPU_MAX_AXES; a++) {
                        int n = topo->dims[a];

                        if ((reflect & (1u << a)) && c[a] >= n / 2) {
                            ic[a] = n - 1 - c[a];
                            flip |= 1u << a;
                        } else {
                            ic[a] = c[a] % period[a];
                        }
                    }
                    lm->orbit_chip[ch] = s * topo->chips_per_slice +
                                         (ic[0] * topo->dims[1] + ic[1]) * topo->dims[2] + ic[2];
                    for (a = 0; a < TPU_MAX_AXES; a++) {
                        for (d = -1; d <= 1; d += 2) {
                            int from = link_at(topo, s, c, a, d), img;

                            if (from < 0) {
                                continue;
                            }
                            img = link_at(topo, s, ic, a, (flip & (1u << a)) ? -d : d);
                            /* No such link at the image (the end of an open axis): then
                             * no flow of the schedule crosses this one (the symmetry
                             * would map it there), and it stands for itself, with
                             * nothing on it. */
                            lm->orbit[from] = img >= 0 ? img : from;
                        }
                    }
                }
            }
        }
    }
    return TPU_OK;
}

/* The resource that carries ICI link 'l': itself, or the link standing for its orbit. */
static int link_res(const tpu_linkmodel_t *lm, int l)
{
    return lm->orbit != NULL ? lm->orbit[l] : l;
}

/*
 * The ICI route of a flow, from 'from' (the chip where its ICI part starts).  With
 * no failed link it is the dimension-order route of tpu_topo_route(), found here
 * from the table of coordinates without a division: the same runs (an axis'
 * shortest way, the tie's direction at half a wrapped even axis).
 */
static void flow_route(const tpu_linkmodel_t *lm, const tpu_flow_t *f, int from, tpu_route_t *route)
{
    const tpu_topo_t *topo = lm->topo;
    const int16_t *cs = lm->xyz + (size_t)from * TPU_MAX_AXES;
    const int16_t *cd = lm->xyz + (size_t)f->dst * TPU_MAX_AXES;
    const int *order = tpu__axis_orders[f->order];
    int i;

    if (lm->route_scratch != NULL) {
        tpu_faults_route(lm->link.faults, topo, from, f->dst, order, f->tie, lm->route_scratch,
                         route);
        return;
    }
    route->src = from;
    route->dst = f->dst;
    route->nseg = 0;
    route->nhops = 0;
    for (i = 0; i < TPU_MAX_AXES; i++) {
        int a = order[i], n, fwd, dir, hops;

        if (a >= topo->naxes) {
            continue;
        }
        n = topo->dims[a];
        fwd = cd[a] - cs[a];
        if (!topo->wrap[a]) {
            dir = fwd >= 0 ? 1 : -1;
            hops = fwd >= 0 ? fwd : -fwd;
        } else {
            fwd += fwd < 0 ? n : 0;
            dir = fwd <= n - fwd ? 1 : -1;
            hops = fwd <= n - fwd ? fwd : n - fwd;
            if ((n & 1) == 0 && fwd == n / 2) {
                dir = f->tie < 0 ? -1 : 1; /* the tie distance */
            }
        }
        if (hops == 0) {
            continue;
        }
        route->seg[route->nseg].axis = (int8_t)a;
        route->seg[route->nseg].dir = (int8_t)dir;
        route->seg[route->nseg].hops = (int16_t)hops;
        route->nseg++;
        route->nhops += hops;
    }
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

/*
 * The resources of flow 'f' into lm->rres / lm->rw, port first, and its latency;
 * returns how many (0: the flow moves nothing).
 */
int tpu__linkmodel_flow_resources(tpu_linkmodel_t *lm, const tpu_flow_t *f, double *lat_p)
{
    double bytes = (double)tpu__span_bytes(&f->span), lat = 0;
    tpu_route_t route;
    int chip, s, h, n = 0, slice, c[TPU_MAX_AXES];

    *lat_p = 0;
    if (bytes == 0) {
        return 0;
    }
    if (lm->classes) {
        flow_route(lm, f, f->src, &route);
        for (s = 0; s < route.nseg; s++) {
            lm->rres[n] = class_of(route.seg[s].axis, route.seg[s].dir);
            lm->rw[n++] = bytes * route.seg[s].hops;
            /* The same additions, in the same order, as the full mode's hop by hop. */
            for (h = 0; h < route.seg[s].hops; h++) {
                lat += lm->link.ici_latency;
            }
        }
    } else {
        chip = ici_start(lm, f);
        if (f->kind == TPU_ROUTE_DCN) {
            int hs = tpu_topo_host_of(lm->topo, lm->link.host_dims, f->src);
            int hd = tpu_topo_host_of(lm->topo, lm->link.host_dims, chip);
            int32_t dres[4] = {lm->port0 + 2 * f->src, lm->nic0 + 2 * hs, lm->nic0 + 2 * hd + 1,
                               lm->port0 + 2 * chip + 1};
            int i;

            for (i = 0; i < 4; i++) {
                lm->rres[n] = dres[i];
                lm->rw[n++] = bytes;
            }
            lat += lm->link.dcn_latency;
        }
        flow_route(lm, f, chip, &route);
        /* Hop by hop from the coordinates of the chip the hop leaves, counted along
         * the run (the links tpu_topo_link() and tpu_topo_neighbor() give). */
        for (s = 0; s < TPU_MAX_AXES; s++) {
            c[s] = lm->xyz[(size_t)chip * TPU_MAX_AXES + s];
        }
        slice = lm->topo->slices > 1 ? tpu_topo_slice_of(lm->topo, chip) : 0;
        for (s = 0; s < route.nseg; s++) {
            int a = route.seg[s].axis, dir = route.seg[s].dir, len = lm->topo->dims[a];

            for (h = 0; h < route.seg[s].hops; h++) {
                lm->rres[n] = link_res(lm, link_at(lm->topo, slice, c, a, dir));
                lm->rw[n++] = bytes;
                lat += lm->link.ici_latency;
                c[a] += dir;
                c[a] = c[a] == len ? 0 : c[a] < 0 ? len - 1 : c[a];
            }
        }
    }
    if (n > 0 && f->reduce && lm->link.reduce_bw > 0) {
        /* The destination's VPU adds the bytes as they land. */
        int v = lm->classes ? 0 : lm->orbit_chip != NULL ? lm->orbit_chip[f->dst] : f->dst;

        lm->rres[n] = lm->vpu0 + v;
        lm->rw[n++] = bytes;
    }
    *lat_p = lat;
    return n;
}

int tpu__linkmodel_port(tpu_linkmodel_t *lm, const tpu_flow_t *f)
{
    double lat;

    return tpu__linkmodel_flow_resources(lm, f, &lat) > 0 ? lm->rres[0] : -1;
}

static tpu_status_t grow_step(tpu_linkmodel_t *lm, int64_t n)
{
    if (n <= lm->cap_step) {
        return TPU_OK;
    }
    tpu__free(lm->st);
    tpu__free(lm->lat);
    tpu__free(lm->md);
    tpu__free(lm->roff);
    lm->st = tpu__malloc((size_t)n * sizeof(double));
    lm->lat = tpu__malloc((size_t)n * sizeof(double));
    lm->md = tpu__malloc((size_t)n * sizeof(double));
    tpu__free(lm->wait);
    lm->wait = tpu__malloc((size_t)n * sizeof(double));
    lm->roff = tpu__malloc((size_t)(n + 1) * sizeof(int64_t));
    lm->cap_step = n;
    if (lm->st == NULL || lm->lat == NULL || lm->md == NULL || lm->roff == NULL ||
        lm->wait == NULL) {
        lm->cap_step = 0;
        return TPU_ERR_NO_MEMORY;
    }
    return TPU_OK;
}

/*
 * Keep flow k's resources (lm->rres / lm->rw, 'm' of them) for the rest of the
 * step: flows are k = 0, 1, ... in order.
 */
static tpu_status_t keep_resources(tpu_linkmodel_t *lm, int64_t k, int m)
{
    int64_t at = lm->roff[k];

    if (at + m > lm->cap_sres) {
        int64_t cap = lm->cap_sres ? 2 * lm->cap_sres : 1024;
        int32_t *r;
        double *w;

        while (cap < at + m) {
            cap *= 2;
        }
        r = tpu__realloc(lm->sres, (size_t)cap * sizeof(*r));
        if (r == NULL) {
            return TPU_ERR_NO_MEMORY;
        }
        lm->sres = r;
        w = tpu__realloc(lm->sw, (size_t)cap * sizeof(*w));
        if (w == NULL) {
            return TPU_ERR_NO_MEMORY;
        }
        lm->sw = w;
        lm->cap_sres = cap;
    }
    if (m > 0) {
        memcpy(lm->sres + at, lm->rres, (size_t)m * sizeof(int32_t));
        memcpy(lm->sw + at, lm->rw, (size_t)m * sizeof(double));
    }
    lm->roff[k + 1] = at + m;
    return TPU_OK;
}

tpu_status_t tpu__linkmodel_step(tpu_linkmodel_t *lm, const tpu_flow_t *flows, int64_t n,
                                 double *start, double *arrival, double *lat, const double *off)
{
    int64_t k;
    int i, m, t;

    if (grow_step(lm, n > 0 ? n : 1) != TPU_OK) {
        return TPU_ERR_NO_MEMORY;
    }
    lm->step_id++;
    lm->ntouched = 0;
    lm->any_mixed = 0;
    lm->roff[0] = 0;
    /* Each flow's resources; its start once its batch has been started. */
    for (k = 0; k < n; k++) {
        lm->md[k] = 0;
        lm->wait[k] = 0;
        lm->st[k] = start[k];
        m = tpu__linkmodel_flow_resources(lm, &flows[k], &lm->lat[k]);
        if (keep_resources(lm, k, m) != TPU_OK) {
            return TPU_ERR_NO_MEMORY;
        }
        if (m == 0) {
            lm->lat[k] = -1;
        }
    }
    if (lm->link.msg_cost > 0 && tpu__linkmodel_engine_starts(lm, n, off) != TPU_OK) {
        return TPU_ERR_NO_MEMORY;
    }
    for (k = 0; lat == NULL && k < n; k++) {
        /* One flow at a time (the link timer): its start waits for the engine. */
        lm->st[k] += lm->wait[k];
        lm->wait[k] = 0;
    }
    /* Each flow's interval alone; the step's totals per resource. */
    for (k = 0; k < n; k++) {
        double bytes = (double)tpu__span_bytes(&flows[k].span);
        const int32_t *rres = lm->sres + lm->roff[k];
        const double *rw = lm->sw + lm->roff[k];

        if (lm->lat[k] < 0) {
            continue;
        }
        m = (int)(lm->roff[k + 1] - lm->roff[k]);
        lm->st[k] = tpu__linkmodel_busy_idle(lm, rres[0], lm->st[k]);
        if (lat != NULL) {
            /* What its start waited beyond the wait for its port's link. */
            double q = lm->wait[k] - (lm->st[k] - start[k]);

            lm->wait[k] = q > 0 ? q : 0;
        }
        for (i = 0; i < m; i++) {
            int32_t r = rres[i];

            if (lm->stamp[r] != lm->step_id) {
                lm->stamp[r] = lm->step_id;
                lm->touched[lm->ntouched++] = r;
                lm->sum[r] = 0;
                lm->mixed[r] = 0;
                lm->nfree[r] = 0;
                lm->s0[r] = lm->st[k];
                lm->e0[r] = bytes;
            } else if ((lm->s0[r] != lm->st[k] || lm->e0[r] != bytes) && lm->bw[r] > 0) {
                lm->mixed[r] = 1;
                lm->any_mixed = 1;
            }
            lm->sum[r] += rw[i];
        }
    }
    if (lm->any_mixed && tpu__linkmodel_drain_mixed(lm, flows, n) != TPU_OK) {
        return TPU_ERR_NO_MEMORY;
    }
    /* Arrivals: the most loaded resource of the route drains last. */
    for (k = 0; k < n; k++) {
        double d = lm->md[k];

        start[k] = lm->st[k];
        if (lat != NULL) {
            /* Its latency: its hops (and DCN), and the wait for its start. */
            lat[k] = (lm->lat[k] < 0 ? 0 : lm->lat[k]) + lm->wait[k];
        }
        if (lm->lat[k] < 0) {
            arrival[k] = lm->st[k];
            continue;
        }
        m = (int)(lm->roff[k + 1] - lm->roff[k]);
        for (i = 0; i < m; i++) {
            int32_t r = lm->sres[lm->roff[k] + i];
            double q, dr;

            if (lm->mixed[r] || lm->bw[r] <= 0) {
                continue;
            }
            dr = lm->sum[r] / lm->bw[r];
            q = tpu__linkmodel_busy_wait(lm, r, lm->st[k], dr);
            if (q > 0) {
                dr += q;
            }
            if (lm->st[k] + dr > lm->nfree[r]) {
                lm->nfree[r] = lm->st[k] + dr;
            }
            if (dr > d) {
                d = dr;
            }
        }
        arrival[k] = lat != NULL ? lm->st[k] + d : lm->st[k] + lm->lat[k] + d;
    }
    for (t = 0; t < lm->ntouched; t++) {
        int32_t r = lm->touched[t];

        if (lm->bw[r] <= 0) {
            continue;
        }
        if (lm->nfree[r] > lm->free[r]) {
            lm->free[r] = lm->nfree[r];
        }
        if (!lm->mixed[r] && tpu__linkmodel_busy_add(lm, r, lm->s0[r], lm->nfree[r]) != TPU_OK) {
            return TPU_ERR_NO_MEMORY;
        }
        lm->busy[r] += lm->sum[r] / lm->bw[r];
        lm->bytes[r] += lm->sum[r];
    }
    return TPU_OK;
}

/* The axis of ICI link l: links are numbered by slice, then axis and direction. */
static int link_axis(const tpu_topo_t *topo, int l)
{
    int local = l % topo->links_per_slice, g;

    for (g = 2 * TPU_MAX_AXES - 1; g > 0 && local < topo->link_base[g / 2][g % 2]; g--) {
    }
    return g / 2;
}

void tpu__linkmodel_stats(const tpu_linkmodel_t *lm, double total_s, tpu_coll_result_t *res)
{
    int r;

    memset(res->axis, 0, sizeof(res->axis));
    for (r = 0; r < lm->vpu0; r++) {
        int axis = TPU_AXIS_DCN;
        double busy_us = lm->busy[r] * 1e6;

        if (lm->busy[r] == 0 && lm->bytes[r] == 0) {
            continue;
        }
        if (lm->classes) {
            axis = r / 2;
        } else if (r < lm->port0) {
            axis = link_axis(lm->topo, r);
        } else if (r < lm->nic0) {
            continue; /* PCIe: the NICs stand for DCN */
        }
        if (busy_us > res->axis[axis].busy_us) {
            res->axis[axis].busy_us = busy_us;
            res->axis[axis].bytes = lm->bytes[r];
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
    return lm->bw[r];
}
