/*
 * The VPU ops of the chip (elementwise ops and row reductions on (8,128)
 * tiles): their names, description, roofline, cost helper, and the ops
 * themselves through the VMEM executor (tpu/vmem.h).  Costs: tpu/roofline.h.
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
 * bf16 VPU ops compute in f32 and round the result.
 *
 * Ownership: the ops borrow their arrays for the call; nothing is kept.
 * Threads: the roofline functions are pure and thread-safe; the ops use their
 * tpu_vmem_t, which belongs to one thread at a time.
 */
#ifndef TPU_VPU_H
#define TPU_VPU_H

#include "tpu/chip.h"
#include "tpu/dtype.h"
#include "tpu/roofline.h"
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
TPU_API tpu_dtype_t tpu_vpu_out_dtype(const tpu_vpu_desc_t *desc);

/* The roofline of a VPU op on 'spec' (as tpu_mxu_roofline()). */
TPU_API tpu_status_t tpu_vpu_roofline(const tpu_chip_spec_t *spec, const tpu_vpu_desc_t *desc,
                                      tpu_roofline_t *rl_p, tpu_err_t *err);

/*
 * Cost helper for kernel bodies (vmem.h): the modeled seconds of 'elements'
 * elements at 'flops_per_elem' on the VPU (padded to whole (8,128) tiles).
 * Returns 0 for non-positive sizes.
 */
TPU_API double tpu_vpu_seconds(const tpu_chip_spec_t *spec, int64_t elements,
                               double flops_per_elem);

/*
 * A VPU op through the VMEM executor.  'x' (and 'y' for two-input ops; NULL
 * otherwise) hold rows x cols elements of desc->dtype; 'out' gets rows x cols
 * elements (elementwise, softmax) or rows elements (sum, reduce_max) of
 * tpu_vpu_out_dtype(desc).
 * @return TPU_OK, TPU_ERR_INVALID, TPU_ERR_RESOURCE_EXHAUSTED (a softmax row
 *         that does not fit VMEM), TPU_ERR_NO_MEMORY.
 */
TPU_API tpu_status_t tpu_vpu_run(tpu_vmem_t *vmem, const tpu_vpu_desc_t *desc, const void *x,
                                 const void *y, void *out, tpu_roofline_report_t *report_p,
                                 tpu_err_t *err);

/* The same without data. */
TPU_API tpu_status_t tpu_vpu_model(tpu_vmem_t *vmem, const tpu_vpu_desc_t *desc,
                                   tpu_roofline_report_t *report_p, tpu_err_t *err);

#ifdef __cplusplus
}
#endif

#endif /* TPU_VPU_H */
