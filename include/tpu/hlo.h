/*
 * HLO text: a parser for the modules XLA prints (HloModule::ToString(), what
 * jax.jit(f).lower(...).compile().as_text() returns and --xla_dump_to writes).
 *
 * What it reads (shared/reference/hlo/GRAMMAR.md gives the syntax and its XLA
 * sources): the HloModule header with its attributes (or a module without one),
 * the FileNames / FunctionNames / FileLocations / StackFrames blocks,
 * computations with or without a signature, ENTRY (else the last computation is
 * the entry), instructions with shapes (scalars, arrays with layouts and TPU
 * tiling such as {1,0:T(8,128)(2,1)}, tuples, token[]), operands with or
 * without inline shapes, and the attributes a replay needs: replica_groups in
 * its three spellings (explicit lists, iota [G,S]<=[dims]T(perm), mesh axes),
 * source_target_pairs, dimensions, channel_id, use_global_device_ids,
 * to_apply, calls, condition, body, true/false_computation,
 * branch_computations, the dot and convolution dimension numbers,
 * custom_call_target, backend_config (its known_trip_count), index, direction,
 * scalar integer constants, metadata's op_name, the module's
 * input_output_alias.  Everything else (the rest of metadata, sharding,
 * frontend_attributes, unknown attributes, unknown opcodes) is skipped by
 * bracket matching and counted, never an error.  Line and block comments are
 * skipped; a line that starts with "// -----" separates modules, and a second
 * HloModule header starts a new one.
 *
 * Errors: TPU_ERR_INVALID with "FILE:LINE:COL: message" (lines and columns from
 * 1); TPU_ERR_NO_MEMORY.  The parser reads only inside [text, text + len) (the
 * text needs no terminating NUL) and bounds every number and nesting depth, so
 * arbitrary bytes give an error or a module, never a crash.
 *
 * Ownership: tpu_hlo_parse() returns a file that owns every module, string and
 * array reachable from it (one arena, freed by tpu_hlo_file_destroy()); the text
 * is not kept.  All memory comes through the allocator hook (tpu/alloc.h).
 */
#ifndef TPU_HLO_H
#define TPU_HLO_H

#include "tpu/status.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TPU_HLO_MAX_RANK 16
/* Most devices a replica group set or an iota may expand to. */
#define TPU_HLO_MAX_IDS (1 << 22)

/* Element types: name, bits per element. */
#define TPU_HLO_TYPE_MAP(X)              \
    X(PRED, "pred", 8)                   \
    X(S2, "s2", 2)                       \
    X(S4, "s4", 4)                       \
    X(S8, "s8", 8)                       \
    X(S16, "s16", 16)                    \
    X(S32, "s32", 32)                    \
    X(S64, "s64", 64)                    \
    X(U2, "u2", 2)                       \
    X(U4, "u4", 4)                       \
    X(U8, "u8", 8)                       \
    X(U16, "u16", 16)                    \
    X(U32, "u32", 32)                    \
    X(U64, "u64", 64)                    \
    X(F16, "f16", 16)                    \
    X(BF16, "bf16", 16)                  \
    X(F32, "f32", 32)                    \
    X(F64, "f64", 64)                    \
    X(C64, "c64", 64)                    \
    X(C128, "c128", 128)                 \
    X(F8E5M2, "f8e5m2", 8)               \
    X(F8E4M3FN, "f8e4m3fn", 8)           \
    X(F8E4M3B11FNUZ, "f8e4m3b11fnuz", 8) \
    X(F8E4M3FNUZ, "f8e4m3fnuz", 8)       \
    X(F8E5M2FNUZ, "f8e5m2fnuz", 8)       \
    X(F8E4M3, "f8e4m3", 8)               \
    X(F8E3M4, "f8e3m4", 8)               \
    X(F8E8M0FNU, "f8e8m0fnu", 8)         \
    X(F6E2M3FN, "f6e2m3fn", 6)           \
    X(F6E3M2FN, "f6e3m2fn", 6)           \
    X(F4E2M1FN, "f4e2m1fn", 4)           \
    X(TOKEN, "token", 0)                 \
    X(OPAQUE, "opaque", 0)

typedef enum {
    TPU_HLO_TYPE_TUPLE = 0,
#define X(name, str, bits) TPU_HLO_TYPE_##name,
    TPU_HLO_TYPE_MAP(X)
#undef X
    TPU_HLO_TYPE_COUNT
} tpu_hlo_type_t;

/* The opcodes the replay understands: name, class. */
#define TPU_HLO_OP_MAP(X)                                 \
    X(ALL_REDUCE, "all-reduce", COLL)                     \
    X(ALL_GATHER, "all-gather", COLL)                     \
    X(REDUCE_SCATTER, "reduce-scatter", COLL)             \
    X(ALL_TO_ALL, "all-to-all", COLL)                     \
    X(RAGGED_ALL_TO_ALL, "ragged-all-to-all", COLL)       \
    X(COLLECTIVE_PERMUTE, "collective-permute", COLL)     \
    X(COLLECTIVE_BROADCAST, "collective-broadcast", COLL) \
    X(COLLECTIVE_REDUCE, "collective-reduce", COLL)       \
    X(DOT, "dot", DOT)                                    \
    X(CONVOLUTION, "convolution", CONV)                   \
    X(FUSION, "fusion", FUSION)                           \
    X(CUSTOM_CALL, "custom-call", CUSTOM)                 \
    X(WHILE, "while", WHILE)                              \
    X(CALL, "call", CALL)                                 \
    X(CONDITIONAL, "conditional", COND)                   \
    X(ASYNC, "async", ASYNC)                              \
    X(PARAMETER, "parameter", FREE)                       \
    X(CONSTANT, "constant", FREE)                         \
    X(GET_TUPLE_ELEMENT, "get-tuple-element", FREE)       \
    X(TUPLE, "tuple", FREE)                               \
    X(BITCAST, "bitcast", FREE)                           \
    X(AFTER_ALL, "after-all", FREE)                       \
    X(PARTITION_ID, "partition-id", FREE)                 \
    X(REPLICA_ID, "replica-id", FREE)                     \
    X(OPT_BARRIER, "opt-barrier", FREE)                   \
    X(ADD_DEPENDENCY, "add-dependency", FREE)             \
    X(DOMAIN, "domain", FREE)                             \
    X(ADD, "add", ELEMWISE)                               \
    X(SUBTRACT, "subtract", ELEMWISE)                     \
    X(MULTIPLY, "multiply", ELEMWISE)                     \
    X(DIVIDE, "divide", ELEMWISE)                         \
    X(REMAINDER, "remainder", ELEMWISE)                   \
    X(MAXIMUM, "maximum", ELEMWISE)                       \
    X(MINIMUM, "minimum", ELEMWISE)                       \
    X(AND, "and", ELEMWISE)                               \
    X(OR, "or", ELEMWISE)                                 \
    X(XOR, "xor", ELEMWISE)                               \
    X(NOT, "not", ELEMWISE)                               \
    X(NEGATE, "negate", ELEMWISE)                         \
    X(ABS, "abs", ELEMWISE)                               \
    X(SIGN, "sign", ELEMWISE)                             \
    X(FLOOR, "floor", ELEMWISE)                           \
    X(CEIL, "ceil", ELEMWISE)                             \
    X(ROUND, "round-nearest-even", ELEMWISE)              \
    X(ROUND_AFZ, "round-nearest-afz", ELEMWISE)           \
    X(COMPARE, "compare", ELEMWISE)                       \
    X(SELECT, "select", ELEMWISE)                         \
    X(CLAMP, "clamp", ELEMWISE)                           \
    X(SHIFT_LEFT, "shift-left", ELEMWISE)                 \
    X(SHIFT_RA, "shift-right-arithmetic", ELEMWISE)       \
    X(SHIFT_RL, "shift-right-logical", ELEMWISE)          \
    X(POPCNT, "popcnt", ELEMWISE)                         \
    X(CLZ, "count-leading-zeros", ELEMWISE)               \
    X(IS_FINITE, "is-finite", ELEMWISE)                   \
    X(REAL, "real", ELEMWISE)                             \
    X(IMAG, "imag", ELEMWISE)                             \
    X(COMPLEX, "complex", ELEMWISE)                       \
    X(MAP, "map", ELEMWISE)                               \
    X(EXP, "exponential", TRANSC)                         \
    X(EXPM1, "exponential-minus-one", TRANSC)             \
    X(LOG, "log", TRANSC)                                 \
    X(LOG1P, "log-plus-one", TRANSC)                      \
    X(LOGISTIC, "logistic", TRANSC)                       \
    X(TANH, "tanh", TRANSC)                               \
    X(SQRT, "sqrt", TRANSC)                               \
    X(RSQRT, "rsqrt", TRANSC)                             \
    X(CBRT, "cbrt", TRANSC)                               \
    X(POWER, "power", TRANSC)                             \
    X(SIN, "sine", TRANSC)                                \
    X(COS, "cosine", TRANSC)                              \
    X(TAN, "tan", TRANSC)                                 \
    X(ATAN2, "atan2", TRANSC)                             \
    X(ERF, "erf", TRANSC)                                 \
    X(REDUCE, "reduce", REDUCE)                           \
    X(REDUCE_WINDOW, "reduce-window", REDUCE)             \
    X(SELECT_AND_SCATTER, "select-and-scatter", REDUCE)   \
    X(REDUCE_PRECISION, "reduce-precision", ELEMWISE)     \
    X(FFT, "fft", FFT)                                    \
    X(COPY, "copy", MOVE)                                 \
    X(TRANSPOSE, "transpose", MOVE)                       \
    X(BROADCAST, "broadcast", MOVE)                       \
    X(RESHAPE, "reshape", MOVE)                           \
    X(DYNAMIC_RESHAPE, "dynamic-reshape", MOVE)           \
    X(SLICE, "slice", MOVE)                               \
    X(DYNAMIC_SLICE, "dynamic-slice", MOVE)               \
    X(DYNAMIC_UPDATE_SLICE, "dynamic-update-slice", MOVE) \
    X(CONCATENATE, "concatenate", MOVE)                   \
    X(PAD, "pad", MOVE)                                   \
    X(GATHER, "gather", MOVE)                             \
    X(SCATTER, "scatter", MOVE)                           \
    X(CONVERT, "convert", MOVE)                           \
    X(BITCAST_CONVERT, "bitcast-convert", MOVE)           \
    X(REVERSE, "reverse", MOVE)                           \
    X(IOTA, "iota", MOVE)                                 \
    X(SORT, "sort", MOVE)                                 \
    X(RNG, "rng", MOVE)                                   \
    X(RNG_BIT_GENERATOR, "rng-bit-generator", MOVE)       \
    X(GET_DIMENSION_SIZE, "get-dimension-size", FREE)     \
    X(SEND, "send", FREE)                                 \
    X(SEND_DONE, "send-done", FREE)                       \
    X(RECV, "recv", FREE)                                 \
    X(RECV_DONE, "recv-done", FREE)                       \
    X(INFEED, "infeed", FREE)                             \
    X(OUTFEED, "outfeed", FREE)

/* Cost classes of the opcodes. */
typedef enum {
    TPU_HLO_CLASS_UNKNOWN = 0,
    TPU_HLO_CLASS_COLL,     /* a collective */
    TPU_HLO_CLASS_DOT,      /* MXU: dot */
    TPU_HLO_CLASS_CONV,     /* MXU: convolution */
    TPU_HLO_CLASS_FUSION,   /* its fused computation */
    TPU_HLO_CLASS_CUSTOM,   /* custom-call: opaque */
    TPU_HLO_CLASS_WHILE,    /* while loop */
    TPU_HLO_CLASS_CALL,     /* call */
    TPU_HLO_CLASS_COND,     /* conditional */
    TPU_HLO_CLASS_ASYNC,    /* async-start/update/done with calls= */
    TPU_HLO_CLASS_FREE,     /* no HBM traffic of its own (parameter, tuple, bitcast, ...) */
    TPU_HLO_CLASS_ELEMWISE, /* VPU, 1 FLOP per element */
    TPU_HLO_CLASS_TRANSC,   /* VPU, a transcendental per element */
    TPU_HLO_CLASS_REDUCE,   /* VPU, 1 FLOP per input element */
    TPU_HLO_CLASS_FFT,      /* 5 N log2 N FLOPs per transform */
    TPU_HLO_CLASS_MOVE      /* data movement: bytes only */
} tpu_hlo_class_t;

typedef enum {
    TPU_HLO_OP_UNKNOWN = 0,
#define X(name, str, cls) TPU_HLO_OP_##name,
    TPU_HLO_OP_MAP(X)
#undef X
    TPU_HLO_OP_COUNT
} tpu_hlo_op_t;

/* How an opcode was written: plain, or the -start / -update / -done of an async pair. */
typedef enum {
    TPU_HLO_SYNC = 0,
    TPU_HLO_START,
    TPU_HLO_UPDATE,
    TPU_HLO_DONE
} tpu_hlo_async_t;

/* A shape: an array (type, rank, dims), a tuple of shapes, or token[]. */
typedef struct tpu_hlo_shape {
    tpu_hlo_type_t type; /* TPU_HLO_TYPE_TUPLE for a tuple */
    int rank;
    int64_t dims[TPU_HLO_MAX_RANK]; /* "<=N" bounded dims are N, unbounded "?" 1 */
    int ntuple;
    struct tpu_hlo_shape *tuple; /* ntuple elements */
    int layout_other;            /* 1: a layout other than {rank-1,...,0}, or tiled */
} tpu_hlo_shape_t;

/* A list of integers. */
typedef struct tpu_hlo_ints {
    int n;
    int64_t *v;
} tpu_hlo_ints_t;

/* The spelling a replica group set was written in. */
typedef enum {
    TPU_HLO_GROUPS_NONE = 0, /* no replica_groups attribute */
    TPU_HLO_GROUPS_LIST,     /* {{0,1},{2,3}}; {} is one group of every device */
    TPU_HLO_GROUPS_IOTA,     /* [G,S]<=[dims]T(perm) */
    TPU_HLO_GROUPS_MESH      /* mesh['a'=2,'b'=2] {'b'} */
} tpu_hlo_groups_form_t;

/* A replica group set, expanded to explicit lists of ids. */
typedef struct tpu_hlo_groups {
    tpu_hlo_groups_form_t form;
    const char *text; /* as written */
    int ngroups;      /* 0: "{}" or absent, one group of every participant */
    int32_t *start;   /* ngroups + 1 offsets into ids: group g is ids[start[g], start[g+1]) */
    int32_t *ids;
} tpu_hlo_groups_t;

typedef struct tpu_hlo_instr {
    const char *name;   /* without the leading % */
    const char *opcode; /* as written: "all-gather-start" */
    tpu_hlo_op_t op;    /* the base op ("all-gather"), UNKNOWN if not in the table */
    tpu_hlo_async_t async;
    int root; /* marked ROOT */
    int line, col;
    tpu_hlo_shape_t shape; /* result shape (type TUPLE with 0 elements when not written) */
    int has_shape;
    int noperands;
    int32_t *operands;          /* index in the computation; -1 when nested or not found */
    const char **operand_names; /* NULL for a nested operand */
    /* Attributes the replay reads (-1 / NULL / 0 when absent). */
    tpu_hlo_groups_t groups;
    tpu_hlo_ints_t pairs; /* source_target_pairs as s0,t0,s1,t1,... */
    tpu_hlo_ints_t dimensions;
    int64_t channel_id;        /* -1 when absent */
    int use_global_device_ids; /* -1 absent, 0 false, 1 true */
    const char *to_apply, *calls, *condition, *body, *true_comp, *false_comp;
    int to_apply_c, calls_c, condition_c, body_c, true_c, false_c; /* resolved, -1 */
    int nbranches;
    const char **branch_names;
    int32_t *branches; /* resolved branch computations (-1 when not found) */
    tpu_hlo_ints_t lhs_batch, lhs_contracting, rhs_batch, rhs_contracting;
    const char *dim_labels; /* convolution: "b01f_01io->b01f" */
    int64_t feature_group_count, batch_group_count;
    const char *custom_call_target;
    const char *fusion_kind;
    const char *backend_config; /* raw text */
    int64_t known_trip_count;   /* from backend_config; -1 */
    int64_t index;              /* get-tuple-element index; -1 */
    const char *direction;      /* compare */
    int has_int_value;          /* a scalar integer constant */
    int64_t int_value;
    int64_t parameter_number; /* -1 */
    int64_t fft_length;       /* product of fft_length; 0 */
    const char *op_name;      /* metadata={op_name="..."} (the JAX op path); NULL */
} tpu_hlo_instr_t;

typedef struct tpu_hlo_comp {
    const char *name;
    int is_entry;
    int line;
    int ninstrs;
    tpu_hlo_instr_t *instrs;
    int root; /* index of the ROOT instruction (else the last) */
} tpu_hlo_comp_t;

typedef struct tpu_hlo_module {
    const char *file;
    const char *name; /* "" for a module without a header */
    int has_header;
    int line;               /* of the header, or of the first computation */
    int64_t replica_count;  /* 0 when absent */
    int64_t num_partitions; /* 0 when absent */
    int is_scheduled;
    int ncomps;
    tpu_hlo_comp_t *comps;
    int entry;               /* index of the entry computation */
    int max_device_id;       /* largest id named by a group or a pair; -1 for none */
    int unknown_opcodes;     /* instructions whose opcode is not in the table */
    int skipped_attributes;  /* attributes not read (metadata, sharding, unknown ...) */
    int stack_frame_entries; /* entries of the FileNames ... StackFrames blocks */
    int nested_operands;     /* operands written as nested instructions */
    int tiled_layouts;       /* layouts with a TPU tiling ":T(...)" */
    /* input_output_alias: nio_alias pairs (output tuple index, -1 for the whole output;
     * the entry parameter number it shares its buffer with). */
    int nio_alias;
    int64_t *io_alias;
} tpu_hlo_module_t;

typedef struct tpu_hlo_file {
    int nmodules;
    tpu_hlo_module_t *modules;
    void *arena; /* private */
} tpu_hlo_file_t;

/*
 * Parse 'len' bytes of HLO text; 'filename' names it in messages.  On success
 * '*file_p' holds at least one module.
 * @return TPU_OK, TPU_ERR_INVALID ("FILE:LINE:COL: message"), TPU_ERR_NO_MEMORY.
 */
TPU_API tpu_status_t tpu_hlo_parse(const char *text, size_t len, const char *filename,
                                   tpu_hlo_file_t **file_p, tpu_err_t *err);
/*
 * Check a parsed module as XLA's HLO verifier would (emulator/replay/hlo_verify.c
 * lists the checks): operands that exist and come first, no cycle among
 * instructions or computations, an entry computation, collective and dot shapes
 * that agree with their dimensions and replica groups, groups that partition the
 * devices, whole non-negative trip counts.
 * @return TPU_OK, TPU_ERR_INVALID ("FILE:LINE:COL: 'NAME': message", the first
 *         violation), TPU_ERR_NO_MEMORY.
 */
TPU_API tpu_status_t tpu_hlo_verify(const tpu_hlo_module_t *mod, tpu_err_t *err);
/* Free a parsed file; NULL is a no-op. */
TPU_API void tpu_hlo_file_destroy(tpu_hlo_file_t *file);

/* The opcode table: name ("all-reduce"), class; NULL / UNKNOWN outside it. */
TPU_API const char *tpu_hlo_op_name(tpu_hlo_op_t op);
TPU_API tpu_hlo_class_t tpu_hlo_op_class(tpu_hlo_op_t op);
/* The element type's name ("bf16") and bits per element (0 for token, tuple). */
TPU_API const char *tpu_hlo_type_name(tpu_hlo_type_t type);
TPU_API int tpu_hlo_type_bits(tpu_hlo_type_t type);

/* Elements of an array shape (1 for a scalar; 0 for a tuple or token). */
TPU_API int64_t tpu_hlo_shape_elements(const tpu_hlo_shape_t *shape);
/* Bytes of a shape: the sum over a tuple's leaves (sub-byte types rounded up per array). */
TPU_API uint64_t tpu_hlo_shape_bytes(const tpu_hlo_shape_t *shape);

/*
 * Expand an iota replica group list [ngroups, size] <= [dims] T(perm): the ids
 * arange(prod dims).reshape(dims).transpose(perm).reshape(ngroups, size), row k
 * is group k.  'perm' may be NULL (identity).  'ids' has room for ngroups * size.
 * @return TPU_OK, or TPU_ERR_INVALID (sizes that disagree, a bad permutation).
 */
TPU_API tpu_status_t tpu_hlo_iota_groups(int64_t ngroups, int64_t size, int ndims,
                                         const int64_t *dims, const int64_t *perm, int32_t *ids,
                                         tpu_err_t *err);

/* Find a computation by name in 'mod'; -1 when absent. */
TPU_API int tpu_hlo_module_find_comp(const tpu_hlo_module_t *mod, const char *name);

#ifdef __cplusplus
}
#endif

#endif /* TPU_HLO_H */
