/*
 * The step cost of the transformer (tpu/transformer.h) on a pod, from its sizes
 * and a mesh alone: no data, no transport.  What one chip computes (every
 * matmul through the chip's MXU roofline, tpu_mxu_roofline; every elementwise
 * pass through the VPU roofline, tpu_vpu_roofline), the collectives the layout
 * needs (timed by the collective engine over the mesh's groups, through the
 * SPMD runtime without a transport, as the MLP's model-only step), a schedule
 * that overlaps some of them with compute, the HBM each chip holds, the model
 * FLOPs and the MFU.
 *
 *   tpu_xfmr_cost_t c;
 *   tpu_xfmr_cost_run(pod, &model, "fsdp=4,tensor=4", &c, &err);   (model.batch global)
 *   c.step_us, c.compute_us, c.comm_us, c.exposed_comm_us, c.hbm_peak_bytes, c.mfu
 *   tpu_xfmr_cost_fini(&c);
 *
 * Mesh axes: data (the batch split), fsdp (the batch split and every parameter
 * sharded: all-gathered before use, gradients reduce-scattered), sequence
 * (context parallelism), tensor (alias model; Megatron), dcn (an outer data
 * axis across slices).  Per chip, with b = B / (data fsdp dcn) sequences,
 * Sl = S / sequence positions, T = b Sl tokens, Dh = D / H, nh = H / tensor
 * heads, Dl = nh Dh, Fl = F / tensor, Vl = V / tensor:
 *
 * Compute: exactly the ops the real step of one chip charges
 * (transformer_fwd.c, transformer_bwd.c, tpu_xfmr_sgd), so that a real run's
 * compute_us equals the model's: per layer forward 3 projections [T,D]x[D,Dl],
 * per sequence and local head q k^T [Sl,Dh]x[Dh,S] and p v [Sl,S]x[S,Dh] (the
 * whole S x S: the causal half is masked, not skipped), wo [T,Dl]x[Dl,D], w1
 * [T,D]x[D,Fl], w2 [T,Fl]x[Fl,D]; the backward twice those matmuls; the norms,
 * softmax, GELU, residuals, loss and the SGD update as VPU passes.
 *
 * Collectives (name, kind, mesh axes, bytes per call; a size-1 axis drops out):
 *   embed, attn_out, mlp_out, d_final, d_mlp_in, d_attn_in: psum over tensor, T D f32
 *   vocab_max (pmax), vocab_sum: over tensor, T and 2T f32
 *   kv: all-gather of k and of v over sequence, output b nh S Dh f32 (2 per layer)
 *   d_kv: reduce-scatter of dk and dv over sequence, input b nh S Dh f32
 *   loss: psum over data, fsdp, sequence, dcn of 2 f32
 *   gather: fsdp all-gather of each parameter's shard (output its tensor piece,
 *     padded to a multiple of fsdp): every parameter in the forward, each
 *     layer's again in the backward (ZeRO-3 frees a layer after use)
 *   grad: per parameter, over fsdp a reduce-scatter of its piece, then a psum of
 *     the shard over data, sequence and dcn (pos, split over sequence: not over
 *     sequence); without fsdp one psum
 *
 * Schedule: one compute stream and one link stream (collectives one at a time,
 * in issue order).  On the critical path (exposed): the tensor psums, pmax,
 * the sequence all-gathers and reduce-scatters, the loss, and the first fsdp
 * gather (nothing to hide it).  Overlapped: the gradient reductions, issued
 * as each layer's backward ends and running behind the backward of the layers
 * below (the update waits for all of them), and fsdp's gathers, issued one
 * unit (embeddings, a layer, the head) ahead of their use.  An overlapped
 * collective still delays the step when the compute it hides behind is
 * shorter: step = compute + the time the compute stream waits.
 *
 * HBM per chip (f32): the items of tpu_xfmr_cost_t.items (parameters and
 * gradients, their fsdp shards; optimizer state; the activations the real step
 * keeps for the backward; the gathered fsdp units, two at a time; the logits;
 * the attention backward's scratch; the other scratch; the tokens), all held
 * at once, as the real step allocates them: the peak is their sum.
 *
 * Model FLOPs: 6 N B S + 12 L B S^2 D, with N = L (4 D^2 + 2 D F) + D V the
 * parameters that multiply (the embedding lookup does not), B S the tokens,
 * and the attention's q k^T and p v counted over the whole S x S (as computed;
 * forward 4 S^2 D per sequence and layer, backward twice that).  MFU =
 * model FLOPs / (step x chips x the chip's bf16 peak).
 *
 * The plan (tpu_xfmr_plan_t, issue 25; tpu_xfmr_cost_run_plan()) extends the
 * workload beyond the trained model: grouped-query attention (kv_heads: k and
 * v projections [T,D]x[D,nkv Dh/tensor], the kv all-gathers that much
 * smaller), a head width of its own, the MLP (gelu, relu, or swiglu: w1 and a
 * gate w3, silu(u) * g), the parallel block (one norm feeds attention and MLP,
 * whose outputs are summed: one tensor psum forward and one backward per
 * layer instead of two), tied embeddings (no unembed parameter), the
 * parameter dtype, AdamW (two f32 moments per parameter; the update 6 VPU
 * passes, the global-norm clip 2) and remat:
 *   none     every activation of the forward kept (as above);
 *   minimal  the outputs of the projections (q, k, v, wo, w1, w3, w2: the dots
 *            without batch dimensions) and each layer's input kept; the
 *            norms, activations and the attention recomputed in the backward;
 *   full     each layer's input kept; the whole layer's forward (matmuls,
 *            VPU passes, its tensor psums) recomputed before its backward.
 * plan.compiled models the step as XLA and MaxText run it rather than as the
 * emulator's real step: matmuls at their calibrated time
 * (tpu_mxu_seconds_calibrated(): the shape's MXU efficiency, tiles and
 * padding), flash attention (the causal half of S x S skipped: keys S/2 per
 * query on average; the scores stay in VMEM, so their VPU passes are charged
 * at the VPU rate and their HBM is the log-sum-exp only; the backward
 * recomputes the scores, one more attention matmul; attn_full: the kernel
 * called without the causal mask, every key attended and counted), the
 * weight gradients run while the input gradient's tensor psum is on the links
 * (XLA's latency-hiding scheduler), bf16 activations and activation
 * collectives when the dtype is bf16, model FLOPs with the causal attention
 * 6 L B S^2 H Dh (12 with attn_full), and per chip generation a per-step
 * fixed cost, a sustained MXU fraction and the network's capacity for a
 * multi-slice job's cross-slice bytes (a bound on every row over dcn),
 * fitted to MaxText's public rows (tpu_xfmr_plan_fit(); docs/planner.md).
 * The default plan is the trained model of issue 24, and its figures are the
 * ones above.
 *
 * Extending: the ops are rows of tables over named sizes (a row may apply
 * only under a plan condition), the parameters a table, the HBM items a list
 * (transformer_hbm.c); see transformer_cost_prog.c.
 *
 * Ownership: tpu_xfmr_cost_run() fills caller storage and allocates the
 * arrays and the engine state it points to; tpu_xfmr_cost_fini() frees them
 * (a zeroed struct is a no-op).  The pod is borrowed for the call only.  The
 * plans of 'colls' stay valid until the fini.  Not thread-safe.
 */
#ifndef TPU_TRANSFORMER_COST_H
#define TPU_TRANSFORMER_COST_H

#include "tpu/coll.h"
#include "tpu/pod.h"
#include "tpu/redop.h"
#include "tpu/roofline.h"
#include "tpu/status.h"
#include "tpu/transformer.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TPU_XFMR_COST_ITEMS 12

typedef enum {
    TPU_XFMR_MLP_GELU,
    TPU_XFMR_MLP_RELU,
    TPU_XFMR_MLP_SWIGLU
} tpu_xfmr_mlp_t;
typedef enum {
    TPU_XFMR_REMAT_NONE,
    TPU_XFMR_REMAT_MINIMAL,
    TPU_XFMR_REMAT_FULL
} tpu_xfmr_remat_t;

/* The workload beyond the trained model's (see the top); tpu_xfmr_plan_init() gives issue 24's. */
typedef struct tpu_xfmr_plan {
    int64_t kv_heads;   /* 0: heads (multi-head attention) */
    int64_t head_dim;   /* 0: d_model / heads */
    tpu_xfmr_mlp_t mlp; /* gelu */
    int parallel_block; /* 0: sequential */
    int tied;           /* 1: the unembedding is the embedding */
    tpu_xfmr_remat_t remat;
    int param_bytes;      /* 4 (f32) or 2 (bf16) */
    int adamw;            /* 0: sgd */
    int compiled;         /* the step as XLA runs it (see the top) */
    int attn_full;        /* compiled: the flash kernel without the causal mask (every key) */
    double fixed_us;      /* compiled: the per-step fixed cost (tpu_xfmr_plan_fit()) */
    double mxu_fraction;  /* compiled: sustained MXU fraction over the calibrated time's, 1 */
    double dcn_fabric_bw; /* compiled: the datacenter network's capacity for the job's
                           * cross-slice bytes, B/s (tpu_xfmr_plan_fit()); 0: unlimited */
    int bound_only;       /* no collective timed (each 0 us): the compute, HBM and a lower
                           * bound of the step, fast (the search's first pass) */
    struct tpu_xfmr_time_cache *cache; /* borrowed; NULL: none.  Collective times shared
                                        * between runs on one pod (see below) */
} tpu_xfmr_plan_t;

/* A compute op of the step (every chip runs the same). */
typedef struct tpu_xfmr_cost_op {
    char what[56];              /* "l0 fwd: q = a @ wq", "bwd: update" */
    int mxu;                    /* 1: a matmul m x k x n; 0: a VPU pass over m rows x n columns */
    int vpu_op;                 /* tpu_vpu_op_t of a VPU pass */
    int64_t m, k, n;            /* k 0 for a VPU pass */
    int64_t count;              /* calls per step (per sequence and head for the attention) */
    double flops;               /* matmul FLOPs of all calls (2 m k n count); 0 for the VPU */
    double us;                  /* modeled time of all calls */
    double hbm_bytes;           /* HBM traffic of all calls (the roofline's) */
    tpu_roofline_bound_t bound; /* the roofline's bound of one call */
    double start_us;            /* on the step's compute stream */
} tpu_xfmr_cost_op_t;

/* A row of the collectives table: calls of the same kind, axes, bytes and schedule. */
typedef struct tpu_xfmr_cost_coll {
    char what[16];          /* the hook: "embed", "kv", ..., "grad", "gather" */
    tpu_coll_kind_t kind;   /* psum (also the pmax), all-gather, reduce-scatter */
    tpu_redop_t op;         /* sum or max */
    char mesh_axis[64];     /* the mesh axes, as the mesh spells them: "tensor", "data,sequence" */
    char axes[64];          /* how they lie on the torus: "x", "y[2 of 4]", "x,y" */
    int group_size, groups; /* chips per group, groups */
    char group_ids[64];     /* the groups as chip ids, "{0,1} {2,3}" (cut short with "...") */
    uint64_t bytes;         /* the engine's convention: psum buffer, all-gather output,
                             * reduce-scatter input */
    int count;              /* calls per step */
    double modeled_us;      /* one call */
    int exposed;            /* 1: on the critical path; 0: overlapped with compute */
    char algorithm[64];     /* the engine's choice */
    const tpu_coll_plan_t *plan; /* the model's plan (NULL: left to the caller) */
} tpu_xfmr_cost_coll_t;

/* One call of a collective on the step's timeline. */
typedef struct tpu_xfmr_cost_call {
    int coll;        /* its row */
    int index;       /* layer or parameter number, -1 */
    double start_us; /* on the link stream */
} tpu_xfmr_cost_call_t;

/* One HBM item of a chip. */
typedef struct tpu_xfmr_cost_item {
    const char *what;
    uint64_t bytes;
} tpu_xfmr_cost_item_t;

struct tpu_xfmr_cost_engine;

typedef struct tpu_xfmr_cost {
    /* The layout: mesh axis sizes (1 when left out) and the chips. */
    int data, fsdp, sequence, tensor, dcn, chips;
    int64_t batch_chip, seq_chip, tokens_chip; /* b, Sl, T */
    /* The step. */
    double step_us, compute_us, mxu_us, vpu_us;
    double comm_us;         /* every call, one after the other */
    double exposed_comm_us; /* step - compute: the waits of the compute stream */
    double fixed_us;        /* the plan's per-step fixed cost (in step_us) */
    double model_flops;     /* of the whole step over the pod (see the top) */
    double chip_flops;      /* matmul FLOPs of one chip */
    double mfu;
    uint64_t hbm_peak_bytes; /* the sum of the items */
    int nitems;
    tpu_xfmr_cost_item_t items[TPU_XFMR_COST_ITEMS];
    int64_t nops;
    tpu_xfmr_cost_op_t *ops; /* program order */
    int ncolls;
    tpu_xfmr_cost_coll_t *colls;
    int64_t ncalls;
    tpu_xfmr_cost_call_t *calls;         /* issue order */
    struct tpu_xfmr_cost_engine *engine; /* private: the mesh, runtime and program */
} tpu_xfmr_cost_t;

/*
 * Model one step of 'model' (its batch the global batch, precision, sizes;
 * ranges and hook ignored) laid out by 'mesh' ("data=4,tensor=4"; axes data,
 * fsdp, sequence, tensor or model, dcn; NULL: data over every chip) on 'pod'.
 * @return TPU_OK, TPU_ERR_INVALID (the mesh; a dimension that does not divide
 *         over its axis, named with the axis), TPU_ERR_NO_MEMORY.
 */
TPU_API tpu_status_t tpu_xfmr_cost_run(const tpu_pod_t *pod, const tpu_xfmr_config_t *model,
                                       const char *mesh, tpu_xfmr_cost_t *cost_p, tpu_err_t *err);
/*
 * A cache of the engine's collective times for runs on one pod (the search):
 * collectives over the same groups of chips (every group, in member order),
 * of the same kind, reduction and bytes share one time, whatever mesh made
 * the groups (the rows of a cached time have no plan).  Not thread-safe.
 */
typedef struct tpu_xfmr_time_cache tpu_xfmr_time_cache_t;
TPU_API tpu_xfmr_time_cache_t *tpu_xfmr_time_cache_create(void);
TPU_API void tpu_xfmr_time_cache_destroy(tpu_xfmr_time_cache_t *cache);

/* The plan of the trained model (issue 24). */
TPU_API void tpu_xfmr_plan_init(tpu_xfmr_plan_t *plan);
/*
 * The same with 'plan' (NULL: tpu_xfmr_plan_init()'s).  Also TPU_ERR_INVALID
 * for kv_heads that do not divide heads, or a kv width that does not split
 * over tensor.
 */
TPU_API tpu_status_t tpu_xfmr_cost_run_plan(const tpu_pod_t *pod, const tpu_xfmr_config_t *model,
                                            const tpu_xfmr_plan_t *plan, const char *mesh,
                                            tpu_xfmr_cost_t *cost_p, tpu_err_t *err);
/* Free what a run allocated; a zeroed struct is a no-op. */
TPU_API void tpu_xfmr_cost_fini(tpu_xfmr_cost_t *cost);

/*
 * The row of a collective named 'what' of 'kind' and 'op' over the mesh axes
 * 'mesh_axis' (a comma list, any order) of 'bytes', or -1.  For a real run:
 * set the row's modeled_us and algorithm from its log, then reschedule.
 */
TPU_API int tpu_xfmr_cost_find(const tpu_xfmr_cost_t *cost, const char *what, tpu_coll_kind_t kind,
                               tpu_redop_t op, const char *mesh_axis, uint64_t bytes);
/* Recompute the schedule (starts, comm, step, exposed, MFU) from the rows' times. */
TPU_API void tpu_xfmr_cost_schedule(tpu_xfmr_cost_t *cost);

#ifdef __cplusplus
}
#endif

#endif /* TPU_TRANSFORMER_COST_H */
