/*
 * The MLP training step, sharded over a mesh data x model (see include/tpu/mlp.h
 * for the model, the strategies and the random numbers).
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
#include "tpu/mxu.h"
#include "tpu/roofline.h"
#include "tpu/vmem.h"
#include "tpu/vpu.h"

#include "alloc.h"
#include "chip_internal.h"
#include "mlp_comm.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define NIN  TPU_MLP_IN
#define NOUT TPU_MLP_OUT

/* Random streams. */
#define S_W1      1
#define S_W2      2
#define S_W3      3
#define S_TEACHER 100
#define S_X       200

typedef struct chip_st {
    int chip, d, m;
    tpu_hbm_t *hbm;
    float *unit[3];  /* the chip's parameters (fsdp: only while gathered) */
    float *shard[3]; /* fsdp: the chip's piece of each unit */
} chip_st_t;

/* The arrays of one step on one chip. */
typedef struct act {
    float *x;
    int32_t *y;
    float *z1, *h1, *z2p, *z2, *h2, *lg, *dh2, *dh1;
    float *grad[3], *gsum[3];
    float *loss_in, *loss_out;
} act_t;

struct tpu_mlp {
    tpu_mlp_spec_t spec;
    tpu_chip_spec_t chip;
    double pace; /* the slowest chip's speed (tpu/fault.h): it paces every step's compute */
    const tpu_topo_t *topo;
    mlp_comm_t comm;
    tpu_vmem_t *vmem; /* one executor serves every local chip (one thread) */
    tpu_mlp_strategy_t strat;
    int fsdp;
    int D, M;
    int64_t H, Hm, b;
    int64_t ucount[3], ulen[3];
    int nlocal;
    chip_st_t *chips;
    act_t *act;
    float *teacher;
    /* The step's timeline (local chip 0). */
    double t_compute, t_comm, done[6]; /* async collectives: grads 0-2, gathers 3-5 */
    const char *section;               /* the part of the step that runs, for its ops */
    tpu_mlp_report_t *rep;
};

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

/* ---- random numbers: splitmix64 as a counter-based generator ---- */

static uint64_t splitmix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Element 'i' of stream 's': a standard normal (Box-Muller). */
static float rnd_normal(uint64_t seed, uint64_t s, uint64_t i)
{
    uint64_t key = splitmix64(seed ^ splitmix64(s));
    uint64_t a = splitmix64(key ^ (2 * i)), c = splitmix64(key ^ (2 * i + 1));
    double u1 = ((double)(a >> 11) + 1.0) * 0x1.0p-53; /* (0, 1] */
    double u2 = (double)(c >> 11) * 0x1.0p-53;         /* [0, 1) */

    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

/* ---- HBM, costs ---- */

static tpu_status_t hbm_get(tpu_mlp_t *mlp, chip_st_t *c, int64_t count, size_t elem, void **p_p,
                            tpu_err_t *err)
{
    uint64_t bytes = (uint64_t)count * elem;

    if (mlp->spec.model_only) {
        *p_p = NULL;
        return tpu_hbm_reserve(c->hbm, bytes, err);
    }
    return tpu_hbm_alloc(c->hbm, bytes, p_p, err);
}

static void hbm_put(tpu_mlp_t *mlp, chip_st_t *c, void *p, int64_t count, size_t elem)
{
    if (mlp->spec.model_only) {
        tpu_hbm_unreserve(c->hbm, (uint64_t)count * elem);
    } else {
        tpu_hbm_free(c->hbm, p);
    }
}

/*
 * Add 'us' of compute on local chip 'i' (only chip 0 keeps the books), named
 * 'what' in the section of the step that runs ('mlp->section') on the timeline.
 */
static void charge(tpu_mlp_t *mlp, int i, double us, const char *what)
{
    tpu_mlp_report_t *r = mlp->rep;

    us /= mlp->pace; /* a slow chip (faults) paces its compute */
    if (i != 0 || r == NULL) {
        return;
    }
    if (r->nops < TPU_MLP_MAX_OPS) {
        tpu_mlp_op_t *op = &r->ops[r->nops++];

        snprintf(op->what, sizeof(op->what), "%s: %s", mlp->section, what);
        op->start_us = mlp->t_compute;
        op->dur_us = us;
    }
    r->compute_us += us;
    mlp->t_compute += us;
}

static tpu_status_t vpu_cost(tpu_mlp_t *mlp, int i, tpu_vpu_op_t op, int64_t rows, int64_t cols,
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
        charge(mlp, i, rl.modeled_us, tpu_vpu_op_name(op));
    }
    return status;
}

static void transpose(const float *src, int64_t rows, int64_t cols, float *dst)
{
    int64_t i0, j0, i, j;

    for (i0 = 0; i0 < rows; i0 += 32) {
        for (j0 = 0; j0 < cols; j0 += 32) {
            for (i = i0; i < i0 + 32 && i < rows; i++) {
                for (j = j0; j < j0 + 32 && j < cols; j++) {
                    dst[j * rows + i] = src[i * cols + j];
                }
            }
        }
    }
}

/*
 * C[m,n] = A @ B on the MXU of local chip 'i', where A is stored [m,k] (or
 * [k,m] with 'ta') and B [k,n] (or [n,k] with 'tb').  bf16: both operands
 * rounded to bf16, f32 accumulation and output.
 */
static tpu_status_t mm(tpu_mlp_t *mlp, int i, int64_t m, int64_t k, int64_t n, const float *A,
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
            charge(mlp, i, rl.modeled_us, what);
        }
        return status;
    }
    if (ta) {
        ta_buf = tpu__malloc((size_t)(m * k) * sizeof(float));
        if (ta_buf == NULL) {
            status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "mlp: no host memory for a transpose");
            goto out;
        }
        transpose(A, k, m, ta_buf);
        a = ta_buf;
    }
    if (tb) {
        tb_buf = tpu__malloc((size_t)(k * n) * sizeof(float));
        if (tb_buf == NULL) {
            status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "mlp: no host memory for a transpose");
            goto out;
        }
        transpose(B, n, k, tb_buf);
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
        charge(mlp, i, rep.roofline.modeled_us, what);
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
static tpu_status_t coll(tpu_mlp_t *mlp, const char *what, tpu_coll_kind_t kind, int axis,
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

                dst[i * Hm + j] =
                    s->init[0] ? s->init[0][g] : rnd_normal(s->seed, S_W1, (uint64_t)g) * sc;
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

                dst[i * H + j] =
                    s->init[2] ? s->init[2][g] : rnd_normal(s->seed, S_W2, (uint64_t)g) * sc;
            }
        }
        for (j = 0; j < H && s->init[3]; j++) {
            dst[Hm * H + j] = s->init[3][j];
        }
    } else {
        sc = (float)sqrt(1.0 / (double)H);
        for (i = 0; i < H * NOUT; i++) {
            dst[i] = s->init[4] ? s->init[4][i] : rnd_normal(s->seed, S_W3, (uint64_t)i) * sc;
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
    if (s->batch % mlp->D != 0) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "batch %lld is not divisible by the mesh's data axis (data=%d): use a "
                           "multiple of %d, e.g. %lld",
                           (long long)s->batch, mlp->D, mlp->D,
                           (long long)((s->batch / mlp->D + 1) * mlp->D));
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

            status = hbm_get(mlp, c, n, sizeof(float),
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
                mlp->teacher[i] = rnd_normal(spec->seed, S_TEACHER, (uint64_t)i);
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

/* ---- the step ---- */

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
            xr[j] = rnd_normal(s->seed, S_X, g * NIN + (uint64_t)j);
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

        status = hbm_get(mlp, c, mlp->ulen[u], sizeof(float), (void **)&c->unit[u], err);
        if (status != TPU_OK) {
            return status;
        }
        in[i] = c->shard[u];
        out[i] = c->unit[u];
    }
    return coll(mlp, what, TPU_COLL_ALL_GATHER, MLP_AXIS_DATA, mlp->ulen[u], in, out,
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
        hbm_put(mlp, &mlp->chips[i], mlp->chips[i].unit[u], mlp->ulen[u], sizeof(float));
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

        status = hbm_get(mlp, &mlp->chips[i], n, sizeof(float), (void **)&a->gsum[u], err);
        if (status != TPU_OK) {
            return status;
        }
        in[i] = a->grad[u];
        out[i] = a->gsum[u];
    }
    return coll(mlp, names[u], mlp->fsdp ? TPU_COLL_REDUCE_SCATTER : TPU_COLL_PSUM, MLP_AXIS_DATA,
                mlp->ulen[u], in, out, u, err);
}

/* Free every array of the step still held. */
static void free_act(tpu_mlp_t *mlp)
{
    int i, u;

    for (i = 0; i < mlp->nlocal; i++) {
        act_t *a = &mlp->act[i];
        chip_st_t *c = &mlp->chips[i];
        int64_t b = mlp->b, H = mlp->H, Hm = mlp->Hm;

        hbm_put(mlp, c, a->x, b * NIN, 4);
        hbm_put(mlp, c, a->y, b, 4);
        hbm_put(mlp, c, a->z1, b * Hm, 4);
        hbm_put(mlp, c, a->h1, b * Hm, 4);
        hbm_put(mlp, c, a->z2p, b * H, 4);
        hbm_put(mlp, c, a->z2, b * H, 4);
        hbm_put(mlp, c, a->h2, b * H, 4);
        hbm_put(mlp, c, a->lg, b * NOUT, 4);
        hbm_put(mlp, c, a->dh2, b * H, 4);
        hbm_put(mlp, c, a->dh1, b * Hm, 4);
        hbm_put(mlp, c, a->loss_in, 1, 4);
        hbm_put(mlp, c, a->loss_out, 1, 4);
        for (u = 0; u < 3; u++) {
            hbm_put(mlp, c, a->grad[u], mlp->ulen[u], 4);
            hbm_put(mlp, c, a->gsum[u], mlp->fsdp ? mlp->ulen[u] / mlp->D : mlp->ulen[u], 4);
            if (mlp->fsdp && c->unit[u] != NULL) {
                hbm_put(mlp, c, c->unit[u], mlp->ulen[u], 4);
                c->unit[u] = NULL;
            }
        }
        memset(a, 0, sizeof(*a));
    }
}

/* Hold an array of 'count' elements in local chip i's HBM (model only: account for it). */
#define GET(i, ptr, count)                                                       \
    do {                                                                         \
        status = hbm_get(mlp, &mlp->chips[i], (count), 4, (void **)&(ptr), err); \
        if (status != TPU_OK) {                                                  \
            goto out;                                                            \
        }                                                                        \
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
        status = mm(mlp, i, b, NIN, Hm, a->x, 0, c->unit[0], 0, a->z1, err);
        if (status != TPU_OK) {
            goto out;
        }
        if (real) {
            memcpy(a->h1, a->z1, (size_t)(b * Hm) * sizeof(float));
            bias_act(a->z1, c->unit[0] + NIN * Hm, b, Hm, 0);
            bias_act(a->h1, c->unit[0] + NIN * Hm, b, Hm, 1);
        }
        /* bias add and relu: one fused elementwise pass */
        status = vpu_cost(mlp, i, TPU_VPU_ADD, b, Hm, err);
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
        status = mm(mlp, i, b, Hm, H, a->h1, 0, c->unit[1], 0, a->z2p, err);
        if (status != TPU_OK) {
            goto out;
        }
        in[i] = a->z2p;
        out[i] = a->z2;
    }
    status = coll(mlp, "z2 partial sums", TPU_COLL_PSUM, MLP_AXIS_MODEL, b * H, in, out, -1, err);
    if (status != TPU_OK) {
        goto out;
    }
    for (i = 0; i < mlp->nlocal; i++) {
        act_t *a = &mlp->act[i];
        chip_st_t *c = &mlp->chips[i];

        hbm_put(mlp, c, a->z2p, b * H, 4);
        a->z2p = NULL;
        GET(i, a->h2, b * H);
        if (real) {
            int64_t k;

            bias_act(a->z2, c->unit[1] + Hm * H, b, H, 0);
            for (k = 0; k < b * H; k++) {
                a->h2[k] = a->z2[k] > 0 ? a->z2[k] : 0;
            }
        }
        status = vpu_cost(mlp, i, TPU_VPU_ADD, b, H, err); /* fused bias add and relu */
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
        status = mm(mlp, i, b, H, NOUT, a->h2, 0, c->unit[2], 0, a->lg, err);
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
            status = vpu_cost(mlp, i, u == 3 ? TPU_VPU_SUM : TPU_VPU_MUL, b, NOUT, err);
            if (status != TPU_OK) {
                goto out;
            }
        }
        in[i] = a->loss_in;
        out[i] = a->loss_out;
    }
    status = coll(mlp, "loss", TPU_COLL_PSUM, MLP_AXIS_DATA, 1, in, out, -1, err);
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
        status = mm(mlp, i, H, b, NOUT, a->h2, 1, a->lg, 0, a->grad[2], err);
        status = status == TPU_OK ? mm(mlp, i, b, NOUT, H, a->lg, 0, c->unit[2], 1, a->dh2, err)
                                  : status;
        status = status == TPU_OK ? vpu_cost(mlp, i, TPU_VPU_SUM, b, NOUT, err) : status;
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
        status = vpu_cost(mlp, i, TPU_VPU_MUL, b, H, err);
        status = status == TPU_OK ? vpu_cost(mlp, i, TPU_VPU_SUM, b, H, err) : status;
        status =
            status == TPU_OK ? mm(mlp, i, Hm, b, H, a->h1, 1, a->dh2, 0, a->grad[1], err) : status;
        status =
            status == TPU_OK ? mm(mlp, i, b, H, Hm, a->dh2, 0, c->unit[1], 1, a->dh1, err) : status;
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
        status = vpu_cost(mlp, i, TPU_VPU_MUL, b, Hm, err);
        status = status == TPU_OK ? vpu_cost(mlp, i, TPU_VPU_SUM, b, Hm, err) : status;
        status =
            status == TPU_OK ? mm(mlp, i, NIN, b, Hm, a->x, 1, a->dh1, 0, a->grad[0], err) : status;
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
            status = vpu_cost(mlp, i, TPU_VPU_ADD, 1, n, err);
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
