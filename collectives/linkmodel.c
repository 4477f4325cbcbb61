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
 *   - per chip, the VPU that adds received data into the accumulator (reduce_bw).
 *
 * A DCN flow crosses chip -> PCIe -> NIC -> datacenter network (dcn_latency) ->
 * NIC -> PCIe -> the chip of the same coordinates in the other slice, then ICI
 * hops in that slice if it is not the destination itself.
 *
 * One flow alone.  A flow (one message) of B bytes starts when its data is at
 * its source and its first resource (its "port") has drained what the earlier
 * steps gave it.  It is usable at its destination
 *
 *     hops * alpha (+ dcn_latency) + B / (the smallest bandwidth on its route)
 *
 * after it starts (cut-through: the latency of every hop is paid once, the bytes
 * cross at the bottleneck rate).  Its port is busy for msg_cost + B / bw: the
 * DMA engine starts the messages it is given (descriptors, doorbell, completion
 * semaphore); the messages of one stream of the schedule (one transfer: an
 * all-to-all's blocks, say) that a port is given at the same moment are one
 * batch and cost one start, while every chunk of a pipeline and every ordering
 * of a multi-axis algorithm is a stream of its own.  The published 1 us per hop is an end-to-end
 * figure that already holds one message's start; what it does not show is that a port starts its
 * batches one after the other, so a pipeline of K chunks costs its port K * msg_cost more than one
 * message.
 *
 * Contention by time overlap.  A flow is on all its resources at once during its
 * interval [start, start + msg_cost + B / bottleneck) (cut-through).  On each
 * resource it shares the bandwidth with the flows of its step whose intervals
 * overlap its own, and it waits for what the earlier steps still have there:
 *
 *     drain(r) = (bytes of the overlapping flows on r) / bw(r)
 *              + wait(r): the busy time of the earlier steps that it skips
 *                on r before its own work has found as much idle time
 *              + on its port: (batches of the overlapping flows that start
 *                there, its own not counted: it is in alpha) * msg_cost
 *     arrival  = start + latency + max over its route of drain(r)
 *
 * (the starts occupy the DMA engine of the port's chip, not the bytes passing
 * through; the port stays busy for every batch's start).
 *
 * For k equal flows at once this is equal sharing (each at bw / k); for unequal
 * ones it is the finish time of the largest under processor sharing; two flows
 * of a step that cross a resource at different times do not slow each other.
 * After a step, r is busy over [start, start + drain(r)) of each of its flows
 * there (every interval is kept, merged where they touch: no gap between them
 * is ever counted as busy), and a flow starts at the first idle moment of its
 * port: the next chunk of a pipeline, ordered in a later step but ready
 * earlier, uses the idle time the earlier steps left instead of queueing behind
 * their last flow (which charged a pipeline's hop latencies serially).
 *
 * Reductions.  A flow that reduces is usable once the destination's VPU has
 * added it.  The VPU reduces the bytes as they land (it reads the accumulator
 * and the bytes and writes the sum: reduce_bw is a chip's HBM bandwidth over the
 * 3 bytes it moves per byte reduced), so the VPU is one more resource on the
 * flow's route, shared by the reductions of the chip that overlap in time.  At
 * the published HBM rates it keeps up with every link into the chip; it binds
 * when reduce_bw is set lower.
 *
 * Diagram, two flows a (4 KiB) and b (8 KiB) sharing link L, each alone at bw:
 *
 *     L   |msg|== a and b share ==|== b alone ==|
 *         start                   a done        b done: (4K+8K)/bw + 2 msg
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
 * copies that cross it), all with the template's interval, so each link of the
 * class sees exactly the entries (template, bytes * h(a, d), interval), the
 * entries the full schedule records link by link; one of the copies starts there
 * when (a, d) is the template's first class.  A chip's VPU sees one translated
 * copy of every reducing template.  Every time comes out bit for bit the same as
 * with the full schedule.  That is what lets 'tpuemu model' time an all-to-all
 * of 8,960 chips.
 */
#include "linkmodel.h"

#include "tpu/alloc.h"

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
        lm->nres = lm->vpu0 + 1;
    } else {
        lm->port0 = topo->nlinks;
        lm->nic0 = lm->port0 + 2 * topo->nchips;
        lm->vpu0 = lm->nic0 + 2 * hosts;
        lm->nres = lm->vpu0 + topo->nchips;
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
    lm->nmsg = tpu__malloc(n * sizeof(int32_t));
    lm->stream0 = tpu__malloc(n * sizeof(int32_t));
    lm->stamp = tpu__calloc(n, sizeof(int32_t));
    lm->mixed = tpu__malloc(n);
    lm->touched = tpu__malloc(n * sizeof(int32_t));
    lm->rres = tpu__calloc((size_t)route_cap, sizeof(int32_t));
    lm->rw = tpu__calloc((size_t)route_cap, sizeof(double));
    if (lm->bw == NULL || lm->free == NULL || lm->busy == NULL || lm->bytes == NULL ||
        lm->sum == NULL || lm->s0 == NULL || lm->e0 == NULL || lm->nfree == NULL ||
        lm->iv == NULL || lm->ivx == NULL || lm->niv == NULL || lm->civ == NULL ||
        lm->ivhint == NULL || lm->nmsg == NULL || lm->stream0 == NULL || lm->stamp == NULL ||
        lm->mixed == NULL || lm->touched == NULL || lm->rres == NULL || lm->rw == NULL) {
        tpu__linkmodel_fini(lm);
        return TPU_ERR_NO_MEMORY;
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
    for (r = lm->vpu0; r < lm->nres; r++) {
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
    tpu__free(lm->nmsg);
    tpu__free(lm->stream0);
    tpu__free(lm->stamp);
    tpu__free(lm->mixed);
    tpu__free(lm->touched);
    tpu__free(lm->rres);
    tpu__free(lm->rw);
    tpu__free(lm->st);
    tpu__free(lm->en);
    tpu__free(lm->lat);
    tpu__free(lm->md);
    tpu__free(lm->roff);
    tpu__free(lm->sres);
    tpu__free(lm->sw);
    tpu__free(lm->ent);
    tpu__free(lm->ent2);
    tpu__free(lm->bstart);
    tpu__free(lm->slot);
    tpu__free(lm->orbit);
    tpu__free(lm->orbit_chip);
    tpu__free(lm->route_scratch);
    memset(lm, 0, sizeof(*lm));
}

/*
 * The chip that stands for chip 'ch' in orbit timing: its image under the
 * symmetry that maps it into the domain (translations by multiples of 'period',
 * reflections i -> n-1-i of the axes of 'reflect'); '*flip_p' gets the axes
 * reflected.
 */
static int orbit_chip(const tpu_topo_t *topo, int ch, const int *period, unsigned reflect,
                      unsigned *flip_p)
{
    int c[TPU_MAX_AXES], a;

    *flip_p = 0;
    tpu_topo_coords(topo, ch, c);
    for (a = 0; a < TPU_MAX_AXES; a++) {
        int n = topo->dims[a];

        if ((reflect & (1u << a)) && c[a] >= n / 2) {
            c[a] = n - 1 - c[a];
            *flip_p |= 1u << a;
        } else {
            c[a] %= period[a];
        }
    }
    return tpu_topo_chip(topo, tpu_topo_slice_of(topo, ch), c);
}

tpu_status_t tpu__linkmodel_set_orbits(tpu_linkmodel_t *lm, const int *period, unsigned reflect)
{
    const tpu_topo_t *topo = lm->topo;
    int l, ch;
    unsigned flip;

    lm->orbit = tpu__malloc((size_t)(topo->nlinks > 0 ? topo->nlinks : 1) * sizeof(int32_t));
    lm->orbit_chip = tpu__malloc((size_t)topo->nchips * sizeof(int32_t));
    if (lm->orbit == NULL || lm->orbit_chip == NULL) {
        return TPU_ERR_NO_MEMORY;
    }
    for (ch = 0; ch < topo->nchips; ch++) {
        lm->orbit_chip[ch] = orbit_chip(topo, ch, period, reflect, &flip);
    }
    for (l = 0; l < topo->nlinks; l++) {
        int src, axis, dir, dst, img = 0;

        tpu_topo_link_ends(topo, l, &src, &axis, &dir, &dst);
        img = orbit_chip(topo, src, period, reflect, &flip);
        /* A reflection of the link's own axis turns its direction. */
        lm->orbit[l] = tpu_topo_link(topo, img, axis, (flip & (1u << axis)) ? -dir : dir);
        if (lm->orbit[l] < 0) {
            /* No such link at the image (the end of an open axis): then no flow of the
             * schedule crosses this one (the symmetry would map it there), and it
             * stands for itself, with nothing on it. */
            lm->orbit[l] = l;
        }
    }
    return TPU_OK;
}

/* The resource that carries ICI link 'l': itself, or the link standing for its orbit. */
static int link_res(const tpu_linkmodel_t *lm, int l)
{
    return lm->orbit != NULL ? lm->orbit[l] : l;
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

/*
 * The resources of flow 'f' into lm->rres / lm->rw, port first, and its latency;
 * returns how many (0: the flow moves nothing).
 */
static int flow_resources(tpu_linkmodel_t *lm, const tpu_flow_t *f, double *lat_p)
{
    double bytes = (double)tpu__span_bytes(&f->span), lat = 0;
    tpu_route_t route;
    int chip, s, h, n = 0;

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
        for (s = 0; s < route.nseg; s++) {
            for (h = 0; h < route.seg[s].hops; h++) {
                lm->rres[n] = link_res(
                    lm, tpu_topo_link(lm->topo, chip, route.seg[s].axis, route.seg[s].dir));
                lm->rw[n++] = bytes;
                lat += lm->link.ici_latency;
                if (s + 1 < route.nseg || h + 1 < route.seg[s].hops) {
                    /* The next hop's chip (the last hop's is the destination). */
                    chip = tpu_topo_neighbor(lm->topo, chip, route.seg[s].axis, route.seg[s].dir);
                }
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

    return flow_resources(lm, f, &lat) > 0 ? lm->rres[0] : -1;
}

static tpu_status_t grow_step(tpu_linkmodel_t *lm, int64_t n)
{
    if (n <= lm->cap_step) {
        return TPU_OK;
    }
    tpu__free(lm->st);
    tpu__free(lm->en);
    tpu__free(lm->lat);
    tpu__free(lm->md);
    tpu__free(lm->roff);
    lm->st = tpu__malloc((size_t)n * sizeof(double));
    lm->en = tpu__malloc((size_t)n * sizeof(double));
    lm->lat = tpu__malloc((size_t)n * sizeof(double));
    lm->md = tpu__malloc((size_t)n * sizeof(double));
    lm->roff = tpu__malloc((size_t)(n + 1) * sizeof(int64_t));
    lm->cap_step = n;
    if (lm->st == NULL || lm->en == NULL || lm->lat == NULL || lm->md == NULL || lm->roff == NULL) {
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

static tpu_status_t add_entry(tpu_linkmodel_t *lm, int32_t r, int32_t k, double w, int port,
                              int32_t stream)
{
    tpu_lm_entry_t *e;

    if (lm->nent == lm->cap_ent) {
        int64_t cap = lm->cap_ent ? 2 * lm->cap_ent : 1024;
        tpu_lm_entry_t *p = tpu__realloc(lm->ent, (size_t)cap * sizeof(*p));

        if (p == NULL) {
            return TPU_ERR_NO_MEMORY;
        }
        lm->ent = p;
        lm->cap_ent = cap;
    }
    e = &lm->ent[lm->nent++];
    e->res = r;
    e->k = k;
    e->port = port;
    e->w = w;
    e->st = lm->st[k];
    e->end = lm->st[k];
    e->stream = stream;
    return TPU_OK;
}

/*
 * Queueing behind the earlier steps.  A resource keeps every interval in which
 * it was busy (sorted, disjoint, merged where they touch).  Work w that reaches
 * it at time t fills its idle gaps from t on: the wait is the busy time it
 * skips before w seconds of idle time have passed.  A step that the schedule
 * orders later but that is ready earlier (the next chunk of a pipeline, or any
 * flow of a schedule turned around in time) is thus not queued behind work that
 * only starts after it.  (Until fid7 only the last 8 intervals were kept and the
 * oldest two merged, their gap counted as busy: a reversed pipeline lost most of
 * its idle time, test_linkmodel's test_many_gaps.)
 */

/* The busy intervals of resource r: in place, or on the heap once there are more. */
static double *busy_list(const tpu_linkmodel_t *lm, int32_t r)
{
    return lm->ivx[r] != NULL ? lm->ivx[r] : &lm->iv[(size_t)r * 2 * TPU_LM_IV_INLINE];
}

/*
 * The first interval of resource r that ends after t (niv[r] if none).  Work
 * mostly comes after the last interval or near where the resource's previous
 * question landed (its hint): those first, then a search by halves.
 */
static int busy_first_after(const tpu_linkmodel_t *lm, int32_t r, double t)
{
    const double *iv = busy_list(lm, r);
    int lo = 0, hi = lm->niv[r], h = lm->ivhint[r];

    if (hi == 0 || iv[2 * (hi - 1) + 1] <= t) {
        return hi;
    }
    if (h < hi && iv[2 * h + 1] > t && (h == 0 || iv[2 * (h - 1) + 1] <= t)) {
        return h;
    }
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;

        if (iv[2 * mid + 1] <= t) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lm->ivhint[r] = lo;
    return lo;
}

static double busy_wait(const tpu_linkmodel_t *lm, int32_t r, double t, double w)
{
    const double *iv = busy_list(lm, r);
    double q = 0;
    int i;

    for (i = busy_first_after(lm, r, t); i < lm->niv[r]; i++) {
        double a = iv[2 * i], b = iv[2 * i + 1];

        if (a > t) {
            if (w <= a - t) {
                return q;
            }
            w -= a - t;
            t = a;
        }
        q += b - t;
        t = b;
    }
    return q;
}

/* The first moment at or after t when resource r is idle. */
static double busy_idle(const tpu_linkmodel_t *lm, int32_t r, double t)
{
    const double *iv = busy_list(lm, r);
    int i = busy_first_after(lm, r, t);

    /* Intervals that touch are merged: the end of the one holding t is idle. */
    if (i < lm->niv[r] && iv[2 * i] <= t) {
        t = iv[2 * i + 1];
    }
    return t;
}

/* Mark [a, b) busy on resource r; TPU_ERR_NO_MEMORY if its list cannot grow. */
static tpu_status_t busy_add(tpu_linkmodel_t *lm, int32_t r, double a, double b)
{
    double *iv = busy_list(lm, r);
    int n = lm->niv[r], i, j;

    if (!(b > a)) {
        return TPU_OK;
    }
    /* The first interval that ends at or after a, and the first that starts after b. */
    for (i = busy_first_after(lm, r, a); i > 0 && iv[2 * (i - 1) + 1] >= a; i--) {
    }
    for (j = i; j < n && iv[2 * j] <= b; j++) {
    }
    if (j > i) {
        /* [a, b) overlaps or touches intervals i .. j - 1: merge them into i. */
        iv[2 * i] = iv[2 * i] < a ? iv[2 * i] : a;
        iv[2 * i + 1] = iv[2 * (j - 1) + 1] > b ? iv[2 * (j - 1) + 1] : b;
        if (j - i > 1) {
            memmove(iv + 2 * (i + 1), iv + 2 * j, (size_t)(n - j) * 2 * sizeof(double));
        }
        lm->niv[r] = n - (j - i - 1);
        return TPU_OK;
    }
    if (n == (lm->ivx[r] != NULL ? lm->civ[r] : TPU_LM_IV_INLINE)) {
        /* Full: the list moves to (a larger) one on the heap. */
        int32_t cap = 2 * n;
        double *p = tpu__realloc(lm->ivx[r], (size_t)cap * 2 * sizeof(double));

        if (p == NULL) {
            return TPU_ERR_NO_MEMORY;
        }
        if (lm->ivx[r] == NULL) {
            memcpy(p, iv, (size_t)n * 2 * sizeof(double));
        }
        lm->ivx[r] = iv = p;
        lm->civ[r] = cap;
    }
    memmove(iv + 2 * (i + 1), iv + 2 * i, (size_t)(n - i) * 2 * sizeof(double));
    iv[2 * i] = a;
    iv[2 * i + 1] = b;
    lm->niv[r] = n + 1;
    return TPU_OK;
}

static int entry_cmp(const void *pa, const void *pb)
{
    const tpu_lm_entry_t *a = pa, *b = pb;

    if (a->res != b->res) {
        return a->res < b->res ? -1 : 1;
    }
    if (a->st != b->st) {
        return a->st < b->st ? -1 : 1;
    }
    if (a->stream != b->stream) {
        return a->stream < b->stream ? -1 : 1;
    }
    return a->k < b->k ? -1 : a->k > b->k;
}

/*
 * Sort the step's entries by entry_cmp(), grouped by resource: the groups in the
 * order their resources first appear (each resource's drain is its own: the
 * order between groups changes no result), each group by (start, stream, flow),
 * a total order, so the result is the one a full sort gives.  Entries come in
 * flow order, so a group is nearly sorted already: insertion sort, or qsort for
 * a large group.
 */
static tpu_status_t sort_entries(tpu_linkmodel_t *lm)
{
    int64_t e, nb = 0, g;
    tpu_lm_entry_t *t;

    int64_t cap;

    if (lm->cap_ent2 < lm->nent) {
        tpu__free(lm->ent2);
        lm->cap_ent2 = 0;
        lm->ent2 = tpu__malloc((size_t)lm->cap_ent * sizeof(*lm->ent2));
        if (lm->ent2 == NULL) {
            return TPU_ERR_NO_MEMORY;
        }
        lm->cap_ent2 = lm->cap_ent;
    }
    if (lm->cap_bstart < lm->nent + 1) {
        tpu__free(lm->bstart);
        lm->cap_bstart = 0;
        lm->bstart = tpu__malloc((size_t)(lm->cap_ent + 1) * sizeof(*lm->bstart));
        if (lm->bstart == NULL) {
            return TPU_ERR_NO_MEMORY;
        }
        lm->cap_bstart = lm->cap_ent + 1;
    }
    if (lm->slot == NULL) {
        lm->slot = tpu__malloc((size_t)lm->nres * sizeof(*lm->slot));
        if (lm->slot == NULL) {
            return TPU_ERR_NO_MEMORY;
        }
    }
    /* Every entry's resource is mixed (1); 2 marks it seen, with its group. */
    for (e = 0; e < lm->nent; e++) {
        int32_t r = lm->ent[e].res;

        if (lm->mixed[r] != 2) {
            lm->mixed[r] = 2;
            lm->slot[r] = (int32_t)nb;
            lm->bstart[nb++] = 0;
        }
        lm->bstart[lm->slot[r]]++;
    }
    for (g = 0, e = 0; g < nb; g++) {
        int64_t c = lm->bstart[g];

        lm->bstart[g] = e;
        e += c;
    }
    lm->bstart[nb] = e;
    for (e = 0; e < lm->nent; e++) {
        lm->ent2[lm->bstart[lm->slot[lm->ent[e].res]]++] = lm->ent[e];
    }
    for (g = nb; g > 0; g--) {
        lm->bstart[g] = lm->bstart[g - 1];
    }
    lm->bstart[0] = 0;
    for (g = 0; g < nb; g++) {
        tpu_lm_entry_t *v = lm->ent2 + lm->bstart[g];
        int64_t len = lm->bstart[g + 1] - lm->bstart[g], i, j;

        if (len > 32) {
            qsort(v, (size_t)len, sizeof(*v), entry_cmp);
            continue;
        }
        for (i = 1; i < len; i++) {
            tpu_lm_entry_t x = v[i];

            for (j = i; j > 0 && entry_cmp(&v[j - 1], &x) > 0; j--) {
                v[j] = v[j - 1];
            }
            v[j] = x;
        }
    }
    t = lm->ent;
    lm->ent = lm->ent2;
    lm->ent2 = t;
    cap = lm->cap_ent;
    lm->cap_ent = lm->cap_ent2;
    lm->cap_ent2 = cap;
    return TPU_OK;
}

/* Do the intervals of flows j and k of the step overlap? */
static int overlap(const double *s, const double *e, int32_t j, int32_t k)
{
    return j == k || (s[j] < e[k] && s[k] < e[j]);
}

/*
 * The resources whose flows do not share one interval: each entry's drain from
 * the entries that overlap it, pairwise; the flow's worst drain goes to md[k].
 */
static tpu_status_t drain_mixed(tpu_linkmodel_t *lm, const tpu_flow_t *flows, int64_t n)
{
    double msg = lm->link.msg_cost;
    int64_t k, a = 0, b, x, y;
    int i, m;

    lm->nent = 0;
    for (k = 0; k < n; k++) {
        const int32_t *rres = lm->sres + lm->roff[k];
        const double *rw = lm->sw + lm->roff[k];

        if (lm->lat[k] < 0) {
            continue;
        }
        m = (int)(lm->roff[k + 1] - lm->roff[k]);
        for (i = 0; i < m; i++) {
            if (lm->mixed[rres[i]] &&
                add_entry(lm, rres[i], (int32_t)k, rw[i], i == 0, flows[k].stream) != TPU_OK) {
                return TPU_ERR_NO_MEMORY;
            }
        }
    }
    if (sort_entries(lm) != TPU_OK) {
        return TPU_ERR_NO_MEMORY;
    }
    while (a < lm->nent) {
        int32_t r = lm->ent[a].res;
        double bw = lm->bw[r];

        int starts = 0;
        double last = -1;
        int32_t last_stream = -1;

        /* Entries by start time and stream: the messages of one stream started at one
         * moment are one batch and cost one start. */
        for (b = a; b < lm->nent && lm->ent[b].res == r; b++) {
            if (lm->ent[b].port && (lm->ent[b].st != last || lm->ent[b].stream != last_stream)) {
                starts++;
                last = lm->ent[b].st;
                last_stream = lm->ent[b].stream;
            }
        }
        lm->nmsg[r] = starts;
        for (x = a; x < b; x++) {
            int32_t kx = lm->ent[x].k;
            double sum = 0, d, q;

            starts = 0;
            last = -1;
            last_stream = -1;
            for (y = a; y < b; y++) {
                if (overlap(lm->st, lm->en, lm->ent[y].k, kx)) {
                    sum += lm->ent[y].w;
                    if (lm->ent[y].port &&
                        (lm->ent[y].st != last || lm->ent[y].stream != last_stream)) {
                        starts++;
                        last = lm->ent[y].st;
                        last_stream = lm->ent[y].stream;
                    }
                }
            }
            d = sum / bw + starts * msg;
            q = busy_wait(lm, r, lm->st[kx], d);
            d += q;
            if (lm->st[kx] + d > lm->nfree[r]) {
                lm->nfree[r] = lm->st[kx] + d;
            }
            lm->ent[x].end = lm->st[kx] + d;
            /* The starts hold up the messages of the port's own DMA engine, not the
             * bytes passing through; its own start is inside the hop latency.  (Added
             * only when there are some, so that a drain is bit for bit load / bw.) */
            d = sum / bw;
            if (lm->ent[x].port && starts > 1) {
                d += (starts - 1) * msg;
            }
            if (q > 0) {
                d += q;
            }
            if (d > lm->md[kx]) {
                lm->md[kx] = d;
            }
        }
        a = b;
    }
    return TPU_OK;
}

tpu_status_t tpu__linkmodel_step(tpu_linkmodel_t *lm, const tpu_flow_t *flows, int64_t n,
                                 double *start, double *arrival)
{
    double msg = lm->link.msg_cost;
    int64_t k, e;
    int i, m, t;

    if (grow_step(lm, n > 0 ? n : 1) != TPU_OK) {
        return TPU_ERR_NO_MEMORY;
    }
    lm->step_id++;
    lm->ntouched = 0;
    lm->any_mixed = 0;
    lm->roff[0] = 0;
    /* Each flow's start and its interval alone; the step's totals per resource. */
    for (k = 0; k < n; k++) {
        double bytes = (double)tpu__span_bytes(&flows[k].span), minbw = 0;

        lm->md[k] = 0;
        lm->st[k] = lm->en[k] = start[k];
        m = flow_resources(lm, &flows[k], &lm->lat[k]);
        if (keep_resources(lm, k, m) != TPU_OK) {
            return TPU_ERR_NO_MEMORY;
        }
        if (m == 0) {
            lm->lat[k] = -1;
            continue;
        }
        lm->st[k] = busy_idle(lm, lm->rres[0], lm->st[k]);
        for (i = 0; i < m; i++) {
            double bw = lm->bw[lm->rres[i]];

            if (bw > 0 && (minbw == 0 || bw < minbw)) {
                minbw = bw;
            }
        }
        lm->en[k] = lm->st[k] + (msg + (minbw > 0 ? bytes / minbw : 0));
        for (i = 0; i < m; i++) {
            int32_t r = lm->rres[i];

            if (lm->stamp[r] != lm->step_id) {
                lm->stamp[r] = lm->step_id;
                lm->touched[lm->ntouched++] = r;
                lm->sum[r] = 0;
                lm->nmsg[r] = 0;
                lm->mixed[r] = 0;
                lm->nfree[r] = 0;
                lm->s0[r] = lm->st[k];
                lm->e0[r] = lm->en[k];
                lm->stream0[r] = -1;
            } else if ((lm->s0[r] != lm->st[k] || lm->e0[r] != lm->en[k]) && lm->bw[r] > 0) {
                lm->mixed[r] = 1;
                lm->any_mixed = 1;
            }
            lm->sum[r] += lm->rw[i];
            if (i == 0) {
                /* The messages of one stream that start here together are one batch: one
                 * start; several streams are counted pairwise (drain_mixed()). */
                if (lm->stream0[r] >= 0 && lm->stream0[r] != flows[k].stream && lm->bw[r] > 0) {
                    lm->mixed[r] = 1;
                    lm->any_mixed = 1;
                }
                lm->stream0[r] = flows[k].stream;
                lm->nmsg[r] = 1;
            }
        }
    }
    if (lm->any_mixed && drain_mixed(lm, flows, n) != TPU_OK) {
        return TPU_ERR_NO_MEMORY;
    }
    /* Arrivals: the most loaded resource of the route drains last. */
    for (k = 0; k < n; k++) {
        double d = lm->md[k];

        start[k] = lm->st[k];
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
            dr = lm->sum[r] / lm->bw[r] + lm->nmsg[r] * msg;
            q = busy_wait(lm, r, lm->st[k], dr);
            dr += q;
            if (lm->st[k] + dr > lm->nfree[r]) {
                lm->nfree[r] = lm->st[k] + dr;
            }
            /* One batch here, its own or one it passes through: only the bytes. */
            dr = lm->sum[r] / lm->bw[r];
            if (q > 0) {
                dr += q;
            }
            if (dr > d) {
                d = dr;
            }
        }
        arrival[k] = lm->st[k] + lm->lat[k] + d;
    }
    /* Every resource is busy until its flows of the step have drained. */
    for (e = 0; lm->any_mixed && e < lm->nent; e++) {
        if (busy_add(lm, lm->ent[e].res, lm->ent[e].st, lm->ent[e].end) != TPU_OK) {
            return TPU_ERR_NO_MEMORY;
        }
    }
    for (t = 0; t < lm->ntouched; t++) {
        int32_t r = lm->touched[t];

        if (lm->bw[r] <= 0) {
            continue;
        }
        if (lm->nfree[r] > lm->free[r]) {
            lm->free[r] = lm->nfree[r];
        }
        if (!lm->mixed[r] && busy_add(lm, r, lm->s0[r], lm->nfree[r]) != TPU_OK) {
            return TPU_ERR_NO_MEMORY;
        }
        lm->busy[r] += lm->sum[r] / lm->bw[r] + lm->nmsg[r] * msg;
        lm->bytes[r] += lm->sum[r];
    }
    return TPU_OK;
}

void tpu__linkmodel_stats(const tpu_linkmodel_t *lm, double total_s, tpu_coll_result_t *res)
{
    int r;

    memset(res->axis, 0, sizeof(res->axis));
    for (r = 0; r < lm->vpu0; r++) {
        int axis = TPU_AXIS_DCN, src, dir, dst;
        double busy_us = lm->busy[r] * 1e6;

        if (lm->classes) {
            axis = r / 2;
        } else if (r < lm->port0) {
            tpu_topo_link_ends(lm->topo, r, &src, &axis, &dir, &dst);
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

/*
 * One step whose flows all start together, as one stream (line timing of the
 * direct all-to-all, lines.c): every flow overlaps every other, so a resource's
 * drain is its whole load over its bandwidth and the one batch of message starts
 * is inside the hop latency; these give exactly what tpu__linkmodel_step() gives
 * for such a step, without a flow list.
 */
void tpu__linkmodel_add_load(tpu_linkmodel_t *lm, int r, double bytes)
{
    if (lm->stamp[r] != lm->step_id) {
        lm->stamp[r] = lm->step_id;
        lm->touched[lm->ntouched++] = r;
        lm->sum[r] = 0;
        lm->nmsg[r] = 0;
    }
    lm->sum[r] += bytes;
}

void tpu__linkmodel_load_step(tpu_linkmodel_t *lm, const tpu_sched_t *sched, int64_t first,
                              int64_t last)
{
    int64_t k;
    int i, m;
    double lat;

    for (k = first; k < last; k++) {
        m = flow_resources(lm, &sched->flows[k], &lat);
        for (i = 0; i < m; i++) {
            tpu__linkmodel_add_load(lm, lm->rres[i], lm->rw[i]);
        }
    }
}

void tpu__linkmodel_time_flow(tpu_linkmodel_t *lm, const tpu_flow_t *f, double ready,
                              double *start_p, double *arrival_p)
{
    double lat, d = 0;
    int i, m = flow_resources(lm, f, &lat);

    for (i = 0; i < m; i++) {
        int32_t r = lm->rres[i];

        if (lm->stamp[r] == lm->step_id && lm->bw[r] > 0 && lm->sum[r] / lm->bw[r] > d) {
            d = lm->sum[r] / lm->bw[r];
        }
    }
    *start_p = ready;
    *arrival_p = m > 0 ? ready + lat + d : ready;
}

void tpu__linkmodel_end_step(tpu_linkmodel_t *lm)
{
    int t;

    for (t = 0; t < lm->ntouched; t++) {
        int32_t r = lm->touched[t];

        if (lm->bw[r] > 0) {
            lm->busy[r] += lm->sum[r] / lm->bw[r] + (lm->sum[r] > 0 ? lm->link.msg_cost : 0);
            lm->bytes[r] += lm->sum[r];
        }
    }
    lm->ntouched = 0;
    lm->step_id++;
}

double tpu__linkmodel_load(const tpu_linkmodel_t *lm, int r)
{
    return lm->stamp[r] == lm->step_id ? lm->sum[r] : 0;
}
