/*
 * Element types: names, sizes, parsing, and the bulk bf16 conversions.
 *
 * The bulk conversions run on every block the MXU and the VPU touch and on every
 * bf16 reduction of the collectives, so they are written for the compiler's
 * vectorizer at -O2: fixed-length inner loops of 16 elements with no branches
 * (GCC 12's "very cheap" cost model vectorizes those, and not a loop with a
 * variable trip count and an epilogue).  The conversions have SSE2 paths
 * (x86-64's baseline): the rounding because SSE2 lacks the unsigned 32 -> 16 bit
 * pack the compiler would need, the widening because one unpack instruction does
 * it.  All give the same bits as tpu_dtype_f32_to_bf16() and
 * tpu_dtype_bf16_to_f32() of tpu/dtype.h.
 */
#include "tpu/dtype.h"

#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define CHUNK 16

static const struct {
    const char *name;
    const char *alias; /* the long spelling */
    int size;
} dtypes[] = {
    [TPU_DTYPE_F32] = {"f32", "float32", 4},
    [TPU_DTYPE_BF16] = {"bf16", "bfloat16", 2},
    [TPU_DTYPE_I32] = {"i32", "int32", 4},
    [TPU_DTYPE_I8] = {"i8", "int8", 1},
};
_Static_assert(sizeof(dtypes) / sizeof(dtypes[0]) == TPU_DTYPE_COUNT,
               "the dtype table lists every tpu_dtype_t");

const char *tpu_dtype_name(tpu_dtype_t dtype)
{
    return (unsigned)dtype < TPU_DTYPE_COUNT ? dtypes[dtype].name : "?";
}

int tpu_dtype_size(tpu_dtype_t dtype)
{
    return (unsigned)dtype < TPU_DTYPE_COUNT ? dtypes[dtype].size : 0;
}

tpu_status_t tpu_dtype_parse(const char *text, tpu_dtype_t *dtype_p, tpu_err_t *err)
{
    int i;

    if (text == NULL) {
        text = "";
    }
    for (i = 0; i < TPU_DTYPE_COUNT; i++) {
        if (strcmp(text, dtypes[i].name) == 0 || strcmp(text, dtypes[i].alias) == 0) {
            *dtype_p = (tpu_dtype_t)i;
            return TPU_OK;
        }
    }
    if (strcmp(text, "float") == 0) {
        *dtype_p = TPU_DTYPE_F32;
    } else if (strcmp(text, "int") == 0) {
        *dtype_p = TPU_DTYPE_I32;
    } else {
        return tpu_err_set(err, TPU_ERR_INVALID, "unknown dtype '%s' (known: f32, bf16, i32, i8)",
                           text);
    }
    return TPU_OK;
}

/* The scalar rounding without a branch, for the vectorizer (same bits as tpu_dtype_f32_to_bf16). */
static inline uint16_t narrow_one(float f)
{
    uint32_t u;
    uint32_t rounded;
    uint32_t quiet;

    memcpy(&u, &f, sizeof(u));
    rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    quiet = (u >> 16) | 0x0040u;
    return (uint16_t)(((u & 0x7fffffffu) > 0x7f800000u) ? quiet : rounded);
}

void tpu_dtype_bf16_widen(const uint16_t *restrict src, float *restrict dst, size_t n)
{
    size_t i = 0;
    size_t j;

#if defined(__SSE2__)
    /* Interleaving zeros below each 16-bit value gives its f32 bits directly. */
    const __m128i zero = _mm_setzero_si128();

    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(const void *)(src + i));

        _mm_storeu_si128((__m128i *)(void *)(dst + i), _mm_unpacklo_epi16(zero, h));
        _mm_storeu_si128((__m128i *)(void *)(dst + i + 4), _mm_unpackhi_epi16(zero, h));
    }
#endif
    for (; i + CHUNK <= n; i += CHUNK) {
        uint32_t w[CHUNK];

        for (j = 0; j < CHUNK; j++) {
            w[j] = (uint32_t)src[i + j] << 16;
        }
        memcpy(dst + i, w, sizeof(w));
    }
    for (; i < n; i++) {
        dst[i] = tpu_dtype_bf16_to_f32(src[i]);
    }
}

#if defined(__SSE2__)
/* Round the four f32 bit patterns in 'u' to bf16, one per 32-bit lane. */
static inline __m128i narrow4(__m128i u)
{
    const __m128i one = _mm_set1_epi32(1);
    const __m128i half = _mm_set1_epi32(0x7fff);
    const __m128i inf = _mm_set1_epi32(0x7f800000);
    const __m128i abs_mask = _mm_set1_epi32(0x7fffffff);
    const __m128i quiet_bit = _mm_set1_epi32(0x0040);
    __m128i hi = _mm_srli_epi32(u, 16);
    __m128i rounded =
        _mm_srli_epi32(_mm_add_epi32(_mm_add_epi32(u, half), _mm_and_si128(hi, one)), 16);
    __m128i quiet = _mm_or_si128(hi, quiet_bit);
    __m128i nan = _mm_cmpgt_epi32(_mm_and_si128(u, abs_mask), inf);

    return _mm_or_si128(_mm_and_si128(nan, quiet), _mm_andnot_si128(nan, rounded));
}
#endif

void tpu_dtype_bf16_narrow(const float *restrict src, uint16_t *restrict dst, size_t n)
{
    size_t i = 0;
    size_t j;

#if defined(__SSE2__)
    /* SSE2 has no unsigned 32 -> 16 bit pack: shift the values (0 .. 0xffff) into
     * the signed range, pack with signed saturation (exact there), shift back. */
    const __m128i bias32 = _mm_set1_epi32(0x8000);
    const __m128i bias16 = _mm_set1_epi16((short)-0x8000);

    for (; i + 8 <= n; i += 8) {
        __m128i lo = narrow4(_mm_loadu_si128((const __m128i *)(const void *)(src + i)));
        __m128i hi = narrow4(_mm_loadu_si128((const __m128i *)(const void *)(src + i + 4)));
        __m128i packed = _mm_packs_epi32(_mm_sub_epi32(lo, bias32), _mm_sub_epi32(hi, bias32));

        _mm_storeu_si128((__m128i *)(void *)(dst + i), _mm_xor_si128(packed, bias16));
    }
#endif
    for (; i + CHUNK <= n; i += CHUNK) {
        for (j = 0; j < CHUNK; j++) {
            dst[i + j] = narrow_one(src[i + j]);
        }
    }
    for (; i < n; i++) {
        dst[i] = narrow_one(src[i]);
    }
}
