/*
 * The MXU matmul of the chip: its description, roofline, cost helper, and the
 * matmul itself through the VMEM executor (tpu/vmem.h).  Costs: tpu/roofline.h.
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
#ifndef TPU_MXU_H
#define TPU_MXU_H

#include "tpu/chip.h"
#include "tpu/dtype.h"
#include "tpu/roofline.h"
#include "tpu/status.h"
#include "tpu/vmem.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A matmul C[m,n] = A[m,k] @ B[k,n], all row-major. */
typedef struct tpu_mxu_desc {
    int64_t m, k, n;
    tpu_dtype_t in;     /* BF16, F32 or INT8 */
    tpu_dtype_t out;    /* BF16 or F32 for bf16 inputs, F32 for f32, INT32 for int8 */
    int64_t bm, bk, bn; /* VMEM block; 0 lets the op choose (the largest that fit) */
} tpu_mxu_desc_t;

/* Fill 'desc' for an m x k x n matmul of 'in': output bf16 for bf16 (as
 * jnp.dot), f32 for f32, int32 for int8; blocks chosen by the op. */
TPU_API void tpu_mxu_desc_init(tpu_mxu_desc_t *desc, int64_t m, int64_t k, int64_t n,
                               tpu_dtype_t in);

/*
 * The roofline of a matmul on 'spec'.  Pure: no allocation.
 * @return TPU_OK, or TPU_ERR_INVALID (non-positive dimensions, an unsupported
 *         type combination, a spec without the rates needed).
 */
TPU_API tpu_status_t tpu_mxu_roofline(const tpu_chip_spec_t *spec, const tpu_mxu_desc_t *desc,
                                      tpu_roofline_t *rl_p, tpu_err_t *err);

/*
 * Cost helper for kernel bodies (vmem.h): the modeled seconds of an m x k x n
 * matmul of 'in' on the MXU (dimensions padded to mxu_dim).  Returns 0 for an
 * unsupported type or non-positive sizes.
 */
TPU_API double tpu_mxu_seconds(const tpu_chip_spec_t *spec, int64_t m, int64_t k, int64_t n,
                               tpu_dtype_t in);

/*
 * The calibrated seconds of the same matmul: the time real shapes take, from
 * the chip's calibration profile (tpu/calibration.h): a start cost per op, the
 * sustained fraction of the MXU peak and of the HBM rate, and the pipeline's
 * first loads and last store that nothing overlaps; the TensorCores split m.
 * Small and skinny matmuls fall far below peak (v7, m = n = k = 128: 0.1% of
 * it; 32768: 80%).  Returns 0 where tpu_mxu_seconds() does.
 */
TPU_API double tpu_mxu_seconds_calibrated(const tpu_chip_spec_t *spec, int64_t m, int64_t k,
                                          int64_t n, tpu_dtype_t in);

/* The fraction of the chip's peak the calibrated matmul reaches: 2mkn / (seconds x peak). */
TPU_API double tpu_mxu_efficiency(const tpu_chip_spec_t *spec, int64_t m, int64_t k, int64_t n,
                                  tpu_dtype_t in);

/*
 * C = A @ B through the VMEM executor on 'vmem's chip.  'a' is m x k, 'b' k x n,
 * 'c' m x n, row-major, of the types in 'desc' (bf16 as uint16_t bits).
 * @param [out] report_p  roofline and pipeline (may be NULL; set on success)
 * @return TPU_OK, TPU_ERR_INVALID (dimensions, types, NULL arrays, blocks),
 *         TPU_ERR_RESOURCE_EXHAUSTED (given blocks do not fit VMEM),
 *         TPU_ERR_NO_MEMORY.
 */
TPU_API tpu_status_t tpu_mxu_matmul(tpu_vmem_t *vmem, const tpu_mxu_desc_t *desc, const void *a,
                                    const void *b, void *c, tpu_roofline_report_t *report_p,
                                    tpu_err_t *err);

/* The same without data: the roofline and the pipelined time of the plan. */
TPU_API tpu_status_t tpu_mxu_matmul_model(tpu_vmem_t *vmem, const tpu_mxu_desc_t *desc,
                                          tpu_roofline_report_t *report_p, tpu_err_t *err);

#ifdef __cplusplus
}
#endif

#endif /* TPU_MXU_H */
