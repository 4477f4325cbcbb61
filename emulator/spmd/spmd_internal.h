/* The SPMD runtime's internals, shared by spmd.c and the array files (array.c, array_coll.c). */
#ifndef TPU_SPMD_INTERNAL_H
#define TPU_SPMD_INTERNAL_H

#include "tpu/spmd.h"
#include "tpu/vmem.h"

/* The groups of one tuple of mesh axes, resolved once. */
typedef struct spmd_axes {
    char text[64];
    tpu_groups_t groups;
    int whole; /* 1: the groups of the torus axes 'mask' */
    unsigned mask;
    int32_t *index_of; /* chip -> member index */
} spmd_axes_t;

/* A cached plan. */
typedef struct spmd_plan {
    tpu_coll_kind_t kind;
    const spmd_axes_t *axes;
    uint64_t bytes;
    tpu_dtype_t dtype;
    tpu_redop_t op;
    int32_t *pairs; /* ppermute: chip pairs */
    int npairs;
    tpu_coll_plan_t *plan;
    tpu_coll_exec_t *exec; /* runs with data over the transport, made on first use */
    double model_us;       /* the modeled time, once modeled (model-only runs), else -1 */
} spmd_plan_t;

struct tpu_spmd {
    tpu_topo_t topo;
    tpu_link_model_t link;
    tpu_chip_spec_t chip;
    const tpu_mesh_t *mesh;
    tpu_xport_t *x; /* NULL: model only */
    tpu_spmd_opts_t opts;
    int nlocal;
    int *local_chips;
    int moves_data;
    tpu_hbm_t **hbm;
    tpu_vmem_t **vmem; /* created on first use */
    spmd_axes_t *axes;
    int naxes, cap_axes;
    spmd_plan_t *plans;
    int nplans, cap_plans;
    tpu_spmd_call_t *calls;
    int64_t ncalls, cap_calls;
    double comm_us, compute_us, flops;
    uint64_t ncoll; /* collectives run: the call number of the mismatch check */
};

/* The groups of 'axes' (cached in the runtime). */
tpu_status_t tpu__spmd_axes(tpu_spmd_t *s, const char *axes, const spmd_axes_t **ax_p,
                            tpu_err_t *err);
/*
 * Run one collective over 'axes' on per-local-chip buffers: 'bytes' as the
 * DESIGN.md conventions; 'pairs' (chip ids) for ppermute.  Logs it under 'name'.
 */
tpu_status_t tpu__spmd_coll(tpu_spmd_t *s, const char *name, tpu_coll_kind_t kind, const char *axes,
                            tpu_dtype_t dtype, tpu_redop_t op, uint64_t bytes, const int *perm,
                            int npairs, void *const *in, void *const *out, tpu_err_t *err);

#endif
