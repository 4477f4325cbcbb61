/*
 * The transformer workload on one chip: the decoder-only language model of
 * shared/reference/transformer.md (token and position embeddings, L pre-norm
 * blocks of RMSNorm, causal multi-head attention, RMSNorm and a GELU MLP with
 * residuals, a final RMSNorm, the unembedding, the mean next-token
 * cross-entropy, plain SGD), its forward pass, its backward pass by hand, the
 * update, the parameters' random init and their .npy files.  Short name of the
 * module: xfmr.
 *
 *   h = embed[x] + pos                                      [S, D] per sequence
 *   per layer l:  a = rms(h) * l{l}_norm1;  q, k, v = a @ wq, a @ wk, a @ wv
 *                 per head j: p = softmax(q_j k_j^T / sqrt(Dh), causal -1e9); o_j = p v_j
 *                 h += concat_j(o_j) @ wo
 *                 m = rms(h) * l{l}_norm2;  h += gelu(m @ w1) @ w2
 *   logits = (rms(h) * norm_f) @ unembed;  loss = mean over the B*S tokens of -log softmax[y]
 *   rms(x) = x / sqrt(mean(x^2) + 1e-6);  gelu is the tanh form
 *   p -= lr * dloss/dp after every step; the loss reported is the step's, before its update
 *
 * Precision, as the MLP (mlp.h): f32 weights, gradients and elementwise work
 * (norms, softmax, GELU, residuals on the host, costed as VPU passes, vpu.h);
 * every matmul (the projections, q k^T, p v, the unembedding and all of the
 * backward's) goes through the chip model's MXU (mxu.h, OpenBLAS underneath):
 * TPU_XFMR_F32 at f32, TPU_XFMR_BF16 with both inputs rounded to bf16 (nearest,
 * ties to even) and f32 accumulation and output.  The loss is summed in double.
 *
 * Random init (tpu_xfmr_init_random), counter based so that any chip can make
 * any element of any parameter from the seed alone, whatever it holds: element
 * i (C order in the whole, unsharded parameter) of parameter number p (the
 * order of tpu_xfmr_param_info) is normal(splitmix64(seed, 1000 + p, i)) by the
 * Box-Muller transform of two 53-bit uniforms, scaled:
 *   embed, pos                      N(0, 0.02^2)
 *   wq, wk, wv, wo, w1, unembed     N(0, 1/D)   (1/fan_in: their rows are D)
 *   w2                              N(0, 1/F)
 *   norm1, norm2, norm_f            1 (not random)
 *
 * Parameter files (tpu_xfmr_load, tpu_xfmr_save): one little-endian f32 .npy
 * per parameter in a folder, named "<name>.npy" with the names and shapes of
 * transformer.md: embed [V,D], pos [S,D], l{l}_norm1 [D], l{l}_wq [D,D],
 * l{l}_wk [D,D], l{l}_wv [D,D], l{l}_wo [D,D], l{l}_norm2 [D], l{l}_w1 [D,F],
 * l{l}_w2 [F,D], norm_f [D], unembed [D,V].  A file of another shape is
 * refused with a message naming the file, its shape and the expected one.
 *
 * The shard view.  A tpu_xfmr_t is one chip's part of the model: the config
 * says which heads, MLP columns, vocabulary entries and sequence positions the
 * chip owns (tpu_xfmr_range_t, half open), and how many sequences of the
 * global batch it takes.  What a chip holds for ranges heads [h0,h1), ff
 * [f0,f1), vocab [v0,v1), seq [s0,s1), Dh = D/H:
 *   embed rows [v0,v1)   pos rows [s0,s1)   unembed columns [v0,v1)
 *   wq, wk, wv columns [h0*Dh, h1*Dh)   wo rows [h0*Dh, h1*Dh)
 *   w1 columns [f0,f1)   w2 rows [f0,f1)    the norm gains whole
 * (the Megatron layout of issue 24 under 'tensor', with the embeddings split
 * over the vocabulary; the sequence range is context parallelism).  The
 * forward and backward passes are written for those ranges and call the
 * config's hook (tpu_xfmr_hook_fn_t) at each point where a sharded run needs
 * a collective; see tpu_xfmr_hook_t for the list.  Without a hook the view
 * must be the whole model (one chip).  With a hook, any ranges run: the hook
 * is the collective (tests/unit/workloads/test_transformer_shard.c runs data,
 * sequence and tensor layouts on threads with a hook of its own and checks
 * them against one chip); emulator/workloads/transformer_comm.c wires the
 * hooks to the pod's collective engine over the mesh axes dcn, data, fsdp,
 * sequence and tensor.  On one chip with a hook, every hook is called with a
 * buffer that is already complete (an identity collective).
 *
 * The fsdp shard (ZeRO-3 / fully sharded data parallel, fsdp_parts > 1): on
 * top of the ranges above, every parameter's block (the tensor and sequence
 * shard) is split into fsdp_parts equal parts along its FIRST dimension, rows
 * (the norm gains, vectors, along their only one), and the chip owns part
 * fsdp_index: rows [r0 + k n / f, r0 + (k + 1) n / f) of a block of n rows
 * starting at row r0 (contiguous in C order, so a gather needs no packing).
 * Rows that do not divide are refused (tpu_xfmr_create, and the mesh layer
 * names the parameter, its first dimension and the axis); nothing is padded.
 * The owned part is what tpu_xfmr_param/grad/param_origin return, what the
 * init, --init files and SGD touch; the gradient of that part is the one
 * reduced over the pod.  The step moves the weights in units: unit 0 the
 * embeddings (embed, pos), unit 1 + l layer l's eight, unit L + 1 the head
 * (norm_f, unembed).  Forward: unit 0 and unit 1 are all-gathered first, and
 * the gather of unit u + 1 is issued before unit u's compute (prefetched one
 * unit ahead, so it overlaps that compute; only unit 0's is exposed); a
 * layer's gathered copy is dropped after its compute (filled with NaN, so a
 * use without its gather would show).  Backward (ZeRO-3's default,
 * reshard after forward): the head, the last unit of the forward and the
 * first of the backward, is kept; each layer is gathered again, layer l - 1
 * issued before layer l's backward, and dropped after it; the embeddings need
 * no weights in backward.  A unit's gradients are reduced right after its
 * backward (TPU_XFMR_HOOK_GRAD: a reduce-scatter over fsdp of the chip's
 * whole-block gradient, then a psum of the owned part over the replicas).
 *
 * Ownership: tpu_xfmr_create() copies the config and owns its parameters,
 * gradients and activations until tpu_xfmr_destroy(); the token arrays and
 * folders the other calls take are borrowed for the call; pointers returned
 * by tpu_xfmr_param(), tpu_xfmr_grad() and tpu_xfmr_logits() belong to the
 * object and stay valid until it is destroyed.  Not thread-safe: one object
 * belongs to one thread (one chip).
 */
#ifndef TPU_TRANSFORMER_H
#define TPU_TRANSFORMER_H

#include "tpu/chip.h"
#include "tpu/status.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TPU_XFMR_NAME_LEN 32 /* room for a parameter's name ("l123_norm1") */

typedef enum {
    TPU_XFMR_F32 = 0, /* f32 matmuls */
    TPU_XFMR_BF16 = 1 /* bf16 matmul inputs, f32 accumulation */
} tpu_xfmr_precision_t;

/* A half-open range [lo, hi) of heads, MLP columns, vocabulary ids or positions. */
typedef struct tpu_xfmr_range {
    int64_t lo, hi;
} tpu_xfmr_range_t;

/*
 * The points where a sharded run needs a collective, in the order a step
 * reaches them (forward, then backward from the last layer down).  Each is
 * called on the chip's own buffer, which the collective completes in place.
 * T = batch * (seq.hi - seq.lo) is the chip's tokens, D the model width, Dl =
 * (heads.hi - heads.lo) * Dh; "over tensor" means over the chips that share a
 * batch and positions but own other heads, columns and vocabulary entries.
 */
typedef enum {
    TPU_XFMR_HOOK_EMBED,     /* fwd: embed[x] [T,D], rows of other vocab shards zero: psum
                              * over tensor (pos is added after) */
    TPU_XFMR_HOOK_KV,        /* fwd, per layer: k then v, each [batch, local heads, S, Dh] with
                              * the chip's positions filled: all-gather over sequence */
    TPU_XFMR_HOOK_ATTN_OUT,  /* fwd, per layer: o @ wo [T,D] partial sums: psum over tensor */
    TPU_XFMR_HOOK_MLP_OUT,   /* fwd, per layer: gelu(u) @ w2 [T,D] partial sums: psum over
                              * tensor */
    TPU_XFMR_HOOK_VOCAB_MAX, /* fwd: the max of each token's logits [T]: max over tensor */
    TPU_XFMR_HOOK_VOCAB_SUM, /* fwd: per token the sum of exp(logit - max), then the target's
                              * logit (0 off this shard) [2T]: psum over tensor */
    TPU_XFMR_HOOK_LOSS,      /* fwd: the sum of the chip's token losses as a pair of floats
                              * hi + lo [2]: psum over dcn, data, fsdp and sequence */
    TPU_XFMR_HOOK_D_FINAL,   /* bwd: dlogits @ unembed^T [T,D] partial sums: psum over
                              * tensor */
    TPU_XFMR_HOOK_D_MLP_IN,  /* bwd, per layer: du @ w1^T [T,D] partials: psum over tensor */
    TPU_XFMR_HOOK_D_KV,      /* bwd, per layer: dk then dv [batch, local heads, S, Dh] of every
                              * position: reduce-scatter over sequence (keep own rows) */
    TPU_XFMR_HOOK_D_ATTN_IN, /* bwd, per layer: dq wq^T + dk wk^T + dv wv^T [T,D] partials:
                              * psum over tensor */
    TPU_XFMR_HOOK_GRAD,      /* bwd, per parameter ('index' its number): its local gradient,
                              * the block: summed over the chips holding the same block, the
                              * batch axes dcn, data, fsdp and sequence (pos, split over
                              * sequence, over dcn, data, fsdp only); with fsdp_parts > 1
                              * the chip's rows of the buffer get the sum (a reduce-scatter
                              * over fsdp, then a psum over the rest), the other rows are
                              * left undefined */
    TPU_XFMR_HOOK_GATHER,    /* fwd and bwd, per parameter ('index' its number), only with
                              * fsdp_parts > 1: its block with the chip's rows filled:
                              * all-gather over fsdp (see "The fsdp shard" above) */
    TPU_XFMR_HOOK_COUNT
} tpu_xfmr_hook_t;

/* "embed", "kv", "attn_out", ... ("?" for anything else). */
TPU_API const char *tpu_xfmr_hook_name(tpu_xfmr_hook_t hook);

/*
 * A collective at 'hook' on the 'count' floats of 'buf' (in place); 'index' is
 * the layer (the parameter's number for TPU_XFMR_HOOK_GRAD, -1 where neither
 * applies).  Returns TPU_OK or an error recorded in 'err', which ends the step.
 */
typedef tpu_status_t (*tpu_xfmr_hook_fn_t)(void *arg, tpu_xfmr_hook_t hook, int index, float *buf,
                                           int64_t count, tpu_err_t *err);

typedef struct tpu_xfmr_config {
    int64_t layers, d_model, heads, d_ff, vocab, seq; /* L, D, H, F, V, S */
    int64_t batch;        /* B: the sequences this chip takes per step */
    int64_t batch_global; /* sequences per step over the pod (the loss's mean); 0: batch */
    tpu_xfmr_precision_t precision;
    /* The shard view; {0, 0} is the whole range. */
    tpu_xfmr_range_t heads_range, ff_range, vocab_range, seq_range;
    int fsdp_parts;          /* the fsdp shard: parts of every block (0 or 1: none) */
    int fsdp_index;          /* the part this chip owns, 0 <= fsdp_index < fsdp_parts */
    tpu_xfmr_hook_fn_t hook; /* NULL: none (one chip) */
    void *hook_arg;
} tpu_xfmr_config_t;

/* Fill 'cfg': L 2, D 64, H 4, F 256, V 256, S 32, batch 8, f32, whole ranges, no hook. */
TPU_API void tpu_xfmr_config_init(tpu_xfmr_config_t *cfg);

/* What one step did on the chip: its loss and the modeled compute (roofline, mxu.h, vpu.h). */
typedef struct tpu_xfmr_report {
    double loss;       /* the global batch's mean loss, before the update */
    double compute_us; /* MXU plus VPU time of the step */
    double mxu_us;     /* the matmuls */
    double vpu_us;     /* the elementwise passes and reductions */
    int64_t matmuls;   /* MXU calls */
    double flops;      /* matmul FLOPs (2mkn each) */
} tpu_xfmr_report_t;

typedef struct tpu_xfmr tpu_xfmr_t;

/*
 * Check 'cfg' (sizes positive, D divisible by H, ranges inside their sizes)
 * and make the chip's model on 'chip' with every parameter zero.
 * @return TPU_OK, TPU_ERR_INVALID (the message names the value; a sharded
 *         view without a hook), TPU_ERR_NO_MEMORY.
 */
TPU_API tpu_status_t tpu_xfmr_create(const tpu_xfmr_config_t *cfg, const tpu_chip_spec_t *chip,
                                     tpu_xfmr_t **xf_p, tpu_err_t *err);
/* Free the model; NULL is a no-op. */
TPU_API void tpu_xfmr_destroy(tpu_xfmr_t *xf);

/* The config in use (ranges resolved). */
TPU_API const tpu_xfmr_config_t *tpu_xfmr_config(const tpu_xfmr_t *xf);

/* ---- parameters ---- */

/* The number of parameters: 2 + 8 L + 2. */
TPU_API int tpu_xfmr_param_count(const tpu_xfmr_config_t *cfg);
/*
 * The name of parameter 'p' (0 <= p < count: embed, pos, then l0_norm1, l0_wq,
 * l0_wk, l0_wv, l0_wo, l0_norm2, l0_w1, l0_w2, l1_norm1, ..., norm_f, unembed)
 * into 'name', and its whole shape into 'shape'; returns its dimensions (1 or
 * 2), or 0 for a 'p' out of range.
 */
TPU_API int tpu_xfmr_param_info(const tpu_xfmr_config_t *cfg, int p, char name[TPU_XFMR_NAME_LEN],
                                int64_t shape[2]);
/* The chip's piece of parameter 'p' and of its gradient (the last backward's; with
 * fsdp, the owned rows of the block): its local shape in 'shape' (may be NULL), C
 * order; NULL for a 'p' out of range. */
TPU_API float *tpu_xfmr_param(tpu_xfmr_t *xf, int p, int64_t shape[2]);
TPU_API float *tpu_xfmr_grad(tpu_xfmr_t *xf, int p, int64_t shape[2]);

/* The whole parameter's row and column ('origin') of the first element of the chip's
 * piece of parameter 'p'; -1 for a 'p' out of range, else 0. */
TPU_API int tpu_xfmr_param_origin(const tpu_xfmr_t *xf, int p, int64_t origin[2]);

/* Set every parameter from 'seed' (the distributions above). */
TPU_API void tpu_xfmr_init_random(tpu_xfmr_t *xf, uint64_t seed);

/*
 * Read every parameter from "<dir>/<name>.npy" (the chip's piece of each whole
 * file).  @return TPU_OK, TPU_ERR_INVALID (a missing or malformed file, a type
 * or shape other than expected: the message names the file and the expected
 * shape), TPU_ERR_NO_MEMORY.  On an error the parameters are partly loaded.
 */
TPU_API tpu_status_t tpu_xfmr_load(tpu_xfmr_t *xf, const char *dir, tpu_err_t *err);
/* Write every parameter to "<dir>/<name>.npy" (the folder must exist).  A chip that
 * holds a piece of a parameter cannot: TPU_ERR_UNSUPPORTED. */
TPU_API tpu_status_t tpu_xfmr_save(const tpu_xfmr_t *xf, const char *dir, tpu_err_t *err);

/* ---- the step ---- */

/*
 * The first row of step 'step''s batch in a token file of 'rows' rows:
 * (step mod nb) * batch with nb = floor(rows / batch); -1 when rows < batch.
 */
TPU_API int64_t tpu_xfmr_batch_row(int64_t rows, int64_t batch, int64_t step);

/*
 * Check that every id of 'tok' (rows x cols) is in [0, vocab); otherwise
 * TPU_ERR_INVALID naming 'what', the row, the column and the id.
 */
TPU_API tpu_status_t tpu_xfmr_check_tokens(const int32_t *tok, int64_t rows, int64_t cols,
                                           int64_t vocab, const char *what, tpu_err_t *err);

/*
 * The forward pass and the loss on the chip's tokens 'x' and targets 'y'
 * ([batch, seq] each, the chip's positions; ids in [0, V), checked), keeping
 * what the backward pass needs.  '*loss_p' (may be NULL) gets the mean loss.
 * @return TPU_OK, TPU_ERR_INVALID (an id out of range), a hook's error,
 *         TPU_ERR_NO_MEMORY.
 */
TPU_API tpu_status_t tpu_xfmr_forward(tpu_xfmr_t *xf, const int32_t *x, const int32_t *y,
                                      double *loss_p, tpu_err_t *err);
/* The logits of the last forward pass: [batch, local seq, local vocab], C order. */
TPU_API const float *tpu_xfmr_logits(const tpu_xfmr_t *xf);
/* Every parameter's gradient of the last forward pass's loss (tpu_xfmr_grad). */
TPU_API tpu_status_t tpu_xfmr_backward(tpu_xfmr_t *xf, tpu_err_t *err);
/* p -= lr * grad for every parameter. */
TPU_API void tpu_xfmr_sgd(tpu_xfmr_t *xf, double lr);

/*
 * One training step: forward, loss, backward, SGD at 'lr'.  '*rep_p' (may be
 * NULL) gets the loss (before the update) and the modeled compute.
 */
TPU_API tpu_status_t tpu_xfmr_step(tpu_xfmr_t *xf, const int32_t *x, const int32_t *y, double lr,
                                   tpu_xfmr_report_t *rep_p, tpu_err_t *err);

#ifdef __cplusplus
}
#endif

#endif /* TPU_TRANSFORMER_H */
