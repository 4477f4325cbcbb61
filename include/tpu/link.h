/*
 * The link model and the link timer: the constants every modeled time comes from
 * (tpu_link_model_t), their calibrated values, and one-at-a-time timing of
 * point-to-point transfers through the model.  The chip and pod descriptions
 * (tpu/chip.h, tpu/pod.h) need only this much of the collectives; tpu/coll.h
 * includes it.
 */
#ifndef TPU_LINK_H
#define TPU_LINK_H

#include "tpu/fault.h"
#include "tpu/status.h"
#include "tpu/topo.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The link model: bandwidths as published, latencies in seconds. */
typedef struct tpu_link_model {
    double ici_bw;               /* bytes/s per ICI link, both directions together */
    double ici_latency;          /* seconds per hop */
    double dcn_bw;               /* DCN bytes/s per chip (a host's NICs carry chips x this) */
    double dcn_latency;          /* seconds per DCN transfer, chip to chip through both hosts */
    int host_dims[TPU_MAX_AXES]; /* the block of chips that share one host's NICs */
    double msg_cost;             /* seconds a chip's DMA engine takes to start one message */
    double reduce_bw;            /* bytes/s a chip reduces received data at (VPU, HBM bound) */
    double pcie_bw;              /* chip <-> host bytes/s, each direction */
    double nic_bw;               /* a host's NIC bytes/s, each direction; 0: its chips x dcn_bw */
    double ici_efficiency;       /* fraction of ici_bw the links reach (1: the formula model) */
    double launch;               /* seconds added once per collective (0: the formula model) */
    /* Slow and failed links, slow chips and NICs (tpu/fault.h), for the topology the
     * model times; NULL: none.  Borrowed: it must outlive every plan made with it. */
    const tpu_faults_t *faults;
} tpu_link_model_t;

/*
 * The calibrated link constants of v5e, fitted to the scaling book's measured
 * v5e figures (collectives/ideal.c gives the fit).  Every generation's profile
 * is in tpu/calibration.h; tpu_chip_link_calibrate() applies the chip's own.
 */
#define TPU_LINK_V5E_ICI_EFFICIENCY 0.895
#define TPU_LINK_V5E_LAUNCH_S       2.5e-6

/* Set the v5e calibrated constants (above) in 'link'. */
TPU_API void tpu_link_model_calibrate(tpu_link_model_t *link);

/*
 * One-at-a-time timing of point-to-point transfers through the link model, for
 * traffic that no schedule describes (remote copies started by kernels, see
 * tpu/rdma.h).  A timer belongs to one chip and remembers when each directed
 * link it used is next free: a transfer takes the dimension-order route (x, then
 * y, then z, each axis its shortest way; ties go +), waits for its first link to
 * drain the timer's earlier transfers (so transfers of one chip on one link
 * share it in turn), then takes what the link model gives a flow alone on its
 * route: hops * alpha + bytes / (W/2), plus whatever per-message costs the link
 * model charges.  Transfers of other chips are not seen (they are unknown to
 * this chip when it starts a copy).  Deterministic: a pure function of the calls.
 */
typedef struct tpu_coll_link_timer tpu_coll_link_timer_t;

/* A timer for 'topo' and 'link' (both copied or borrowed for the timer's life:
 * 'topo' is borrowed, 'link' copied).  Destroy with tpu_coll_link_timer_destroy(). */
TPU_API tpu_status_t tpu_coll_link_timer_create(const tpu_topo_t *topo,
                                                const tpu_link_model_t *link,
                                                tpu_coll_link_timer_t **timer_p, tpu_err_t *err);
TPU_API void tpu_coll_link_timer_destroy(tpu_coll_link_timer_t *timer);

/*
 * Time 'bytes' from chip 'src' to chip 'dst' (different chips) whose data is ready
 * at 'ready' seconds: '*left_p' is when its last byte has left 'src' (the first
 * link drained), '*arrival_p' when it has arrived at 'dst'; '*hops_p' the ICI hops
 * of its route (may be NULL).  Across slices the transfer goes over DCN.
 */
TPU_API void tpu_coll_link_timer_flow(tpu_coll_link_timer_t *timer, int src, int dst,
                                      uint64_t bytes, double ready, double *left_p,
                                      double *arrival_p, int *hops_p);

#ifdef __cplusplus
}
#endif

#endif /* TPU_LINK_H */
