/*
 * The chip's built-in operations (MXU matmul, VPU elementwise ops and
 * reductions) and their roofline cost model.
 *
 * Two times are reported for every op:
 *
 * - The roofline time (tpu_roofline_t, modeled_us): the whole-array formula of
 *   the reference table (shared/reference/roofline_public.csv),
 *     modeled = max(compute, memory),
 *     compute = hw_flops / peak,  memory = hbm_bytes / hbm_bw,
 *   hbm_bytes = inputs read once + output written once (bf16 2 bytes, f32 4,
 *   int8 1, int32 4; an int8 matmul's output is int32).  'flops' is the useful
 *   work (2mkn for a matmul) and sets the arithmetic intensity; 'hw_flops' is
 *   what the unit spends: a matmul pads m, k and n up to multiples of the MXU
 *   edge (128, or 256 on v6e and v7), a VPU op rounds its elements up to whole
 *   (8,128) tiles (a row op first pads each row to whole 128-lane vectors).  peak: bf16_flops,
 * int8_ops or f32_flops for a matmul by input type, vpu_flops for the VPU.  'bound' says which term
 * is larger.
 *
 * - The pipelined time (tpu_vmem_stats_t, modeled_us): what the VMEM executor
 *   (vmem.h) gets for the block plan the op actually runs, with the prologue
 *   and epilogue DMA exposed, max(DMA, compute) per grid step and the re-fetches
 *   of blocks that a blocked matmul needs.  It is never below the roofline time
 *   (up to rounding), and approaches it for large arrays.  tpuemu reports both;
 *   the roofline time is the one checked against the reference table.
 *
 * VPU FLOPs per element (a choice: the sources give none).  An ALU operation
 * (add, multiply, max, compare-select) is 1.  A transcendental (exp, tanh)
 * counts as TPU_VPU_TRANSCENDENTAL_FLOPS = 4: the transcendental unit is taken
 * to retire one result per (sublane, lane) per cycle while the VPU retires 4
 * ALU operations there (seed 001: 4 ALUs per lane and sublane).  So:
 *   add, mul, max, relu                  1
 *   exp, tanh                            4
 *   gelu (tanh form)                     12  (x^3: 2, *0.044715, +x, *sqrt(2/pi),
 *                                             tanh 4, +1, *x, *0.5)
 *   softmax (per element of a row)       8   (max 1, subtract 1, exp 4, sum 1,
 *                                             multiply by 1/sum 1)
 *   sum, max reduction                   1
 *
 * The host arithmetic: bf16 matmuls widen the blocks to f32 (exact) and call
 * OpenBLAS cblas_sgemm, accumulating in f32; the output is rounded to bf16
 * (nearest, ties to even) or kept in f32.  int8 matmuls are exact in int32
 * (sgemm on chunks of k <= 1024, whose sums stay below 2^24 and are therefore
 * exact in f32, added in int32 with wraparound like the hardware's
 * accumulator).  bf16 VPU ops compute in f32 and round the result.
 *
 * Ownership: the ops borrow their arrays for the call; nothing is kept.
 * Threads: the roofline functions are pure and thread-safe; the ops use their
 * tpu_vmem_t, which belongs to one thread at a time.
 */
#ifndef TPU_OPS_H
#define TPU_OPS_H

#include "tpu/chip.h"
#include "tpu/status.h"
#include "tpu/vmem.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TPU_VPU_TRANSCENDENTAL_FLOPS 4

/* The VPU ops: enum name, CLI name, inputs, FLOPs per element. */
#define TPU_VPU_OP_MAP(X)                                      \
    X(ADD, "add", 2, 1)                                        \
    X(MUL, "mul", 2, 1)                                        \
    X(MAX, "max", 2, 1)                                        \
    X(RELU, "relu", 1, 1)                                      \
    X(EXP, "exp", 1, TPU_VPU_TRANSCENDENTAL_FLOPS)             \
    X(TANH, "tanh", 1, TPU_VPU_TRANSCENDENTAL_FLOPS)           \
    X(GELU, "gelu", 1, 8 + TPU_VPU_TRANSCENDENTAL_FLOPS)       \
    X(SOFTMAX, "softmax", 1, 4 + TPU_VPU_TRANSCENDENTAL_FLOPS) \
    X(SUM, "sum", 1, 1)                                        \
    X(REDUCE_MAX, "reduce_max", 1, 1)

typedef enum {
#define X(name, str, inputs, flops) TPU_VPU_##name,
    TPU_VPU_OP_MAP(X)
#undef X
    TPU_VPU_OP_COUNT
} tpu_vpu_op_t;

/* "add", ...; NULL for anything else. */
TPU_API const char *tpu_vpu_op_name(tpu_vpu_op_t op);
/* Parse a name ("reduce-max" is accepted too); TPU_ERR_INVALID lists the known ones. */
TPU_API tpu_status_t tpu_vpu_op_parse(const char *text, tpu_vpu_op_t *op_p, tpu_err_t *err);
/* Inputs of the op (1 or 2) and FLOPs per element; 0 for anything else. */
TPU_API int tpu_vpu_op_inputs(tpu_vpu_op_t op);
TPU_API int tpu_vpu_op_flops(tpu_vpu_op_t op);

/* A matmul C[m,n] = A[m,k] @ B[k,n], all row-major. */
typedef struct tpu_matmul_desc {
    int64_t m, k, n;
    tpu_dtype_t in;     /* BF16, F32 or INT8 */
    tpu_dtype_t out;    /* BF16 or F32 for bf16 inputs, F32 for f32, INT32 for int8 */
    int64_t bm, bk, bn; /* VMEM block; 0 lets the op choose (the largest that fit) */
} tpu_matmul_desc_t;

/* Fill 'desc' for an m x k x n matmul of 'in': output bf16 for bf16 (as
 * jnp.dot), f32 for f32, int32 for int8; blocks chosen by the op. */
TPU_API void tpu_matmul_desc_init(tpu_matmul_desc_t *desc, int64_t m, int64_t k, int64_t n,
                                  tpu_dtype_t in);

/*
 * A VPU op on a rows x cols array.  Elementwise ops (add ... gelu) see the array
 * as rows * cols elements; softmax works on each row; sum and reduce_max reduce
 * each row to one element (rows = 1 reduces the whole array).  Types: bf16 and
 * f32 for every op; int8 for add, mul, max, relu (wrapping, like int8 on the
 * chip), sum (into int32) and reduce_max.  Outputs have the input type, except
 * the sum of int8 (int32).
 */
typedef struct tpu_vpu_desc {
    tpu_vpu_op_t op;
    tpu_dtype_t dtype;
    int64_t rows, cols;
    int64_t block; /* elements (elementwise) or rows (row ops) per block; 0: chosen */
} tpu_vpu_desc_t;

/* Fill 'desc' for 'op' on a rows x cols array of 'dtype', blocks chosen by the op. */
TPU_API void tpu_vpu_desc_init(tpu_vpu_desc_t *desc, tpu_vpu_op_t op, tpu_dtype_t dtype,
                               int64_t rows, int64_t cols);

/* The element type of the op's output. */
TPU_API tpu_dtype_t tpu_vpu_out_elem(const tpu_vpu_desc_t *desc);

typedef enum {
    TPU_BOUND_MEMORY = 0,
    TPU_BOUND_COMPUTE = 1
} tpu_bound_t;

/* "memory" or "compute". */
TPU_API const char *tpu_bound_name(tpu_bound_t bound);

/* The roofline of one op (see the top of this file). */
typedef struct tpu_roofline {
    double flops;      /* useful FLOPs: 2mkn, or elements x FLOPs per element */
    double hw_flops;   /* FLOPs the unit spends, dimensions padded */
    double hbm_bytes;  /* inputs read once + output written once */
    double intensity;  /* flops / hbm_bytes */
    double peak;       /* FLOP/s of the unit and type */
    double compute_us; /* hw_flops / peak */
    double memory_us;  /* hbm_bytes / hbm_bw */
    double modeled_us; /* max(compute_us, memory_us) */
    tpu_bound_t bound; /* COMPUTE when compute_us > memory_us */
} tpu_roofline_t;

/*
 * The roofline of a matmul or a VPU op on 'spec'.  Pure: no allocation.
 * @return TPU_OK, or TPU_ERR_INVALID (non-positive dimensions, an unsupported
 *         type combination, a spec without the rates needed).
 */
TPU_API tpu_status_t tpu_roofline_matmul(const tpu_chip_spec_t *spec, const tpu_matmul_desc_t *desc,
                                         tpu_roofline_t *rl_p, tpu_err_t *err);
TPU_API tpu_status_t tpu_roofline_vpu(const tpu_chip_spec_t *spec, const tpu_vpu_desc_t *desc,
                                      tpu_roofline_t *rl_p, tpu_err_t *err);

/*
 * Cost helpers for kernel bodies (vmem.h): the modeled seconds of an m x k x n
 * matmul of 'in' on the MXU (dimensions padded to mxu_dim), and of 'elements'
 * elements at 'flops_per_elem' on the VPU (padded to whole (8,128) tiles).
 * Return 0 for an unsupported type or non-positive sizes.
 */
TPU_API double tpu_op_mxu_seconds(const tpu_chip_spec_t *spec, int64_t m, int64_t k, int64_t n,
                                  tpu_dtype_t in);
TPU_API double tpu_op_vpu_seconds(const tpu_chip_spec_t *spec, int64_t elements,
                                  double flops_per_elem);

/* The result of a built-in op: its roofline, and what the executor did. */
typedef struct tpu_op_report {
    tpu_roofline_t roofline;
    tpu_vmem_stats_t pipeline;
    int64_t block[3]; /* the block plan: bm, bk, bn (matmul) or the block size (VPU) */
} tpu_op_report_t;

/*
 * C = A @ B through the VMEM executor on 'vmem's chip.  'a' is m x k, 'b' k x n,
 * 'c' m x n, row-major, of the types in 'desc' (bf16 as uint16_t bits).
 * @param [out] report_p  roofline and pipeline (may be NULL; set on success)
 * @return TPU_OK, TPU_ERR_INVALID (dimensions, types, NULL arrays, blocks),
 *         TPU_ERR_RESOURCE_EXHAUSTED (given blocks do not fit VMEM),
 *         TPU_ERR_NO_MEMORY.
 */
TPU_API tpu_status_t tpu_op_matmul(tpu_vmem_t *vmem, const tpu_matmul_desc_t *desc, const void *a,
                                   const void *b, void *c, tpu_op_report_t *report_p,
                                   tpu_err_t *err);

/* The same without data: the roofline and the pipelined time of the plan. */
TPU_API tpu_status_t tpu_op_matmul_model(tpu_vmem_t *vmem, const tpu_matmul_desc_t *desc,
                                         tpu_op_report_t *report_p, tpu_err_t *err);

/*
 * A VPU op through the VMEM executor.  'x' (and 'y' for two-input ops; NULL
 * otherwise) hold rows x cols elements of desc->dtype; 'out' gets rows x cols
 * elements (elementwise, softmax) or rows elements (sum, reduce_max) of
 * tpu_vpu_out_elem(desc).
 * @return TPU_OK, TPU_ERR_INVALID, TPU_ERR_RESOURCE_EXHAUSTED (a softmax row
 *         that does not fit VMEM), TPU_ERR_NO_MEMORY.
 */
TPU_API tpu_status_t tpu_op_vpu(tpu_vmem_t *vmem, const tpu_vpu_desc_t *desc, const void *x,
                                const void *y, void *out, tpu_op_report_t *report_p,
                                tpu_err_t *err);

/* The same without data. */
TPU_API tpu_status_t tpu_op_vpu_model(tpu_vmem_t *vmem, const tpu_vpu_desc_t *desc,
                                      tpu_op_report_t *report_p, tpu_err_t *err);

#ifdef __cplusplus
}
#endif

#endif /* TPU_OPS_H */
