/*
 * The YAML pod description (launch/config/config_yaml.c): every key of the schema, a
 * custom chip, the mesh as a string and as a mapping, loading over values already
 * set, every kind of error with the file name, line, column and key in its
 * message (the files, in test_config_files.c), and the size parser it reads
 * sizes with (app_parse_size(), launch/units.c).
 */
#include "tpu/chip.h"
#include "tpu/status.h"

#include "config_yaml.h"
#include "test_main.h"
#include "units.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>


#define GIB (1024.0 * 1024.0 * 1024.0)
#define MIB (1024.0 * 1024.0)

/* Load 'text' as "pod.yaml" into 'cfg'. */
static tpu_status_t load(const char *text, app_config_t *cfg, tpu_err_t *err)
{
    return app_config_load_string(text, strlen(text), "pod.yaml", cfg, err);
}

/* Load 'text' into a fresh config and fail the test unless it is accepted. */
static void load_ok(const char *text, app_config_t *cfg)
{
    tpu_err_t err = {0};

    app_config_init(cfg);
    if (load(text, cfg, &err) != TPU_OK) {
        fail_msg("refused:\n%s\nwith: %s", text, err.msg);
    }
    assert_int_equal(err.status, TPU_OK);
}

/*
 * Check that 'err' holds TPU_ERR_CONFIG (or 'status') with a one-line message
 * that contains every string of the NULL-terminated list after 'what'.
 */
static void check_msg(const tpu_err_t *err, tpu_status_t status, const char *what, va_list ap)
{
    const char *sub;

    if (err->status != status) {
        fail_msg("%s: status %d, expected %d (message: '%s')", what, err->status, status, err->msg);
    }
    if (err->msg[0] == '\0' || strchr(err->msg, '\n') != NULL) {
        fail_msg("%s: message empty or not one line: '%s'", what, err->msg);
    }
    while ((sub = va_arg(ap, const char *)) != NULL) {
        if (strstr(err->msg, sub) == NULL) {
            fail_msg("%s: message '%s' lacks '%s'", what, err->msg, sub);
        }
    }
}

/*
 * Load 'text', expect TPU_ERR_CONFIG, a message that contains each of the
 * NULL-terminated strings that follow, and the config left untouched.
 */
static void expect_error(const char *text, ...)
{
    app_config_t cfg, before;
    tpu_err_t err = {0};
    tpu_status_t status;
    va_list ap;

    app_config_init(&cfg);
    snprintf(cfg.chip, sizeof(cfg.chip), "v6e");
    snprintf(cfg.topology, sizeof(cfg.topology), "8x8");
    cfg.slices = 3;
    before = cfg;
    status = load(text, &cfg, &err);
    if (status != TPU_ERR_CONFIG) {
        fail_msg("accepted (status %d):\n%s", status, text);
    }
    va_start(ap, text);
    check_msg(&err, TPU_ERR_CONFIG, text, ap);
    va_end(ap);
    if (strncmp(err.msg, "pod.yaml:", 9) != 0) {
        fail_msg("message does not start with the file name: '%s'", err.msg);
    }
    assert_memory_equal(&cfg, &before, sizeof(cfg));
}

/* app_parse_size(text) must fail with TPU_ERR_INVALID and name the parts given. */
static void expect_bad_size(const char *text, ...)
{
    unsigned long long bytes = 12345;
    tpu_err_t err = {0};
    va_list ap;

    assert_int_equal(app_parse_size(text, &bytes, &err), TPU_ERR_INVALID);
    va_start(ap, text);
    check_msg(&err, TPU_ERR_INVALID, text ? text : "(null)", ap);
    va_end(ap);
    assert_true(bytes == 12345);
}

static void test_init(void **state)
{
    app_config_t cfg;

    (void)state;
    memset(&cfg, 0x5a, sizeof(cfg));
    app_config_init(&cfg);
    assert_string_equal(cfg.chip, "");
    assert_int_equal(cfg.chip_custom, 0);
    assert_string_equal(cfg.topology, "");
    assert_string_equal(cfg.wrap, "");
    assert_int_equal(cfg.slices, 0);
    assert_string_equal(cfg.mesh, "");
    assert_true(cfg.ici_bw < 0 && cfg.ici_latency < 0 && cfg.dcn_bw < 0 && cfg.dcn_latency < 0);
}

static void test_every_top_key(void **state)
{
    app_config_t cfg;

    (void)state;
    load_ok("# a comment\n"
            "chip: v5e\n"
            "topology: 4x4\n"
            "wrap: x,y\n"
            "slices: 2\n"
            "mesh: data=4,model=4\n"
            "links:\n"
            "  ici_bandwidth: 9e10\n"
            "  ici_latency_us: 1.5\n"
            "  dcn_bandwidth: 6.25e9\n"
            "  dcn_latency_us: 0\n",
            &cfg);
    assert_string_equal(cfg.chip, "v5e");
    assert_int_equal(cfg.chip_custom, 0);
    assert_string_equal(cfg.topology, "4x4");
    assert_string_equal(cfg.wrap, "x,y");
    assert_int_equal(cfg.slices, 2);
    assert_string_equal(cfg.mesh, "data=4,model=4");
    assert_true(cfg.ici_bw == 9e10);
    assert_true(fabs(cfg.ici_latency - 1.5e-6) < 1e-15);
    assert_true(cfg.dcn_bw == 6.25e9);
    assert_true(cfg.dcn_latency == 0);
}

static void test_keys_unset_stay_unset(void **state)
{
    app_config_t cfg, fresh;

    (void)state;
    app_config_init(&fresh);
    load_ok("{}\n", &cfg);
    assert_memory_equal(&cfg, &fresh, sizeof(cfg));
    load_ok("links: {ici_latency_us: 2}\n", &cfg);
    assert_true(cfg.ici_bw < 0 && cfg.dcn_bw < 0 && cfg.dcn_latency < 0);
    assert_true(fabs(cfg.ici_latency - 2e-6) < 1e-15);
    assert_string_equal(cfg.chip, "");
}

static void test_chip_presets(void **state)
{
    static const char *const names[] = {"v4", "v5e", "v5p", "v6e", "v7", "v4p", "ironwood"};
    app_config_t cfg;
    char text[64];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        snprintf(text, sizeof(text), "chip: %s\n", names[i]);
        load_ok(text, &cfg);
        assert_string_equal(cfg.chip, names[i]);
        assert_int_equal(cfg.chip_custom, 0);
    }
    load_ok("chip: \"v5p\"\n", &cfg); /* a string may be quoted */
    assert_string_equal(cfg.chip, "v5p");
}

static void test_custom_chip_every_field(void **state)
{
    app_config_t cfg;
    const tpu_chip_spec_t *s = &cfg.custom;

    (void)state;
    load_ok("chip:\n"
            "  base: v5p\n"
            "  name: my-v5p\n"
            "  bf16_flops: 4.6e14\n"
            "  int8_ops: 9.2e14\n"
            "  f32_flops: 1.5e14\n"
            "  vpu_flops: 1.5e13\n"
            "  hbm_bytes: 96G\n"
            "  hbm_bw: 2.9e12\n"
            "  vmem_bytes: 64MiB\n"
            "  mxu_dim: 256\n"
            "  mxu_count: 8\n"
            "  tensorcores: 4\n"
            "  ici_bw: 2e11\n"
            "  ici_latency_us: 2.5\n"
            "  ici_axes: 2\n"
            "  max_pod: [32, 32]\n"
            "  host_dims: [2, 2, 1]\n"
            "  dcn_bw: 1e10\n"
            "  dcn_latency_us: 15\n"
            "  wrap_rule: full_axis\n",
            &cfg);
    assert_int_equal(cfg.chip_custom, 1);
    assert_string_equal(cfg.chip, "");
    assert_string_equal(s->name, "my-v5p");
    assert_true(s->bf16_flops == 4.6e14);
    assert_true(s->int8_ops == 9.2e14);
    assert_true(s->f32_flops == 1.5e14);
    assert_true(s->vpu_flops == 1.5e13);
    assert_true(s->hbm_bytes == 96 * GIB);
    assert_true(s->hbm_bw == 2.9e12);
    assert_true(s->vmem_bytes == 64 * MIB);
    assert_int_equal(s->mxu_dim, 256);
    assert_int_equal(s->mxu_count, 8);
    assert_int_equal(s->tensorcores, 4);
    assert_true(s->ici_bw == 2e11);
    assert_true(fabs(s->ici_latency - 2.5e-6) < 1e-15);
    assert_int_equal(s->ici_axes, 2);
    assert_int_equal(s->max_pod[0], 32);
    assert_int_equal(s->max_pod[1], 32);
    assert_int_equal(s->max_pod[2], 1);
    assert_int_equal(s->host_dims[0], 2);
    assert_int_equal(s->host_dims[1], 2);
    assert_int_equal(s->host_dims[2], 1);
    assert_true(s->dcn_bw == 1e10);
    assert_true(fabs(s->dcn_latency - 15e-6) < 1e-15);
    assert_int_equal(s->wrap_rule, TPU_WRAP_RULE_FULL_AXIS);
}

static void test_custom_chip_keeps_base(void **state)
{
    tpu_chip_spec_t base;
    app_config_t cfg;
    tpu_chip_spec_t expect;

    (void)state;
    assert_int_equal(tpu_chip_preset("v5e", &base, NULL), TPU_OK);
    /* 'base' may come after the fields; flow style works too. */
    load_ok("chip: {hbm_bytes: 32e9, base: v5e}\n", &cfg);
    expect = base;
    expect.hbm_bytes = 32e9;
    snprintf(expect.name, sizeof(expect.name), "v5e-custom");
    assert_memory_equal(&cfg.custom, &expect, sizeof(expect));
    load_ok("chip:\n  base: v7\n  host_dims: [4]\n  wrap_rule: cubes\n", &cfg);
    assert_string_equal(cfg.custom.name, "v7-custom");
    assert_int_equal(cfg.custom.host_dims[0], 4);
    assert_int_equal(cfg.custom.host_dims[1], 1);
    assert_int_equal(cfg.custom.wrap_rule, TPU_WRAP_RULE_CUBES);
    assert_true(cfg.custom.dcn_latency == tpu_chip_preset_at(4)->dcn_latency);
    /* The link model's newer constants: message start, PCIe, NIC, reduction rate. */
    load_ok("chip:\n  base: v5e\n  msg_cost_us: 0.5\n  pcie_bw: 8e9\n  nic_bw: 1e10\n"
            "  reduce_bw: 1e11\n",
            &cfg);
    assert_true(cfg.custom.msg_cost == 0.5e-6);
    assert_true(cfg.custom.pcie_bw == 8e9);
    assert_true(cfg.custom.nic_bw == 1e10);
    assert_true(cfg.custom.reduce_bw == 1e11);
    /* Latencies may be zero; everything else must be positive. */
    load_ok("chip:\n  base: v4\n  ici_latency_us: 0\n", &cfg);
    assert_true(cfg.custom.ici_latency == 0);
}

static void test_topology_and_wrap(void **state)
{
    app_config_t cfg;

    (void)state;
    load_ok("topology: 16\n", &cfg); /* a YAML int is a 1-axis shape */
    assert_string_equal(cfg.topology, "16");
    load_ok("topology: 16x20x28\nwrap: all\n", &cfg);
    assert_string_equal(cfg.topology, "16x20x28");
    assert_string_equal(cfg.wrap, "all");
    load_ok("wrap: none\n", &cfg);
    assert_string_equal(cfg.wrap, "none");
    load_ok("wrap: x,z\n", &cfg); /* no topology in the file: the flags may give 3 axes */
    assert_string_equal(cfg.wrap, "x,z");
    load_ok("topology: 4x4x4\nwrap: auto\n", &cfg);
    assert_string_equal(cfg.wrap, "auto");
}

static void test_mesh(void **state)
{
    app_config_t cfg;

    (void)state;
    load_ok("mesh: data=4,model=4\n", &cfg);
    assert_string_equal(cfg.mesh, "data=4,model=4");
    load_ok("mesh:\n  model: 2\n  data: 8\n  fsdp_2: 1\n", &cfg); /* file order kept */
    assert_string_equal(cfg.mesh, "model=2,data=8,fsdp_2=1");
    load_ok("mesh: {data: 16}\n", &cfg);
    assert_string_equal(cfg.mesh, "data=16");
    load_ok("mesh: x=1\n", &cfg);
    assert_string_equal(cfg.mesh, "x=1");
}

static void test_numbers(void **state)
{
    app_config_t cfg;

    (void)state;
    load_ok("links:\n"
            "  ici_bandwidth: 90000000000\n"
            "  dcn_bandwidth: .5e10\n"
            "  ici_latency_us: +1e0\n"
            "  dcn_latency_us: 0.25\n",
            &cfg);
    assert_true(cfg.ici_bw == 9e10);
    assert_true(cfg.dcn_bw == 5e9);
    assert_true(fabs(cfg.ici_latency - 1e-6) < 1e-15);
    assert_true(fabs(cfg.dcn_latency - 0.25e-6) < 1e-15);
    load_ok("chip:\n  base: v5e\n  hbm_bytes: 1.6e10\n  vmem_bytes: 65536\n", &cfg);
    assert_true(cfg.custom.hbm_bytes == 1.6e10);
    assert_true(cfg.custom.vmem_bytes == 65536);
    load_ok("chip:\n  base: v5e\n  hbm_bytes: 16g\n  vmem_bytes: 512KiB\n", &cfg);
    assert_true(cfg.custom.hbm_bytes == 16 * GIB);
    assert_true(cfg.custom.vmem_bytes == 512 * 1024.0);
    load_ok("slices: 1024\n", &cfg);
    assert_int_equal(cfg.slices, 1024);
}

/* A second load changes only what it names; a preset replaces a custom chip. */
static void test_load_over_values(void **state)
{
    app_config_t cfg;
    tpu_err_t err = {0};

    (void)state;
    load_ok("chip:\n  base: v5p\n  bf16_flops: 1e15\ntopology: 4x4x4\nslices: 2\n", &cfg);
    assert_int_equal(load("slices: 4\nlinks: {dcn_bandwidth: 1e9}\n", &cfg, &err), TPU_OK);
    assert_int_equal(cfg.slices, 4);
    assert_string_equal(cfg.topology, "4x4x4");
    assert_int_equal(cfg.chip_custom, 1);
    assert_true(cfg.custom.bf16_flops == 1e15);
    assert_true(cfg.dcn_bw == 1e9);
    assert_int_equal(load("chip: v6e\n", &cfg, &err), TPU_OK);
    assert_int_equal(cfg.chip_custom, 0);
    assert_string_equal(cfg.chip, "v6e");
    assert_int_equal(load("chip: {base: v4}\n", &cfg, &err), TPU_OK);
    assert_int_equal(cfg.chip_custom, 1);
    assert_string_equal(cfg.chip, "");
    assert_int_equal(err.status, TPU_OK);
}

static void test_unknown_keys(void **state)
{
    (void)state;
    expect_error("chip: v5e\ntopolgy: 4x4\n", "pod.yaml:2:1: unknown key 'topolgy'",
                 "(did you mean 'topology'?)", NULL);
    expect_error("Chip: v5e\n", ":1:1:", "'Chip'", "did you mean 'chip'", NULL);
    expect_error("slice: 2\n", "did you mean 'slices'", NULL);
    expect_error("nodes: 4\n", "pod.yaml:1:1: unknown key 'nodes'",
                 "known keys: chip, topology, wrap, slices, mesh, links", NULL);
    expect_error("chip:\n  base: v5e\n  hbm_byte: 1G\n", "pod.yaml:3:3: unknown key 'hbm_byte'",
                 "in 'chip'", "did you mean 'hbm_bytes'", NULL);
    expect_error("chip:\n  base: v5e\n  clock_hz: 1e9\n", "pod.yaml:3:3:", "'clock_hz'",
                 "known keys: base, name, bf16_flops", NULL);
    expect_error("links:\n  ici_bw: 1e9\n", "pod.yaml:2:3:", "'ici_bw' in 'links'",
                 "known keys: ici_bandwidth, ici_latency_us", NULL);
    expect_error("links:\n  dcn_latency: 5\n", "pod.yaml:2:3:", "'dcn_latency'",
                 "known keys: ici_bandwidth", NULL);
    expect_error("[a, b]: 1\n", "pod.yaml:1:1:", "keys", "plain words", "a list", NULL);
    expect_error("chip: \"v5e\"\n\"a\\0b\": 1\n", "pod.yaml:2:1:", "NUL", NULL);
}

static void test_duplicate_keys(void **state)
{
    (void)state;
    expect_error("chip: v5e\ntopology: 4x4\nchip: v5p\n",
                 "pod.yaml:3:1: duplicate key 'chip' (first at line 1)", NULL);
    expect_error("chip:\n  base: v5e\n  mxu_dim: 128\n  mxu_dim: 256\n",
                 "pod.yaml:4:3:", "duplicate key 'mxu_dim' in 'chip' (first at line 3)", NULL);
    expect_error("chip:\n  base: v5e\n  base: v5p\n", "pod.yaml:3:3:", "duplicate key 'base'",
                 NULL);
    expect_error("links:\n  dcn_latency_us: 1\n  dcn_latency_us: 2\n",
                 "pod.yaml:3:3:", "duplicate key 'dcn_latency_us' in 'links'", NULL);
    expect_error("mesh:\n  data: 2\n  data: 4\n",
                 "pod.yaml:3:3:", "duplicate key 'data' in 'mesh' (first at line 2)", NULL);
}

static void test_wrong_types(void **state)
{
    (void)state;
    expect_error("topology: [4, 4]\n", "pod.yaml:1:11: 'topology' takes", "not a list", NULL);
    expect_error("topology: {x: 4}\n", "pod.yaml:1:11:", "'topology'", "not a mapping", NULL);
    expect_error("chip: [v5e]\n", "pod.yaml:1:7: 'chip' takes a preset name", "not a list", NULL);
    expect_error("wrap: [x, y]\n", "pod.yaml:1:7:", "'wrap'", "not a list", NULL);
    expect_error("slices: {n: 2}\n", "pod.yaml:1:9:", "'slices'", "not a mapping", NULL);
    expect_error("slices: \"2\"\n", "pod.yaml:1:9:", "'slices' takes a whole number",
                 "quoted string", NULL);
    expect_error("slices: 2.5\n", "pod.yaml:1:9:", "'slices' takes a whole number", "'2.5'", NULL);
    expect_error("slices: two\n", "'slices' takes a whole number, got 'two'", NULL);
    expect_error("slices: -1\n", "pod.yaml:1:9:", "'slices' must be a positive", "-1", NULL);
    expect_error("slices: 0\n", "pod.yaml:1:9: 'slices' must be a positive whole number, got 0",
                 NULL);
    expect_error("slices: 5000\n", "'slices' must be at most 1024, got 5000", NULL);
    expect_error("slices: 99999999999999999999999\n", "'slices' must be at most 1024", NULL);
    expect_error("links: 9e10\n", "pod.yaml:1:8:", "'links' must be a mapping", "a scalar", NULL);
    expect_error("links:\n", "pod.yaml:", "'links' must be a mapping", "an empty value", NULL);
    expect_error("links:\n  ici_bandwidth: fast\n",
                 "pod.yaml:2:18:", "'ici_bandwidth' takes a number", "'fast'", NULL);
    expect_error("links:\n  ici_bandwidth: 9G\n", "'ici_bandwidth'",
                 "K, M and G suffixes are for byte counts", NULL);
    expect_error("links:\n  ici_bandwidth: 0\n", "pod.yaml:2:18: 'ici_bandwidth' must be positive",
                 NULL);
    expect_error("links:\n  ici_bandwidth: -9e10\n", "'ici_bandwidth' must be positive, got -9e10",
                 NULL);
    expect_error("links:\n  ici_bandwidth: nan\n", "'ici_bandwidth' takes a number", NULL);
    expect_error("links:\n  ici_bandwidth: inf\n", "'ici_bandwidth' takes a number", NULL);
    expect_error("links:\n  ici_bandwidth: 0x10\n", "'ici_bandwidth' takes a number", NULL);
    expect_error("links:\n  ici_bandwidth: 1e999\n", "'ici_bandwidth' is out of range", NULL);
    expect_error("links:\n  ici_bandwidth: 1e\n", "'ici_bandwidth' takes a number", NULL);
    expect_error("links:\n  ici_bandwidth: [1]\n", "pod.yaml:2:18:", "not a list", NULL);
    expect_error("links:\n  dcn_latency_us: -1\n",
                 "pod.yaml:2:19:", "'dcn_latency_us' must be zero or more, got -1", NULL);
    expect_error("topology:\n", "pod.yaml:1:10:", "'topology' has no value", NULL);
    expect_error("chip: ~\n", "pod.yaml:1:7: 'chip' has no value", NULL);
    expect_error("mesh: null\n", "'mesh' has no value", NULL);
    expect_error("hello\n", "pod.yaml:1:1:", "a config is a mapping", "not a scalar", NULL);
    expect_error("- chip: v5e\n", "pod.yaml:1:1:", "a config is a mapping", "not a list", NULL);
    expect_error("chip: \"v5e\\0\"\n", "pod.yaml:1:7:", "'chip' contains a NUL", NULL);
}

static void test_custom_chip_errors(void **state)
{
    (void)state;
    expect_error("topology: 4x4\nchip:\n  name: mine\n",
                 "pod.yaml:2:1: a custom 'chip' needs 'base:'", NULL);
    expect_error("chip: {}\n", "pod.yaml:1:1:", "needs 'base:'", NULL);
    expect_error("chip:\n  base: v9\n", "pod.yaml:2:9: unknown chip 'v9'", "v5e", NULL);
    expect_error("chip:\n  base: [v5e]\n", "pod.yaml:2:9:", "'base' takes", "not a list", NULL);
    expect_error("chip:\n  base: v5e\n  name: [a]\n", "pod.yaml:3:9:", "'name'", NULL);
    expect_error("chip:\n  base: v5e\n  name: a-name-that-is-much-too-long-for-a-chip\n",
                 "pod.yaml:3:9: 'name' is too long", NULL);
    expect_error("chip:\n  base: v5e\n  hbm_bytes: 12Q\n", "pod.yaml:3:14: 'hbm_bytes'",
                 "bad size '12Q'", NULL);
    expect_error("chip:\n  base: v5e\n  hbm_bytes: 1.5G\n", "pod.yaml:3:14:", "'1.5G'", "fractions",
                 NULL);
    expect_error("chip:\n  base: v5e\n  hbm_bytes: 0\n", "'hbm_bytes' must be positive", NULL);
    expect_error("chip:\n  base: v5e\n  vmem_bytes: 0K\n", "'vmem_bytes' must be positive", NULL);
    expect_error("chip:\n  base: v5e\n  bf16_flops: 1T\n",
                 "pod.yaml:3:15:", "'bf16_flops' takes a number", NULL);
    expect_error("chip:\n  base: v5e\n  mxu_dim: 128.5\n",
                 "pod.yaml:3:12:", "'mxu_dim' takes a whole number", NULL);
    expect_error("chip:\n  base: v5e\n  tensorcores: 0\n", "'tensorcores' must be a positive",
                 NULL);
    expect_error("chip:\n  base: v5e\n  ici_axes: 4\n",
                 "pod.yaml:3:13:", "'ici_axes' must be at most 3, got 4", NULL);
    expect_error("chip:\n  base: v5e\n  host_dims: 2\n",
                 "pod.yaml:3:14:", "'host_dims' takes a list such as [2, 2, 1]", NULL);
    expect_error("chip:\n  base: v5e\n  host_dims: [1, 2, 3, 4]\n",
                 "pod.yaml:3:24:", "'host_dims' has at most 3 entries", NULL);
    expect_error("chip:\n  base: v5e\n  host_dims: []\n", "'host_dims' is an empty list", NULL);
    expect_error("chip:\n  base: v5e\n  host_dims: [2, 0]\n",
                 "pod.yaml:3:18:", "'host_dims' must be a positive", NULL);
    expect_error("chip:\n  base: v5e\n  max_pod: [2, [2]]\n", "pod.yaml:3:16:", "'max_pod'",
                 "not a list", NULL);
    expect_error("chip:\n  base: v5e\n  max_pod: [99999]\n", "'max_pod' must be at most 4096",
                 NULL);
    expect_error("chip:\n  base: v5e\n  wrap_rule: torus\n",
                 "pod.yaml:3:14:", "'wrap_rule' takes cubes or full_axis, got 'torus'", NULL);
    expect_error("chip:\n  base: v5e\n  dcn_latency_us: -2\n", "'dcn_latency_us' must be zero",
                 NULL);
}

static void test_value_errors(void **state)
{
    (void)state;
    expect_error("chip: v9\n", "pod.yaml:1:7: unknown chip 'v9'", NULL);
    expect_error("chip: 5\n", "pod.yaml:1:7: unknown chip '5'", NULL);
    expect_error("topology: 4x0\n", "pod.yaml:1:11:", "bad topology '4x0'", NULL);
    expect_error("topology: 4x4x4x4\n", "pod.yaml:1:11:", "bad topology", "more than 3 axes", NULL);
    expect_error("topology: square\n", "pod.yaml:1:11:", "bad topology 'square'", NULL);
    expect_error("wrap: diagonal\n", "pod.yaml:1:7: bad wrap 'diagonal'", NULL);
    expect_error("wrap: x,x\n", "pod.yaml:1:7:", "named twice", NULL);
    expect_error("topology: 4x4\nwrap: x,z\n", "pod.yaml:2:7: bad wrap 'x,z'", "axis 'z'",
                 "topology 4x4", NULL);
    expect_error("wrap: z\ntopology: 16\n", "pod.yaml:1:7:", "axis 'z'", NULL);
    /* The string form: the library's mesh grammar (tpu_mesh_parse), at the value. */
    expect_error("mesh: data=4,model\n", "pod.yaml:1:7: mesh axis 'model' in 'data=4,model'",
                 "has no size", NULL);
    expect_error("mesh: data=4,\n", "pod.yaml:1:7: mesh 'data=4,' ends with a comma", NULL);
    expect_error("mesh: =4\n", "pod.yaml:1:7: bad mesh axis name '' in '=4'", NULL);
    expect_error("mesh: data=0\n", "pod.yaml:1:7: bad size '0' of mesh axis 'data'", "1 to", NULL);
    expect_error("mesh: data=4x\n", "pod.yaml:1:7: bad size '4x' of mesh axis 'data'", NULL);
    expect_error("mesh: data=2,data=2\n",
                 "pod.yaml:1:7: mesh axis 'data' is named twice in 'data=2,data=2'", NULL);
    expect_error("mesh: ''\n", "pod.yaml:1:7: empty mesh", NULL);
    /* The library's limits, refused at load time with the position. */
    expect_error("mesh: data=8,abcdefghijklmnopqrstuvwxyz0123456=2\n",
                 "pod.yaml:1:7: bad mesh axis name 'abcdefghijklmnopqrstuvwxyz0123456'",
                 "at most 31 characters", NULL);
    expect_error("mesh: a=1,b=1,c=1,d=1,e=1,f=1,g=1,h=1,i=16\n",
                 "pod.yaml:1:7: mesh 'a=1,b=1,c=1,d=1,e=1,f=1,g=1,h=1,i=16' has more than 8 axes",
                 NULL);
    expect_error("mesh: [data, model]\n", "pod.yaml:1:7:", "'mesh'", "not a list", NULL);
    expect_error("mesh: {}\n", "pod.yaml:1:7:", "'mesh' is an empty mapping", NULL);
    expect_error("mesh:\n  data: 0\n", "pod.yaml:2:9: 'data' must be a positive", NULL);
    expect_error("mesh:\n  data: four\n", "pod.yaml:2:9: 'data' takes a whole number", NULL);
    /* The mapping form: written as the string, each key checked by the same grammar. */
    expect_error("mesh:\n  2d: 4\n", "pod.yaml:2:3: bad mesh axis name '2d' in '2d=4'", NULL);
    expect_error("mesh:\n  data: 16\n  abcdefghijklmnopqrstuvwxyz0123456: 1\n",
                 "pod.yaml:3:3: bad mesh axis name 'abcdefghijklmnopqrstuvwxyz0123456'",
                 "at most 31 characters", NULL);
    expect_error("mesh: {a: 1, b: 1, c: 1, d: 1, e: 1, f: 1, g: 1, h: 1, i: 16}\n",
                 "pod.yaml:1:56: mesh 'a=1,b=1,c=1,d=1,e=1,f=1,g=1,h=1,i=16' has more than 8 axes",
                 NULL);
    expect_error("mesh:\n  [a]: 4\n", "pod.yaml:2:3:", "mesh axis names", "a list", NULL);
    expect_error("mesh:\n  'a=b': 4\n", "pod.yaml:2:3:", "mesh axis names", "'a=b'", NULL);
    expect_error("mesh:\n  'a,b': 4\n", "pod.yaml:2:3:", "mesh axis names", "'a,b'", NULL);
    expect_error("topology: "
                 "1x1111111111111111111111111111111111111111111111111111111111111111111111111111111"
                 "111111111111111111111111111111111111111111111111111111111\n",
                 "pod.yaml:1:11: 'topology' is too long", NULL);
}

static void test_malformed(void **state)
{
    (void)state;
    expect_error("chip: v5e\ntopology: [4x4\nwrap: auto\n", "pod.yaml:3:", "malformed YAML",
                 "flow sequence", NULL);
    expect_error("chip: v5e\n  topology: 4x4\n", "pod.yaml:2:11: malformed YAML",
                 "mapping values are not allowed", NULL);
    expect_error("chip: \"v5e\ntopology: 4x4\n", "pod.yaml:3:1: malformed YAML", "quoted scalar",
                 NULL);
    expect_error("chip: v5e\n\ttopology: 4x4\n", "pod.yaml:2:", "malformed YAML", "tab", NULL);
    expect_error("chip: *nowhere\n", "pod.yaml:1:7: malformed YAML", "undefined alias", NULL);
    expect_error("a: b: c\n", "pod.yaml:1:5: malformed YAML", NULL);
    /* The reader's errors come as a byte offset; the line is still right. */
    expect_error("chip: v5e\ntopology: 4\xff\n", "pod.yaml:2:12: malformed YAML", "UTF-8", "0xff",
                 NULL);
    expect_error("chip: v5e\nwrap: a\x01\n", "pod.yaml:2:8: malformed YAML", "control", NULL);
}

static void test_empty_and_documents(void **state)
{
    app_config_t cfg;
    tpu_err_t err = {0}, err2 = {0};

    (void)state;
    expect_error("", "pod.yaml:1:1: the file is empty", NULL);
    expect_error("# only a comment\n\n", "pod.yaml:1:1: the file is empty", NULL);
    expect_error("---\n", "pod.yaml:", "the file is empty", NULL);
    expect_error("~\n", "the file is empty", NULL);
    expect_error("chip: v5e\n---\nchip: v5p\n", "pod.yaml:2:1: a second YAML document", NULL);
    expect_error("chip: v5e\n...\n---\n{]\n", "pod.yaml:4:", "malformed YAML", NULL);
    /* An explicit single document, and an end marker, are fine. */
    load_ok("---\nchip: v5e\n...\n", &cfg);
    assert_string_equal(cfg.chip, "v5e");
    /* A NULL text with length 0 is an empty file; the name defaults. */
    app_config_init(&cfg);
    assert_int_equal(app_config_load_string(NULL, 0, NULL, &cfg, &err), TPU_ERR_CONFIG);
    assert_non_null(strstr(err.msg, "is empty"));
    /* Without a tpu_err_t the status still comes back. */
    assert_int_equal(load("chip: v9\n", &cfg, NULL), TPU_ERR_CONFIG);
    /* The length bounds the text: what follows it is not read. */
    assert_int_equal(app_config_load_string("chip: v5e\nbogus: 1\n", 10, "x.yaml", &cfg, &err2),
                     TPU_OK);
    assert_string_equal(cfg.chip, "v5e");
}

static void test_aliases_and_line_ends(void **state)
{
    app_config_t cfg;

    (void)state;
    load_ok("links: &l {ici_bandwidth: 1e9}\nchip: &c v5e\nmesh: {data: 2}\n", &cfg);
    assert_string_equal(cfg.chip, "v5e");
    load_ok("chip: v5e\r\ntopology: 4x4\r\n", &cfg);
    assert_string_equal(cfg.topology, "4x4");
    /* Nodes that contain themselves are refused, not walked forever. */
    expect_error("chip:\n  base: v5e\n  host_dims: &a [1, *a]\n", "pod.yaml:3:14:", "'host_dims'",
                 "not a list", NULL);
    expect_error("&r {links: *r}\n", "unknown key 'links' in 'links'", NULL);
    expect_error("&r {chip: *r}\n", "needs 'base:'", NULL);
    expect_error("mesh: &m {a: *m}\n", "'a' takes a whole number, not a mapping", NULL);
    expect_error("<<: {chip: v5e}\n", "pod.yaml:1:1: unknown key '<<'", NULL);
    expect_error("chip: v5e\r\n\r\nslices: x\r\n", "pod.yaml:3:9:", NULL);
}

static void test_one_line_messages(void **state)
{
    (void)state;
    /* Text echoed from the file cannot break the message into lines. */
    expect_error("chip: \"v5\\ne\"\n", "pod.yaml:1:7: unknown chip 'v5\\x0ae'", NULL);
    expect_error("\"top\\nology\": 4x4\n", "pod.yaml:1:1: unknown key 'top\\x0aology'", NULL);
}

static void test_first_error_wins(void **state)
{
    app_config_t cfg;
    tpu_err_t err = {0};

    (void)state;
    app_config_init(&cfg);
    tpu_err_set(&err, TPU_ERR_INVALID, "earlier");
    assert_int_equal(load("chip: v9\n", &cfg, &err), TPU_ERR_CONFIG);
    assert_string_equal(err.msg, "earlier");
}

/* ---- app_parse_size ---- */

static void test_size_good(void **state)
{
    static const struct {
        const char *text;
        unsigned long long bytes;
    } cases[] = {
        {"0", 0},
        {"1024", 1024},
        {"007", 7},
        {"64K", 64ull << 10},
        {"64k", 64ull << 10},
        {"16M", 16ull << 20},
        {"16m", 16ull << 20},
        {"1G", 1ull << 30},
        {"1g", 1ull << 30},
        {"16MiB", 16ull << 20},
        {"16MB", 16ull << 20},
        {"1GB", 1ull << 30},
        {"4KiB", 4096},
        {"1024B", 1024},
        {"17179869183G", 17179869183ull << 30},
        {"18446744073709551615", 18446744073709551615ull},
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        unsigned long long bytes = 1;
        tpu_err_t err = {0};

        if (app_parse_size(cases[i].text, &bytes, &err) != TPU_OK) {
            fail_msg("'%s' refused: %s", cases[i].text, err.msg);
        }
        if (bytes != cases[i].bytes) {
            fail_msg("'%s' gave %llu, expected %llu", cases[i].text, bytes, cases[i].bytes);
        }
    }
    /* err may be NULL. */
    {
        unsigned long long bytes = 0;

        assert_int_equal(app_parse_size("2K", &bytes, NULL), TPU_OK);
        assert_true(bytes == 2048);
        assert_int_equal(app_parse_size("2Q", &bytes, NULL), TPU_ERR_INVALID);
        assert_true(bytes == 2048);
    }
}

static void test_size_bad(void **state)
{
    static const char form[] = "expected bytes or a number with K, M or G";

    (void)state;
    expect_bad_size("12Q", "bad size '12Q': expected bytes or a number with K, M or G", NULL);
    expect_bad_size("", "bad size ''", form, NULL);
    expect_bad_size(NULL, "bad size ''", NULL);
    expect_bad_size("-3", "bad size '-3'", "negative", NULL);
    expect_bad_size("1.5G", "bad size '1.5G'", "fractions are not allowed", "1536M", NULL);
    expect_bad_size("0.5", "bad size '0.5'", "fractions", NULL);
    expect_bad_size(" 64K", "bad size ' 64K'", form, NULL);
    expect_bad_size("64K ", "bad size '64K '", form, NULL);
    expect_bad_size("64 K", form, NULL);
    expect_bad_size("K", "bad size 'K'", form, NULL);
    expect_bad_size("+4", form, NULL);
    expect_bad_size("1e9", form, NULL);
    expect_bad_size("0x10", form, NULL);
    expect_bad_size("16Mb", form, NULL);
    expect_bad_size("16MiBs", form, NULL);
    expect_bad_size("16iB", form, NULL);
    expect_bad_size("1T", form, NULL);
    expect_bad_size("1KK", form, NULL);
    expect_bad_size("18446744073709551616", "bad size '18446744073709551616': too large", NULL);
    expect_bad_size("17179869184G", "too large", NULL);
    expect_bad_size("18014398509481984K", "too large", NULL);
    expect_bad_size("99999999999999999999999999G", "too large", NULL);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init),
        cmocka_unit_test(test_every_top_key),
        cmocka_unit_test(test_keys_unset_stay_unset),
        cmocka_unit_test(test_chip_presets),
        cmocka_unit_test(test_custom_chip_every_field),
        cmocka_unit_test(test_custom_chip_keeps_base),
        cmocka_unit_test(test_topology_and_wrap),
        cmocka_unit_test(test_mesh),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_load_over_values),
        cmocka_unit_test(test_unknown_keys),
        cmocka_unit_test(test_duplicate_keys),
        cmocka_unit_test(test_wrong_types),
        cmocka_unit_test(test_custom_chip_errors),
        cmocka_unit_test(test_value_errors),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_empty_and_documents),
        cmocka_unit_test(test_aliases_and_line_ends),
        cmocka_unit_test(test_one_line_messages),
        cmocka_unit_test(test_first_error_wins),
        cmocka_unit_test(test_size_good),
        cmocka_unit_test(test_size_bad),
    };

    return tpu_test_main(argc, argv, "config yaml", tests, sizeof tests / sizeof tests[0]);
}
