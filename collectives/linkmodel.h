/*
 * The link model: how long the flows of a schedule take.  See linkmodel.c.
 */
#ifndef TPU_LINKMODEL_H
#define TPU_LINKMODEL_H

#include "tpu/coll.h"
#include "tpu/topo.h"

#include "schedule.h"

/* One (flow, resource) crossing of the current step on a resource whose flows do not
 * all share one interval (see linkmodel.c, "contention by time overlap"). */
typedef struct tpu_lm_entry {
    int32_t res;  /* the resource */
    int32_t k;    /* the flow, as its index in the step */
    int32_t port; /* 1: the flow starts there (its message start is paid there) */
    double w;     /* bytes it puts on the resource (bytes x hops in representative mode) */
    double st;    /* the flow's start */
    double end;   /* when it has drained there (drain_mixed()) */
    int32_t stream;
} tpu_lm_entry_t;

typedef struct tpu_linkmodel {
    const tpu_topo_t *topo;
    tpu_link_model_t link;
    int classes;            /* 1: ICI resources are link classes (axis, direction) */
    int32_t *orbit;         /* orbit mode: link -> the link that stands for its orbit, or NULL */
    int32_t *orbit_chip;    /* orbit mode: chip -> the chip of the domain that stands for it */
    int32_t *route_scratch; /* with failed links: the search of tpu_faults_route(), or NULL */
    int nres;               /* ICI links (or classes), host ports, host NICs, VPUs */
    int port0;              /* first chip host port (PCIe; 2 per chip: out, in) */
    int nic0;               /* first host NIC (2 per host: out, in) */
    int vpu0;               /* first VPU (one per chip; one in representative mode) */
    double *bw;             /* bytes/s of each resource (0: not modeled) */
    double *free;           /* when each resource has drained what it was given so far */
    double *iv;             /* per resource: room for TPU_LM_IV_INLINE busy intervals (a, b) */
    double **ivx;           /* per resource: its intervals on the heap when more, or NULL */
    int32_t *niv;           /* per resource: how many */
    int32_t *civ;           /* per resource: room for how many on the heap */
    int32_t *ivhint;        /* per resource: where its last search landed (a hint) */
    double *busy;           /* total busy seconds of each resource */
    double *bytes;          /* total bytes of each resource */
    /* Scratch of the current step, per resource: */
    double *sum, *s0, *e0, *nfree;
    int32_t *nmsg, *stamp; /* nmsg: batches of messages that start on the resource */
    int32_t *stream0;      /* the stream of the first message that starts there */
    uint8_t *mixed;
    int32_t *touched;
    int ntouched, step_id, any_mixed;
    /* Scratch per flow of the current step: */
    double *st, *en, *lat, *md;
    int64_t cap_step;
    tpu_lm_entry_t *ent;
    int64_t nent, cap_ent;
    tpu_lm_entry_t *ent2; /* the entries grouped by resource (sort_entries()) */
    int64_t *bstart;      /* and where each group starts */
    int32_t *slot;        /* per resource: its group (valid while mixed[r] is 2) */
    int64_t cap_ent2, cap_bstart;
    int32_t *rres; /* one flow's resources (route order, the port first) */
    double *rw;    /* and the bytes it puts on each */
    /* The resources of every flow of the current step, found once: flow k's are
     * [roff[k], roff[k + 1]) of sres / sw. */
    int64_t *roff;
    int32_t *sres;
    double *sw;
    int64_t cap_sres;
} tpu_linkmodel_t;

/* Busy intervals a resource keeps in place; more go to the heap (none is dropped). */
#define TPU_LM_IV_INLINE 8

/*
 * 'classes' selects the representative mode: the schedule holds the flows of one
 * chip of a translation-invariant pod, and every link of a class (axis,
 * direction) carries the same load, the sum over the representative's flows of
 * bytes times the hops its route makes in that class.
 */
tpu_status_t tpu__linkmodel_init(tpu_linkmodel_t *lm, const tpu_topo_t *topo,
                                 const tpu_link_model_t *link, int classes);
void tpu__linkmodel_fini(tpu_linkmodel_t *lm);

/*
 * Orbit mode (after init with classes 0): the schedule holds the flows of the
 * chips whose coordinates are below 'period' on every axis, a fundamental domain
 * of the torus translations by multiples of 'period' that map the schedule onto
 * itself (group algorithms over symmetric groups, see tpu_groups_period(); on an
 * open axis, groups that repeat within windows of the period, plan.c).  Every
 * link then stands for its orbit under those translations: a flow's bytes on a
 * link are counted on the link of the orbit whose source chip is in the domain,
 * which adds up exactly what the full schedule puts on each link of the orbit,
 * so every time comes out bit for bit as in the full schedule.  ICI only.
 */
tpu_status_t tpu__linkmodel_set_orbits(tpu_linkmodel_t *lm, const int *period, unsigned reflect);

/*
 * One step whose flows all start at once as one stream (line timing, lines.c):
 * count loads (load_step, add_load), read one (load), time a flow from them
 * (time_flow: start = ready, arrival = ready + latency + the largest load / bw
 * on its route, what tpu__linkmodel_step() gives such a step), close the step.
 */
void tpu__linkmodel_add_load(tpu_linkmodel_t *lm, int r, double bytes);
void tpu__linkmodel_load_step(tpu_linkmodel_t *lm, const tpu_sched_t *sched, int64_t first,
                              int64_t last);
double tpu__linkmodel_load(const tpu_linkmodel_t *lm, int r);
void tpu__linkmodel_time_flow(tpu_linkmodel_t *lm, const tpu_flow_t *f, double ready,
                              double *start_p, double *arrival_p);
void tpu__linkmodel_end_step(tpu_linkmodel_t *lm);

/*
 * Time the 'n' flows of one step ('flows'): start[k] holds when flow k's data is
 * at its source (the latest arrival of the flows it depends on) and receives when
 * it starts; arrival[k] receives when it is usable at its destination.
 * @return TPU_OK or TPU_ERR_NO_MEMORY (no message).
 */
tpu_status_t tpu__linkmodel_step(tpu_linkmodel_t *lm, const tpu_flow_t *flows, int64_t n,
                                 double *start, double *arrival);

/* The first resource of flow 'f' (its port), or -1 when it moves nothing. */
int tpu__linkmodel_port(tpu_linkmodel_t *lm, const tpu_flow_t *f);

/* The per-axis statistics of the whole schedule, given its modeled time. */
void tpu__linkmodel_stats(const tpu_linkmodel_t *lm, double total_s, tpu_coll_result_t *res);

/*
 * For observers (time.c): the resources flow 'f' loads.  Writes its directed ICI
 * link ids in the order crossed into 'links' (room for 'cap') and returns how
 * many; '*src_host_p' and '*dst_host_p' are the hosts whose NICs it uses over
 * DCN, else -1.  In representative mode the links are those of the
 * representative's own flow.
 */
int tpu__linkmodel_flow_links(const tpu_linkmodel_t *lm, const tpu_flow_t *f, int32_t *links,
                              int cap, int *src_host_p, int *dst_host_p);
/* The bandwidth of resource 'r' in bytes/s. */
double tpu__linkmodel_bw(const tpu_linkmodel_t *lm, int r);

#endif /* TPU_LINKMODEL_H */
