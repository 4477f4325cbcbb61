/*
 * The MLP's collectives over the mesh axes 'data' and 'model' (see
 * mlp_comm.h).
 *
 * Layout: mesh position (d, m) is chip d * model + m (identity, as JAX's
 * create_device_mesh gives on a torus whose trailing axes make up 'model').
 * 'model' takes the fastest torus axes whose sizes multiply to its size, and
 * 'data' the rest (slices first, when there are several), so that every
 * collective runs over whole torus axes with the torus algorithms of coll.h,
 * and a chip's index inside its group (row-major over the group's axes) is its
 * coordinate on the mesh axis.
 *
 * Cost: whatever coll.h's plan says for the axes; a plan is made once per
 * (kind, axis, bytes) and reused.
 */
#include "mlp_comm.h"

#include <stdio.h>
#include <string.h>

tpu_status_t tpu__mlp_comm_init(mlp_comm_t *c, const tpu_topo_t *topo, const tpu_link_model_t *link,
                                tpu_xport_t *x, int data, int model, tpu_err_t *err)
{
    char shape[64];
    int a, k, prod = 1;

    memset(c, 0, sizeof(*c));
    c->topo = topo;
    c->link = link;
    c->x = x;
    c->size[MLP_AXIS_DATA] = data;
    c->size[MLP_AXIS_MODEL] = model;
    c->timeout_s = 60;
    tpu_topo_shape_str(topo, shape, sizeof(shape));
    if (data < 1 || model < 1 || (int64_t)data * model != topo->nchips) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "mesh data=%d,model=%d has %lld positions, but topology %s%s has %d "
                           "chips",
                           data, model, (long long)data * model, shape,
                           topo->slices > 1 ? " x slices" : "", topo->nchips);
    }
    /* 'model': the fastest axes whose sizes multiply to its size. */
    for (k = topo->naxes; k > 0 && prod < model; k--) {
        prod *= topo->dims[k - 1];
    }
    if (prod != model) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "mesh data=%d,model=%d does not fit topology %s: 'model' must be the "
                           "size of the last torus axes (this layout keeps mesh axes on whole "
                           "torus axes)",
                           data, model, shape);
    }
    for (a = 0; a < topo->naxes; a++) {
        if (topo->dims[a] < 2) {
            continue;
        }
        if (a >= k) {
            c->mask[MLP_AXIS_MODEL] |= 1u << a;
        } else {
            c->mask[MLP_AXIS_DATA] |= 1u << a;
        }
    }
    if (topo->slices > 1) {
        c->mask[MLP_AXIS_DATA] |= TPU_AXIS_MASK_DCN;
    }
    for (a = 0; a < 2; a++) {
        tpu_topo_axes_str(c->mask[a], c->layout[a], sizeof(c->layout[a]));
        if (c->layout[a][0] == '\0') {
            snprintf(c->layout[a], sizeof(c->layout[a]), "-");
        }
    }
    return TPU_OK;
}

void tpu__mlp_comm_fini(mlp_comm_t *c)
{
    int i;

    for (i = 0; i < c->nplans; i++) {
        tpu_coll_plan_destroy(c->plans[i].plan);
    }
    c->nplans = 0;
}

int tpu__mlp_comm_index(const mlp_comm_t *c, int chip, int axis)
{
    return axis == MLP_AXIS_MODEL ? chip % c->size[MLP_AXIS_MODEL] : chip / c->size[MLP_AXIS_MODEL];
}

static tpu_status_t get_plan(mlp_comm_t *c, tpu_coll_kind_t kind, int axis, uint64_t bytes,
                             tpu_coll_plan_t **plan_p, tpu_err_t *err)
{
    tpu_coll_desc_t desc;
    tpu_status_t status;
    int i;

    for (i = 0; i < c->nplans; i++) {
        if (c->plans[i].kind == kind && c->plans[i].axis == axis && c->plans[i].bytes == bytes) {
            *plan_p = c->plans[i].plan;
            return TPU_OK;
        }
    }
    if (c->nplans == MLP_COMM_MAX_PLANS) {
        return tpu_err_set(err, TPU_ERR_INTERNAL, "mlp: more than %d collective plans",
                           MLP_COMM_MAX_PLANS);
    }
    tpu_coll_desc_init(&desc);
    desc.kind = kind;
    desc.axes = c->mask[axis];
    desc.bytes = bytes;
    desc.dtype = TPU_DTYPE_F32;
    status = tpu_coll_plan_create(c->topo, c->link, &desc, plan_p, err);
    if (status != TPU_OK) {
        return status;
    }
    c->plans[c->nplans].kind = kind;
    c->plans[c->nplans].axis = axis;
    c->plans[c->nplans].bytes = bytes;
    c->plans[c->nplans].plan = *plan_p;
    c->nplans++;
    return TPU_OK;
}

tpu_status_t tpu__mlp_comm_run(mlp_comm_t *c, tpu_coll_kind_t kind, int axis, uint64_t bytes,
                               void *const *in, void *const *out, double *modeled_us_p,
                               const char **algo_p, tpu_err_t *err)
{
    tpu_coll_plan_t *plan;
    tpu_coll_result_t res;
    tpu_coll_run_opts_t opts;
    tpu_status_t status;
    int i, n = c->size[axis];

    if (n == 1) {
        /* A group of one chip: the collective is the identity. */
        for (i = 0; in != NULL && c->x != NULL && i < c->x->nlocal; i++) {
            if (in[i] != out[i]) {
                memmove(out[i], in[i], bytes);
            }
        }
        *modeled_us_p = 0;
        if (algo_p != NULL) {
            *algo_p = "none";
        }
        return TPU_OK;
    }
    status = get_plan(c, kind, axis, bytes, &plan, err);
    if (status != TPU_OK) {
        return status;
    }
    if (algo_p != NULL) {
        *algo_p = tpu_coll_plan_algo(plan);
    }
    if (in == NULL || c->x == NULL) {
        status = tpu_coll_plan_model(plan, &res, err);
        if (status == TPU_OK) {
            *modeled_us_p = res.modeled_us;
        }
        return status;
    }
    memset(&opts, 0, sizeof(opts));
    opts.call = c->call++;
    opts.timeout_s = c->timeout_s;
    opts.local_time = 0; /* the collective's time: the same on every chip */
    return tpu_coll_run(plan, c->x, &opts, in, out, modeled_us_p, err);
}
