/*
 * The replay of parsed HLO: loops, async overlap, conditionals, custom-calls,
 * group collectives and errors, a mutation fuzzer, an OOM loop over parse +
 * replay, and a tier that replays every module of ../shared/reference/hlo when
 * that folder is there (run by test_hlo.c's main).
 */
#include "tpu/alloc.h"
#include "tpu/chip.h"
#include "tpu/coll.h"
#include "tpu/groups.h"
#include "tpu/hlo.h"
#include "tpu/replay.h"

#include "test_hlo.h"
#include "test_main.h"
#include "test_support.h"

#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>


static tpu_replay_report_t *replay(const tpu_hlo_module_t *m, const tpu_replay_opts_t *opts)
{
    tpu_topo_t topo;
    tpu_chip_spec_t spec;
    tpu_link_model_t link;
    tpu_replay_report_t *r = NULL;
    tpu_err_t err = {0};

    tpu_test_square_pod(tpu_replay_device_count(m), "v5e", &topo, &spec, &link);
    if (tpu_replay_run(m, &topo, &link, &spec, opts, &r, &err) != TPU_OK) {
        fail_msg("replay of '%s': %s", m->name, err.msg);
    }
    return r;
}

static const tpu_replay_coll_t *coll(const tpu_replay_report_t *r, const char *name)
{
    int i;

    for (i = 0; i < r->ncolls; i++) {
        if (strcmp(r->colls[i].name, name) == 0) {
            return &r->colls[i];
        }
    }
    fail_msg("no collective '%s'", name);
    return NULL;
}

static const tpu_replay_op_t *op(const tpu_replay_report_t *r, const char *name)
{
    int i;

    for (i = 0; i < r->nops; i++) {
        if (strcmp(r->ops[i].name, name) == 0) {
            return &r->ops[i];
        }
    }
    fail_msg("no op '%s'", name);
    return NULL;
}

static int has_warning(const tpu_replay_report_t *r, const char *part)
{
    int i;

    for (i = 0; i < r->nwarnings; i++) {
        if (strstr(r->warnings[i], part) != NULL) {
            return 1;
        }
    }
    return 0;
}

void test_replay_loops(void **state)
{
    tpu_hlo_file_t *f = hlo_parse_path(FIX "while_4x4.hlo");
    const tpu_hlo_module_t *m = &f->modules[0];
    tpu_replay_report_t *r = replay(m, NULL);
    const char *names[] = {"unknown"};
    const int64_t counts[] = {4};
    tpu_replay_opts_t o;
    int i;

    (void)state;
    assert_int_equal(coll(r, "ar")->executions, 12); /* known_trip_count */
    assert_int_equal(coll(r, "ag")->executions, 3);  /* 1, 4, 7 < 10 */
    assert_int_equal(coll(r, "a2a")->executions, 1); /* unknown: once, with a warning */
    assert_true(has_warning(r, "while 'unknown': trip count unknown"));
    assert_true(fabs(r->comm_us - (12 * coll(r, "ar")->modeled_us + 3 * coll(r, "ag")->modeled_us +
                                   coll(r, "a2a")->modeled_us)) < 1e-9);
    assert_true(r->step_us >= r->comm_us);
    /* The executions in order, loops unrolled: 12 x ar, 3 x ag, 1 x a2a. */
    assert_int_equal(r->nseq, 16);
    assert_int_equal(r->seq_truncated, 0);
    for (i = 0; i < 16; i++) {
        assert_string_equal(r->colls[r->seq[i]].name, i < 12 ? "ar" : i < 15 ? "ag" : "a2a");
    }
    tpu_replay_report_destroy(r);

    memset(&o, 0, sizeof(o));
    o.ntrips = 1;
    o.trip_names = names;
    o.trip_counts = counts;
    r = replay(m, &o);
    assert_int_equal(coll(r, "a2a")->executions, 4);
    assert_false(has_warning(r, "trip count unknown"));
    tpu_replay_report_destroy(r);
    tpu_hlo_file_destroy(f);
}

/* A dot between an all-gather's start and done hides it; run synchronously, they add. */
void test_replay_async_overlap(void **state)
{
    tpu_hlo_file_t *f = hlo_parse_path(FIX "async_4x4.hlo");
    tpu_replay_report_t *ov = replay(&f->modules[0], NULL);
    tpu_replay_report_t *sy = replay(&f->modules[1], NULL);
    tpu_replay_report_t *ca = replay(&f->modules[2], NULL);
    double ag = coll(ov, "ags")->modeled_us, dot = op(ov, "d")->modeled_us;
    tpu_chip_spec_t v5e;
    tpu_err_t err = {0};

    (void)state;
    /* 2 x 2048^3 FLOPs at the v5e's bf16 peak: compute-bound, no padding. */
    assert_int_equal(tpu_chip_preset("v5e", &v5e, &err), TPU_OK);
    assert_true(op(ov, "d")->flops == 2.0 * 2048 * 2048 * 2048);
    assert_true(fabs(dot - 2.0 * 2048 * 2048 * 2048 / v5e.bf16_flops * 1e6) < 1e-9);
    assert_true(ag > 0 && dot > 0);
    assert_true(fabs(ov->step_us - (ag > dot ? ag : dot)) < 1e-9);
    assert_true(fabs(ov->exposed_comm_us - (ag > dot ? ag - dot : 0)) < 1e-9);
    assert_true(fabs(sy->step_us - (ag + dot)) < 1e-9);
    assert_true(fabs(sy->exposed_comm_us - ag) < 1e-9);
    assert_true(fabs(coll(sy, "ag")->modeled_us - ag) < 1e-12);
    /* async-start / async-done with calls=: the same as the sugared pair. */
    assert_true(fabs(ca->step_us - ov->step_us) < 1e-9);
    assert_true(fabs(coll(ca, "as")->modeled_us - ag) < 1e-12);
    assert_int_equal(coll(ca, "as")->async, 1);
    tpu_replay_report_destroy(ov);
    tpu_replay_report_destroy(sy);
    tpu_replay_report_destroy(ca);
    tpu_hlo_file_destroy(f);
}

/* Every feature replayed on 2x4: conditional, custom-call, fusion, loop, all collectives. */
void test_replay_features(void **state)
{
    tpu_hlo_file_t *f = hlo_parse_path(FIX "features.hlo");
    const tpu_hlo_module_t *m = &f->modules[0];
    tpu_replay_report_t *r = replay(m, NULL);
    const char *names[] = {"my_pallas_kernel"};
    const double us[] = {5.5};
    tpu_replay_opts_t o;
    int i;

    (void)state;
    assert_true(has_warning(r, "conditional 'cond': the most expensive of 2 branches "
                               "('branch_big'"));
    assert_true(has_warning(r, "custom-call 'cc'"));
    assert_int_equal(r->custom_calls, 1);
    assert_int_equal(r->unknown_opcodes, 1);
    assert_true(op(r, "cc")->modeled_us == 0);
    assert_int_equal(op(r, "e")->executions, 1);                 /* branch_big counted */
    assert_int_equal(op(r, "n")->executions, 0);                 /* branch_small not */
    assert_int_equal(coll(r, "ar")->executions, 5);              /* the counted loop */
    assert_int_equal(coll(r, "ag-start")->bytes, 512 * 512 * 2); /* output per chip */
    assert_int_equal(coll(r, "rs")->bytes, 512 * 512 * 2);       /* input per chip */
    assert_string_equal(coll(r, "a2a")->axes, "x");
    assert_string_equal(coll(r, "cp")->axes, "y");
    assert_int_equal(coll(r, "cp")->desc.shift, 1);
    assert_string_equal(coll(r, "cb")->axes, "y");
    assert_true(op(r, "gelu")->flops == 64.0 * 512 * (1 + 4)); /* tanh 4 + multiply 1 */
    assert_true(op(r, "gelu")->bytes == 2.0 * 64 * 512 * 2);
    for (i = 0; i < r->ncolls; i++) {
        assert_int_equal(r->colls[i].supported, 1);
    }
    tpu_replay_report_destroy(r);
    memset(&o, 0, sizeof(o));
    o.ncustom = 1;
    o.custom_names = names;
    o.custom_us = us;
    r = replay(m, &o);
    assert_true(op(r, "cc")->modeled_us == 5.5);
    tpu_replay_report_destroy(r);
    tpu_hlo_file_destroy(f);
}

/* Groups that are not whole torus axes and pairs that are not one shift: the
 * engine's group collectives, given the same chips the module names. */
void test_replay_group_collectives(void **state)
{
    tpu_hlo_file_t *f = hlo_parse_text(
        "HloModule g, num_partitions=8\n"
        "add {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT c = f32[] add(a, b)\n}\n"
        "ENTRY e {\n p = f32[65536] parameter(0)\n"
        " ar = f32[65536] all-reduce(p), channel_id=1, replica_groups={{0,5},{1,4},{2,7},{3,6}}, "
        "use_global_device_ids=true, to_apply=add\n"
        " ROOT cp = f32[65536] collective-permute(p), channel_id=2, "
        "source_target_pairs={{0,1},{1,2},{2,3},{3,4},{4,5},{5,6},{6,7},{7,0}}\n}\n");
    const tpu_hlo_module_t *m = &f->modules[0];
    tpu_replay_report_t *r = replay(m, NULL);
    static const int32_t ids[] = {0, 5, 1, 4, 2, 7, 3, 6};
    static const int sizes[] = {2, 2, 2, 2};
    static const int32_t ring[] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 0};
    const tpu_replay_coll_t *ar = coll(r, "ar"), *cp = coll(r, "cp");
    tpu_topo_t topo;
    tpu_chip_spec_t spec;
    tpu_link_model_t link;
    tpu_groups_t g;
    tpu_coll_desc_t d;
    tpu_coll_plan_t *plan = NULL;
    tpu_coll_result_t res;
    tpu_err_t err = {0};

    (void)state;
    tpu_test_square_pod(8, "v5e", &topo, &spec, &link);
    assert_int_equal(ar->supported, 1);
    assert_string_equal(ar->axes, "groups");
    assert_int_equal(ar->group_size, 2);
    assert_memory_equal(ar->chips, ids, sizeof(ids));
    assert_int_equal(tpu_groups_from_lists(ids, sizes, 4, &g, &err), TPU_OK);
    tpu_coll_desc_init(&d);
    d.kind = TPU_COLL_PSUM;
    d.bytes = 65536 * 4;
    d.groups = &g;
    assert_int_equal(tpu_coll_plan_create(&topo, &link, &d, &plan, &err), TPU_OK);
    assert_int_equal(tpu_coll_plan_model(plan, &res, &err), TPU_OK);
    assert_true(res.modeled_us == ar->modeled_us);
    tpu_coll_plan_destroy(plan);
    tpu_groups_fini(&g);

    assert_int_equal(cp->supported, 1);
    assert_string_equal(cp->axes, "pairs");
    assert_int_equal(cp->npairs, 8);
    assert_memory_equal(cp->pairs, ring, sizeof(ring));
    tpu_coll_desc_init(&d);
    d.kind = TPU_COLL_PPERMUTE;
    d.bytes = 65536 * 4;
    d.pairs = ring;
    d.npairs = 8;
    assert_int_equal(tpu_coll_plan_create(&topo, &link, &d, &plan, &err), TPU_OK);
    assert_int_equal(tpu_coll_plan_model(plan, &res, &err), TPU_OK);
    assert_true(res.modeled_us == cp->modeled_us);
    tpu_coll_plan_destroy(plan);
    tpu_replay_report_destroy(r);
    tpu_hlo_file_destroy(f);
}

/* Bad modules for the replay: one message with the line. */
void test_replay_errors(void **state)
{
    tpu_hlo_file_t *f = hlo_parse_path(FIX "bad_group_chip.hlo");
    tpu_topo_t topo;
    tpu_chip_spec_t spec;
    tpu_link_model_t link;
    tpu_replay_report_t *r = NULL;
    tpu_err_t err = {0};
    int32_t order[16];
    tpu_replay_opts_t o;
    int i;

    (void)state;
    tpu_test_square_pod(16, "v5e", &topo, &spec, &link);
    assert_int_equal(tpu_replay_run(&f->modules[0], &topo, &link, &spec, NULL, &r, &err),
                     TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "bad_group_chip.hlo:5:3: replica group of 'ag' names device "
                                    "16"));
    tpu_hlo_file_destroy(f);
    f = hlo_parse_path(FIX "features.hlo");
    tpu_err_clear(&err);
    assert_int_equal(tpu_replay_run(&f->modules[0], &topo, &link, &spec, NULL, &r, &err),
                     TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "features.hlo:4:1: module 'features_8dev' runs on 8 devices"));
    assert_null(r);
    tpu_test_square_pod(8, "v5e", &topo, &spec, &link);
    for (i = 0; i < 8; i++) {
        order[i] = i == 7 ? 0 : i;
    }
    memset(&o, 0, sizeof(o));
    o.device_order = order;
    o.ndevice_order = 8;
    tpu_err_clear(&err);
    assert_int_equal(tpu_replay_run(&f->modules[0], &topo, &link, &spec, &o, &r, &err),
                     TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "not a permutation"));
    tpu_hlo_file_destroy(f);
}

/* Mutations of the fixtures: an error or a module, never a crash (ASan watches). */
void test_fuzz(void **state)
{
    static const char *const files[] = {"features.hlo", "coll_4x4.hlo", "async_4x4.hlo",
                                        "while_4x4.hlo", "multi.hlo"};
    static const char tokens[] = "{}()[],=%:<>\"'/*-0123456789 \nTxaf";
    uint64_t seed = 12345;
    size_t fi;
    int iter, ok = 0;

    (void)state;
    for (fi = 0; fi < sizeof(files) / sizeof(files[0]); fi++) {
        char path[512];
        size_t len;
        char *orig;

        snprintf(path, sizeof(path), "%s%s", FIX, files[fi]);
        orig = tpu_test_slurp(path, &len);
        assert_non_null(orig);
        for (iter = 0; iter < 400; iter++) {
            char *text = malloc(len + 16);
            size_t n = len, k, nmut;
            tpu_hlo_file_t *f = NULL;
            tpu_err_t err = {0};

            memcpy(text, orig, len);
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            nmut = 1 + (seed >> 60) % 4;
            for (k = 0; k < nmut; k++) {
                size_t at;

                seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
                at = (size_t)((seed >> 33) % n);
                switch ((seed >> 20) % 4) {
                case 0:
                    text[at] = tokens[(seed >> 8) % (sizeof(tokens) - 1)];
                    break;
                case 1:
                    n = at; /* truncate */
                    break;
                case 2:
                    text[at] = (char)(seed >> 40);
                    break;
                default:
                    memmove(text + at, text + at + 1, n - at - 1);
                    n--;
                    break;
                }
                if (n == 0) {
                    break;
                }
            }
            /* A copy of exactly n bytes: the parser must not read past it (ASan). */
            {
                char *exact = malloc(n ? n : 1);

                memcpy(exact, text, n);
                if (tpu_hlo_parse(exact, n, "fuzz.hlo", &f, &err) == TPU_OK) {
                    int m;

                    ok++;
                    for (m = 0; m < f->nmodules; m++) {
                        int d = tpu_replay_device_count(&f->modules[m]);
                        tpu_err_t ve = {0};

                        /* The verifier refuses with a message, or passes (replayed either way). */
                        if (tpu_hlo_verify(&f->modules[m], &ve) != TPU_OK) {
                            assert_true(strlen(ve.msg) > 0);
                        }

                        if (d == 8 || d == 16) {
                            tpu_topo_t topo;
                            tpu_chip_spec_t spec;
                            tpu_link_model_t link;
                            tpu_replay_report_t *r = NULL;
                            tpu_err_t e2 = {0};

                            tpu_test_square_pod(d, "v5e", &topo, &spec, &link);
                            if (tpu_replay_run(&f->modules[m], &topo, &link, &spec, NULL, &r,
                                               &e2) == TPU_OK) {
                                tpu_replay_report_destroy(r);
                            } else {
                                assert_true(strlen(e2.msg) > 0);
                            }
                        }
                    }
                    tpu_hlo_file_destroy(f);
                } else {
                    assert_true(strlen(err.msg) > 0);
                    assert_null(f);
                }
                free(exact);
            }
            free(text);
        }
        free(orig);
    }
    printf("fuzz: %d of %d mutants parsed\n", ok, (int)(5 * 400));
}

/* Fail the k-th allocation for every k: TPU_ERR_NO_MEMORY, no leak. */
void test_oom_loop(void **state)
{
    size_t len;
    char *text = tpu_test_slurp(FIX "features.hlo", &len);
    long n;

    (void)state;
    assert_non_null(text);
    for (n = 0; n < 100000; n++) {
        tpu_hlo_file_t *f = NULL;
        tpu_replay_report_t *r = NULL;
        tpu_err_t err = {0};
        tpu_status_t status;
        tpu_topo_t topo;
        tpu_chip_spec_t spec;
        tpu_link_model_t link;

        tpu_test_square_pod(8, "v5e", &topo, &spec, &link);
        tpu_test_alloc_fail_after(n);
        status = tpu_hlo_parse(text, len, "features.hlo", &f, &err);
        if (status == TPU_OK) {
            status = tpu_replay_run(&f->modules[0], &topo, &link, &spec, NULL, &r, &err);
            tpu_replay_report_destroy(r);
            tpu_hlo_file_destroy(f);
        }
        if (status != TPU_OK && status != TPU_ERR_NO_MEMORY) {
            fail_msg("allocation %ld failing: status %d (%s)", n, status, err.msg);
        }
        if (status == TPU_ERR_NO_MEMORY) {
            assert_true(tpu_test_alloc_failed());
            assert_int_equal(err.status, TPU_ERR_NO_MEMORY);
        }
        if (tpu_test_alloc_live() != 0) {
            fail_msg("allocation %ld failing: %ld blocks leaked", n, tpu_test_alloc_live());
        }
        tpu_test_alloc_restore();
        if (status == TPU_OK) {
            printf("oom loop: succeeded after %ld failing allocations\n", n);
            assert_true(n >= 3);
            free(text);
            return;
        }
    }
    fail_msg("parse + replay never succeeded");
}

/* Every module of ../shared/reference/hlo (third-party text, read where it lies). */
void test_reference_modules(void **state)
{
    const char *dir = TPU_HLO_REFERENCE_DIR;
    DIR *d = opendir(dir);
    struct dirent *e;
    int nfiles = 0, nmodules = 0;

    (void)state;
    if (d == NULL) {
        printf("reference tier skipped: %s is not there\n", dir);
        skip();
    }
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        char path[1024];
        tpu_hlo_file_t *f;
        int m;

        if (n < 5 || strcmp(e->d_name + n - 4, ".hlo") != 0) {
            continue;
        }
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        f = hlo_parse_path(path);
        nfiles++;
        for (m = 0; m < f->nmodules; m++) {
            tpu_replay_report_t *r = replay(&f->modules[m], NULL);
            int i;

            for (i = 0; i < r->ncolls; i++) {
                assert_true(r->colls[i].executions >= 0);
                assert_true(isfinite(r->colls[i].modeled_us));
            }
            assert_true(isfinite(r->step_us) && r->step_us >= 0);
            printf("  %s module %d '%s': %d devices, step %.3f us, %d collectives (%d not "
                   "timed)\n",
                   e->d_name, m + 1, f->modules[m].name, r->devices, r->step_us, r->ncolls,
                   r->unsupported);
            nmodules++;
            tpu_replay_report_destroy(r);
        }
        tpu_hlo_file_destroy(f);
    }
    closedir(d);
    printf("reference tier: %d modules in %d files\n", nmodules, nfiles);
    assert_true(nfiles > 0);
}
