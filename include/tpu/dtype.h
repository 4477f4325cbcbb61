/*
 * bfloat16 conversions, shared by the collectives (bf16 reductions) and the
 * chip model (MXU inputs).  bf16 is the top half of an IEEE binary32.
 */
#ifndef TPU_DTYPE_H
#define TPU_DTYPE_H

#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Widen a bf16 (as its 16 bits) to f32: exact. */
static inline float tpu_bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;

    memcpy(&f, &u, sizeof(f));
    return f;
}

/*
 * Round an f32 to bf16, to nearest, ties to even.  NaN stays a (quiet) NaN with
 * its sign; infinities and zeros keep their sign; values past the largest bf16
 * round to infinity; subnormals round like any other value.
 */
static inline uint16_t tpu_f32_to_bf16(float f)
{
    uint32_t u;

    memcpy(&u, &f, sizeof(u));
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        return (uint16_t)((u >> 16) | 0x0040u);
    }
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

#ifdef __cplusplus
}
#endif

#endif /* TPU_DTYPE_H */
