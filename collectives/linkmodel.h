/*
 * The link model: how long a flow of a schedule takes.  See linkmodel.c.
 */
#ifndef TPU_LINKMODEL_H
#define TPU_LINKMODEL_H

#include "tpu/coll.h"
#include "tpu/topo.h"

#include "schedule.h"

typedef struct tpu_linkmodel {
    const tpu_topo_t *topo;
    tpu_link_model_t link;
    int nics;        /* DCN NIC ids follow the ICI links: 2 per host (out, in) */
    int nres;        /* ICI links + NIC ids */
    double *load;    /* bytes on each resource in the current step */
    double *free_at; /* when each resource's sender side is next free */
    double *busy;    /* total busy seconds of each resource */
    double *nic_bw;  /* bytes/s of each NIC (the host's chips x dcn_bw) */
    int *touched;    /* resources with a non-zero load in the current step */
    int ntouched;
    int classes;            /* 1: resources are link classes (axis, direction), see below */
    int32_t *orbit;         /* orbit mode: link -> the link that stands for its orbit, or NULL */
    int32_t *route_scratch; /* with failed links: the search of tpu_faults_route(), or NULL */
} tpu_linkmodel_t;

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
 * itself (group algorithms over symmetric groups, see tpu_groups_period()).  Every
 * link then stands for its orbit under those translations: a flow's bytes on a
 * link are counted on the link of the orbit whose source chip is in the domain,
 * which adds up exactly what the full schedule puts on each link of the orbit,
 * so every time comes out bit for bit as in the full schedule.  ICI only.
 */
tpu_status_t tpu__linkmodel_set_orbits(tpu_linkmodel_t *lm, const int *period);

/* Count the loads of every flow of step 's' (flows [first, last) of 'sched'). */
void tpu__linkmodel_load_step(tpu_linkmodel_t *lm, const tpu_sched_t *sched, int64_t first,
                              int64_t last);
/*
 * Time flow 'f' of the current step: it may start at 'ready' (its data is there)
 * once its first resource is free; writes its start and its arrival at dst.
 */
void tpu__linkmodel_time_flow(const tpu_linkmodel_t *lm, const tpu_flow_t *f, double ready,
                              double *start_p, double *arrival_p);
/* After all flows of the step are timed: mark the first resources busy until drained. */
void tpu__linkmodel_commit_flow(tpu_linkmodel_t *lm, const tpu_flow_t *f, double start);
/* Clear the loads of the step. */
void tpu__linkmodel_end_step(tpu_linkmodel_t *lm);

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
