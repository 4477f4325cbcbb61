/* The costs of the MLP step on one chip (mlp_cost.c).  Private to emulator/workloads. */
#ifndef TPU_MLP_COST_H
#define TPU_MLP_COST_H

#include "tpu/coll.h"
#include "tpu/status.h"
#include "tpu/vpu.h"

#include "mlp_internal.h"

#include <stddef.h>
#include <stdint.h>

/* Hold 'count' elements of 'elem' bytes in chip c's HBM (model only: account for
 * them, '*p_p' NULL); tpu__mlp_hbm_put() gives them back. */
tpu_status_t tpu__mlp_hbm_get(tpu_mlp_t *mlp, chip_st_t *c, int64_t count, size_t elem, void **p_p,
                              tpu_err_t *err);
void tpu__mlp_hbm_put(tpu_mlp_t *mlp, chip_st_t *c, void *p, int64_t count, size_t elem);
/* Book the VPU roofline of 'op' over [rows, cols] f32 as compute of local chip 'i'. */
tpu_status_t tpu__mlp_vpu_cost(tpu_mlp_t *mlp, int i, tpu_vpu_op_t op, int64_t rows, int64_t cols,
                               tpu_err_t *err);
/*
 * C[m,n] = A @ B on the MXU of local chip 'i', where A is stored [m,k] (or
 * [k,m] with 'ta') and B [k,n] (or [n,k] with 'tb').  bf16: both operands
 * rounded to bf16, f32 accumulation and output.
 */
tpu_status_t tpu__mlp_mm(tpu_mlp_t *mlp, int i, int64_t m, int64_t k, int64_t n, const float *A,
                         int ta, const float *B, int tb, float *C, tpu_err_t *err);
/*
 * Run a collective over 'axis' on every local chip's in[i] -> out[i] (NULL in
 * model-only mode) and book it.  'unit' >= 0 makes it asynchronous: it starts
 * when both the compute and the links are free, and only the update of that
 * unit waits for it.
 */
tpu_status_t tpu__mlp_coll(tpu_mlp_t *mlp, const char *what, tpu_coll_kind_t kind, int axis,
                           int64_t count, void **in, void **out, int unit, tpu_err_t *err);

#endif
