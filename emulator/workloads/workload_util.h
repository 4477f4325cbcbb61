/*
 * What the workloads (the MLP, the transformer) share on the host: the
 * counter-based normal random numbers their weights and synthetic data come
 * from, and the blocked transpose their matmuls use to lay out an operand.
 */
#ifndef TPU_WORKLOAD_UTIL_H
#define TPU_WORKLOAD_UTIL_H

#include <stdint.h>

/*
 * Element 'i' of random stream 's' under 'seed': a standard normal by the
 * Box-Muller transform of two 53-bit uniforms from splitmix64, so that any chip
 * can make any element without the others.
 */
float tpu__workload_normal(uint64_t seed, uint64_t s, uint64_t i);

/* dst[cols, rows] = src[rows, cols] transposed, in 32 x 32 blocks. */
void tpu__workload_transpose(const float *src, int64_t rows, int64_t cols, float *dst);

#endif /* TPU_WORKLOAD_UTIL_H */
