/*
 * What the replay answers beyond the step (issue 26), each against figures
 * computed by hand in the fixtures' comments: the HBM peak of live buffers
 * (hbm_2x2.hlo, aliases, in-place updates, over capacity), trip counts of every
 * loop class (trips_2x2.hlo), a CPU module's library matmuls, markers, fused
 * dynamic-slice bytes, free reshapes and schedule estimate (cpu_2x2.hlo), the
 * backend detected, metadata op_name.
 */
#include "tpu/chip.h"
#include "tpu/hlo.h"
#include "tpu/replay.h"
#include "tpu/topo.h"

#include "test_main.h"
#include "test_support.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#ifndef TPU_SOURCE_DIR
#define TPU_SOURCE_DIR "."
#endif
#define FIXTURE(name) TPU_SOURCE_DIR "/tests/fixtures/hlo/" name

#define MIB (1024.0 * 1024.0)

/* Parse 'text' (a file's contents or a literal). */
static tpu_hlo_file_t *parse(const char *text, size_t len)
{
    tpu_hlo_file_t *f = NULL;
    tpu_err_t err = {0};

    if (tpu_hlo_parse(text, len, "fit.hlo", &f, &err) != TPU_OK) {
        fail_msg("%s", err.msg);
    }
    return f;
}

static tpu_hlo_file_t *parse_fixture(const char *path)
{
    FILE *fp = fopen(path, "rb");
    char *buf;
    long n;
    tpu_hlo_file_t *f;

    if (fp == NULL) {
        fail_msg("cannot read %s", path);
    }
    fseek(fp, 0, SEEK_END);
    n = ftell(fp);
    rewind(fp);
    buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, fp), (size_t)n);
    fclose(fp);
    f = parse(buf, (size_t)n);
    free(buf);
    return f;
}

/* Replay module 0 of 'f' on a v5e 2x2 (every module here has 4 devices). */
static tpu_replay_report_t *run4(const tpu_hlo_file_t *f)
{
    int dims[3] = {2, 2, 1}, wrap[3] = {0, 0, 0};
    tpu_topo_t topo;
    tpu_chip_spec_t chip;
    tpu_link_model_t link;
    tpu_replay_report_t *r = NULL;
    tpu_err_t err = {0};

    assert_int_equal(tpu_chip_preset("v5e", &chip, &err), TPU_OK);
    assert_int_equal(tpu_topo_init(&topo, 2, dims, wrap, 1, &err), TPU_OK);
    tpu_chip_link_model(&chip, &link);
    if (tpu_replay_run(&f->modules[0], &topo, &link, &chip, NULL, &r, &err) != TPU_OK) {
        fail_msg("%s", err.msg);
    }
    return r;
}

static tpu_replay_report_t *run_text(const char *text, tpu_hlo_file_t **f_p)
{
    *f_p = parse(text, strlen(text));
    return run4(*f_p);
}

static int warned(const tpu_replay_report_t *r, const char *part)
{
    int i;

    for (i = 0; i < r->nwarnings; i++) {
        if (strstr(r->warnings[i], part) != NULL) {
            return 1;
        }
    }
    return 0;
}

static const tpu_replay_op_t *find_op(const tpu_replay_report_t *r, const char *name)
{
    int i;

    for (i = 0; i < r->nops; i++) {
        if (strcmp(r->ops[i].name, name) == 0) {
            return &r->ops[i];
        }
    }
    return NULL;
}

static const tpu_replay_loop_t *find_loop(const tpu_replay_report_t *r, const char *name)
{
    int i;

    for (i = 0; i < r->nloops; i++) {
        if (strcmp(r->loops[i].name, name) == 0) {
            return &r->loops[i];
        }
    }
    fail_msg("no loop '%s'", name);
    return NULL;
}

/* hbm_2x2.hlo: 9 MiB + 4 B at the loop (the fixture's comment adds it up). */
static void test_hbm_fixture(void **state)
{
    tpu_hlo_file_t *f = parse_fixture(FIXTURE("hbm_2x2.hlo"));
    tpu_replay_report_t *r = run4(f);
    static const char *const names[] = {"ags", "x", "acc0", "y", "t1", "t2", "zero"};
    static const double sizes[] = {4 * MIB, MIB, MIB, MIB, MIB, MIB, 4};
    int i;

    (void)state;
    assert_true(r->hbm_peak_bytes == 9 * MIB + 4);
    assert_string_equal(r->hbm_peak_at, "loop");
    assert_true(r->hbm_capacity_bytes == 16e9); /* v5e: 16 GB */
    assert_int_equal(r->hbm_over, 0);
    /* Live at the peak: the entry's buffers, then the body's, largest first. */
    assert_int_equal(r->nbuffers, 7);
    for (i = 0; i < 7; i++) {
        assert_string_equal(r->buffers[i].name, names[i]);
        assert_true((double)r->buffers[i].bytes == sizes[i]);
    }
    assert_string_equal(r->buffers[0].shape, "f32[1024,1024]");
    assert_string_equal(r->buffers[0].source, "jit(fit)/all_gather");
    assert_null(r->buffers[1].source);
    tpu_replay_report_destroy(r);
    tpu_hlo_file_destroy(f);
}

/* input_output_alias: the output written into parameter 0 allocates nothing. */
static void test_hbm_alias_and_inplace(void **state)
{
    static const char *const alias =
        "HloModule io, num_partitions=4, input_output_alias={ {0}: (0, {}, may-alias) }\n"
        "ENTRY e {\n p = f32[1024] parameter(0)\n q = f32[1024] parameter(1)\n"
        " a = f32[1024] add(p, q)\n ROOT t = (f32[1024]) tuple(a)\n}\n";
    static const char *const plain = "HloModule io, num_partitions=4\n"
                                     "ENTRY e {\n p = f32[1024] parameter(0)\n q = f32[1024] "
                                     "parameter(1)\n a = f32[1024] add(p, q)\n ROOT t = "
                                     "(f32[1024]) tuple(a)\n}\n";
    /* A fused dynamic-update-slice of its parameter 0 updates the buffer in place:
     * p (64 KiB) + u (256 B) + i (4 B); the fusion adds nothing. */
    static const char *const dus =
        "HloModule dus, num_partitions=4\n"
        "f {\n b = f32[64,256] parameter(0)\n u = f32[1,256] parameter(1)\n i = s32[] "
        "parameter(2)\n z = s32[] constant(0)\n ROOT d = f32[64,256] dynamic-update-slice(b, u, "
        "i, z)\n}\n"
        "ENTRY e {\n p = f32[64,256] parameter(0)\n u = f32[1,256] parameter(1)\n i = s32[] "
        "parameter(2)\n ROOT o = f32[64,256] fusion(p, u, i), kind=kLoop, calls=f\n}\n";
    tpu_hlo_file_t *f;
    tpu_replay_report_t *r;

    (void)state;
    r = run_text(alias, &f);
    assert_int_equal(f->modules[0].nio_alias, 1);
    assert_int_equal(f->modules[0].io_alias[0], 0);
    assert_int_equal(f->modules[0].io_alias[1], 0);
    assert_true(r->hbm_peak_bytes == 8192);
    tpu_replay_report_destroy(r);
    tpu_hlo_file_destroy(f);
    r = run_text(plain, &f);
    assert_true(r->hbm_peak_bytes == 12288);
    tpu_replay_report_destroy(r);
    tpu_hlo_file_destroy(f);
    r = run_text(dus, &f);
    assert_true(r->hbm_peak_bytes == 65536 + 1024 + 4);
    /* Its traffic: the update read and written, the index, not the 64 KiB buffer. */
    assert_true(find_op(r, "o")->bytes == 1024 + 1024 + 4);
    tpu_replay_report_destroy(r);
    tpu_hlo_file_destroy(f);
}

/* Over capacity: flagged as XLA's RESOURCE_EXHAUSTED, still costed. */
static void test_hbm_over_capacity(void **state)
{
    static const char *const big = "HloModule big, num_partitions=4\n"
                                   "ENTRY e {\n p = bf16[5,1024,1024,1024] parameter(0)\n"
                                   " ROOT n = bf16[5,1024,1024,1024] negate(p)\n}\n";
    tpu_hlo_file_t *f;
    tpu_replay_report_t *r = run_text(big, &f);

    (void)state;
    assert_true(r->hbm_peak_bytes == 2 * 10 * 1024 * MIB); /* p and n: 10 GiB each */
    assert_int_equal(r->hbm_over, 1);
    assert_true(warned(r, "RESOURCE_EXHAUSTED"));
    assert_true(r->step_us > 0 && find_op(r, "n") != NULL);
    tpu_replay_report_destroy(r);
    tpu_hlo_file_destroy(f);
}

/* trips_2x2.hlo: every class of loop with its count from the fixture's comment. */
static void test_trip_classes(void **state)
{
    static const struct {
        const char *name;
        int64_t trips;
        int known;
    } want[] = {{"chain", 5, 1},   {"down", 7, 1},   {"flipped", 5, 1},
                {"ne", 4, 1},      {"nested", 6, 1}, {"bound", 7, 1},
                {"negstep", 3, 1}, {"known", 3, 1},  {"fromparam", 1, 0}};
    tpu_hlo_file_t *f = parse_fixture(FIXTURE("trips_2x2.hlo"));
    tpu_replay_report_t *r = run4(f);
    int64_t total = 0;
    size_t k;
    int i;

    (void)state;
    assert_int_equal(r->nloops, (int)(sizeof(want) / sizeof(want[0])));
    for (k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
        const tpu_replay_loop_t *l = find_loop(r, want[k].name);

        if (l->trips != want[k].trips || l->known != want[k].known) {
            fail_msg("loop %s: %lld trips (known %d), want %lld", want[k].name, (long long)l->trips,
                     l->known, (long long)want[k].trips);
        }
        total += want[k].trips;
    }
    assert_string_equal(find_loop(r, "known")->how, "known_trip_count");
    assert_non_null(strstr(find_loop(r, "fromparam")->how, "initial value"));
    assert_true(warned(r, "while 'fromparam': trip count unknown (the initial value"));
    /* One all-reduce per iteration of each loop. */
    assert_int_equal(r->nseq, total);
    for (i = 0; i < r->ncolls; i++) {
        total -= r->colls[i].executions;
    }
    assert_int_equal(total, 0);
    tpu_replay_report_destroy(r);
    tpu_hlo_file_destroy(f);
}

/* cpu_2x2.hlo: the figures of its comment. */
static void test_cpu_module(void **state)
{
    tpu_hlo_file_t *f = parse_fixture(FIXTURE("cpu_2x2.hlo"));
    tpu_replay_report_t *r = run4(f);
    const tpu_replay_op_t *mm, *mm2, *rowf, *out;
    double ar;

    (void)state;
    assert_string_equal(r->backend, "CPU");
    mm = find_op(r, "mm");
    mm2 = find_op(r, "mm2");
    assert_non_null(mm);
    assert_true(mm->flops == 2.0 * 128 * 256 * 512);
    assert_int_equal(mm->custom, 0);
    assert_null(find_op(r, "xs")); /* the sharding marker */
    assert_null(find_op(r, "rs")); /* a reshape that is a bitcast */
    rowf = find_op(r, "rowf");
    assert_true(rowf->bytes == 4096 + 4096 + 4);
    assert_true(find_op(r, "halo")->custom == 1);
    assert_true(warned(r, "'halo' (my_halo_exchange) costs 0"));
    assert_true(warned(r, "suggests it communicates"));
    assert_true(warned(r, "compiled for CPU"));
    /* As written the all-reduce blocks; scheduled, mm2 overlaps it:
     * max(mm + ar, mm + rowf + mm2 + halo) + out. */
    out = find_op(r, "out");
    ar = r->colls[0].modeled_us;
    assert_true(fabs(r->step_us - (mm->modeled_us + ar + rowf->modeled_us + mm2->modeled_us +
                                   out->modeled_us)) < 1e-9);
    assert_true(fabs(r->scheduled_step_us -
                     ((mm->modeled_us + ar > mm->modeled_us + rowf->modeled_us + mm2->modeled_us
                           ? mm->modeled_us + ar
                           : mm->modeled_us + rowf->modeled_us + mm2->modeled_us) +
                      out->modeled_us)) < 1e-9);
    assert_true(r->scheduled_step_us < r->step_us);
    /* Params 896 KiB + 4 B, ar, rowf's row, mm2 and halo live at 'halo'. */
    assert_true(r->hbm_peak_bytes == 896 * 1024 + 4 + 256 * 1024 + 4096 + 2 * 256 * 1024);
    assert_string_equal(r->hbm_peak_at, "halo");
    assert_string_equal(mm->source, "jit(step)/dot_general");
    tpu_replay_report_destroy(r);
    tpu_hlo_file_destroy(f);
}

/* The backend from its evidence; kernels named; unoptimised graphs flagged. */
static void test_backends(void **state)
{
    static const struct {
        const char *text, *backend;
    } cases[] = {
        {"HloModule g, num_partitions=4\nENTRY e {\n p = f32[8] parameter(0)\n ROOT n = f32[8] "
         "negate(p), backend_config={\"operation_queue_id\":\"0\"}\n}\n",
         "GPU"},
        {"HloModule t, num_partitions=4\nENTRY e {\n p = f32[8,128]{1,0:T(8,128)} parameter(0)\n "
         "ROOT n = f32[8,128]{1,0:T(8,128)} negate(p)\n}\n",
         "TPU"},
        {"HloModule k, num_partitions=4\nENTRY e {\n p = f32[8] parameter(0)\n ROOT n = f32[8] "
         "custom-call(p), custom_call_target=\"tpu_custom_call\"\n}\n",
         "TPU"},
        {"HloModule u, num_partitions=4\nENTRY e {\n p = f32[8] parameter(0)\n ROOT n = f32[8] "
         "negate(p)\n}\n",
         "unknown"},
    };
    char text[8192];
    size_t k, n;
    tpu_hlo_file_t *f;
    tpu_replay_report_t *r;
    int i;

    (void)state;
    for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        r = run_text(cases[k].text, &f);
        assert_string_equal(r->backend, cases[k].backend);
        if (k == 2) {
            assert_true(warned(r, "a Pallas/Mosaic/Triton kernel tpu_custom_call"));
        }
        assert_false(warned(r, "unoptimised"));
        tpu_replay_report_destroy(r);
        tpu_hlo_file_destroy(f);
    }
    /* 40 broadcasts and no fusion: an unoptimised graph. */
    n = (size_t)snprintf(text, sizeof(text),
                         "HloModule raw, num_partitions=4\nENTRY e {\n c = f32[] constant(1)\n");
    for (i = 0; i < 40; i++) {
        n += (size_t)snprintf(text + n, sizeof(text) - n,
                              " b%d = f32[64] broadcast(c), dimensions={}\n", i);
    }
    snprintf(text + n, sizeof(text) - n, " ROOT r = f32[64] add(b0, b1)\n}\n");
    r = run_text(text, &f);
    assert_true(warned(r, "looks unoptimised (no fusions, 40 broadcasts, 1 elementwise"));
    tpu_replay_report_destroy(r);
    tpu_hlo_file_destroy(f);
}

/* metadata's op_name, escaped quotes and all; other metadata keys ignored. */
static void test_op_name(void **state)
{
    static const char *const text =
        "HloModule m, num_partitions=4\nENTRY e {\n p = f32[8] parameter(0)\n"
        " ROOT n = f32[8] negate(p), metadata={op_type=\"neg\" op_name=\"jit(f)/a\\\"b/neg\" "
        "source_file=\"x.py\" source_line=3}\n}\n";
    tpu_hlo_file_t *f = parse(text, strlen(text));

    (void)state;
    assert_string_equal(f->modules[0].comps[0].instrs[1].op_name, "jit(f)/a\"b/neg");
    assert_null(f->modules[0].comps[0].instrs[0].op_name);
    tpu_hlo_file_destroy(f);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hbm_fixture),       cmocka_unit_test(test_hbm_alias_and_inplace),
        cmocka_unit_test(test_hbm_over_capacity), cmocka_unit_test(test_trip_classes),
        cmocka_unit_test(test_cpu_module),        cmocka_unit_test(test_backends),
        cmocka_unit_test(test_op_name),
    };

    return tpu_test_main(argc, argv, "replay fit", tests, sizeof tests / sizeof tests[0]);
}
