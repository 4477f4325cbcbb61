/*
 * The MLP training workload, sharded over a mesh data x model (see
 * include/tpu/mlp.h for the model, the strategies and the random numbers): the
 * model's spec and parameters, its random numbers, creating it with each chip's
 * weights, and gathering them back.  The step is mlp_step.c's, the costs of a
 * chip mlp_cost.c's, the collectives over the mesh mlp_comm.c's.  What follows
 * describes all of it.
 *
 * What each chip holds, for mesh index (d, m), H' = H / M, b = batch / D:
 *
 *   unit 0 = w1[:, m*H' : (m+1)*H']  [784, H']   and b1[m*H' : ...]  [H']
 *   unit 1 = w2[m*H' : (m+1)*H', :]  [H', H]     and b2              [H]
 *   unit 2 = w3                      [H, 10]     and b3              [10]
 *
 * each unit flat and padded with zeros to a multiple of D elements; under fsdp
 * a chip keeps only the d-th of D equal pieces of each unit.  With M = 1 every
 * unit is the whole layer (dp, fsdp).
 *
 * The last layer stays whole (replicated over 'model'): it has 10 outputs, which
 * do not divide over a model axis of 4 or 16, and it is tiny (10H weights
 * against H^2 for w2, 1% of the FLOPs at H = 1024).  Sharding it would add a
 * collective to the forward pass (an all-gather of the logits, or a psum of
 * partial logits) for no saving that matters; replicated, its forward and
 * backward are computed redundantly on the M chips of a model group, which
 * then hold bit-identical values and need no communication.  As in Megatron,
 * the column-then-row split of layers 1 and 2 needs one psum (of z2's partial
 * sums) forward, and none backward, because dz2 is replicated: dh1 = dz2 @ w2^T
 * only needs this chip's rows of w2.
 *
 * One step, per chip (mm = MXU matmul, vpu = elementwise on the VPU):
 *
 *   [fsdp: all-gather unit 0 over data; start unit 1's]            unit 1: async
 *   z1 = x @ w1 + b1, h1 = relu(z1)                      mm [b,784]x[784,H'], vpu
 *   [fsdp: wait for unit 1; start unit 2's]                         unit 2: async
 *   z2 = h1 @ w2                                         mm [b,H']x[H',H]
 *   [tp: psum z2 over model]  z2 += b2, h2 = relu(z2)    vpu
 *   [fsdp: wait for unit 2]
 *   logits = h2 @ w3 + b3, loss, dl = 2 (logits - onehot) / batch
 *   psum loss over data
 *   [fsdp: start unit 1's all-gather again, for its backward]       async
 *   dw3 = h2^T dl, db3 = sum dl, dh2 = dl w3^T            mm x2
 *   grad sync of unit 2 (psum over data; fsdp: reduce-scatter)     async
 *   dz2 = dh2 * (z2 > 0), db2 = sum dz2                  [fsdp: wait for unit 1]
 *   dw2 = h1^T dz2, dh1 = dz2 w2^T                       mm x2
 *   grad sync of unit 1                                            async
 *   dz1 = dh1 * (z1 > 0), db1 = sum dz1, dw1 = x^T dz1   mm
 *   grad sync of unit 0                                            async
 *   p -= lr * g for each unit, once its grad sync is done
 *
 * Cost model.  Compute: each matmul's roofline time on the chip (mxu.h:
 * max(padded FLOPs / MXU peak for the input type, HBM bytes / bandwidth)), and
 * each elementwise pass's VPU roofline (f32), counting the passes XLA would
 * fuse as one: bias add and relu; the update p -= lr * g (reads p and g, writes
 * p).  Operands that the code transposes on the host (h2^T, w3^T, ...) are not
 * charged: the MXU takes either orientation (dot_general's contracting
 * dimensions).  Communication: each collective's modeled time from the link
 * model.  Overlap: the gradient collectives are asynchronous, as XLA schedules
 * them: the one of unit 2 runs while the backward of layers 2 and 1 computes,
 * and the update of a unit waits for its own collective; fsdp's all-gathers
 * are prefetched one layer ahead, as FSDP does (the next layer's weights
 * arrive while this layer computes).  Collectives run one at a time on the
 * links, in program order.  Everything else (fsdp's first all-gather, the
 * forward psum over model, the loss psum) is on the critical path.  So step =
 * compute + exposed communication, where exposed = the time the compute
 * stream waits.  HBM: every array a chip holds (weights, gathered units,
 * activations, gradients, the batch) is allocated in the chip's HBM model in
 * program order and freed after its last use; the peak is reported.
 *
 * The real arithmetic: the host computes exactly what the chip would (f32 or
 * bf16-input matmuls through the MXU model, f32 elementwise work) on every
 * local chip; the collectives move real bytes.  In model-only mode one chip
 * stands for all (every chip does the same work) and nothing is computed.
 */
#include "tpu/mlp.h"

#include "tpu/dtype.h"
#include "tpu/hbm.h"
#include "tpu/vmem.h"

#include "alloc.h"
#include "chip_internal.h"
#include "mlp_comm.h"
#include "mlp_cost.h"
#include "mlp_internal.h"
#include "workload_util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>


static const char *const strategy_names[TPU_MLP_STRATEGY_COUNT] = {"auto", "dp", "tp", "dp_tp",
                                                                   "fsdp"};

const char *tpu_mlp_strategy_name(tpu_mlp_strategy_t s)
{
    return (unsigned)s < TPU_MLP_STRATEGY_COUNT ? strategy_names[s] : "?";
}

tpu_status_t tpu_mlp_strategy_parse(const char *text, tpu_mlp_strategy_t *s_p, tpu_err_t *err)
{
    int i;

    for (i = 0; text != NULL && i < TPU_MLP_STRATEGY_COUNT; i++) {
        if (strcmp(text, strategy_names[i]) == 0) {
            *s_p = (tpu_mlp_strategy_t)i;
            return TPU_OK;
        }
    }
    return tpu_err_set(err, TPU_ERR_INVALID,
                       "unknown strategy '%s' (strategies: auto, dp, tp, dp_tp, fsdp)",
                       text ? text : "");
}

void tpu_mlp_spec_init(tpu_mlp_spec_t *spec)
{
    memset(spec, 0, sizeof(*spec));
    spec->batch = 256;
    spec->hidden = 1024;
    spec->lr = 0.005;
    spec->precision = TPU_MLP_BF16;
    spec->strategy = TPU_MLP_AUTO;
    spec->data = 1;
    spec->model = 1;
    spec->timeout_s = 60;
}

static const char *const param_names[TPU_MLP_NPARAMS] = {"w1", "b1", "w2", "b2", "w3", "b3"};

const char *tpu_mlp_param_name(int p)
{
    return p >= 0 && p < TPU_MLP_NPARAMS ? param_names[p] : "?";
}

int tpu_mlp_param_shape(int64_t hidden, int p, int64_t shape[2])
{
    static const int rows[TPU_MLP_NPARAMS] = {NIN, -1, -1, -1, -1, NOUT};

    switch (p) {
    case 0:
        shape[0] = NIN;
        shape[1] = hidden;
        return 2;
    case 2:
        shape[0] = hidden;
        shape[1] = hidden;
        return 2;
    case 4:
        shape[0] = hidden;
        shape[1] = NOUT;
        return 2;
    default:
        shape[0] = rows[p] > 0 ? rows[p] : hidden;
        shape[1] = 1;
        return 1;
    }
}

double tpu_mlp_param_rel_diff(const float *a, const float *b, int64_t n)
{
    double num = 0, den = 0;
    int64_t i;

    for (i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);

        num = d > num ? d : num;
        den = fabs((double)b[i]) > den ? fabs((double)b[i]) : den;
    }
    return den > 0 ? num / den : num;
}

int64_t tpu_mlp_param_count(int64_t hidden, int p)
{
    int64_t s[2];

    return tpu_mlp_param_shape(hidden, p, s) == 2 ? s[0] * s[1] : s[0];
}

/* ---- parameters ---- */

/* Fill the local unit 'u' of chip 'c' (full, padded) from the init arrays or the seed. */
static void init_unit(const tpu_mlp_t *mlp, const chip_st_t *c, int u, float *dst)
{
    const tpu_mlp_spec_t *s = &mlp->spec;
    int64_t H = mlp->H, Hm = mlp->Hm, i, j, col0 = (int64_t)c->m * Hm;
    float sc;

    memset(dst, 0, (size_t)mlp->ulen[u] * sizeof(float));
    if (u == 0) {
        sc = (float)sqrt(1.0 / NIN);
        for (i = 0; i < NIN; i++) {
            for (j = 0; j < Hm; j++) {
                int64_t g = i * H + col0 + j;

                dst[i * Hm + j] = s->init[0]
                                      ? s->init[0][g]
                                      : tpu__workload_normal(s->seed, S_W1, (uint64_t)g) * sc;
            }
        }
        for (j = 0; j < Hm && s->init[1]; j++) {
            dst[NIN * Hm + j] = s->init[1][col0 + j];
        }
    } else if (u == 1) {
        sc = (float)sqrt(1.0 / (double)H);
        for (i = 0; i < Hm; i++) {
            for (j = 0; j < H; j++) {
                int64_t g = (col0 + i) * H + j;

                dst[i * H + j] = s->init[2] ? s->init[2][g]
                                            : tpu__workload_normal(s->seed, S_W2, (uint64_t)g) * sc;
            }
        }
        for (j = 0; j < H && s->init[3]; j++) {
            dst[Hm * H + j] = s->init[3][j];
        }
    } else {
        sc = (float)sqrt(1.0 / (double)H);
        for (i = 0; i < H * NOUT; i++) {
            dst[i] =
                s->init[4] ? s->init[4][i] : tpu__workload_normal(s->seed, S_W3, (uint64_t)i) * sc;
        }
        for (j = 0; j < NOUT && s->init[5]; j++) {
            dst[H * NOUT + j] = s->init[5][j];
        }
    }
}

static tpu_status_t check_spec(tpu_mlp_t *mlp, tpu_err_t *err)
{
    const tpu_mlp_spec_t *s = &mlp->spec;
    int64_t r;

    if (s->batch < 1) {
        return tpu_err_set(err, TPU_ERR_INVALID, "batch must be 1 or more, got %lld",
                           (long long)s->batch);
    }
    if (s->hidden < 1) {
        return tpu_err_set(err, TPU_ERR_INVALID, "hidden must be 1 or more, got %lld",
                           (long long)s->hidden);
    }
    if (!isfinite(s->lr)) {
        return tpu_err_set(err, TPU_ERR_INVALID, "lr must be a finite number");
    }
    /* The step model's byte counts (activations b x max(H, 784), weights H x H, 16 bytes
     * an element at most with gradients and moments) must stay far inside 64 bits. */
    {
        double wide = (double)(s->hidden > NIN ? s->hidden : NIN);

        if ((double)s->batch * wide * 16.0 > 0x1p62 || wide * wide * 16.0 > 0x1p62) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "batch %lld with hidden %lld needs more than 2^62 bytes per "
                               "array: batch x max(hidden, %d) must stay below 2^58 and hidden "
                               "below 2^29",
                               (long long)s->batch, (long long)s->hidden, NIN);
        }
    }
    if (s->batch % mlp->D != 0) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "batch %lld is not divisible by the mesh's data axis (data=%d): use a "
                           "multiple of %d, e.g. %lld",
                           (long long)s->batch, mlp->D, mlp->D,
                           (long long)(s->batch > INT64_MAX - mlp->D
                                           ? s->batch / mlp->D * mlp->D
                                           : (s->batch / mlp->D + 1) * mlp->D));
    }
    if (s->hidden % mlp->M != 0 && !(s->model_only && s->pad_hidden)) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "hidden %lld is not divisible by the mesh's model axis (model=%d): use "
                           "a multiple of %d, e.g. %lld",
                           (long long)s->hidden, mlp->M, mlp->M,
                           (long long)((s->hidden / mlp->M + 1) * mlp->M));
    }
    switch (s->strategy) {
    case TPU_MLP_DP:
        if (mlp->M > 1) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "strategy dp replicates the weights, but the mesh has model=%d; use "
                               "--strategy dp_tp (or auto)",
                               mlp->M);
        }
        break;
    case TPU_MLP_TP:
        if (mlp->D > 1) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "strategy tp keeps the whole batch on every chip, but the mesh has "
                               "data=%d; use --strategy dp_tp (or auto)",
                               mlp->D);
        }
        break;
    default:
        break;
    }
    if (s->x != NULL || s->y != NULL) {
        if (s->x == NULL || s->y == NULL) {
            return tpu_err_set(err, TPU_ERR_INVALID, "data needs both x and labels");
        }
        if (s->nrows < s->batch || s->nrows % s->batch != 0) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "the data has %lld rows, which is not a multiple of batch %lld",
                               (long long)s->nrows, (long long)s->batch);
        }
        for (r = 0; r < s->nrows; r++) {
            if (s->y[r] < 0 || s->y[r] >= NOUT) {
                return tpu_err_set(err, TPU_ERR_INVALID,
                                   "label %d at row %lld is outside the classes 0..%d",
                                   (int)s->y[r], (long long)r, NOUT - 1);
            }
        }
    }
    return TPU_OK;
}

tpu_status_t tpu_mlp_create(const tpu_mlp_spec_t *spec, const tpu_topo_t *topo,
                            const tpu_link_model_t *link, const tpu_chip_spec_t *chip,
                            tpu_xport_t *x, tpu_mlp_t **mlp_p, tpu_err_t *err)
{
    tpu_mlp_t *mlp;
    tpu_status_t status;
    float *full = NULL;
    int i, u, p;

    if (spec == NULL || topo == NULL || link == NULL || chip == NULL || mlp_p == NULL ||
        (x == NULL && !spec->model_only)) {
        return tpu_err_set(err, TPU_ERR_INVALID, "mlp: NULL argument");
    }
    mlp = tpu__calloc(1, sizeof(*mlp));
    if (mlp == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "mlp: no memory");
    }
    mlp->spec = *spec;
    for (p = 0; p < TPU_MLP_NPARAMS; p++) {
        mlp->spec.init[p] = NULL; /* borrowed for this call only */
    }
    mlp->chip = *chip;
    mlp->pace = tpu_faults_slowest_chip(link->faults);
    mlp->topo = topo;
    mlp->D = spec->data;
    mlp->M = spec->model;
    status =
        tpu__mlp_comm_init(&mlp->comm, topo, link, chip, spec->model_only ? NULL : x, spec, err);
    if (status != TPU_OK) {
        goto err_free;
    }
    status = check_spec(mlp, err);
    if (status != TPU_OK) {
        goto err_free;
    }
    mlp->strat = spec->strategy;
    if (mlp->strat == TPU_MLP_AUTO) {
        mlp->strat = mlp->M == 1 ? TPU_MLP_DP : mlp->D == 1 ? TPU_MLP_TP : TPU_MLP_DP_TP;
    }
    mlp->fsdp = mlp->strat == TPU_MLP_FSDP;
    mlp->H = (spec->hidden + mlp->M - 1) / mlp->M * mlp->M;
    mlp->Hm = mlp->H / mlp->M;
    mlp->b = spec->batch / mlp->D;
    mlp->ucount[0] = NIN * mlp->Hm + mlp->Hm;
    mlp->ucount[1] = mlp->Hm * mlp->H + mlp->H;
    mlp->ucount[2] = mlp->H * NOUT + NOUT;
    for (u = 0; u < 3; u++) {
        mlp->ulen[u] = (mlp->ucount[u] + mlp->D - 1) / mlp->D * mlp->D;
    }
    mlp->nlocal = spec->model_only ? 1 : x->nlocal;
    mlp->chips = tpu__calloc((size_t)mlp->nlocal, sizeof(*mlp->chips));
    mlp->act = tpu__calloc((size_t)mlp->nlocal, sizeof(*mlp->act));
    if (mlp->chips == NULL || mlp->act == NULL) {
        status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "mlp: no memory");
        goto err_free;
    }
    status = tpu_vmem_create(chip, &mlp->vmem, err);
    if (status != TPU_OK) {
        goto err_free;
    }
    /* The weights in HBM first: a model that does not fit fails here, before any
     * host memory is spent on it. */
    {
        uint64_t need = 0, cap = tpu_hbm_capacity(tpu__mlp_comm_hbm(&mlp->comm, 0));

        for (u = 0; u < 3; u++) {
            need += (uint64_t)(mlp->fsdp ? mlp->ulen[u] / mlp->D : mlp->ulen[u]) * sizeof(float);
        }
        if (need > cap) {
            status = tpu_err_set(err, TPU_ERR_RESOURCE_EXHAUSTED,
                                 "RESOURCE_EXHAUSTED: the weights take %llu bytes (%.2f GiB) per "
                                 "chip, more than the %llu bytes (%.2f GiB) of HBM of a %s chip; "
                                 "shard them (--mesh model=N, --strategy fsdp)",
                                 (unsigned long long)need, (double)need / (1u << 30),
                                 (unsigned long long)cap, (double)cap / (1u << 30), chip->name);
            goto err_free;
        }
    }
    for (i = 0; i < mlp->nlocal; i++) {
        chip_st_t *c = &mlp->chips[i];

        c->chip = spec->model_only ? 0 : x->local_chips[i];
        c->d = tpu__mlp_comm_index(&mlp->comm, c->chip, MLP_AXIS_DATA);
        c->m = tpu__mlp_comm_index(&mlp->comm, c->chip, MLP_AXIS_MODEL);
        c->hbm = tpu__mlp_comm_hbm(&mlp->comm, i);
        for (u = 0; u < 3; u++) {
            int64_t n = mlp->fsdp ? mlp->ulen[u] / mlp->D : mlp->ulen[u];

            status = tpu__mlp_hbm_get(mlp, c, n, sizeof(float),
                                      (void **)(mlp->fsdp ? &c->shard[u] : &c->unit[u]), err);
            if (status != TPU_OK) {
                goto err_free;
            }
        }
    }
    if (!spec->model_only) {
        int64_t maxlen = mlp->ulen[0] > mlp->ulen[1] ? mlp->ulen[0] : mlp->ulen[1];

        maxlen = maxlen > mlp->ulen[2] ? maxlen : mlp->ulen[2];
        full = tpu__malloc((size_t)maxlen * sizeof(float));
        if (full == NULL) {
            status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "mlp: no host memory for the weights");
            goto err_free;
        }
        if (spec->x == NULL) {
            mlp->teacher = tpu__malloc(NIN * NOUT * sizeof(float));
            if (mlp->teacher == NULL) {
                status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "mlp: no memory");
                goto err_free;
            }
            for (i = 0; i < NIN * NOUT; i++) {
                mlp->teacher[i] = tpu__workload_normal(spec->seed, S_TEACHER, (uint64_t)i);
            }
        }
    }
    for (i = 0; full != NULL && i < mlp->nlocal; i++) {
        chip_st_t *c = &mlp->chips[i];

        for (u = 0; u < 3; u++) {
            int64_t n = mlp->fsdp ? mlp->ulen[u] / mlp->D : mlp->ulen[u];

            mlp->spec.init[2 * u] = spec->init[2 * u];
            mlp->spec.init[2 * u + 1] = spec->init[2 * u + 1];
            init_unit(mlp, c, u, full);
            mlp->spec.init[2 * u] = mlp->spec.init[2 * u + 1] = NULL;
            memcpy(mlp->fsdp ? c->shard[u] : c->unit[u], full + (mlp->fsdp ? (int64_t)c->d * n : 0),
                   (size_t)n * sizeof(float));
        }
    }
    tpu__free(full);
    *mlp_p = mlp;
    return TPU_OK;
err_free:
    tpu__free(full);
    tpu_mlp_destroy(mlp);
    return status;
}

void tpu_mlp_destroy(tpu_mlp_t *mlp)
{
    if (mlp == NULL) {
        return;
    }
    tpu__mlp_comm_fini(&mlp->comm);
    tpu_vmem_destroy(mlp->vmem);
    tpu__free(mlp->chips);
    tpu__free(mlp->act);
    tpu__free(mlp->teacher);
    tpu__free(mlp);
}

tpu_mlp_strategy_t tpu_mlp_strategy(const tpu_mlp_t *mlp)
{
    return mlp->strat;
}

int64_t tpu_mlp_hidden(const tpu_mlp_t *mlp)
{
    return mlp->H;
}

/* ---- gathering the weights, hashes ---- */

tpu_status_t tpu_mlp_gather(tpu_mlp_t *mlp, float *const out_p[TPU_MLP_NPARAMS], tpu_err_t *err)
{
    void **in = NULL, **out = NULL;
    float *units = NULL, *all = NULL;
    tpu_status_t status = TPU_OK;
    int64_t H = mlp->H, Hm = mlp->Hm, r, j, maxlen = 0;
    int i, u, mm_;

    if (mlp->spec.model_only) {
        return tpu_err_set(err, TPU_ERR_INVALID, "mlp: a model-only run has no weights");
    }
    in = tpu__calloc((size_t)mlp->nlocal, sizeof(*in));
    out = tpu__calloc((size_t)mlp->nlocal, sizeof(*out));
    for (u = 0; u < 3; u++) {
        maxlen = mlp->ulen[u] > maxlen ? mlp->ulen[u] : maxlen;
    }
    units = tpu__malloc((size_t)mlp->nlocal * (size_t)maxlen * sizeof(float));
    all = tpu__malloc((size_t)mlp->nlocal * (size_t)mlp->M * (size_t)maxlen * sizeof(float));
    if (in == NULL || out == NULL || units == NULL || all == NULL) {
        status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "mlp: no host memory to gather the weights");
        goto out;
    }
    for (u = 0; u < 3 && status == TPU_OK; u++) {
        int64_t L = mlp->ulen[u];

        for (i = 0; i < mlp->nlocal; i++) {
            in[i] = mlp->fsdp ? (void *)mlp->chips[i].shard[u] : (void *)mlp->chips[i].unit[u];
            out[i] = units + (size_t)i * (size_t)L;
        }
        if (mlp->fsdp) {
            status = tpu__mlp_comm_run(&mlp->comm, TPU_COLL_ALL_GATHER, MLP_AXIS_DATA,
                                       (uint64_t)L * 4, in, out, &(double){0}, NULL, NULL, err);
        } else {
            for (i = 0; i < mlp->nlocal; i++) {
                memcpy(out[i], in[i], (size_t)L * 4);
            }
        }
        for (i = 0; status == TPU_OK && i < mlp->nlocal; i++) {
            in[i] = units + (size_t)i * (size_t)L;
            out[i] = all + (size_t)i * (size_t)(mlp->M * L);
        }
        if (status == TPU_OK) {
            status = tpu__mlp_comm_run(&mlp->comm, TPU_COLL_ALL_GATHER, MLP_AXIS_MODEL,
                                       (uint64_t)(mlp->M * L) * 4, in, out, &(double){0}, NULL,
                                       NULL, err);
        }
        if (status != TPU_OK) {
            break;
        }
        /* Unpack local chip 0's copy: model member mm_'s unit is at all[mm_ * L]. */
        for (mm_ = 0; mm_ < mlp->M; mm_++) {
            const float *src = all + (size_t)(mm_ * L);

            if (u == 0) {
                for (r = 0; r < NIN; r++) {
                    memcpy(out_p[0] + r * H + mm_ * Hm, src + r * Hm, (size_t)Hm * 4);
                }
                memcpy(out_p[1] + mm_ * Hm, src + NIN * Hm, (size_t)Hm * 4);
            } else if (u == 1) {
                memcpy(out_p[2] + mm_ * Hm * H, src, (size_t)(Hm * H) * 4);
                if (mm_ == 0) {
                    memcpy(out_p[3], src + Hm * H, (size_t)H * 4);
                }
            } else if (mm_ == 0) {
                memcpy(out_p[4], src, (size_t)(H * NOUT) * 4);
                for (j = 0; j < NOUT; j++) {
                    out_p[5][j] = src[H * NOUT + j];
                }
            }
        }
    }
out:
    tpu__free(in);
    tpu__free(out);
    tpu__free(units);
    tpu__free(all);
    return status;
}

uint64_t tpu_mlp_param_hash(const tpu_mlp_t *mlp, int i, int *data_idx_p, int *model_idx_p)
{
    const chip_st_t *c = &mlp->chips[i];
    uint64_t h = 0xcbf29ce484222325ull;
    int u;

    for (u = 0; u < 3; u++) {
        const unsigned char *p = (const unsigned char *)(mlp->fsdp ? c->shard[u] : c->unit[u]);
        int64_t k, n = (mlp->fsdp ? mlp->ulen[u] / mlp->D : mlp->ulen[u]) * 4;

        for (k = 0; p != NULL && k < n; k++) {
            h = (h ^ p[k]) * 0x100000001b3ull;
        }
    }
    if (data_idx_p != NULL) {
        *data_idx_p = c->d;
    }
    if (model_idx_p != NULL) {
        *model_idx_p = c->m;
    }
    return h;
}
