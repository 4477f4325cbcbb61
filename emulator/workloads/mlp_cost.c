/*
 * The costs of the MLP step on one chip (see mlp.c for the cost model): arrays
 * held in the chip's HBM model, compute booked on the step's timeline, the MXU
 * matmul with its roofline, VPU passes, and the collectives, synchronous or
 * asynchronous, with their place on the timeline.
 */
#include "mlp_cost.h"

#include "tpu/dtype.h"
#include "tpu/mxu.h"
#include "tpu/roofline.h"

#include "alloc.h"
#include "workload_util.h"

#include <stdio.h>
#include <string.h>

tpu_status_t tpu__mlp_hbm_get(tpu_mlp_t *mlp, chip_st_t *c, int64_t count, size_t elem, void **p_p,
                              tpu_err_t *err)
{
    uint64_t bytes = (uint64_t)count * elem;

    if (mlp->spec.model_only) {
        *p_p = NULL;
        return tpu_hbm_reserve(c->hbm, bytes, err);
    }
    return tpu_hbm_alloc(c->hbm, bytes, p_p, err);
}

void tpu__mlp_hbm_put(tpu_mlp_t *mlp, chip_st_t *c, void *p, int64_t count, size_t elem)
{
    if (mlp->spec.model_only) {
        tpu_hbm_unreserve(c->hbm, (uint64_t)count * elem);
    } else {
        tpu_hbm_free(c->hbm, p);
    }
}

/*
 * Add the roofline time of 'rl' (paced) on local chip 'i' (only chip 0 keeps the books), named
 * 'what' in the section of the step that runs ('mlp->section') on the timeline.
 */
static void charge(tpu_mlp_t *mlp, int i, const tpu_roofline_t *rl, const char *what)
{
    tpu_mlp_report_t *r = mlp->rep;
    double us = rl->modeled_us / mlp->pace;
    /* a slow chip (faults) paces its compute */
    if (i != 0 || r == NULL) {
        return;
    }
    if (r->nops < TPU_MLP_MAX_OPS) {
        tpu_mlp_op_t *op = &r->ops[r->nops++];

        snprintf(op->what, sizeof(op->what), "%s: %s", mlp->section, what);
        op->start_us = mlp->t_compute;
        op->dur_us = us;
        op->flops = rl->flops;
        op->bytes = rl->hbm_bytes;
        op->compute_bound = rl->bound == TPU_ROOFLINE_COMPUTE;
    }
    r->compute_us += us;
    mlp->t_compute += us;
}

tpu_status_t tpu__mlp_vpu_cost(tpu_mlp_t *mlp, int i, tpu_vpu_op_t op, int64_t rows, int64_t cols,
                               tpu_err_t *err)
{
    tpu_vpu_desc_t d;
    tpu_roofline_t rl;
    tpu_status_t status;

    if (i != 0 || rows * cols == 0) {
        return TPU_OK;
    }
    tpu_vpu_desc_init(&d, op, TPU_DTYPE_F32, rows, cols);
    status = tpu_vpu_roofline(&mlp->chip, &d, &rl, err);
    if (status == TPU_OK) {
        charge(mlp, i, &rl, tpu_vpu_op_name(op));
    }
    return status;
}

/*
 * C[m,n] = A @ B on the MXU of local chip 'i', where A is stored [m,k] (or
 * [k,m] with 'ta') and B [k,n] (or [n,k] with 'tb').  bf16: both operands
 * rounded to bf16, f32 accumulation and output.
 */
tpu_status_t tpu__mlp_mm(tpu_mlp_t *mlp, int i, int64_t m, int64_t k, int64_t n, const float *A,
                         int ta, const float *B, int tb, float *C, tpu_err_t *err)
{
    tpu_mxu_desc_t d;
    tpu_roofline_report_t rep;
    tpu_roofline_t rl;
    tpu_status_t status;
    int bf16 = mlp->spec.precision == TPU_MLP_BF16;
    size_t es = bf16 ? 2 : 4;
    float *ta_buf = NULL, *tb_buf = NULL;
    void *a16 = NULL, *b16 = NULL;
    char what[64];
    const void *a = A, *b = B;

    if (m == 0 || n == 0 || k == 0) {
        return TPU_OK;
    }
    tpu_mxu_desc_init(&d, m, k, n, bf16 ? TPU_DTYPE_BF16 : TPU_DTYPE_F32);
    d.out = TPU_DTYPE_F32;
    snprintf(what, sizeof(what), "matmul %lldx%lldx%lld", (long long)m, (long long)k, (long long)n);
    if (mlp->spec.model_only) {
        status = tpu_mxu_roofline(&mlp->chip, &d, &rl, err);
        if (status == TPU_OK) {
            charge(mlp, i, &rl, what);
        }
        return status;
    }
    if (ta) {
        ta_buf = tpu__malloc((size_t)(m * k) * sizeof(float));
        if (ta_buf == NULL) {
            status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "mlp: no host memory for a transpose");
            goto out;
        }
        tpu__workload_transpose(A, k, m, ta_buf);
        a = ta_buf;
    }
    if (tb) {
        tb_buf = tpu__malloc((size_t)(k * n) * sizeof(float));
        if (tb_buf == NULL) {
            status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "mlp: no host memory for a transpose");
            goto out;
        }
        tpu__workload_transpose(B, n, k, tb_buf);
        b = tb_buf;
    }
    if (bf16) {
        a16 = tpu__malloc((size_t)(m * k) * es);
        b16 = tpu__malloc((size_t)(k * n) * es);
        if (a16 == NULL || b16 == NULL) {
            status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "mlp: no host memory for bf16 operands");
            goto out;
        }
        tpu_dtype_bf16_narrow(a, a16, (size_t)(m * k));
        tpu_dtype_bf16_narrow(b, b16, (size_t)(k * n));
        a = a16;
        b = b16;
    }
    status = tpu_mxu_matmul(mlp->vmem, &d, a, b, C, &rep, err);
    if (status == TPU_OK) {
        charge(mlp, i, &rep.roofline, what);
    }
out:
    tpu__free(ta_buf);
    tpu__free(tb_buf);
    tpu__free(a16);
    tpu__free(b16);
    return status;
}

/* ---- collectives, with the timeline ---- */

/*
 * Run a collective over 'axis' on every local chip's in[i] -> out[i] (NULL in
 * model-only mode) and book it.  'unit' >= 0 makes it asynchronous: it starts
 * when both the compute and the links are free, and only the update of that
 * unit waits for it.
 */
tpu_status_t tpu__mlp_coll(tpu_mlp_t *mlp, const char *what, tpu_coll_kind_t kind, int axis,
                           int64_t count, void **in, void **out, int unit, tpu_err_t *err)
{
    tpu_mlp_report_t *rep = mlp->rep;
    const tpu_coll_plan_t *plan = NULL;
    char algo[64] = "";
    double us = 0, start;
    tpu_status_t status;
    uint64_t bytes = (uint64_t)count * sizeof(float);

    status = tpu__mlp_comm_run(&mlp->comm, kind, axis, bytes, mlp->spec.model_only ? NULL : in,
                               mlp->spec.model_only ? NULL : out, &us, algo, &plan, err);
    if (status != TPU_OK || mlp->comm.size[axis] == 1 || rep == NULL) {
        return status;
    }
    start = mlp->t_compute > mlp->t_comm ? mlp->t_compute : mlp->t_comm;
    mlp->t_comm = start + us;
    if (unit < 0) {
        mlp->t_compute = mlp->t_comm;
    } else {
        mlp->done[unit] = mlp->t_comm;
    }
    rep->comm_us += us;
    if (rep->ncoll < TPU_MLP_MAX_COLL) {
        tpu_mlp_coll_t *c = &rep->coll[rep->ncoll++];

        snprintf(c->what, sizeof(c->what), "%s", what);
        c->kind = kind;
        snprintf(c->axis, sizeof(c->axis), "%s", axis == MLP_AXIS_DATA ? "data" : "model");
        snprintf(c->layout, sizeof(c->layout), "%s", mlp->comm.layout[axis]);
        snprintf(c->groups, sizeof(c->groups), "%s", mlp->comm.groups[axis]);
        c->group = mlp->comm.size[axis];
        c->bytes = bytes;
        c->modeled_us = us;
        c->start_us = start;
        c->plan = plan;
        c->overlapped = unit >= 0;
        snprintf(c->algorithm, sizeof(c->algorithm), "%s", algo);
    }
    return TPU_OK;
}
