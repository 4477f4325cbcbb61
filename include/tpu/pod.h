/*
 * The emulated pod: a chip, a torus shape of one slice, wraparound per axis, the
 * slices joined by DCN, and the link model the collectives are timed with.  Every
 * tpuemu command builds one; a library user builds one the same way.
 */
#ifndef TPU_POD_H
#define TPU_POD_H

#include "tpu/chip.h"
#include "tpu/fault.h"
#include "tpu/link.h"
#include "tpu/status.h"
#include "tpu/topo.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a pod is built from.  tpu_pod_spec_init() fills the defaults. */
typedef struct tpu_pod_spec {
    const char *chip;                 /* preset name ("v5e"); NULL: the default for the axes */
    const tpu_chip_spec_t *chip_spec; /* a chip described field by field; wins over 'chip' */
    const char *shape;                /* "4x4", "16x20x28"; NULL: 'dims', or "4x4" */
    int naxes;                        /* with 'shape' NULL and naxes > 0: the dims below */
    int dims[TPU_MAX_AXES];
    const char *wrap;   /* "auto" (the chip's slice rules), "all", "none", "x,z"; NULL: auto */
    int slices;         /* slices joined by DCN; 0: 1 */
    double ici_bw;      /* bytes/s per link; < 0: the chip's */
    double ici_latency; /* seconds per hop; < 0: the chip's */
    double dcn_bw;      /* bytes/s per chip; < 0: the chip's */
    double dcn_latency; /* seconds; < 0: the chip's */
    double msg_cost;    /* seconds per message start; < 0: the chip's */
    double pcie_bw;     /* chip <-> host bytes/s each direction; < 0: the chip's */
    double nic_bw;      /* host NIC bytes/s each direction; < 0: the chip's (0: chips x dcn_bw) */
    double reduce_bw;   /* bytes/s of a chip's reductions; < 0: the chip's (0: hbm_bw / 3) */
    int calibrated;     /* 1: the chip's calibration profile (tpu/calibration.h) */
    /* Slow and failed links, slow chips and NICs (tpu/fault.h); copied by the pod. */
    const tpu_fault_t *faults;
    int nfaults;
} tpu_pod_spec_t;

typedef struct tpu_pod tpu_pod_t;

/* Defaults: no chip (the default for the shape), shape 4x4, wrap auto, 1 slice. */
TPU_API void tpu_pod_spec_init(tpu_pod_spec_t *spec);

/*
 * Build the pod: the chip (preset or custom, with the link overrides), the shape
 * checked against the chip's largest pod, wrap, slices, the link model and its
 * faults (tpu_faults_create()).
 * @return TPU_OK, TPU_ERR_INVALID naming the bad value, or TPU_ERR_NO_MEMORY.
 */
TPU_API tpu_status_t tpu_pod_create(const tpu_pod_spec_t *spec, tpu_pod_t **pod_p, tpu_err_t *err);
TPU_API void tpu_pod_destroy(tpu_pod_t *pod);

TPU_API const tpu_topo_t *tpu_pod_topo(const tpu_pod_t *pod);
TPU_API const tpu_link_model_t *tpu_pod_link(const tpu_pod_t *pod);
TPU_API const tpu_chip_spec_t *tpu_pod_chip(const tpu_pod_t *pod);
/* The pod's faults (what tpu_pod_link()->faults points to), or NULL when it has none. */
TPU_API const tpu_faults_t *tpu_pod_faults(const tpu_pod_t *pod);
/* The shape of one slice as text ("4x4") and the wrap per axis ("x,y", "none"). */
TPU_API const char *tpu_pod_shape(const tpu_pod_t *pod);
TPU_API const char *tpu_pod_wrap(const tpu_pod_t *pod);
/* 1 when the wrap came from the chip's slice rules ("auto"). */
TPU_API int tpu_pod_wrap_auto(const tpu_pod_t *pod);

/* 1 when the pod was created calibrated: its link model carries the chip's
 * calibration profile, and its matmuls should take tpu_mxu_seconds_calibrated(). */
TPU_API int tpu_pod_calibrated(const tpu_pod_t *pod);

#ifdef __cplusplus
}
#endif

#endif /* TPU_POD_H */
