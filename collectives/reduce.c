/*
 * Reduction kernels.  Plain loops over restrict pointers, one per (type, op), so
 * that the compiler vectorises each of them (gcc -O2 with -ftree-vectorize, the
 * default at -O3; the build adds it for this file).
 */
#include "reduce.h"

#include <stdint.h>

#define DEFINE_REDUCE(name, type, expr)                                  \
    static void name(type *restrict d, const type *restrict s, size_t n) \
    {                                                                    \
        size_t i;                                                        \
        for (i = 0; i < n; i++) {                                        \
            d[i] = (expr);                                               \
        }                                                                \
    }

DEFINE_REDUCE(sum_f32, float, d[i] + s[i])
DEFINE_REDUCE(max_f32, float, d[i] > s[i] ? d[i] : s[i])
DEFINE_REDUCE(min_f32, float, d[i] < s[i] ? d[i] : s[i])
DEFINE_REDUCE(sum_i32, int32_t, (int32_t)((uint32_t)d[i] + (uint32_t)s[i]))
DEFINE_REDUCE(max_i32, int32_t, d[i] > s[i] ? d[i] : s[i])
DEFINE_REDUCE(min_i32, int32_t, d[i] < s[i] ? d[i] : s[i])

void tpu__reduce(tpu_dtype_t dtype, tpu_redop_t op, void *dst, const void *src, size_t n)
{
    if (dtype == TPU_DTYPE_I32) {
        switch (op) {
        case TPU_REDOP_MAX:
            max_i32(dst, src, n);
            return;
        case TPU_REDOP_MIN:
            min_i32(dst, src, n);
            return;
        default:
            sum_i32(dst, src, n);
            return;
        }
    }
    switch (op) {
    case TPU_REDOP_MAX:
        max_f32(dst, src, n);
        return;
    case TPU_REDOP_MIN:
        min_f32(dst, src, n);
        return;
    default:
        sum_f32(dst, src, n);
        return;
    }
}
