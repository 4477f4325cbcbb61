/*
 * Small pieces of the chip model: element types, byte formatting, bulk bf16
 * conversions, the wall clock.
 *
 * The bulk conversions run on every block the MXU and the VPU touch, so they
 * are written for the compiler's vectorizer at -O2: fixed-length inner loops of
 * 16 elements with no branches (GCC 12's "very cheap" cost model vectorizes
 * those, and not a loop with a variable trip count and an epilogue).  The
 * conversions have SSE2 paths (x86-64's baseline): the rounding because SSE2
 * lacks the unsigned 32 -> 16 bit pack the compiler would need, the widening
 * because one unpack instruction does it.  All give the same bits
 * as tpu_f32_to_bf16() and tpu_bf16_to_f32() of tpu/dtype.h.
 */
#include "tpu/dtype.h"
#include "tpu/ops.h"

#include "chip_internal.h"

#include <stdio.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define CHUNK 16

static const struct {
    const char *name;
    int size;
} elems[TPU_ELEM_COUNT] = {
    [TPU_ELEM_F32] = {"f32", 4},
    [TPU_ELEM_BF16] = {"bf16", 2},
    [TPU_ELEM_INT32] = {"int32", 4},
    [TPU_ELEM_INT8] = {"int8", 1},
};

const char *tpu_elem_name(tpu_elem_t elem)
{
    return ((unsigned)elem < TPU_ELEM_COUNT) ? elems[elem].name : "?";
}

int tpu_elem_size(tpu_elem_t elem)
{
    return ((unsigned)elem < TPU_ELEM_COUNT) ? elems[elem].size : 0;
}

tpu_status_t tpu_elem_parse(const char *text, tpu_elem_t *elem_p, tpu_err_t *err)
{
    int i;

    if (text != NULL && elem_p != NULL) {
        for (i = 0; i < TPU_ELEM_COUNT; i++) {
            if (strcmp(text, elems[i].name) == 0) {
                *elem_p = (tpu_elem_t)i;
                return TPU_OK;
            }
        }
        if (strcmp(text, "i8") == 0) {
            *elem_p = TPU_ELEM_INT8;
            return TPU_OK;
        }
        if (strcmp(text, "i32") == 0) {
            *elem_p = TPU_ELEM_INT32;
            return TPU_OK;
        }
    }
    return tpu_err_set(err, TPU_ERR_INVALID, "unknown dtype '%s' (known: bf16, f32, int8, int32)",
                       text != NULL ? text : "");
}

void tpu__fmt_bytes(double bytes, int decimals, char *buf, size_t len)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = bytes;
    int u = -1;

    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    if (u < 0) {
        snprintf(buf, len, "%.0f B", bytes);
    } else {
        snprintf(buf, len, "%.*f %s", decimals, v, units[u]);
    }
}

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

void tpu__bf16_widen(const uint16_t *restrict src, float *restrict dst, size_t n)
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
        dst[i] = tpu_bf16_to_f32(src[i]);
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

void tpu__bf16_narrow(const float *restrict src, uint16_t *restrict dst, size_t n)
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
