/* Reduction kernels of the collectives: dst = op(dst, src) over n elements. */
#ifndef TPU_REDUCE_H
#define TPU_REDUCE_H

#include "tpu/coll.h"

#include <stddef.h>
#include <stdint.h>

/*
 * Reduce 'n' elements of 'src' into 'dst' with 'op'.  'dtype' is the type of the
 * working buffers: bf16 collectives run on f32 working buffers (accumulating in
 * f32, rounded once at the end), so this sees TPU_DTYPE_F32 for them.
 */
void tpu__reduce(tpu_dtype_t dtype, tpu_redop_t op, void *dst, const void *src, size_t n);

/*
 * Reduce 'n' bf16 values of 'src' (their 16 bits), each widened to f32 (exact),
 * into the f32 accumulator 'dst': the same f32 operations as widening first and
 * calling tpu__reduce(TPU_DTYPE_F32, ...), without the widened copy.
 */
void tpu__reduce_bf16(tpu_redop_t op, float *dst, const uint16_t *src, size_t n);

#endif
