/*
 * The link timer: point-to-point transfers timed one at a time through the link
 * model (linkmodel.c), for traffic that is not a schedule (remote copies of
 * kernels, emulator/chip/rdma.c).
 *
 * Each transfer is a one-flow step of the link model: its load is counted on
 * every link of its route, it is timed from 'ready' once its first link (its
 * "port") has drained the timer's earlier transfers, and the port is marked busy
 * until its bytes have left.  So the arithmetic is the link model's own, whatever
 * costs it charges a flow:
 *
 *     start   = max(ready, port free)
 *     left    = start + msg_cost + bytes / (W/2)      (the port drained)
 *     arrival = start + hops * alpha + bytes / (W/2)  (link model, one flow alone)
 *
 * Diagram, two copies of one chip on the same link, then one on another link:
 *
 *     link x+  |==== copy 1 ====|==== copy 2 ====|
 *     link x-  |==== copy 3 ====|
 *              ready             left(1)          left(2)
 *
 * The hops reported are those of the route the link model times (its
 * tpu__linkmodel_flow_links(), which asks tpu_faults_route()): around a failed
 * link they are the detour's, as its latency is.
 *
 * Restrictions: transfers of other chips are not seen (a timer belongs to one
 * chip); one route per transfer (no split over disjoint routes).
 */
#include "tpu/coll.h"
#include "tpu/link.h"

#include "alloc.h"
#include "linkmodel.h"

#include <string.h>

struct tpu_coll_link_timer {
    tpu_linkmodel_t lm;
    int32_t *links; /* the links of one route: at most a slice's chips */
};

tpu_status_t tpu_coll_link_timer_create(const tpu_topo_t *topo, const tpu_link_model_t *link,
                                        tpu_coll_link_timer_t **timer_p, tpu_err_t *err)
{
    tpu_coll_link_timer_t *t;

    if (topo == NULL || link == NULL || timer_p == NULL) {
        return tpu_err_set(err, TPU_ERR_INVALID, "tpu_coll_link_timer_create: NULL argument");
    }
    t = tpu__calloc(1, sizeof(*t));
    if (t != NULL) {
        t->links = tpu__malloc((size_t)topo->chips_per_slice * sizeof(*t->links));
    }
    if (t == NULL || t->links == NULL) {
        tpu__free(t);
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "no host memory for a link timer");
    }
    if (tpu__linkmodel_init(&t->lm, topo, link, 0) != TPU_OK) {
        tpu__free(t->links);
        tpu__free(t);
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "no host memory for the link model of %d chips",
                           topo->nchips);
    }
    *timer_p = t;
    return TPU_OK;
}

void tpu_coll_link_timer_destroy(tpu_coll_link_timer_t *timer)
{
    if (timer == NULL) {
        return;
    }
    tpu__linkmodel_fini(&timer->lm);
    tpu__free(timer->links);
    tpu__free(timer);
}

void tpu_coll_link_timer_flow(tpu_coll_link_timer_t *timer, int src, int dst, uint64_t bytes,
                              double ready, double *left_p, double *arrival_p, int *hops_p)
{
    tpu_linkmodel_t *lm = &timer->lm;
    tpu_flow_t f;
    double start = ready, arrival = ready;
    int dcn = tpu_topo_slice_of(lm->topo, src) != tpu_topo_slice_of(lm->topo, dst);
    int port;

    memset(&f, 0, sizeof(f));
    f.src = src;
    f.dst = dst;
    f.kind = dcn ? TPU_ROUTE_DCN : TPU_ROUTE_ICI;
    f.order = 0;
    f.tie = 1;
    f.span.len = (int64_t)bytes;
    f.span.count[0] = f.span.count[1] = f.span.count[2] = 1;
    port = tpu__linkmodel_port(lm, &f);
    if (tpu__linkmodel_step(lm, &f, 1, &start, &arrival, NULL, NULL) != TPU_OK) {
        port = -1; /* no memory for the step's scratch: the flow alone, untimed */
    }
    /* The port's free time after the step is when the bytes have left. */
    *left_p = port >= 0 ? lm->free[port] : arrival;
    if (*left_p > arrival) {
        *left_p = arrival;
    }
    *arrival_p = arrival;
    if (hops_p != NULL) {
        int src_host, dst_host;

        *hops_p = tpu__linkmodel_flow_links(lm, &f, timer->links, lm->topo->chips_per_slice,
                                            &src_host, &dst_host);
    }
}
