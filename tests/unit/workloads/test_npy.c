/*
 * .npy reader and writer: round trips of every supported type and shape, files
 * written by hand byte for byte as numpy writes them (versions 1.0 and 2.0),
 * the committed fixtures, and every refusal (bad magic, version, malformed
 * header, big-endian, Fortran order, wrong type, wrong shape, truncated or
 * over-long data), each with a message that names the file.  The OOM loop runs
 * the reader with a failing allocator.
 */
#include "tpu/npy.h"

#include "alloc.h"
#include "test_main.h"
#include "test_support.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static char dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/tpu_npy_XXXXXX");
    return mkdtemp(dir) == NULL ? -1 : 0;
}

static int teardown(void **state)
{
    char cmd[128];

    (void)state;
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static const char *path_of(const char *name)
{
    static char p[160];

    snprintf(p, sizeof(p), "%s/%s", dir, name);
    return p;
}

/* Write a file from a header text (version 'major') and raw data. */
static const char *write_raw(const char *name, int major, const char *header, const void *data,
                             size_t bytes)
{
    const char *p = path_of(name);
    FILE *f = fopen(p, "wb");
    size_t hl = strlen(header);
    unsigned char pre[12] = {0x93, 'N', 'U', 'M', 'P', 'Y', (unsigned char)major, 0};
    size_t pl = major == 1 ? 10 : 12;

    assert_non_null(f);
    pre[8] = (unsigned char)(hl & 0xff);
    pre[9] = (unsigned char)(hl >> 8);
    assert_int_equal(fwrite(pre, 1, pl, f), pl);
    assert_int_equal(fwrite(header, 1, hl, f), hl);
    if (bytes > 0) {
        assert_int_equal(fwrite(data, 1, bytes, f), bytes);
    }
    fclose(f);
    return p;
}

static void round_trip(void **state)
{
    float f[6] = {1.5f, -2.0f, 0.0f, 3.25f, 1e-30f, -7.0f};
    int32_t i4[3] = {0, 9, -5};
    int64_t i8[2] = {7, 1LL << 40};
    int64_t s23[2] = {2, 3}, s3[1] = {3}, s2[1] = {2};
    tpu_npy_t a;
    tpu_err_t err = {0};

    (void)state;
    assert_int_equal(tpu_npy_write(path_of("f.npy"), TPU_NPY_F32, 2, s23, f, &err), TPU_OK);
    assert_int_equal(tpu_npy_read(path_of("f.npy"), &a, &err), TPU_OK);
    assert_int_equal(a.type, TPU_NPY_F32);
    assert_int_equal(a.ndim, 2);
    assert_int_equal(a.shape[0], 2);
    assert_int_equal(a.shape[1], 3);
    assert_int_equal(a.count, 6);
    assert_memory_equal(a.data, f, sizeof(f));
    tpu_npy_fini(&a);
    assert_null(a.data);

    assert_int_equal(tpu_npy_write(path_of("i4.npy"), TPU_NPY_I32, 1, s3, i4, &err), TPU_OK);
    assert_int_equal(tpu_npy_read(path_of("i4.npy"), &a, &err), TPU_OK);
    assert_int_equal(a.type, TPU_NPY_I32);
    assert_int_equal(a.ndim, 1);
    assert_int_equal(a.shape[0], 3);
    assert_memory_equal(a.data, i4, sizeof(i4));
    tpu_npy_fini(&a);

    assert_int_equal(tpu_npy_write(path_of("i8.npy"), TPU_NPY_I64, 1, s2, i8, &err), TPU_OK);
    assert_int_equal(tpu_npy_read(path_of("i8.npy"), &a, &err), TPU_OK);
    assert_int_equal(a.type, TPU_NPY_I64);
    assert_memory_equal(a.data, i8, sizeof(i8));
    tpu_npy_fini(&a);

    /* A scalar and an empty array. */
    assert_int_equal(tpu_npy_write(path_of("s.npy"), TPU_NPY_F32, 0, NULL, f, &err), TPU_OK);
    assert_int_equal(tpu_npy_read(path_of("s.npy"), &a, &err), TPU_OK);
    assert_int_equal(a.ndim, 0);
    assert_int_equal(a.count, 1);
    assert_true(((float *)a.data)[0] == 1.5f);
    tpu_npy_fini(&a);
    {
        int64_t e[2] = {0, 784};

        assert_int_equal(tpu_npy_write(path_of("e.npy"), TPU_NPY_F32, 2, e, NULL, &err), TPU_OK);
        assert_int_equal(tpu_npy_read(path_of("e.npy"), &a, &err), TPU_OK);
        assert_int_equal(a.count, 0);
        assert_int_equal(a.shape[1], 784);
        tpu_npy_fini(&a);
    }
    tpu_npy_fini(&a); /* a zeroed array: no-op */
}

/* The bytes numpy 1.x writes for np.save(f, np.arange(3, dtype='<f4')). */
static void exact_bytes(void **state)
{
    static const char want_hdr[] = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }";
    float f[3] = {0, 1, 2};
    int64_t s3[1] = {3};
    tpu_err_t err = {0};
    unsigned char buf[256];
    FILE *fp;
    size_t n;

    (void)state;
    assert_int_equal(tpu_npy_write(path_of("x.npy"), TPU_NPY_F32, 1, s3, f, &err), TPU_OK);
    fp = fopen(path_of("x.npy"), "rb");
    assert_non_null(fp);
    n = fread(buf, 1, sizeof(buf), fp);
    fclose(fp);
    assert_int_equal(n, 128 + 12);
    assert_memory_equal(buf, "\x93NUMPY\x01\x00\x76\x00", 10);
    assert_memory_equal(buf + 10, want_hdr, sizeof(want_hdr) - 1);
    assert_int_equal(buf[127], '\n');
    assert_int_equal(buf[126], ' ');
    assert_memory_equal(buf + 128, f, 12);
}

/* Headers numpy and other writers produce: other key orders, double quotes, v2. */
static void header_variants(void **state)
{
    float f[4] = {1, 2, 3, 4};
    tpu_npy_t a;
    tpu_err_t err = {0};
    const char *p;

    (void)state;
    p = write_raw("v.npy", 1, "{\"shape\": (2, 2), \"fortran_order\": False, \"descr\": \"<f4\"}\n",
                  f, sizeof(f));
    assert_int_equal(tpu_npy_read(p, &a, &err), TPU_OK);
    assert_int_equal(a.shape[0], 2);
    assert_int_equal(a.shape[1], 2);
    tpu_npy_fini(&a);
    p = write_raw("v2.npy", 2, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,)}   \n", f,
                  sizeof(f));
    assert_int_equal(tpu_npy_read(p, &a, &err), TPU_OK);
    assert_int_equal(a.count, 4);
    assert_memory_equal(a.data, f, sizeof(f));
    tpu_npy_fini(&a);
}

/* Expect a refusal whose message names the file and contains 'needle'. */
static void expect_bad(const char *p, const char *needle)
{
    tpu_npy_t a;
    tpu_err_t err = {0};

    assert_int_equal(tpu_npy_read(p, &a, &err), TPU_ERR_INVALID);
    if (strstr(err.msg, p) == NULL || strstr(err.msg, needle) == NULL) {
        fail_msg("message '%s' lacks '%s' or the path", err.msg, needle);
    }
    /* Mapping refuses the same files with the same words. */
    memset(&err, 0, sizeof(err));
    assert_int_equal(tpu_npy_map(p, &a, &err), TPU_ERR_INVALID);
    if (strstr(err.msg, p) == NULL || strstr(err.msg, needle) == NULL) {
        fail_msg("map: message '%s' lacks '%s' or the path", err.msg, needle);
    }
}

/* tpu_npy_map: the file's bytes in place when the data is aligned, else a copy. */
static void mapped(void **state)
{
    float f[6] = {1.5f, -2.0f, 0.0f, 3.25f, 1e-30f, -7.0f};
    int64_t s23[2] = {2, 3}, shape[2] = {-1, 3}, bad[2] = {-1, 4};
    tpu_npy_t a;
    tpu_err_t err = {0};
    const char *p;
    size_t off;

    (void)state;
    /* Written by tpu_npy_write: the header is padded to 64 bytes, so it maps. */
    assert_int_equal(tpu_npy_write(path_of("m.npy"), TPU_NPY_F32, 2, s23, f, &err), TPU_OK);
    assert_int_equal(tpu_npy_map(path_of("m.npy"), &a, &err), TPU_OK);
    assert_non_null(a.map);
    off = (size_t)((char *)a.data - (char *)a.map);
    assert_int_equal(off % 64, 0);
    assert_int_equal(a.map_len, off + sizeof(f));
    assert_memory_equal(a.data, f, sizeof(f));
    assert_int_equal(tpu_npy_check_f32(&a, path_of("m.npy"), "x", 2, shape, &err), TPU_OK);
    assert_int_equal(shape[0], 2);
    assert_int_equal(tpu_npy_check_f32(&a, path_of("m.npy"), "x", 2, bad, &err), TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "x must have shape [N,4], got [2,3]"));
    tpu_npy_fini(&a);
    assert_null(a.map);
    assert_null(a.data);
    /* A 68-byte header puts the data at byte 78: read, not mapped. */
    p = write_raw("odd.npy", 1,
                  "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }          \n", f,
                  sizeof(f));
    assert_int_equal(tpu_npy_map(p, &a, &err), TPU_OK);
    assert_null(a.map);
    assert_memory_equal(a.data, f, sizeof(f));
    tpu_npy_fini(&a);
}

static void refusals(void **state)
{
    float f[4] = {1, 2, 3, 4};
    const char *p;
    FILE *fp;

    (void)state;
    expect_bad(path_of("missing.npy"), "cannot open");
    fp = fopen(path_of("junk.npy"), "wb");
    fputs("not numpy at all", fp);
    fclose(fp);
    expect_bad(path_of("junk.npy"), "bad magic");
    expect_bad(write_raw("ver.npy", 9, "{}", NULL, 0), "version 9.0");
    expect_bad(write_raw("be.npy", 1, "{'descr': '>f4', 'fortran_order': False, 'shape': (4,), }\n",
                         f, sizeof(f)),
               "big-endian");
    expect_bad(write_raw("fo.npy", 1,
                         "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }\n", f,
                         sizeof(f)),
               "Fortran");
    expect_bad(write_raw("f8.npy", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }\n",
                         f, sizeof(f)),
               "'<f8' is not supported");
    expect_bad(write_raw("tr.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }\n",
                         f, sizeof(f)),
               "truncated: only 16 bytes of data for 5 elements");
    expect_bad(write_raw("long.npy", 1,
                         "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }\n", f,
                         sizeof(f)),
               "too long");
    expect_bad(write_raw("nokey.npy", 1, "{'descr': '<f4', 'shape': (4,), }\n", f, sizeof(f)),
               "missing key 'fortran_order'");
    expect_bad(write_raw("extra.npy", 1,
                         "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'x': 1}\n", f,
                         sizeof(f)),
               "unexpected or repeated key 'x'");
    expect_bad(write_raw("shape.npy", 1,
                         "{'descr': '<f4', 'fortran_order': False, 'shape': (4;), }\n", f,
                         sizeof(f)),
               "malformed");
    expect_bad(write_raw("brace.npy", 1, "'descr': '<f4'\n", f, sizeof(f)), "expected '{'");
    p = write_raw("hdr.npy", 1, "{'descr': '<f4', 'fortran_order': Fal", NULL, 0);
    expect_bad(p, "malformed");
    fp = fopen(path_of("short.npy"), "wb");
    fwrite("\x93NUMPY\x01\x00\x40\x00{'descr'", 1, 18, fp);
    fclose(fp);
    expect_bad(path_of("short.npy"), "truncated .npy header");
}

static void read_f32_checks(void **state)
{
    float f[6] = {1, 2, 3, 4, 5, 6}, *data = NULL;
    int32_t i4[6] = {0};
    int64_t s23[2] = {2, 3}, want[2];
    tpu_err_t err = {0};

    (void)state;
    assert_int_equal(tpu_npy_write(path_of("w.npy"), TPU_NPY_F32, 2, s23, f, &err), TPU_OK);
    want[0] = -1;
    want[1] = 3;
    assert_int_equal(tpu_npy_read_f32(path_of("w.npy"), "x", 2, want, &data, &err), TPU_OK);
    assert_int_equal(want[0], 2);
    assert_memory_equal(data, f, sizeof(f));
    tpu__free(data);
    want[0] = 3;
    want[1] = 2;
    assert_int_equal(tpu_npy_read_f32(path_of("w.npy"), "w1", 2, want, &data, &err),
                     TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "w1 must have shape [3,2], got [2,3]"));
    assert_non_null(strstr(err.msg, path_of("w.npy")));
    tpu_err_clear(&err);
    assert_int_equal(tpu_npy_write(path_of("wi.npy"), TPU_NPY_I32, 2, s23, i4, &err), TPU_OK);
    want[0] = -1;
    want[1] = 3;
    assert_int_equal(tpu_npy_read_f32(path_of("wi.npy"), "x", 2, want, &data, &err),
                     TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "must be float32 '<f4' [N,3], got <i4 [2,3]"));
}

/* The committed fixtures, written byte for byte in the layout np.save uses
 * (tests/fixtures/npy/README.md). */
static void fixtures(void **state)
{
    tpu_npy_t a;
    tpu_err_t err = {0};
    char p[512];

    (void)state;
    snprintf(p, sizeof(p), "%s/tests/fixtures/npy/arange6_2x3_f4.npy", TPU_SOURCE_DIR);
    assert_int_equal(tpu_npy_read(p, &a, &err), TPU_OK);
    assert_int_equal(a.ndim, 2);
    assert_true(((float *)a.data)[5] == 5.0f);
    tpu_npy_fini(&a);
    snprintf(p, sizeof(p), "%s/tests/fixtures/npy/labels4_i8.npy", TPU_SOURCE_DIR);
    assert_int_equal(tpu_npy_read(p, &a, &err), TPU_OK);
    assert_int_equal(a.type, TPU_NPY_I64);
    assert_int_equal(((int64_t *)a.data)[3], 9);
    tpu_npy_fini(&a);
    snprintf(p, sizeof(p), "%s/tests/fixtures/npy/bigendian_f4.npy", TPU_SOURCE_DIR);
    expect_bad(p, "big-endian");
}

static void oom(void **state)
{
    float f[6] = {1, 2, 3, 4, 5, 6};
    int64_t s23[2] = {2, 3};
    long budget;
    tpu_err_t err = {0};

    (void)state;
    assert_int_equal(tpu_npy_write(path_of("o.npy"), TPU_NPY_F32, 2, s23, f, &err), TPU_OK);
    for (budget = 0;; budget++) {
        tpu_npy_t a;
        tpu_status_t status;

        tpu_err_clear(&err);
        tpu_test_alloc_fail_after(budget);
        status = tpu_npy_read(path_of("o.npy"), &a, &err);
        if (status == TPU_OK) {
            tpu_npy_fini(&a);
        }
        assert_int_equal(tpu_test_alloc_live(), 0);
        tpu_test_alloc_restore();
        if (status == TPU_OK) {
            break;
        }
        assert_int_equal(status, TPU_ERR_NO_MEMORY);
    }
    assert_true(budget >= 2);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trip),      cmocka_unit_test(exact_bytes),
        cmocka_unit_test(header_variants), cmocka_unit_test(refusals),
        cmocka_unit_test(read_f32_checks), cmocka_unit_test(mapped),
        cmocka_unit_test(fixtures),        cmocka_unit_test(oom),
    };
    const tpu_test_group_t group = {"",    "npy",   tests, sizeof tests / sizeof tests[0],
                                    setup, teardown};

    return tpu_test_main_groups(argc, argv, &group, 1);
}
