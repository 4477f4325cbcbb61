/*
 * bf16 rounding: f32 -> bf16 to nearest, ties to even, bit for bit, through the
 * scalar conversion of tpu/dtype.h and the chip model's bulk conversions.
 */
#include "tpu/dtype.h"

#include "chip_internal.h"
#include "test_main.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

static float from_bits(uint32_t u)
{
    float f;

    memcpy(&f, &u, sizeof(f));
    return f;
}

static uint32_t to_bits(float f)
{
    uint32_t u;

    memcpy(&u, &f, sizeof(u));
    return u;
}

static int is_nan16(uint16_t h)
{
    return (h & 0x7f80u) == 0x7f80u && (h & 0x007fu) != 0;
}

/* The f32 bits and the bf16 bits they must round to. */
static const struct {
    uint32_t f32;
    uint16_t bf16;
    const char *what;
} cases[] = {
    {0x3f800000u, 0x3f80u, "1.0 exact"},
    {0x3f808000u, 0x3f80u, "tie, lower neighbour even: down"},
    {0x3f818000u, 0x3f82u, "tie, lower neighbour odd: up to even"},
    {0x3f808001u, 0x3f81u, "just above the tie: up"},
    {0x3f807fffu, 0x3f80u, "just below the tie: down"},
    {0xbf808000u, 0xbf80u, "negative tie: to even (down in magnitude)"},
    {0xbf818000u, 0xbf82u, "negative tie: to even (up in magnitude)"},
    {0x3fffffffu, 0x4000u, "carry into the exponent"},
    {0x00000000u, 0x0000u, "+0"},
    {0x80000000u, 0x8000u, "-0"},
    {0x00010000u, 0x0001u, "smallest bf16 subnormal, exact"},
    {0x00008000u, 0x0000u, "tie between 0 and the smallest subnormal: to 0 (even)"},
    {0x00018000u, 0x0002u, "subnormal tie: up to even"},
    {0x00008001u, 0x0001u, "above half the smallest subnormal: kept, not flushed"},
    {0x00000001u, 0x0000u, "smallest f32 subnormal: rounds to 0"},
    {0x80008001u, 0x8001u, "negative subnormal kept"},
    {0x007fffffu, 0x0080u, "largest f32 subnormal rounds up to the smallest normal"},
    {0x7f800000u, 0x7f80u, "+inf"},
    {0xff800000u, 0xff80u, "-inf"},
    {0x7f7f0000u, 0x7f7fu, "largest finite bf16, exact"},
    {0x7f7f7fffu, 0x7f7fu, "below the tie above the largest finite: stays finite"},
    {0x7f7f8000u, 0x7f80u, "tie above the largest finite (odd): to +inf"},
    {0x7f7fffffu, 0x7f80u, "FLT_MAX overflows to +inf"},
    {0xff7fffffu, 0xff80u, "-FLT_MAX overflows to -inf"},
    {0x7fc00000u, 0x7fc0u, "quiet NaN"},
    {0xffc00000u, 0xffc0u, "negative quiet NaN"},
    {0x7fa00000u, 0x7fe0u, "NaN payload in the top bits kept, made quiet"},
};

static void test_cases_scalar(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint16_t got = tpu_dtype_f32_to_bf16(from_bits(cases[i].f32));

        if (got != cases[i].bf16) {
            fail_msg("%s: f32 0x%08x -> 0x%04x, expected 0x%04x", cases[i].what,
                     (unsigned)cases[i].f32, (unsigned)got, (unsigned)cases[i].bf16);
        }
    }
}

static void test_cases_bulk(void **state)
{
    enum {
        N = sizeof(cases) / sizeof(cases[0])
    };
    float in[N];
    uint16_t out[N];
    size_t i;

    (void)state;
    for (i = 0; i < N; i++) {
        in[i] = from_bits(cases[i].f32);
    }
    tpu_dtype_bf16_narrow(in, out, N);
    for (i = 0; i < N; i++) {
        if (out[i] != cases[i].bf16) {
            fail_msg("bulk %s: 0x%04x, expected 0x%04x", cases[i].what, (unsigned)out[i],
                     (unsigned)cases[i].bf16);
        }
    }
}

/* A signalling NaN whose payload is only in the low 16 bits must not become inf. */
static void test_nan_stays_nan(void **state)
{
    static const uint32_t nans[] = {0x7f800001u, 0xff800001u, 0x7f80ffffu,
                                    0x7fffffffu, 0xffffffffu, 0x7f810000u};
    float in[sizeof(nans) / sizeof(nans[0])];
    uint16_t out[sizeof(nans) / sizeof(nans[0])];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(nans) / sizeof(nans[0]); i++) {
        uint16_t h = tpu_dtype_f32_to_bf16(from_bits(nans[i]));

        assert_true(is_nan16(h));
        assert_int_equal(h & 0x0040u, 0x0040u); /* quiet */
        assert_int_equal(h & 0x8000u, (nans[i] >> 16) & 0x8000u);
        in[i] = from_bits(nans[i]);
    }
    tpu_dtype_bf16_narrow(in, out, sizeof(nans) / sizeof(nans[0]));
    for (i = 0; i < sizeof(nans) / sizeof(nans[0]); i++) {
        assert_int_equal(out[i], tpu_dtype_f32_to_bf16(in[i]));
    }
}

/* Every bf16 widens exactly and rounds back to itself (NaNs to a quiet NaN). */
static void test_round_trip_all(void **state)
{
    static uint16_t all[65536];
    static float wide[65536];
    static uint16_t back[65536];
    uint32_t h;

    (void)state;
    for (h = 0; h < 65536; h++) {
        all[h] = (uint16_t)h;
    }
    tpu_dtype_bf16_widen(all, wide, 65536);
    tpu_dtype_bf16_narrow(wide, back, 65536);
    for (h = 0; h < 65536; h++) {
        assert_int_equal(to_bits(wide[h]), h << 16);
        assert_int_equal(to_bits(tpu_dtype_bf16_to_f32((uint16_t)h)), h << 16);
        if (is_nan16((uint16_t)h)) {
            assert_true(is_nan16(back[h]));
        } else {
            assert_int_equal(back[h], h);
        }
    }
}

/* The bulk rounding equals the scalar one on a sweep of f32 bit patterns, with a
 * length that is not a multiple of the 16-wide chunks. */
static void test_bulk_matches_scalar(void **state)
{
    enum {
        N = 100003
    };
    static float in[N];
    static uint16_t out[N];
    uint32_t x = 12345;
    size_t i;

    (void)state;
    for (i = 0; i < N; i++) {
        x = x * 1664525u + 1013904223u;
        in[i] = from_bits(i % 7 == 0 ? (x & 0xffff8000u) | 0x8000u : x);
    }
    tpu_dtype_bf16_narrow(in, out, N);
    for (i = 0; i < N; i++) {
        if (out[i] != tpu_dtype_f32_to_bf16(in[i])) {
            fail_msg("index %zu: f32 0x%08x bulk 0x%04x scalar 0x%04x", i, (unsigned)to_bits(in[i]),
                     (unsigned)out[i], (unsigned)tpu_dtype_f32_to_bf16(in[i]));
        }
    }
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases_scalar),        cmocka_unit_test(test_cases_bulk),
        cmocka_unit_test(test_nan_stays_nan),       cmocka_unit_test(test_round_trip_all),
        cmocka_unit_test(test_bulk_matches_scalar),
    };

    return tpu_test_main(argc, argv, "chip bf16", tests, sizeof tests / sizeof tests[0]);
}
