/*
 * Reduction kernels.  Plain loops over restrict pointers, one per (type, op), so
 * that the compiler vectorises each of them (gcc -O2 with -ftree-vectorize, the
 * default at -O3; the build adds it for this file).
 */
#include "reduce.h"

#include <stdint.h>
#include <string.h>

#define DEFINE_REDUCE(name, type, expr)                                    \
    static void name(void *restrict dv, const void *restrict sv, size_t n) \
    {                                                                      \
        type *restrict d = dv;                                             \
        const type *restrict s = sv;                                       \
        size_t i;                                                          \
        for (i = 0; i < n; i++) {                                          \
            d[i] = (expr);                                                 \
        }                                                                  \
    }

DEFINE_REDUCE(sum_f32, float, d[i] + s[i])
DEFINE_REDUCE(max_f32, float, d[i] > s[i] ? d[i] : s[i])
DEFINE_REDUCE(min_f32, float, d[i] < s[i] ? d[i] : s[i])
DEFINE_REDUCE(sum_i32, int32_t, (int32_t)((uint32_t)d[i] + (uint32_t)s[i]))
DEFINE_REDUCE(max_i32, int32_t, d[i] > s[i] ? d[i] : s[i])
DEFINE_REDUCE(min_i32, int32_t, d[i] < s[i] ? d[i] : s[i])

typedef void (*kernel_fn)(void *restrict d, const void *restrict s, size_t n);

/* The kernels by (working type, reduction): f32 (also bf16's working type), i32. */
static const kernel_fn kernels[2][TPU_REDOP_COUNT] = {
    {[TPU_REDOP_SUM] = sum_f32, [TPU_REDOP_MAX] = max_f32, [TPU_REDOP_MIN] = min_f32},
    {[TPU_REDOP_SUM] = sum_i32, [TPU_REDOP_MAX] = max_i32, [TPU_REDOP_MIN] = min_i32},
};
_Static_assert(TPU_REDOP_COUNT == 3, "the kernel table lists every reduction");

void tpu__reduce(tpu_dtype_t dtype, tpu_redop_t op, void *dst, const void *src, size_t n)
{
    kernel_fn fn = kernels[dtype == TPU_DTYPE_I32][(unsigned)op < TPU_REDOP_COUNT ? op : 0];

    fn(dst, src, n);
}

/* bf16 bits to f32: the top half of the word (exact); memcpy, not a pointer cast. */
static inline float wide(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;

    memcpy(&f, &u, sizeof(f));
    return f;
}

#define DEFINE_REDUCE_BF16(name, expr)                                        \
    static void name(float *restrict d, const uint16_t *restrict s, size_t n) \
    {                                                                         \
        size_t i;                                                             \
        for (i = 0; i < n; i++) {                                             \
            float w = wide(s[i]);                                             \
            d[i] = (expr);                                                    \
        }                                                                     \
    }

DEFINE_REDUCE_BF16(sum_bf16, d[i] + w)
DEFINE_REDUCE_BF16(max_bf16, d[i] > w ? d[i] : w)
DEFINE_REDUCE_BF16(min_bf16, d[i] < w ? d[i] : w)

void tpu__reduce_bf16(tpu_redop_t op, float *dst, const uint16_t *src, size_t n)
{
    if (op == TPU_REDOP_MAX) {
        max_bf16(dst, src, n);
    } else if (op == TPU_REDOP_MIN) {
        min_bf16(dst, src, n);
    } else {
        sum_bf16(dst, src, n);
    }
}
