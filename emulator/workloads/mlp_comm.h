/*
 * The MLP's collectives over the two mesh axes 'data' and 'model' (private to
 * emulator/workloads): a thin layer over the SPMD runtime (tpu/spmd.h), which
 * lays the mesh out on the torus (JAX's default device assignment) and runs
 * each collective over the groups of a mesh axis, on the torus algorithms when
 * the groups are whole torus axes and on the general group algorithm otherwise.
 *
 * Buffers are per local chip of the transport: in[i] and out[i] belong to
 * local chip i.  Without a transport (model only) nothing moves and the
 * modeled time comes from the plan alone (the same number a run gives).
 */
#ifndef TPU_MLP_COMM_H
#define TPU_MLP_COMM_H

#include "tpu/coll.h"
#include "tpu/hbm.h"
#include "tpu/mesh.h"
#include "tpu/mlp.h"
#include "tpu/spmd.h"
#include "tpu/status.h"
#include "tpu/topo.h"
#include "tpu/xport.h"

#include <stdint.h>

#define MLP_AXIS_DATA  0
#define MLP_AXIS_MODEL 1

typedef struct mlp_comm {
    tpu_mesh_t *mesh;
    tpu_spmd_t *spmd;
    int size[2];        /* data, model */
    int axis[2];        /* their indices in the mesh (-1: not in the mesh, size 1) */
    char layout[2][32]; /* how each mesh axis lies on the torus: "x", "y*z", "z[4 of 28]" */
    char groups[2][64]; /* the groups of each axis as chip ids, "{0,4,8,12} {1,5,9,13} ..." */
} mlp_comm_t;

/*
 * Lay the mesh data x model over 'topo' (the product must be the number of
 * chips).  'x' may be NULL (model only).
 * @return TPU_OK, TPU_ERR_INVALID (a mesh that does not fit, naming the sizes).
 */
tpu_status_t tpu__mlp_comm_init(mlp_comm_t *c, const tpu_topo_t *topo, const tpu_link_model_t *link,
                                const tpu_chip_spec_t *chip, tpu_xport_t *x,
                                const tpu_mlp_spec_t *spec, tpu_err_t *err);
void tpu__mlp_comm_fini(mlp_comm_t *c);

/* The coordinate of 'chip' along mesh axis 'axis' (jax.lax.axis_index). */
int tpu__mlp_comm_index(const mlp_comm_t *c, int chip, int axis);

/* The HBM of local chip 'i' (the runtime's). */
tpu_hbm_t *tpu__mlp_comm_hbm(const mlp_comm_t *c, int i);

/*
 * One collective over mesh axis 'axis' on f32 buffers: psum (in and out of
 * 'bytes'), all-gather ('bytes' out, bytes/size in), reduce-scatter ('bytes'
 * in, bytes/size out).  A group of one chip copies in to out.  'in'/'out'
 * NULL: model only.  '*modeled_us_p' is the collective's modeled time, and
 * 'algo' (may be NULL; 64 bytes) gets its algorithm's name, and '*plan_p' (may
 * be NULL) its plan (the runtime's, valid while 'c' lives).
 */
tpu_status_t tpu__mlp_comm_run(mlp_comm_t *c, tpu_coll_kind_t kind, int axis, uint64_t bytes,
                               void *const *in, void *const *out, double *modeled_us_p, char *algo,
                               const tpu_coll_plan_t **plan_p, tpu_err_t *err);

#endif
