/*
 * Verification data for collectives: the input every chip gets in the tpuemu
 * program and the MPI tests, and the count of result elements that differ from
 * the reference (tpu_coll_reference()).
 *
 * The values are small integers, -8..8, varying with the chip and the index
 * (chip * 7 + i * 3 + i / 512, mod 17): exact in f32, bf16, i32 and i8, and so
 * are their sums over up to 16 chips in bf16 (|sum| <= 128 < 2^8) and far more
 * in f32 and i32, whatever the order of the reduction, so that results compare
 * bit for bit.  Cost: one pass over the buffer.
 */
#include "tpu/coll.h"
#include "tpu/dtype.h"

#include <string.h>

void tpu_coll_fill_exact(int chip, void *buf, uint64_t bytes, void *dtype_arg)
{
    tpu_dtype_t dtype = *(const tpu_dtype_t *)dtype_arg;
    uint64_t i, n = bytes / (uint64_t)tpu_dtype_size(dtype);

    for (i = 0; i < n; i++) {
        int v = (int)(((uint64_t)chip * 7u + i * 3u + (i >> 9)) % 17u) - 8;

        switch (dtype) {
        case TPU_DTYPE_F32:
            ((float *)buf)[i] = (float)v;
            break;
        case TPU_DTYPE_I32:
            ((int32_t *)buf)[i] = v;
            break;
        case TPU_DTYPE_I8:
            ((int8_t *)buf)[i] = (int8_t)v;
            break;
        default:
            ((uint16_t *)buf)[i] = tpu_dtype_f32_to_bf16((float)v);
            break;
        }
    }
}

uint64_t tpu_coll_count_wrong(const void *got, const void *want, uint64_t bytes, tpu_dtype_t dtype)
{
    size_t es = (size_t)tpu_dtype_size(dtype);
    uint64_t i, n = bytes / es, wrong = 0;

    if (memcmp(got, want, bytes) == 0) {
        return 0;
    }
    for (i = 0; i < n; i++) {
        if (memcmp((const char *)got + i * es, (const char *)want + i * es, es) != 0) {
            wrong++;
        }
    }
    return wrong;
}
