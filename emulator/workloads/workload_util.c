/*
 * What the workloads share on the host (see workload_util.h): counter-based
 * normal random numbers and the blocked transpose.
 */
#include "workload_util.h"

#include <math.h>

/* splitmix64's finalizer as a counter-based generator. */
static uint64_t splitmix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

float tpu__workload_normal(uint64_t seed, uint64_t s, uint64_t i)
{
    uint64_t key = splitmix64(seed ^ splitmix64(s));
    uint64_t a = splitmix64(key ^ (2 * i)), c = splitmix64(key ^ (2 * i + 1));
    double u1 = ((double)(a >> 11) + 1.0) * 0x1.0p-53; /* (0, 1] */
    double u2 = (double)(c >> 11) * 0x1.0p-53;         /* [0, 1) */

    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

void tpu__workload_transpose(const float *src, int64_t rows, int64_t cols, float *dst)
{
    int64_t i0, j0, i, j;

    for (i0 = 0; i0 < rows; i0 += 32) {
        for (j0 = 0; j0 < cols; j0 += 32) {
            for (i = i0; i < i0 + 32 && i < rows; i++) {
                for (j = j0; j < j0 + 32 && j < cols; j++) {
                    dst[j * rows + i] = src[i * cols + j];
                }
            }
        }
    }
}
