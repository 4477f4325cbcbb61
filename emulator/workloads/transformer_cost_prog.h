/*
 * The transformer's step as a program (private to emulator/workloads, for
 * transformer_cost.c): the named sizes of one chip's step, the mesh axes, the
 * model's state while it is built and scheduled, and the three calls of
 * transformer_cost_prog.c: the sizes of a layout, the program (compute ops,
 * collective calls, the waits of the schedule) from the tables of the step, and
 * the HBM items.
 */
#ifndef TPU_WORKLOADS_TRANSFORMER_COST_PROG_H
#define TPU_WORKLOADS_TRANSFORMER_COST_PROG_H

#include "tpu/mesh.h"
#include "tpu/spmd.h"
#include "tpu/transformer_cost.h"

#include <stdint.h>

/* ---- sizes ---- */

/* The named sizes of one chip's step (see the header for the letters). */
enum {
    Z_1,
    Z_2,
    Z_T,     /* tokens of the chip: b Sl */
    Z_T2,    /* 2 T */
    Z_D,     /* model width */
    Z_D2,    /* 2 D */
    Z_DL,    /* the chip's heads' width: nh Dh */
    Z_FL,    /* the chip's MLP columns */
    Z_VL,    /* the chip's vocabulary */
    Z_S,     /* sequence */
    Z_SL,    /* the chip's positions */
    Z_DH,    /* head width */
    Z_BNH,   /* sequences x local heads: the attention's matmuls per step */
    Z_BNHSL, /* rows of the attention scores: b nh Sl */
    Z_KV,    /* k or v of every position: b nkv S Dh (nkv the chip's kv heads) */
    Z_KVL,   /* the chip's kv heads' width: nkv Dh */
    Z_SA,    /* keys a query attends: S (compiled causal flash: S / 2, the masked half skipped) */
    Z_FG,    /* swiglu: the gate's columns (Fl); 0 otherwise */
    Z_UNEMB, /* the unembedding's rows (D); 0 when tied */
    Z_DSEQ,  /* the second norm's gain (D); 0 in the parallel block */
    Z_DR,    /* the residual stream's width on a chip: D (compiled: D / tensor, sharded) */
    Z_TD,    /* T D: a residual-stream buffer */
    Z_NPAR,  /* the chip's parameter elements (fsdp: its shards) */
    Z_COUNT
};

/* ---- mesh axes ---- */

enum {
    A_DATA,
    A_FSDP,
    A_SEQ,
    A_TENSOR,
    A_DCN,
    A_COUNT
};
#define BIT(a) (1u << (a))

/* ---- the program ---- */

typedef enum {
    P_OP,         /* compute op 'idx' */
    P_SYNC,       /* call 'idx' on the critical path */
    P_GRAD,       /* call 'idx' overlapped; the update waits for it */
    P_GATHER,     /* call 'idx' overlapped; unit 'unit' waits for it */
    P_WAIT,       /* the compute waits for unit 'unit''s gathers */
    P_WAIT_GRADS, /* the compute waits for every gradient */
    P_CMM,        /* call 'idx' beside the matmul before it (a collective matmul); the compute
                   * waits for its end */
    P_CMM_ASYNC,  /* the same, but the compute goes on (to the weight gradients) */
    P_JOIN        /* the compute waits for the P_CMM_ASYNC calls */
} pkind_t;

typedef struct prog {
    pkind_t kind;
    int64_t idx;
    int unit;
} prog_t;

struct tpu_xfmr_cost_engine {
    tpu_mesh_t *mesh;
    tpu_spmd_t *spmd;
    const tpu_chip_spec_t *chip;
    const tpu_pod_t *pod;
    char spec[128]; /* the mesh */
    int64_t first;  /* the first capacity of the step's arrays (about their size) */
    tpu_xfmr_config_t m;
    int size[A_COUNT];
    int mesh_idx[A_COUNT]; /* the axis' index in the mesh, -1 */
    char name[A_COUNT][TPU_MESH_NAME_LEN];
    int64_t z[Z_COUNT];
    prog_t *prog;
    int64_t nprog, cap_prog, cap_ops, cap_calls;
    int cap_colls;
    int nunits;
    double *ready; /* [nunits] */
    double peak_flops;
    tpu_xfmr_plan_t plan;
    int act_bytes;    /* activations and their collectives: 4, or 2 (compiled bf16) */
    int per_layer;    /* parameters of a layer: 8, 9 with swiglu's gate */
    int gather_bytes; /* fsdp's gathered weights and their gradients: 4, or (compiled) the
                       * matmul dtype's when smaller (XLA converts before the all-gather) */
    /* tpu__xfmr_axes_of() of each set of A_* axes (a mask below 32), once known (bit m) */
    unsigned long long axes_known;
    char axes_names[32][64], axes_layout[32][64];
    int axes_g[32];
    unsigned axes_left[32];
};

typedef struct tpu_xfmr_cost_engine eng_t;

/* The cached time of 'key' (1) or 0; remember one. */
int tpu__xfmr_cache_get(const struct tpu_xfmr_time_cache *cache, const char *key, double *us_p,
                        char *algorithm, size_t len);
void tpu__xfmr_cache_put(struct tpu_xfmr_time_cache *cache, const char *key, double us,
                         const char *algorithm);
/* The engine's runtime of 'c', created on first use. */
tpu_status_t tpu__xfmr_cost_spmd(tpu_xfmr_cost_t *c, tpu_err_t *err);

/* The sizes of c's layout into c->engine->z (and c's per-chip batch, positions, tokens). */
void tpu__xfmr_cost_sizes(tpu_xfmr_cost_t *c);
/* The program of one step: forward, backward, update, fsdp's gathers one unit ahead. */
tpu_status_t tpu__xfmr_cost_build(tpu_xfmr_cost_t *c, tpu_err_t *err);
/* The elements of the chip's piece of the parameters of 'unit' (0 embeddings, 1 + l layer l,
 * L + 1 the head): all of them, or ('largest') its largest parameter's. */
int64_t tpu__xfmr_cost_unit_elems(const eng_t *e, int unit, int largest);

#endif /* TPU_WORKLOADS_TRANSFORMER_COST_PROG_H */
