/*
 * The MLP's collectives over the mesh axes 'data' and 'model' (see
 * mlp_comm.h): the mesh and the collectives of the SPMD runtime.
 *
 * Cost: whatever the runtime's plan says for the groups of the axis (torus
 * algorithms for whole torus axes, the general group algorithm otherwise).
 */
#include "mlp_comm.h"

#include <stdio.h>
#include <string.h>

tpu_status_t tpu__mlp_comm_init(mlp_comm_t *c, const tpu_topo_t *topo, const tpu_link_model_t *link,
                                const tpu_chip_spec_t *chip, tpu_xport_t *x,
                                const tpu_mlp_spec_t *ms, tpu_err_t *err)
{
    tpu_spmd_opts_t opts;
    tpu_status_t status;
    char spec[64];
    int a, data = ms->data, model = ms->model;

    memset(c, 0, sizeof(*c));
    c->size[MLP_AXIS_DATA] = data;
    c->size[MLP_AXIS_MODEL] = model;
    snprintf(spec, sizeof(spec), "data=%d,model=%d", data, model);
    status = tpu_mesh_create(topo, spec, NULL, 0, &c->mesh, err);
    if (status != TPU_OK) {
        return status;
    }
    tpu_spmd_opts_init(&opts);
    opts.timeout_s = ms->timeout_s;
    opts.on_wait = ms->on_wait;
    opts.on_wait_arg = ms->on_wait_arg;
    opts.check_peers = 0; /* every chip runs the same step: no need to compare calls */
    status = tpu_spmd_create(topo, link, chip, c->mesh, x, &opts, &c->spmd, err);
    if (status != TPU_OK) {
        tpu_mesh_destroy(c->mesh);
        c->mesh = NULL;
        return status;
    }
    for (a = 0; a < 2; a++) {
        tpu_groups_t g;

        c->axis[a] = tpu_mesh_axis_find(c->mesh, a == MLP_AXIS_DATA ? "data" : "model");
        tpu_mesh_axis_layout(c->mesh, c->axis[a], c->layout[a], sizeof(c->layout[a]));
        memset(&g, 0, sizeof(g));
        status = tpu_mesh_groups(c->mesh, a == MLP_AXIS_DATA ? "data" : "model", &g, err);
        if (status != TPU_OK) {
            tpu__mlp_comm_fini(c);
            return status;
        }
        tpu_groups_str(&g, c->groups[a], sizeof(c->groups[a]));
        tpu_groups_fini(&g);
    }
    return TPU_OK;
}

void tpu__mlp_comm_fini(mlp_comm_t *c)
{
    tpu_spmd_destroy(c->spmd);
    tpu_mesh_destroy(c->mesh);
    memset(c, 0, sizeof(*c));
}

int tpu__mlp_comm_index(const mlp_comm_t *c, int chip, int axis)
{
    return tpu_mesh_axis_index(c->mesh, chip, c->axis[axis]);
}

tpu_hbm_t *tpu__mlp_comm_hbm(const mlp_comm_t *c, int i)
{
    return tpu_spmd_hbm(c->spmd, i);
}

tpu_status_t tpu__mlp_comm_run(mlp_comm_t *c, tpu_coll_kind_t kind, int axis, uint64_t bytes,
                               void *const *in, void *const *out, double *modeled_us_p, char *algo,
                               const tpu_coll_plan_t **plan_p, tpu_err_t *err)
{
    const char *axes = axis == MLP_AXIS_DATA ? "data" : "model";
    const tpu_spmd_call_t *call;
    tpu_status_t status;
    uint64_t count = bytes / sizeof(float);
    int g = c->size[axis];

    switch (kind) {
    case TPU_COLL_PSUM:
        status = tpu_spmd_psum(c->spmd, axes, TPU_DTYPE_F32, TPU_REDOP_SUM, count, in, out, err);
        break;
    case TPU_COLL_ALL_GATHER:
        status =
            tpu_spmd_all_gather(c->spmd, axes, TPU_DTYPE_F32, count / (uint64_t)g, in, out, err);
        break;
    case TPU_COLL_REDUCE_SCATTER:
        status =
            tpu_spmd_psum_scatter(c->spmd, axes, TPU_DTYPE_F32, TPU_REDOP_SUM, count, in, out, err);
        break;
    default:
        return tpu_err_set(err, TPU_ERR_INTERNAL, "mlp: unexpected collective %s",
                           tpu_coll_name(kind));
    }
    if (status != TPU_OK) {
        return status;
    }
    call = tpu_spmd_call_at(c->spmd, tpu_spmd_call_count(c->spmd) - 1);
    *modeled_us_p = call != NULL ? call->modeled_us : 0;
    if (algo != NULL) {
        snprintf(algo, 64, "%s", call != NULL ? call->algorithm : "");
    }
    if (plan_p != NULL) {
        *plan_p = call != NULL ? call->plan : NULL;
    }
    /* The runtime keeps a log of every call; the MLP keeps its own per step. */
    tpu_spmd_log_clear(c->spmd);
    return TPU_OK;
}
