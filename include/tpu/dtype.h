/*
 * Element types: the one dtype enum of the library (collectives, chip arrays, the
 * CLI), their names and sizes, and the bfloat16 conversions shared by the
 * collectives (bf16 reductions) and the chip model (MXU and VPU inputs).  bf16
 * is the top half of an IEEE binary32; a bf16 array holds the 16 bits of each
 * value (uint16_t).
 */
#ifndef TPU_DTYPE_H
#define TPU_DTYPE_H

#include "tpu/status.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    TPU_DTYPE_F32 = 0,
    TPU_DTYPE_BF16 = 1,
    TPU_DTYPE_I32 = 2,
    TPU_DTYPE_I8 = 3,
    TPU_DTYPE_COUNT
} tpu_dtype_t;

/* "f32", "bf16", "i32", "i8"; "?" for anything else. */
TPU_API const char *tpu_dtype_name(tpu_dtype_t dtype);
/* Bytes per element: 4, 2, 4, 1; 0 for anything else. */
TPU_API int tpu_dtype_size(tpu_dtype_t dtype);
/*
 * Parse a name; "float32", "bfloat16", "int32" and "int8" (and "float", "int")
 * are accepted too.  @return TPU_OK, or TPU_ERR_INVALID listing the known names.
 */
TPU_API tpu_status_t tpu_dtype_parse(const char *text, tpu_dtype_t *dtype_p, tpu_err_t *err);

/* Widen a bf16 (as its 16 bits) to f32: exact. */
static inline float tpu_dtype_bf16_to_f32(uint16_t h)
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
static inline uint16_t tpu_dtype_f32_to_bf16(float f)
{
    uint32_t u;

    memcpy(&u, &f, sizeof(u));
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        return (uint16_t)((u >> 16) | 0x0040u);
    }
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* Bulk conversions of 'n' elements (vectorised; the same bits as the two above). */
TPU_API void tpu_dtype_bf16_widen(const uint16_t *src, float *dst, size_t n);
TPU_API void tpu_dtype_bf16_narrow(const float *src, uint16_t *dst, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* TPU_DTYPE_H */
