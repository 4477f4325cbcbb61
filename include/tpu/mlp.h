/*
 * The MLP training workload: the seed's 784-H-H-10 multilayer perceptron
 * (shared/reference/seeds/000, "mlp_apply" and "loss_fn"), trained with plain
 * SGD on a pod, sharded the way a mesh 'data' x 'model' says, with real data,
 * real collectives and the modeled cost of every step.
 *
 *   logits = relu(relu(x @ w1 + b1) @ w2 + b2) @ w3 + b3
 *   loss   = mean over the batch of sum over the 10 classes of (logits - one_hot(y))^2
 *   p     -= lr * dloss/dp                       for every parameter p
 *
 * Strategies (the partition specs, in JAX's words, for a mesh data=D, model=M):
 * - dp     data parallel: x and y P('data'), every weight replicated; the
 *          gradients are psum'ed over 'data'.
 * - tp     tensor parallel (Megatron): w1 P(None,'model') and b1 P('model')
 *          (column-sharded), w2 P('model',None) (row-sharded): the partial
 *          products h1_shard @ w2_shard are psum'ed over 'model'; w3, b3, b2
 *          replicated (see mlp.c for why the last layer stays whole).
 * - dp_tp  both at once: batch over 'data', the tp layout over 'model',
 *          gradients psum'ed over 'data'.
 * - fsdp   fully sharded data parallel (ZeRO-3): each chip's parameters (the
 *          tp layout when M > 1) are flattened per layer and sharded over
 *          'data'; every layer's weights are all-gathered before use (again in
 *          the backward pass) and the gradients reduce-scattered, each chip
 *          updating its own shard.
 * 'auto' picks dp, tp or dp_tp from the mesh.
 *
 * Precision: f32 master weights and gradients.  TPU_MLP_BF16 rounds the
 * matmul inputs to bf16 (nearest, ties to even) and accumulates in f32 on the
 * chip model's MXU (mxu.h); TPU_MLP_F32 keeps f32 throughout (the MXU's f32
 * rate).  Elementwise work and the update are f32.
 *
 * Random numbers (weights, synthetic data) are counter based, so that any
 * chip can make any element without the others: element i of stream s is
 * normal(splitmix64(seed, s, i)) by the Box-Muller transform of two 53-bit
 * uniforms.  Weights are N(0, 1/fan_in), biases 0.  The synthetic data set has
 * x ~ N(0, 1) and y = argmax(x @ T) for a random teacher T [784, 10], so that
 * the loss can fall.
 *
 * Ownership: tpu_mlp_create() borrows the spec's arrays for the call only
 * (the data and labels for the life of the object); the caller frees the
 * object with tpu_mlp_destroy().  Not thread-safe.
 */
#ifndef TPU_MLP_H
#define TPU_MLP_H

#include "tpu/chip.h"
#include "tpu/coll.h"
#include "tpu/status.h"
#include "tpu/topo.h"
#include "tpu/xport.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TPU_MLP_IN       784
#define TPU_MLP_OUT      10
#define TPU_MLP_NPARAMS  6 /* w1 b1 w2 b2 w3 b3 */
#define TPU_MLP_MAX_COLL 16
#define TPU_MLP_MAX_OPS  48

typedef enum {
    TPU_MLP_AUTO = 0,
    TPU_MLP_DP,
    TPU_MLP_TP,
    TPU_MLP_DP_TP,
    TPU_MLP_FSDP,
    TPU_MLP_STRATEGY_COUNT
} tpu_mlp_strategy_t;

typedef enum {
    TPU_MLP_F32 = 0,
    TPU_MLP_BF16 = 1
} tpu_mlp_precision_t;

/* "auto", "dp", "tp", "dp_tp", "fsdp". */
TPU_API const char *tpu_mlp_strategy_name(tpu_mlp_strategy_t s);
TPU_API tpu_status_t tpu_mlp_strategy_parse(const char *text, tpu_mlp_strategy_t *s_p,
                                            tpu_err_t *err);

typedef struct tpu_mlp_spec {
    int64_t batch;  /* global batch; a multiple of 'data' */
    int64_t hidden; /* H; a multiple of 'model' (model only: padded up, see pad_hidden) */
    double lr;
    uint64_t seed;
    tpu_mlp_precision_t precision;
    tpu_mlp_strategy_t strategy;
    int data, model; /* mesh sizes; data * model = chips */
    /* User data (NULL: synthetic): x [nrows, 784] f32, y [nrows] in 0..9; nrows a
     * multiple of batch.  Borrowed for the life of the object. */
    const float *x;
    const int32_t *y;
    int64_t nrows;
    /* Initial weights (NULL: random from seed): w1 [784,H] b1 [H] w2 [H,H] b2 [H]
     * w3 [H,10] b3 [10], f32, C order.  Borrowed for the call. */
    const float *init[TPU_MLP_NPARAMS];
    int model_only;   /* 1: no data, no transport; one chip stands for all */
    double timeout_s; /* watchdog of each collective, seconds (0: none) */
    /* Called while a collective waits on a peer (tpu_coll_run_opts_t.on_wait); NULL: none. */
    void (*on_wait)(void *arg, int chip);
    void *on_wait_arg;
    int pad_hidden; /* model only: pad H up to a multiple of 'model' (as XLA pads an
                     * uneven sharding) instead of refusing it */
} tpu_mlp_spec_t;

/* Fill 'spec' with defaults: batch 256, hidden 1024, lr 0.005, seed 0, bf16, auto, 1x1,
 * a 60 s watchdog. */
TPU_API void tpu_mlp_spec_init(tpu_mlp_spec_t *spec);

/* One collective of a step. */
typedef struct tpu_mlp_coll {
    char what[32];        /* "grad w2,b2", "z2 partial sums", ... */
    tpu_coll_kind_t kind; /* psum, all-gather, reduce-scatter */
    char axis[8];         /* "data" or "model" */
    char layout[32];      /* the torus axes of the group: "x", "y*z" */
    char groups[64];      /* the groups as chip ids: "{0,4,8,12} {1,5,9,13} ..." */
    int group;            /* chips per group */
    uint64_t bytes;       /* coll.h's convention (psum: buffer per chip, ...) */
    double modeled_us;
    double start_us; /* when it starts in the step (the links are free and its inputs ready) */
    int overlapped;  /* 1: runs while later compute goes on (see mlp.c) */
    char algorithm[64];
    /* Its plan (the object's, valid while it lives): the modeled walk of its steps. */
    const tpu_coll_plan_t *plan;
} tpu_mlp_coll_t;

/* One compute op of a step on the compute stream (every chip runs the same). */
typedef struct tpu_mlp_op {
    char what[96];     /* "forward 1: matmul 32x784x256", "update w3,b3: add" (section
                        * name, ": ", and an op name of up to 63 characters) */
    double start_us;   /* from the start of the step */
    double dur_us;     /* roofline time */
    double flops;      /* its useful FLOPs (the roofline's 'flops') */
    double bytes;      /* its HBM traffic (the roofline's 'hbm_bytes') */
    int compute_bound; /* 1: the compute term bounds it, 0: the memory term */
} tpu_mlp_op_t;

/* What one step did on a chip and what it would take on the pod. */
typedef struct tpu_mlp_report {
    double loss;        /* the global batch's loss, before the update */
    double step_us;     /* modeled step time: compute plus exposed communication */
    double compute_us;  /* MXU and VPU work of one chip (roofline) */
    double comm_us;     /* all collectives, one after the other */
    double exposed_us;  /* communication not hidden behind compute */
    double model_flops; /* useful FLOPs of the whole step over the pod (unsharded count) */
    double mfu;         /* model_flops / (step_us * chips * bf16 peak) */
    uint64_t hbm_peak;  /* peak HBM bytes in use on a chip */
    int ncoll;
    tpu_mlp_coll_t coll[TPU_MLP_MAX_COLL];
    int nops; /* the compute ops of the step in order (the first TPU_MLP_MAX_OPS) */
    tpu_mlp_op_t ops[TPU_MLP_MAX_OPS];
} tpu_mlp_report_t;

typedef struct tpu_mlp tpu_mlp_t;

/*
 * Create the sharded model on the transport's local chips ('x'; NULL and
 * spec->model_only for a model without data).  Checks the spec against the
 * pod (mesh size, batch and hidden divisibility, strategy and mesh, labels in
 * range), allocates the weights in each chip's HBM and initializes them.
 * Collective when 'x' spans several processes: every chip calls it.
 * @return TPU_OK, TPU_ERR_INVALID (bad spec: the message names the value),
 *         TPU_ERR_RESOURCE_EXHAUSTED (the weights do not fit HBM: the
 *         message gives the bytes), TPU_ERR_NO_MEMORY.
 */
TPU_API tpu_status_t tpu_mlp_create(const tpu_mlp_spec_t *spec, const tpu_topo_t *topo,
                                    const tpu_link_model_t *link, const tpu_chip_spec_t *chip,
                                    tpu_xport_t *x, tpu_mlp_t **mlp_p, tpu_err_t *err);
TPU_API void tpu_mlp_destroy(tpu_mlp_t *mlp);

/* The strategy and H actually used (auto resolved, H padded in model only). */
TPU_API tpu_mlp_strategy_t tpu_mlp_strategy(const tpu_mlp_t *mlp);
TPU_API int64_t tpu_mlp_hidden(const tpu_mlp_t *mlp);

/*
 * Run training step 'step' (0, 1, ...) on every local chip: forward, loss,
 * backward, gradient collectives, SGD update.  '*rep_p' is local chip 0's
 * report (every chip's is the same).  Collective.
 */
TPU_API tpu_status_t tpu_mlp_step(tpu_mlp_t *mlp, int64_t step, tpu_mlp_report_t *rep_p,
                                  tpu_err_t *err);

/*
 * Gather the full weights (unsharded, f32) into 'out' (w1 .. b3, sized as in
 * the spec's init) on every local chip, through real all-gathers; 'out' is
 * written from local chip 0.  Not counted in any step.  Collective.
 */
TPU_API tpu_status_t tpu_mlp_gather(tpu_mlp_t *mlp, float *const out[TPU_MLP_NPARAMS],
                                    tpu_err_t *err);

/*
 * A 64-bit hash (FNV-1a) of the parameters local chip 'i' holds, with its
 * mesh coordinates: chips with the same model index hold the same bytes under
 * dp, tp and dp_tp, so their hashes must match.
 */
TPU_API uint64_t tpu_mlp_param_hash(const tpu_mlp_t *mlp, int i, int *data_idx_p, int *model_idx_p);

/* Elements of parameter 'p' (0 w1 .. 5 b3) for hidden size 'hidden', and its name. */
TPU_API int64_t tpu_mlp_param_count(int64_t hidden, int p);
TPU_API const char *tpu_mlp_param_name(int p);
/* Dimensions of parameter 'p': 1 or 2, written into 'shape'. */
TPU_API int tpu_mlp_param_shape(int64_t hidden, int p, int64_t shape[2]);
/* max |a - b| / max |b| over 'n' elements (max |a - b| when b is all zero): how far
 * a parameter of a trained model is from a reference's. */
TPU_API double tpu_mlp_param_rel_diff(const float *a, const float *b, int64_t n);

#ifdef __cplusplus
}
#endif

#endif /* TPU_MLP_H */
