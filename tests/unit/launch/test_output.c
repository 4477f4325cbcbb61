/*
 * The output layer of launch/: JSON escaping (quotes, backslashes, control
 * characters), numbers that refuse inf and nan, nesting and separators; CSV
 * quoting; table alignment; a write error reported at close.  Expected texts
 * are written out by hand.
 */
#include "csv.h"
#include "json.h"
#include "sink.h"
#include "table.h"
#include "test_main.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

/* Everything written to 'f' so far, as a string in 'buf'. */
static const char *contents(FILE *f, char *buf, size_t len)
{
    size_t n;

    fflush(f);
    rewind(f);
    n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    return buf;
}

static void test_json_document(void **state)
{
    FILE *f = tmpfile();
    app_json_t j;
    tpu_err_t err = {0};
    char buf[512];

    (void)state;
    assert_non_null(f);
    app_json_init(&j, f);
    app_json_document(&j, "model");
    app_json_kstr(&j, "chip", "v\"5\\e\n\x01");
    app_json_kint(&j, "chips", -3);
    app_json_karray(&j, "rows");
    app_json_object(&j);
    app_json_kfixed(&j, "us", 1.5, 3);
    app_json_object_end(&j);
    app_json_uint(&j, 18446744073709551615ull);
    app_json_array_end(&j);
    app_json_kbool(&j, "passed", 1);
    app_json_ksig(&j, "bw", 1.6e12, 6); /* whole: an integer */
    /* Other numbers with the fewest digits that read back; -0 as 0. */
    app_json_knum(&j, "a", 0.1);
    app_json_knum(&j, "b", 1.0 / 3.0);
    app_json_knum(&j, "c", -0.0);
    app_json_knum(&j, "d", 6.5666666666666664e13);
    /* Valid UTF-8: an invalid byte (Latin-1) and a cut sequence as \u00XX, valid ones kept. */
    app_json_kstr(&j, "latin1", "caf\xe9");
    app_json_kstr(&j, "utf8", "caf\xc3\xa9 \xe2\x86\x92");
    app_json_kstr(&j, "cut", "\xe2\x86");
    app_json_object_end(&j);
    assert_int_equal(app_json_end(&j, &err), TPU_OK);
    assert_string_equal(contents(f, buf, sizeof(buf)),
                        "{\"schema_version\": 2, \"command\": \"model\", "
                        "\"chip\": \"v\\\"5\\\\e\\n\\u0001\", \"chips\": -3, \"rows\": "
                        "[{\"us\": 1.5}, 18446744073709551615], \"passed\": true, "
                        "\"bw\": 1600000000000, \"a\": 0.1, \"b\": 0.3333333333333333, \"c\": 0, "
                        "\"d\": 65666666666666.664, \"latin1\": \"caf\\u00e9\", "
                        "\"utf8\": \"caf\xc3\xa9 \xe2\x86\x92\", \"cut\": \"\\u00e2\\u0086\"}\n");
    fclose(f);
}

static void test_json_refuses_inf_nan(void **state)
{
    FILE *f = tmpfile();
    app_json_t j;
    tpu_err_t err = {0};
    char buf[256];

    (void)state;
    app_json_init(&j, f);
    app_json_object(&j);
    app_json_kfixed(&j, "modeled_us", INFINITY, 3);
    app_json_ksig(&j, "ratio", NAN, 4);
    app_json_object_end(&j);
    assert_int_equal(app_json_end(&j, &err), TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "inf"));
    assert_non_null(strstr(err.msg, "'modeled_us'"));
    /* Still a document: null in place of the refused values. */
    assert_string_equal(contents(f, buf, sizeof(buf)), "{\"modeled_us\": null, \"ratio\": null}\n");
    fclose(f);
}

static void test_csv_quoting(void **state)
{
    FILE *f = tmpfile();
    app_csv_t c;
    char buf[256];
    static const char *const names[] = {"name", "bytes", "us", "mpi_us"};

    (void)state;
    app_csv_init(&c, f);
    app_csv_header(&c, names, 4);
    app_csv_str(&c, "a,\"b\"");
    app_csv_uint(&c, 64);
    app_csv_fixed(&c, 0.25, 2);
    app_csv_empty(&c);
    app_csv_end_row(&c);
    assert_string_equal(contents(f, buf, sizeof(buf)),
                        "name,bytes,us,mpi_us\n\"a,\"\"b\"\"\",64,0.25,\n");
    fclose(f);
}

static void test_table(void **state)
{
    FILE *f = tmpfile();
    char buf[256];
    static const app_col_t cols[] = {{"name", NULL, 6, 1, 0}, {"us", "(TPU)", 5, 0, 2}};
    const char *cells[] = {"psum", "1.5"};

    (void)state;
    app_table_header(f, "# ", cols, 2);
    app_table_row(f, "  ", cols, 2, cells);
    assert_string_equal(contents(f, buf, sizeof(buf)), "# name       us\n"
                                                       "#         (TPU)\n"
                                                       "  psum      1.5\n");
    fclose(f);
}

static void test_sink_errors(void **state)
{
    app_sink_t s;
    tpu_err_t err = {0};

    (void)state;
    assert_int_equal(app_sink_open(&s, "/nonexistent-folder/out.json", &err), TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "cannot write '/nonexistent-folder/out.json'"));
    tpu_err_clear(&err);
    if (app_sink_open(&s, "/dev/full", &err) == TPU_OK) { /* Linux: writes fail, ENOSPC */
        fputs("{}\n", s.f);
        assert_int_equal(app_sink_close(&s, &err), TPU_ERR_IO);
        assert_non_null(strstr(err.msg, "cannot write '/dev/full'"));
    }
    tpu_err_clear(&err);
    assert_int_equal(app_sink_check("-", "-", &err), TPU_ERR_INVALID);
    assert_ptr_equal(app_sink_text("-", NULL), stderr);
    assert_ptr_equal(app_sink_text("x.json", NULL), stdout);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_document), cmocka_unit_test(test_json_refuses_inf_nan),
        cmocka_unit_test(test_csv_quoting),   cmocka_unit_test(test_table),
        cmocka_unit_test(test_sink_errors),
    };

    return tpu_test_main(argc, argv, "output", tests, sizeof tests / sizeof tests[0]);
}
