/*
 * The MLP training step (see mlp.c for the step, the strategies and the cost
 * model): the batch of each chip, forward, loss, backward, the gradient
 * collectives and the update, on every local chip, with the step's report.
 */
#include "tpu/hbm.h"
#include "tpu/mlp.h"
#include "tpu/vpu.h"

#include "alloc.h"
#include "mlp_cost.h"
#include "mlp_internal.h"
#include "workload_util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The rows of the global batch this chip's data index takes, into a->x and a->y. */
static void load_batch(const tpu_mlp_t *mlp, const chip_st_t *c, int64_t step, act_t *a)
{
    const tpu_mlp_spec_t *s = &mlp->spec;
    int64_t r, j, k, b = mlp->b;

    if (s->x != NULL) {
        int64_t nb = s->nrows / s->batch, base = (step % nb) * s->batch + (int64_t)c->d * b;

        memcpy(a->x, s->x + base * NIN, (size_t)(b * NIN) * sizeof(float));
        memcpy(a->y, s->y + base, (size_t)b * sizeof(int32_t));
        return;
    }
    for (r = 0; r < b; r++) {
        uint64_t g = (uint64_t)(step * s->batch + (int64_t)c->d * b + r);
        float *xr = a->x + r * NIN, best = -INFINITY;

        for (j = 0; j < NIN; j++) {
            xr[j] = tpu__workload_normal(s->seed, S_X, g * NIN + (uint64_t)j);
        }
        a->y[r] = 0;
        for (k = 0; k < NOUT; k++) {
            float v = 0;

            for (j = 0; j < NIN; j++) {
                v += xr[j] * mlp->teacher[j * NOUT + k];
            }
            if (v > best) {
                best = v;
                a->y[r] = (int32_t)k;
            }
        }
    }
}

/* y[r, :] += bias, then relu if asked. */
static void bias_act(float *y, const float *bias, int64_t rows, int64_t cols, int relu)
{
    int64_t r, j;

    for (r = 0; r < rows; r++) {
        float *yr = y + r * cols;

        for (j = 0; j < cols; j++) {
            float v = yr[j] + bias[j];

            yr[j] = relu && v < 0 ? 0 : v;
        }
    }
}

/* out[j] = sum over rows of g[r, j]. */
static void col_sum(const float *g, int64_t rows, int64_t cols, float *out)
{
    int64_t r, j;

    memset(out, 0, (size_t)cols * sizeof(float));
    for (r = 0; r < rows; r++) {
        for (j = 0; j < cols; j++) {
            out[j] += g[r * cols + j];
        }
    }
}

/* g *= (z > 0), the relu's derivative. */
static void relu_grad(float *g, const float *z, int64_t n)
{
    int64_t i;

    for (i = 0; i < n; i++) {
        if (!(z[i] > 0)) {
            g[i] = 0;
        }
    }
}

/* fsdp: all-gather unit 'u' over data into each chip's c->unit[u]. */
static tpu_status_t gather_unit(tpu_mlp_t *mlp, int u, const char *what, int async, void **in,
                                void **out, tpu_err_t *err)
{
    tpu_status_t status;
    int i;

    for (i = 0; i < mlp->nlocal; i++) {
        chip_st_t *c = &mlp->chips[i];

        status = tpu__mlp_hbm_get(mlp, c, mlp->ulen[u], sizeof(float), (void **)&c->unit[u], err);
        if (status != TPU_OK) {
            return status;
        }
        in[i] = c->shard[u];
        out[i] = c->unit[u];
    }
    return tpu__mlp_coll(mlp, what, TPU_COLL_ALL_GATHER, MLP_AXIS_DATA, mlp->ulen[u], in, out,
                         async ? 3 + u : -1, err);
}

/* The compute stream waits for the asynchronous collective in 'slot'. */
static void wait_slot(tpu_mlp_t *mlp, int slot)
{
    if (mlp->t_compute < mlp->done[slot]) {
        mlp->t_compute = mlp->done[slot];
    }
}

static void release_unit(tpu_mlp_t *mlp, int u)
{
    int i;

    for (i = 0; i < mlp->nlocal; i++) {
        tpu__mlp_hbm_put(mlp, &mlp->chips[i], mlp->chips[i].unit[u], mlp->ulen[u], sizeof(float));
        mlp->chips[i].unit[u] = NULL;
    }
}

/* The gradient collective of unit 'u' (asynchronous). */
static tpu_status_t sync_grad(tpu_mlp_t *mlp, int u, void **in, void **out, tpu_err_t *err)
{
    static const char *const names[3] = {"grad w1,b1", "grad w2,b2", "grad w3,b3"};
    int64_t n = mlp->fsdp ? mlp->ulen[u] / mlp->D : mlp->ulen[u];
    tpu_status_t status;
    int i;

    for (i = 0; i < mlp->nlocal; i++) {
        act_t *a = &mlp->act[i];

        status = tpu__mlp_hbm_get(mlp, &mlp->chips[i], n, sizeof(float), (void **)&a->gsum[u], err);
        if (status != TPU_OK) {
            return status;
        }
        in[i] = a->grad[u];
        out[i] = a->gsum[u];
    }
    return tpu__mlp_coll(mlp, names[u], mlp->fsdp ? TPU_COLL_REDUCE_SCATTER : TPU_COLL_PSUM,
                         MLP_AXIS_DATA, mlp->ulen[u], in, out, u, err);
}

/* Free every array of the step still held. */
static void free_act(tpu_mlp_t *mlp)
{
    int i, u;

    for (i = 0; i < mlp->nlocal; i++) {
        act_t *a = &mlp->act[i];
        chip_st_t *c = &mlp->chips[i];
        int64_t b = mlp->b, H = mlp->H, Hm = mlp->Hm;

        tpu__mlp_hbm_put(mlp, c, a->x, b * NIN, 4);
        tpu__mlp_hbm_put(mlp, c, a->y, b, 4);
        tpu__mlp_hbm_put(mlp, c, a->z1, b * Hm, 4);
        tpu__mlp_hbm_put(mlp, c, a->h1, b * Hm, 4);
        tpu__mlp_hbm_put(mlp, c, a->z2p, b * H, 4);
        tpu__mlp_hbm_put(mlp, c, a->z2, b * H, 4);
        tpu__mlp_hbm_put(mlp, c, a->h2, b * H, 4);
        tpu__mlp_hbm_put(mlp, c, a->lg, b * NOUT, 4);
        tpu__mlp_hbm_put(mlp, c, a->dh2, b * H, 4);
        tpu__mlp_hbm_put(mlp, c, a->dh1, b * Hm, 4);
        tpu__mlp_hbm_put(mlp, c, a->loss_in, 1, 4);
        tpu__mlp_hbm_put(mlp, c, a->loss_out, 1, 4);
        for (u = 0; u < 3; u++) {
            tpu__mlp_hbm_put(mlp, c, a->grad[u], mlp->ulen[u], 4);
            tpu__mlp_hbm_put(mlp, c, a->gsum[u], mlp->fsdp ? mlp->ulen[u] / mlp->D : mlp->ulen[u],
                             4);
            if (mlp->fsdp && c->unit[u] != NULL) {
                tpu__mlp_hbm_put(mlp, c, c->unit[u], mlp->ulen[u], 4);
                c->unit[u] = NULL;
            }
        }
        memset(a, 0, sizeof(*a));
    }
}

/* Hold an array of 'count' elements in local chip i's HBM (model only: account for it). */
#define GET(i, ptr, count)                                                                \
    do {                                                                                  \
        status = tpu__mlp_hbm_get(mlp, &mlp->chips[i], (count), 4, (void **)&(ptr), err); \
        if (status != TPU_OK) {                                                           \
            goto out;                                                                     \
        }                                                                                 \
    } while (0)

static tpu_status_t step_body(tpu_mlp_t *mlp, int64_t step, void **in, void **out, tpu_err_t *err)
{
    const int real = !mlp->spec.model_only;
    const int64_t b = mlp->b, H = mlp->H, Hm = mlp->Hm, B = mlp->spec.batch;
    tpu_status_t status = TPU_OK;
    int i, u;

    /* The batch, and layer 1. */
    mlp->section = "forward 1";
    if (mlp->fsdp) {
        /* Layer 1's weights now; layer 2's fetched while layer 1 computes. */
        status = gather_unit(mlp, 0, "gather w1,b1", 0, in, out, err);
        status = status == TPU_OK ? gather_unit(mlp, 1, "gather w2,b2", 1, in, out, err) : status;
        if (status != TPU_OK) {
            goto out;
        }
    }
    for (i = 0; i < mlp->nlocal; i++) {
        act_t *a = &mlp->act[i];
        chip_st_t *c = &mlp->chips[i];

        GET(i, a->x, b * NIN);
        GET(i, a->y, b);
        GET(i, a->z1, b * Hm);
        GET(i, a->h1, b * Hm);
        if (real) {
            load_batch(mlp, c, step, a);
        }
        status = tpu__mlp_mm(mlp, i, b, NIN, Hm, a->x, 0, c->unit[0], 0, a->z1, err);
        if (status != TPU_OK) {
            goto out;
        }
        if (real) {
            memcpy(a->h1, a->z1, (size_t)(b * Hm) * sizeof(float));
            bias_act(a->z1, c->unit[0] + NIN * Hm, b, Hm, 0);
            bias_act(a->h1, c->unit[0] + NIN * Hm, b, Hm, 1);
        }
        /* bias add and relu: one fused elementwise pass */
        status = tpu__mlp_vpu_cost(mlp, i, TPU_VPU_ADD, b, Hm, err);
        if (status != TPU_OK) {
            goto out;
        }
    }
    if (mlp->fsdp) {
        release_unit(mlp, 0);
        wait_slot(mlp, 3 + 1);
        status = gather_unit(mlp, 2, "gather w3,b3", 1, in, out, err);
        if (status != TPU_OK) {
            goto out;
        }
    }
    /* Layer 2: partial sums over this chip's H' rows of w2, psum over model. */
    mlp->section = "forward 2";
    for (i = 0; i < mlp->nlocal; i++) {
        act_t *a = &mlp->act[i];
        chip_st_t *c = &mlp->chips[i];

        GET(i, a->z2p, b * H);
        GET(i, a->z2, b * H);
        status = tpu__mlp_mm(mlp, i, b, Hm, H, a->h1, 0, c->unit[1], 0, a->z2p, err);
        if (status != TPU_OK) {
            goto out;
        }
        in[i] = a->z2p;
        out[i] = a->z2;
    }
    status = tpu__mlp_coll(mlp, "z2 partial sums", TPU_COLL_PSUM, MLP_AXIS_MODEL, b * H, in, out,
                           -1, err);
    if (status != TPU_OK) {
        goto out;
    }
    for (i = 0; i < mlp->nlocal; i++) {
        act_t *a = &mlp->act[i];
        chip_st_t *c = &mlp->chips[i];

        tpu__mlp_hbm_put(mlp, c, a->z2p, b * H, 4);
        a->z2p = NULL;
        GET(i, a->h2, b * H);
        if (real) {
            int64_t k;

            bias_act(a->z2, c->unit[1] + Hm * H, b, H, 0);
            for (k = 0; k < b * H; k++) {
                a->h2[k] = a->z2[k] > 0 ? a->z2[k] : 0;
            }
        }
        status = tpu__mlp_vpu_cost(mlp, i, TPU_VPU_ADD, b, H, err); /* fused bias add and relu */
        if (status != TPU_OK) {
            goto out;
        }
    }
    if (mlp->fsdp) {
        release_unit(mlp, 1);
        wait_slot(mlp, 3 + 2);
    }
    /* Layer 3 (replicated over model), the loss and its gradient. */
    mlp->section = "forward 3, loss";
    for (i = 0; i < mlp->nlocal; i++) {
        act_t *a = &mlp->act[i];
        chip_st_t *c = &mlp->chips[i];

        GET(i, a->lg, b * NOUT);
        GET(i, a->loss_in, 1);
        GET(i, a->loss_out, 1);
        status = tpu__mlp_mm(mlp, i, b, H, NOUT, a->h2, 0, c->unit[2], 0, a->lg, err);
        if (status != TPU_OK) {
            goto out;
        }
        if (real) {
            double loss = 0;
            int64_t r, k;

            bias_act(a->lg, c->unit[2] + H * NOUT, b, NOUT, 0);
            for (r = 0; r < b; r++) {
                for (k = 0; k < NOUT; k++) {
                    float diff = a->lg[r * NOUT + k] - (a->y[r] == k ? 1.0f : 0.0f);

                    loss += (double)diff * diff;
                    a->lg[r * NOUT + k] = 2.0f * diff / (float)B; /* dl, in place */
                }
            }
            a->loss_in[0] = (float)(loss / (double)B);
        }
        /* bias add, subtract, square, sum, scale */
        for (u = 0; u < 4; u++) {
            status = tpu__mlp_vpu_cost(mlp, i, u == 3 ? TPU_VPU_SUM : TPU_VPU_MUL, b, NOUT, err);
            if (status != TPU_OK) {
                goto out;
            }
        }
        in[i] = a->loss_in;
        out[i] = a->loss_out;
    }
    status = tpu__mlp_coll(mlp, "loss", TPU_COLL_PSUM, MLP_AXIS_DATA, 1, in, out, -1, err);
    if (status == TPU_OK && mlp->fsdp) {
        /* Layer 2's weights again for its backward pass, fetched during layer 3's. */
        status = gather_unit(mlp, 1, "gather w2,b2 (bwd)", 1, in, out, err);
    }
    if (status != TPU_OK) {
        goto out;
    }
    /* Backward, layer 3: dw3 = h2^T dl, db3 = sum dl, dh2 = dl w3^T. */
    mlp->section = "backward 3";
    for (i = 0; i < mlp->nlocal; i++) {
        act_t *a = &mlp->act[i];
        chip_st_t *c = &mlp->chips[i];

        if (i == 0 && mlp->rep != NULL && real) {
            mlp->rep->loss = a->loss_out[0];
        }
        GET(i, a->grad[2], mlp->ulen[2]);
        GET(i, a->dh2, b * H);
        status = tpu__mlp_mm(mlp, i, H, b, NOUT, a->h2, 1, a->lg, 0, a->grad[2], err);
        status = status == TPU_OK
                     ? tpu__mlp_mm(mlp, i, b, NOUT, H, a->lg, 0, c->unit[2], 1, a->dh2, err)
                     : status;
        status = status == TPU_OK ? tpu__mlp_vpu_cost(mlp, i, TPU_VPU_SUM, b, NOUT, err) : status;
        if (status != TPU_OK) {
            goto out;
        }
        if (real) {
            col_sum(a->lg, b, NOUT, a->grad[2] + H * NOUT);
        }
    }
    if (mlp->fsdp) {
        release_unit(mlp, 2);
    }
    status = sync_grad(mlp, 2, in, out, err);
    if (status != TPU_OK) {
        goto out;
    }
    /* Layer 2: dz2 = dh2 * (z2 > 0), db2 = sum dz2, dw2 = h1^T dz2, dh1 = dz2 w2^T. */
    mlp->section = "backward 2";
    if (mlp->fsdp) {
        wait_slot(mlp, 3 + 1);
    }
    for (i = 0; i < mlp->nlocal; i++) {
        act_t *a = &mlp->act[i];
        chip_st_t *c = &mlp->chips[i];

        GET(i, a->grad[1], mlp->ulen[1]);
        GET(i, a->dh1, b * Hm);
        if (real) {
            relu_grad(a->dh2, a->z2, b * H);
            col_sum(a->dh2, b, H, a->grad[1] + Hm * H);
        }
        status = tpu__mlp_vpu_cost(mlp, i, TPU_VPU_MUL, b, H, err);
        status = status == TPU_OK ? tpu__mlp_vpu_cost(mlp, i, TPU_VPU_SUM, b, H, err) : status;
        status = status == TPU_OK
                     ? tpu__mlp_mm(mlp, i, Hm, b, H, a->h1, 1, a->dh2, 0, a->grad[1], err)
                     : status;
        status = status == TPU_OK
                     ? tpu__mlp_mm(mlp, i, b, H, Hm, a->dh2, 0, c->unit[1], 1, a->dh1, err)
                     : status;
        if (status != TPU_OK) {
            goto out;
        }
    }
    if (mlp->fsdp) {
        release_unit(mlp, 1);
    }
    status = sync_grad(mlp, 1, in, out, err);
    if (status != TPU_OK) {
        goto out;
    }
    /* Layer 1: dz1 = dh1 * (z1 > 0), db1 = sum dz1, dw1 = x^T dz1. */
    mlp->section = "backward 1";
    for (i = 0; i < mlp->nlocal; i++) {
        act_t *a = &mlp->act[i];

        GET(i, a->grad[0], mlp->ulen[0]);
        if (real) {
            relu_grad(a->dh1, a->z1, b * Hm);
            col_sum(a->dh1, b, Hm, a->grad[0] + NIN * Hm);
        }
        status = tpu__mlp_vpu_cost(mlp, i, TPU_VPU_MUL, b, Hm, err);
        status = status == TPU_OK ? tpu__mlp_vpu_cost(mlp, i, TPU_VPU_SUM, b, Hm, err) : status;
        status = status == TPU_OK
                     ? tpu__mlp_mm(mlp, i, NIN, b, Hm, a->x, 1, a->dh1, 0, a->grad[0], err)
                     : status;
        if (status != TPU_OK) {
            goto out;
        }
    }
    status = sync_grad(mlp, 0, in, out, err);
    if (status != TPU_OK) {
        goto out;
    }
    /* The update, unit by unit as its gradient arrives: p -= lr * g. */
    for (u = 2; u >= 0; u--) {
        int64_t n = mlp->fsdp ? mlp->ulen[u] / mlp->D : mlp->ulen[u];

        static const char *const upd[3] = {"update w1,b1", "update w2,b2", "update w3,b3"};

        wait_slot(mlp, u);
        mlp->section = upd[u];
        for (i = 0; i < mlp->nlocal; i++) {
            chip_st_t *c = &mlp->chips[i];
            float *p = mlp->fsdp ? c->shard[u] : c->unit[u];
            const float *g = mlp->act[i].gsum[u];
            const float lr = (float)mlp->spec.lr;
            int64_t k;

            for (k = 0; real && k < n; k++) {
                p[k] -= lr * g[k];
            }
            /* One fused pass: reads p and g, writes p. */
            status = tpu__mlp_vpu_cost(mlp, i, TPU_VPU_ADD, 1, n, err);
            if (status != TPU_OK) {
                goto out;
            }
        }
    }
out:
    return status;
}

tpu_status_t tpu_mlp_step(tpu_mlp_t *mlp, int64_t step, tpu_mlp_report_t *rep_p, tpu_err_t *err)
{
    tpu_mlp_report_t rep;
    void **in = NULL, **out = NULL;
    tpu_status_t status;
    double B = (double)mlp->spec.batch, H = (double)mlp->spec.hidden;

    memset(&rep, 0, sizeof(rep));
    mlp->rep = &rep;
    mlp->t_compute = mlp->t_comm = 0;
    memset(mlp->done, 0, sizeof(mlp->done));
    in = tpu__calloc((size_t)mlp->nlocal, sizeof(*in));
    out = tpu__calloc((size_t)mlp->nlocal, sizeof(*out));
    if (in == NULL || out == NULL) {
        status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "mlp: no memory");
        goto out;
    }
    status = step_body(mlp, step, in, out, err);
    free_act(mlp);
    if (status != TPU_OK) {
        goto out;
    }
    rep.step_us = mlp->t_compute;
    rep.exposed_us = rep.step_us - rep.compute_us;
    if (rep.exposed_us < 0) {
        rep.exposed_us = 0;
    }
    /* Useful FLOPs of one unsharded step: forward 2B(784H + H^2 + 10H); backward
     * two matmuls for layers 3 and 2, one (dw1) for layer 1. */
    rep.model_flops = 4 * B * NIN * H + 6 * B * H * H + 6 * B * H * NOUT;
    rep.mfu = rep.step_us > 0 ? rep.model_flops /
                                    (rep.step_us * 1e-6 * mlp->topo->nchips * mlp->chip.bf16_flops)
                              : 0;
    rep.hbm_peak = tpu_hbm_peak(mlp->chips[0].hbm);
    if (rep_p != NULL) {
        *rep_p = rep;
    }
out:
    mlp->rep = NULL;
    tpu__free(in);
    tpu__free(out);
    return status;
}
