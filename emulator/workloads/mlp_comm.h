/*
 * The MLP's collectives over the two mesh axes 'data' and 'model' (private to
 * emulator/workloads).  A thin interface, so that the training step does not
 * depend on how a mesh axis becomes a group of chips: this version lays the
 * mesh over whole torus axes and runs the torus collectives of coll.h.
 *
 * Buffers are per local chip of the transport: in[i] and out[i] belong to
 * local chip i.  Without a transport (model only) nothing moves and the
 * modeled time comes from the plan alone (the same number a run gives).
 */
#ifndef TPU_MLP_COMM_H
#define TPU_MLP_COMM_H

#include "tpu/coll.h"
#include "tpu/status.h"
#include "tpu/topo.h"
#include "tpu/xport.h"

#include <stdint.h>

#define MLP_AXIS_DATA  0
#define MLP_AXIS_MODEL 1

/* The plans made so far, reused across steps (same kind, axis, size). */
#define MLP_COMM_MAX_PLANS 32

typedef struct mlp_comm_plan {
    tpu_coll_kind_t kind;
    int axis;
    uint64_t bytes;
    tpu_coll_plan_t *plan;
} mlp_comm_plan_t;

typedef struct mlp_comm {
    const tpu_topo_t *topo;
    const tpu_link_model_t *link;
    tpu_xport_t *x; /* NULL: model only */
    int size[2];    /* data, model */
    unsigned mask[2];
    char layout[2][32]; /* "x", "y*z", ...: how each mesh axis lies on the torus */
    int nplans;
    mlp_comm_plan_t plans[MLP_COMM_MAX_PLANS];
    uint64_t call;
    double timeout_s;
} mlp_comm_t;

/*
 * Lay the mesh data x model over 'topo' (the product must be the number of
 * chips).  'x' may be NULL (model only).
 * @return TPU_OK, TPU_ERR_INVALID (a mesh that does not fit, naming the sizes).
 */
tpu_status_t tpu__mlp_comm_init(mlp_comm_t *c, const tpu_topo_t *topo, const tpu_link_model_t *link,
                                tpu_xport_t *x, int data, int model, tpu_err_t *err);
void tpu__mlp_comm_fini(mlp_comm_t *c);

/* The coordinate of 'chip' along mesh axis 'axis' (jax.lax.axis_index). */
int tpu__mlp_comm_index(const mlp_comm_t *c, int chip, int axis);

/*
 * One collective over mesh axis 'axis' on f32 buffers: psum (in and out of
 * 'bytes'), all-gather ('bytes' out, bytes/size in), reduce-scatter ('bytes'
 * in, bytes/size out).  A group of one chip copies in to out.  'in'/'out'
 * NULL: model only.  '*modeled_us_p' is the collective's modeled time, and
 * '*algo_p' (may be NULL) its algorithm's name.
 */
tpu_status_t tpu__mlp_comm_run(mlp_comm_t *c, tpu_coll_kind_t kind, int axis, uint64_t bytes,
                               void *const *in, void *const *out, double *modeled_us_p,
                               const char **algo_p, tpu_err_t *err);

#endif
