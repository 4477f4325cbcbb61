/*
 * The YAML pod description read from files: every example config of configs/
 * loads (and the values of some), each bad fixture of tests/fixtures/config/ is
 * refused with its message, every fixture is listed, and file errors (missing,
 * a folder, unreadable) name the path.
 */
#include "tpu/chip.h"
#include "tpu/status.h"

#include "config_yaml.h"
#include "test_main.h"
#include "units.h"

#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#ifndef TPU_SOURCE_DIR
#define TPU_SOURCE_DIR "."
#endif

#define CONFIGS_DIR  TPU_SOURCE_DIR "/configs"
#define FIXTURES_DIR TPU_SOURCE_DIR "/tests/fixtures/config"

#define MIB (1024.0 * 1024.0)

static void test_example_configs(void **state)
{
    DIR *dir;
    struct dirent *de;
    int count = 0;

    (void)state;
    dir = opendir(CONFIGS_DIR);
    if (dir == NULL) {
        fail_msg("cannot open %s", CONFIGS_DIR);
    }
    while ((de = readdir(dir)) != NULL) {
        size_t n = strlen(de->d_name);
        char path[1024];
        app_config_t cfg;
        tpu_err_t err = {0};

        if (n < 5 || strcmp(de->d_name + n - 5, ".yaml") != 0) {
            continue;
        }
        snprintf(path, sizeof(path), "%s/%s", CONFIGS_DIR, de->d_name);
        app_config_init(&cfg);
        if (app_config_load(path, &cfg, &err) != TPU_OK) {
            closedir(dir);
            fail_msg("%s refused: %s", path, err.msg);
        }
        count++;
    }
    closedir(dir);
    assert_true(count >= 4);
}

static void load_file_ok(const char *file, app_config_t *cfg)
{
    char path[1024];
    tpu_err_t err = {0};

    snprintf(path, sizeof(path), "%s/%s", CONFIGS_DIR, file);
    app_config_init(cfg);
    if (app_config_load(path, cfg, &err) != TPU_OK) {
        fail_msg("%s refused: %s", path, err.msg);
    }
}

static void test_example_values(void **state)
{
    app_config_t cfg;

    (void)state;
    load_file_ok("v5e-4x4.yaml", &cfg);
    assert_string_equal(cfg.chip, "v5e");
    assert_string_equal(cfg.topology, "4x4");
    assert_string_equal(cfg.wrap, "auto");
    assert_int_equal(cfg.slices, 1);
    assert_string_equal(cfg.mesh, "data=4,model=4");

    load_file_ok("v5p-4x4x4.yaml", &cfg);
    assert_string_equal(cfg.chip, "v5p");
    assert_string_equal(cfg.topology, "4x4x4");
    assert_string_equal(cfg.mesh, "data=16,model=4");
    assert_true(cfg.ici_bw == 1.8e11);
    assert_true(fabs(cfg.ici_latency - 1e-6) < 1e-15);
    assert_true(cfg.dcn_bw == 6.25e9);
    assert_true(cfg.dcn_latency == 0);

    load_file_ok("custom-chip.yaml", &cfg);
    assert_int_equal(cfg.chip_custom, 1);
    assert_string_equal(cfg.custom.name, "v5p-bigmem");
    assert_true(cfg.custom.hbm_bytes == 192e9);
    assert_true(cfg.custom.vmem_bytes == 128 * MIB);
    assert_true(fabs(cfg.custom.ici_latency - 1.5e-6) < 1e-15);
    assert_int_equal(cfg.custom.host_dims[0] * cfg.custom.host_dims[1] * cfg.custom.host_dims[2],
                     4);
    assert_int_equal(tpu_chip_check(&cfg.custom, NULL), TPU_OK);
    assert_string_equal(cfg.topology, "2x2x4");
    assert_string_equal(cfg.wrap, "x,z");

    load_file_ok("multislice-2x2x2.yaml", &cfg);
    assert_string_equal(cfg.chip, "v5e");
    assert_string_equal(cfg.topology, "2x2");
    assert_int_equal(cfg.slices, 2);
    assert_true(cfg.dcn_bw == 3.125e9);
    assert_true(fabs(cfg.dcn_latency - 20e-6) < 1e-15);
}

/* Each bad fixture, and what its message must hold (after "path:"). */
static const struct {
    const char *file;
    const char *where; /* "line:col:" */
    const char *what;
} fixtures[] = {
    {"unknown_key.yaml", "3:1:", "unknown key 'topolgy' (did you mean 'topology'?)"},
    {"bad_type.yaml", "4:11:", "'topology' takes a shape such as 4x4, not a list"},
    {"malformed.yaml", "4:5:", "malformed YAML"},
    {"bad_chip.yaml", "2:7:", "unknown chip 'v9'"},
    {"zero_slices.yaml", "4:9:", "'slices' must be a positive whole number, got 0"},
    {"duplicate_key.yaml", "4:1:", "duplicate key 'chip' (first at line 2)"},
    {"two_documents.yaml", "3:1:", "a second YAML document"},
    {"empty.yaml", "1:1:", "the file is empty"},
    {"bad_size.yaml", "4:14:", "'hbm_bytes': bad size '1.5G'"},
    {"missing_base.yaml", "2:1:", "a custom 'chip' needs 'base:'"},
    {"bad_mesh.yaml", "3:7:", "mesh axis 'model' in 'data=4,model' has no size"},
    {"wrap_axis.yaml", "4:7:", "bad wrap 'z'"},
    {"negative_bw.yaml", "4:18:", "'ici_bandwidth' must be positive, got -9e10"},
};

#define NFIXTURES (sizeof(fixtures) / sizeof(fixtures[0]))

static void test_bad_fixtures(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < NFIXTURES; i++) {
        char path[1024], expect[1200];
        app_config_t cfg, before;
        tpu_err_t err = {0};

        snprintf(path, sizeof(path), "%s/%s", FIXTURES_DIR, fixtures[i].file);
        snprintf(expect, sizeof(expect), "%s:%s %s", path, fixtures[i].where, fixtures[i].what);
        app_config_init(&cfg);
        before = cfg;
        assert_int_equal(app_config_load(path, &cfg, &err), TPU_ERR_CONFIG);
        if (strncmp(err.msg, expect, strlen(expect)) != 0) {
            fail_msg("%s: got '%s', expected it to start with '%s'", fixtures[i].file, err.msg,
                     expect);
        }
        assert_memory_equal(&cfg, &before, sizeof(cfg));
    }
}

/* Every file in the fixtures folder has an expectation above. */
static void test_fixtures_listed(void **state)
{
    DIR *dir;
    struct dirent *de;
    size_t n = 0, i;

    (void)state;
    dir = opendir(FIXTURES_DIR);
    if (dir == NULL) {
        fail_msg("cannot open %s", FIXTURES_DIR);
    }
    while ((de = readdir(dir)) != NULL) {
        if (de->d_name[0] == '.') {
            continue;
        }
        for (i = 0; i < NFIXTURES && strcmp(fixtures[i].file, de->d_name) != 0; i++) {
        }
        if (i == NFIXTURES) {
            char name[256];

            snprintf(name, sizeof(name), "%s", de->d_name); /* closedir frees 'de' */
            closedir(dir);
            fail_msg("fixture %s has no expected error in test_config_yaml.c", name);
        }
        n++;
    }
    closedir(dir);
    assert_int_equal(n, NFIXTURES);
}

static void test_file_errors(void **state)
{
    char path[] = "/tmp/tpu_config_XXXXXX";
    app_config_t cfg;
    tpu_err_t err = {0};
    FILE *f;
    int fd;
    long i;

    (void)state;
    app_config_init(&cfg);
    assert_int_equal(app_config_load(NULL, &cfg, &err), TPU_ERR_INVALID);
    tpu_err_clear(&err);
    assert_int_equal(app_config_load("/nonexistent/pod.yaml", &cfg, &err), TPU_ERR_CONFIG);
    assert_string_equal(err.msg, "/nonexistent/pod.yaml: cannot open: No such file or directory");
    tpu_err_clear(&err);
    assert_int_equal(app_config_load(CONFIGS_DIR, &cfg, &err), TPU_ERR_CONFIG);
    assert_non_null(strstr(err.msg, ": not a regular file (a directory)"));
    assert_non_null(strstr(err.msg, CONFIGS_DIR));
    tpu_err_clear(&err);

    /* A file that is far too large for a config. */
    fd = mkstemp(path);
    assert_true(fd >= 0);
    f = fdopen(fd, "w");
    assert_non_null(f);
    for (i = 0; i < 120000; i++) {
        fputs("# padding\n", f);
    }
    fputs("chip: v5e\n", f);
    fclose(f);
    assert_int_equal(app_config_load(path, &cfg, &err), TPU_ERR_CONFIG);
    assert_non_null(strstr(err.msg, "larger than"));
    tpu_err_clear(&err);

    /* A real file with an error deep inside: the line counts from the file. */
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("chip: v5e\n\n\nlinks:\n  ici_bandwidth: 1e9\n  dcn_bandwith: 1e9\n", f);
    fclose(f);
    assert_int_equal(app_config_load(path, &cfg, &err), TPU_ERR_CONFIG);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, ":6:3: unknown key 'dcn_bandwith' in 'links' (did you mean "
                                    "'dcn_bandwidth'?)"));
    unlink(path);
    assert_string_equal(cfg.chip, "");
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_example_configs), cmocka_unit_test(test_example_values),
        cmocka_unit_test(test_bad_fixtures),    cmocka_unit_test(test_fixtures_listed),
        cmocka_unit_test(test_file_errors),
    };

    return tpu_test_main(argc, argv, "config files", tests, sizeof tests / sizeof tests[0]);
}
