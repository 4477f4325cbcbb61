/*
 * The timing walk: a built schedule through the link model, step by step.  The
 * one place modeled time is computed, for the model path and for every transport.
 */
#ifndef TPU_TIMING_H
#define TPU_TIMING_H

#include "tpu/coll.h"
#include "tpu/topo.h"

#include "linkmodel.h"
#include "schedule.h"

typedef struct tpu_timing {
    tpu_linkmodel_t lm;
    double *links;    /* per flow: its arrival in the walk of the bytes (no hop latency) */
    double *chain;    /* per flow: the hop latency of its chain of dependencies, its own too */
    double *lat;      /* per flow of the current step: its own hop latency */
    double *off;      /* per flow of the current step: the hop latency of its dependencies */
    double chain_max; /* the longest chain of latencies so far (hops, DCN, starts), seconds */
    double links_max; /* the latest arrival of bytes so far */
    double floor_links, floor_chain; /* after a barrier (schedule.h): where the rest starts */
    double *start;                   /* per flow of the current step: when it starts */
    double launch; /* seconds added once to the collective (the calibrated launch cost) */
    /* With an observer (tpu__timing_observe()), else NULL: */
    const tpu_coll_observer_t *obs;
    int32_t *obs_links; /* room for the links of one flow */
    int obs_cap;
} tpu_timing_t;

/* Set up the walk of 'ps' (representative mode when ps->rep >= 0). */
tpu_status_t tpu__timing_init(tpu_timing_t *t, const tpu_topo_t *topo, const tpu_link_model_t *link,
                              const tpu_plan_sched_t *ps);
void tpu__timing_fini(tpu_timing_t *t);
/*
 * Report to 'obs' (may be NULL: nothing to do) every flow timed from now on;
 * tpu__timing_report() then gives it every resource's totals.
 * @return TPU_OK or TPU_ERR_NO_MEMORY (no message).
 */
tpu_status_t tpu__timing_observe(tpu_timing_t *t, const tpu_coll_observer_t *obs);
void tpu__timing_report(const tpu_timing_t *t);

/*
 * Walk every step of 'ps' in order through the link model (linkmodel.c).
 * @return TPU_OK or TPU_ERR_NO_MEMORY (no message).
 */
tpu_status_t tpu__timing_walk(tpu_timing_t *t, const tpu_plan_sched_t *ps);

/* When the flows that start or end on a chip marked in 'local' (NULL: all) are through:
 * their latest bytes, plus the schedule's longest chain of latencies and the launch cost. */
double tpu__timing_local_end(const tpu_timing_t *t, const tpu_sched_t *sc, const uint8_t *local);

/*
 * Walk the whole of 'ps' with every chip local: '*seconds_p' is the modeled time,
 * 'res' (may be NULL) gets the per-axis link statistics.
 * @return TPU_OK or TPU_ERR_NO_MEMORY (no message: the caller names the schedule).
 */
/*
 * About the most bytes the walk holds for one step of 'ps', counted from its
 * route lengths before the walk allocates anything: 12 bytes per (flow, link)
 * crossing in the step's route tables (a DCN flow: its ports and NICs), and 80
 * more per crossing when the step's flows differ in size or wait for others
 * (processor sharing then keeps an entry per crossing, linkmodel.h).  Only the
 * steps that could need more than 'limit' are counted: 0 when none can.
 */
double tpu__timing_step_bytes(const tpu_topo_t *topo, const tpu_plan_sched_t *ps, double limit);

tpu_status_t tpu__time_schedule(const tpu_topo_t *topo, const tpu_link_model_t *link,
                                const tpu_plan_sched_t *ps, double *seconds_p,
                                tpu_coll_result_t *res);
/* The same, reporting to 'obs' (may be NULL). */
tpu_status_t tpu__time_schedule_observed(const tpu_topo_t *topo, const tpu_link_model_t *link,
                                         const tpu_plan_sched_t *ps, const tpu_coll_observer_t *obs,
                                         double *seconds_p, tpu_coll_result_t *res);

#endif /* TPU_TIMING_H */
