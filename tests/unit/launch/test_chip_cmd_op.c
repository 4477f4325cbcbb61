/*
 * "tpuemu model --op ...": the table, the JSON object, and one line plus exit
 * code 2 for every kind of bad input.  Calls app_main() ("tpuemu model ARGS")
 * in process and captures stdout and stderr.
 */
#include "cli.h"
#include "test_main.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

typedef struct captured {
    int rc;
    char out[8192];
    char err[2048];
} captured_t;

static void slurp(FILE *f, char *buf, size_t len)
{
    size_t n;

    rewind(f);
    n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
}

/* Run the command on the NULL-terminated 'args', capturing its output. */
static void run(captured_t *c, const char *const *args)
{
    FILE *out = tmpfile();
    FILE *err = tmpfile();
    int saved_out;
    int saved_err;
    int argc = 0;
    char *argv[32];

    assert_non_null(out);
    assert_non_null(err);
    argv[argc++] = (char *)"tpuemu";
    if (args[0] == NULL || strcmp(args[0], "model") != 0) {
        argv[argc++] = (char *)"model";
    }
    while (*args != NULL && argc < 31) {
        argv[argc++] = (char *)*args++;
    }
    argv[argc] = NULL;
    fflush(stdout);
    fflush(stderr);
    saved_out = dup(1);
    saved_err = dup(2);
    dup2(fileno(out), 1);
    dup2(fileno(err), 2);
    c->rc = app_main(argc, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(saved_out);
    close(saved_err);
    slurp(out, c->out, sizeof(c->out));
    slurp(err, c->err, sizeof(c->err));
    fclose(out);
    fclose(err);
}

static void test_matmul_json(void **state)
{
    const char *args[] = {"--op",    "matmul", "--m",    "8192", "--k",    "8192", "--n", "8192",
                          "--dtype", "bf16",   "--chip", "v5e",  "--json", "-",    NULL};
    captured_t c;

    (void)state;
    run(&c, args);
    assert_int_equal(c.rc, 0);
    assert_string_equal(c.err, "");
    assert_non_null(
        strstr(c.out, "{\"schema_version\": 2, \"command\": \"model --op\", \"chip\": \"v5e\", "
                      "\"op\": \"matmul\", \"dtype\": \"bf16\""));
    assert_non_null(strstr(c.out, "\"m\": 8192, \"k\": 8192, \"n\": 8192"));
    assert_non_null(strstr(c.out, "\"flops\": 1099511627776"));
    assert_non_null(strstr(c.out, "\"hbm_traffic_bytes\": 402653184"));
    assert_non_null(strstr(c.out, "\"intensity\": 2730.6666666666665"));
    assert_non_null(strstr(c.out, "\"modeled_us\": 5581.277"));
    assert_non_null(strstr(c.out, "\"bound\": \"compute\""));
    assert_non_null(strstr(c.out, "\"pipelined_us\": "));
    assert_ptr_equal(strchr(c.out, '\n'), c.out + strlen(c.out) - 1); /* one line */
}

static void test_add_json_and_table(void **state)
{
    const char *json[] = {"model", "--op", "add", "--elements", "67108864", "--json=-", NULL};
    const char *table[] = {"--op", "add", "--elements", "67108864", "--chip", "v4", NULL};
    const char *sm[] = {"--op",    "softmax", "--elements", "4096", "--cols", "128",
                        "--dtype", "f32",     "--json",     "-",    NULL};
    captured_t c;

    (void)state;
    run(&c, json);
    assert_int_equal(c.rc, 0);
    assert_non_null(strstr(c.out, "\"op\": \"add\""));
    assert_non_null(strstr(c.out, "\"elements\": 67108864"));
    assert_non_null(strstr(c.out, "\"modeled_us\": 497.10"));
    assert_non_null(strstr(c.out, "\"bound\": \"memory\""));
    run(&c, table);
    assert_int_equal(c.rc, 0);
    assert_non_null(strstr(c.out, "modeled      335.544 us, memory-bound"));
    assert_non_null(strstr(c.out, "pipelined"));
    run(&c, sm);
    assert_int_equal(c.rc, 0);
    assert_non_null(strstr(c.out, "\"rows\": 32, \"cols\": 128"));
}

static void test_help(void **state)
{
    const char *args[] = {"--op", "matmul", "--help", NULL};
    captured_t c;

    (void)state;
    run(&c, args);
    assert_int_equal(c.rc, 0);
    assert_non_null(strstr(c.out, "usage: tpuemu model --op matmul"));
}

/* Each bad input: exit 2, nothing on stdout, one line "tpuemu: ..." naming it. */
static void test_bad_input(void **state)
{
    static const struct {
        const char *argv[12];
        const char *needle;
    } cases[] = {
        {{"--op", "conv", "--elements", "4"}, "unknown op 'conv'"},
        {{"--op", "add", "--elements", "4", "--dtype", "fp8"}, "unknown dtype 'fp8'"},
        {{"--op", "add", "--elements", "4", "--frobnicate", "1"}, "unknown option '--frobnicate'"},
        {{"--op", "matmul", "--m", "4", "--k", "4"}, "needs --m, --k and --n"},
        {{"--op", "matmul", "--m", "0", "--k", "4", "--n", "4"}, "--m must be positive"},
        {{"--op", "matmul", "--m", "-3", "--k", "4", "--n", "4"}, "--m must be a plain"},
        {{"--op", "matmul", "--m", "4", "--k", "1K", "--n", "4"}, "'1K'"},
        {{"--op", "matmul", "--m", "4", "--k", "4", "--n", "4", "--chip", "v9"},
         "unknown chip 'v9'"},
        {{"--op", "add"}, "needs --elements"},
        {{"--op", "add", "--elements", "0"}, "--elements must be positive"},
        {{"--op", "add", "--elements", "8", "--m", "3"}, "--m does not apply to --op add"},
        {{"--op", "exp", "--elements", "8", "--dtype", "int8"}, "exp does not take i8"},
        {{"--op", "softmax", "--elements", "10", "--cols", "3"}, "not a whole number of rows"},
        {{"--op", "add", "--elements", "10", "--cols", "5"}, "--cols applies to"},
        {{"--op", "matmul", "--m", "4", "--k", "4", "--n", "4", "--dtype", "int32"},
         "does not take i32"},
        {{"--op", "matmul", "--m", "4", "--k", "4", "--n", "4", "--dtype", "int8", "--out-dtype",
          "bf16"},
         "i8 inputs with bf16 output"},
        {{"--elements", "4"}, "--op is required"},
        {{"--op"}, "--op needs a value"},
        {{"stray"}, "unexpected argument 'stray'"},
    };
    captured_t c;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        run(&c, cases[i].argv);
        if (c.rc != 2 || strncmp(c.err, "tpuemu: ", 8) != 0 ||
            strstr(c.err, cases[i].needle) == NULL || strchr(c.err, '\n') == NULL ||
            strchr(c.err, '\n')[1] != '\0' || c.out[0] != '\0') {
            fail_msg("case %zu: rc %d, stderr '%s', stdout '%s' (want '%s')", i, c.rc, c.err, c.out,
                     cases[i].needle);
        }
    }
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matmul_json),
        cmocka_unit_test(test_add_json_and_table),
        cmocka_unit_test(test_help),
        cmocka_unit_test(test_bad_input),
    };

    return tpu_test_main(argc, argv, "chip cmd op", tests, sizeof tests / sizeof tests[0]);
}
