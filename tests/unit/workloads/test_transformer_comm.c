/*
 * The transformer's collectives over the mesh (emulator/workloads/transformer_comm.c)
 * on a 4x4 pod over the loopback transport: for the meshes data=16,
 * data=4,tensor=4, sequence=4,tensor=4, data=4,sequence=4,
 * data=2,tensor=2,sequence=4, fsdp=16, fsdp=4,tensor=4,
 * data=2,fsdp=2,tensor=4 and fsdp=2,sequence=2,tensor=4, and
 * dcn=2,fsdp=2,tensor=4 on two 2x4 slices, three SGD steps give the losses
 * and final weights of the same run on one chip within 1e-5 relative
 * (weights relative to each parameter's largest entry), data-parallel
 * replicas hold bit-identical weights, and every collective of the log has a
 * positive modeled time and the mesh axes its hook asks for; under fsdp, each
 * parameter is gathered twice a step but the head's once, and each gradient
 * is reduce-scattered once.  A layout that does not divide, or an axis the
 * transformer does not take, is refused in one line naming the dimension
 * (the parameter) and the axis; a chip that fails does not leave the others
 * waiting in a collective.
 */
#include "tpu/chip.h"
#include "tpu/topo.h"
#include "tpu/transformer.h"
#include "tpu/xport.h"

#include "test_main.h"
#include "test_xfmr.h"
#include "transformer_comm.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define STEPS 3
#define ROWS  TPU_TEST_XFMR_ROWS
#define BATCH TPU_TEST_XFMR_BATCH
#define SEQ   TPU_TEST_XFMR_SEQ
#define VOCAB TPU_TEST_XFMR_VOCAB
#define LR    0.2
#define MAXC  16

static int32_t toks_x[ROWS * SEQ], toks_y[ROWS * SEQ];

/* 'shape' is "4x4", or "2x4/2" for two slices of 2x4. */
static void make_pod(const char *shape, tpu_topo_t *topo, tpu_chip_spec_t *chip,
                     tpu_link_model_t *link)
{
    tpu_err_t err = {0};
    int dims[3], wrap[3] = {1, 1, 1}, naxes, slices = 1;
    char buf[32];

    snprintf(buf, sizeof(buf), "%s", shape);
    if (strchr(buf, '/') != NULL) {
        slices = atoi(strchr(buf, '/') + 1);
        *strchr(buf, '/') = '\0';
    }
    assert_int_equal(tpu_topo_parse_shape(buf, dims, &naxes, &err), TPU_OK);
    assert_int_equal(tpu_topo_init(topo, naxes, dims, wrap, slices, &err), TPU_OK);
    assert_int_equal(tpu_chip_preset("v5e", chip, &err), TPU_OK);
    tpu_chip_link_model(chip, link);
}

/* The mesh axes (bits of XFMR_AXIS_*) hook 'e' must span in a mesh of 'size'. */
static int expected_axes(const xfmr_comm_entry_t *e, const int *size)
{
    const int batch = (1 << XFMR_AXIS_DCN) | (1 << XFMR_AXIS_DATA);
    int want = 1 << XFMR_AXIS_TENSOR, a;

    switch (e->hook) {
    case TPU_XFMR_HOOK_KV:
    case TPU_XFMR_HOOK_D_KV:
        want = 1 << XFMR_AXIS_SEQUENCE;
        break;
    case TPU_XFMR_HOOK_LOSS:
        want = batch | (1 << XFMR_AXIS_FSDP) | (1 << XFMR_AXIS_SEQUENCE);
        break;
    case TPU_XFMR_HOOK_GATHER:
        want = 1 << XFMR_AXIS_FSDP;
        break;
    case TPU_XFMR_HOOK_GRAD:
        /* fsdp: a reduce-scatter over fsdp, then the psum over the replicas */
        want = e->kind == TPU_COLL_REDUCE_SCATTER ? 1 << XFMR_AXIS_FSDP
               : e->index == 1                    ? batch
                                                  : batch | (1 << XFMR_AXIS_SEQUENCE);
        break;
    default:
        break;
    }
    for (a = 0; a < XFMR_NAXES; a++) {
        if (size[a] == 1) {
            want &= ~(1 << a);
        }
    }
    return want;
}

/*
 * fsdp: every parameter gathered twice a step (forward, backward) but the
 * embeddings and the head once, each gradient reduce-scattered once; with
 * tensor > 1, layer l + 1's first gather lies between layer l - 1's and layer
 * l's first attn_out psum (prefetched one layer ahead).  Without fsdp, none.
 */
static void check_fsdp(const xfmr_comm_t *c, const char *spec)
{
    const int np = tpu_xfmr_param_count(&c->model), L = (int)c->model.layers,
              fsdp = c->size[XFMR_AXIS_FSDP] > 1;
    int64_t k, n = tpu__xfmr_comm_log_count(c), first_gather[64], first_attn[16];
    int gathers[64] = {0}, scatters[64] = {0}, p, l;

    assert_true(np <= 64 && L < 16);
    for (p = 0; p < np; p++) {
        first_gather[p] = -1;
    }
    for (l = 0; l < L; l++) {
        first_attn[l] = -1;
    }
    for (k = 0; k < n; k++) {
        const xfmr_comm_entry_t *e = tpu__xfmr_comm_log_at(c, k);

        if (e->hook == TPU_XFMR_HOOK_GATHER) {
            first_gather[e->index] = first_gather[e->index] < 0 ? k : first_gather[e->index];
            gathers[e->index]++;
        } else if (e->hook == TPU_XFMR_HOOK_GRAD && e->kind == TPU_COLL_REDUCE_SCATTER) {
            scatters[e->index]++;
        } else if (e->hook == TPU_XFMR_HOOK_ATTN_OUT && first_attn[e->index] < 0) {
            first_attn[e->index] = k;
        }
    }
    for (p = 0; p < np; p++) {
        int want = !fsdp ? 0 : p < 2 || p >= np - 2 ? 1 : 2;

        if (gathers[p] != want || scatters[p] != fsdp) {
            fail_msg("%s: parameter %d gathered %d times (expected %d), reduce-scattered %d times",
                     spec, p, gathers[p], want, scatters[p]);
        }
    }
    for (l = 0; fsdp && c->size[XFMR_AXIS_TENSOR] > 1 && l + 1 < L; l++) {
        int64_t g = first_gather[2 + 8 * (l + 1)];

        if (!(g < first_attn[l] && (l == 0 || g > first_attn[l - 1]))) {
            fail_msg("%s: layer %d's gather at %lld is not between layer %d's attn_out and "
                     "layer %d's",
                     spec, l + 1, (long long)g, l - 1, l);
        }
    }
}

/* Check the log of one step; print it summed by hook and axes when asked. */
static void check_log(const xfmr_comm_t *c, const char *spec, int print)
{
    int64_t k, n = tpu__xfmr_comm_log_count(c), j;
    double total = 0;

    assert_true(n > 0);
    check_fsdp(c, spec);
    for (k = 0; k < n; k++) {
        const xfmr_comm_entry_t *e = tpu__xfmr_comm_log_at(c, k);
        int want = expected_axes(e, c->size), count = 0;
        double us = 0, bytes = 0;

        if (e->axes != want || !(e->modeled_us > 0)) {
            fail_msg("%s: %s %d over %s (axes %d, expected %d), %.3f us", spec,
                     tpu_xfmr_hook_name(e->hook), e->index, e->axes_name, e->axes, want,
                     e->modeled_us);
        }
        total += e->modeled_us;
        /* one line per (hook, axes), at its first entry */
        for (j = 0; print && j < k; j++) {
            const xfmr_comm_entry_t *f = tpu__xfmr_comm_log_at(c, j);

            if (f->hook == e->hook && f->axes == e->axes && f->kind == e->kind) {
                break;
            }
        }
        if (!print || j < k) {
            continue;
        }
        for (j = k; j < n; j++) {
            const xfmr_comm_entry_t *f = tpu__xfmr_comm_log_at(c, j);

            if (f->hook == e->hook && f->axes == e->axes && f->kind == e->kind) {
                count++;
                us += f->modeled_us;
                bytes += (double)f->bytes;
            }
        }
        print_message("  %-10s %-14s %-14s x%-3d %8.0f B  %9.3f us  %s\n",
                      tpu_xfmr_hook_name(e->hook),
                      e->op == TPU_REDOP_MAX ? "pmax" : tpu_coll_name(e->kind), e->axes_name, count,
                      bytes, us, e->algorithm);
    }
    if (print) {
        print_message("  %lld collectives, %.3f us modeled per step\n", (long long)n, total);
    }
}

typedef struct run {
    double loss[STEPS];
    tpu_xfmr_t *xf[MAXC];
    xfmr_comm_t c;
    tpu_xport_t *x;
    int n;
} run_t;

static void run_fini(run_t *r)
{
    int i;

    for (i = 0; i < r->n; i++) {
        tpu_xfmr_destroy(r->xf[i]);
    }
    tpu__xfmr_comm_fini(&r->c);
    tpu_xport_destroy(r->x);
}

/* STEPS steps on one chip, without the comm layer. */
static void run_one_chip(run_t *r)
{
    tpu_xfmr_config_t cfg;
    tpu_chip_spec_t chip;
    tpu_err_t err = {0};
    int t;

    memset(r, 0, sizeof(*r));
    tpu_test_xfmr_config(&cfg);
    assert_int_equal(tpu_chip_preset("v5e", &chip, &err), TPU_OK);
    assert_int_equal(tpu_xfmr_create(&cfg, &chip, &r->xf[0], &err), TPU_OK);
    r->n = 1;
    tpu_test_xfmr_init(r->xf[0], 3);
    for (t = 0; t < STEPS; t++) {
        int64_t row = tpu_xfmr_batch_row(ROWS, BATCH, t);
        tpu_xfmr_report_t rep;

        if (tpu_xfmr_step(r->xf[0], toks_x + row * SEQ, toks_y + row * SEQ, LR, &rep, &err) !=
            TPU_OK) {
            fail_msg("one chip: %s", err.msg);
        }
        r->loss[t] = rep.loss;
    }
}

/* STEPS steps on the pod 'shape' (make_pod) with mesh 'spec'. */
static void run_mesh(const char *shape, const char *spec, run_t *r, int print)
{
    tpu_xfmr_report_t reps[MAXC];
    tpu_xfmr_config_t cfg;
    tpu_topo_t topo;
    tpu_chip_spec_t chip;
    tpu_link_model_t link;
    tpu_err_t err = {0};
    int i, t;

    memset(r, 0, sizeof(*r));
    make_pod(shape, &topo, &chip, &link);
    tpu_test_xfmr_config(&cfg);
    assert_int_equal(tpu_xport_loopback_create(topo.nchips, &r->x, &err), TPU_OK);
    if (tpu__xfmr_comm_init(&r->c, &topo, &link, &chip, r->x, spec, &cfg, NULL, &err) != TPU_OK) {
        fail_msg("%s: %s", spec, err.msg);
    }
    assert_true(r->c.nlocal <= MAXC);
    for (i = 0; i < r->c.nlocal; i++) {
        if (tpu_xfmr_create(tpu__xfmr_comm_config(&r->c, i), &chip, &r->xf[i], &err) != TPU_OK) {
            fail_msg("%s: chip %d: %s", spec, i, err.msg);
        }
        r->n++;
        tpu_test_xfmr_init(r->xf[i], 3);
    }
    for (t = 0; t < STEPS; t++) {
        int64_t row = tpu_xfmr_batch_row(ROWS, BATCH, t);

        tpu__xfmr_comm_log_clear(&r->c);
        if (tpu__xfmr_comm_step(&r->c, r->xf, toks_x + row * SEQ, toks_y + row * SEQ, LR, reps,
                                &err) != TPU_OK) {
            fail_msg("%s: step %d: %s", spec, t, err.msg);
        }
        r->loss[t] = reps[0].loss;
        for (i = 1; i < r->n; i++) {
            if (reps[i].loss != reps[0].loss) {
                fail_msg("%s: step %d: chips 0 and %d report losses %.9g and %.9g", spec, t, i,
                         reps[0].loss, reps[i].loss);
            }
        }
        if (print && t == 0) {
            print_message("%s (data on %s, sequence on %s, tensor on %s): the collectives of "
                          "a step by hook and mesh axes:\n",
                          spec, r->c.layout[XFMR_AXIS_DATA], r->c.layout[XFMR_AXIS_SEQUENCE],
                          r->c.layout[XFMR_AXIS_TENSOR]);
        }
        check_log(&r->c, spec, print && t == 0);
    }
}

/* The largest difference from one chip (losses relative, weights relative to each
 * parameter's largest entry); data replicas checked bit for bit. */
static double compare(const char *spec, run_t *r, run_t *one)
{
    const int np = tpu_xfmr_param_count(tpu_xfmr_config(one->xf[0]));
    double worst = 0;
    int i, j, p, t;

    for (t = 0; t < STEPS; t++) {
        double e = fabs(r->loss[t] - one->loss[t]) / one->loss[t];

        worst = e > worst ? e : worst;
    }
    for (p = 0; p < np; p++) {
        int64_t ref_shape[2], shape[2], org[2], k, col;
        const float *ref = tpu_xfmr_param(one->xf[0], p, ref_shape);
        double den = 0;

        for (k = 0; k < ref_shape[0] * ref_shape[1]; k++) {
            den = fabs(ref[k]) > den ? fabs(ref[k]) : den;
        }
        for (i = 0; i < r->n; i++) {
            const float *w = tpu_xfmr_param(r->xf[i], p, shape);
            const xfmr_comm_chip_t *ci = &r->c.chips[i];

            assert_int_equal(tpu_xfmr_param_origin(r->xf[i], p, org), 0);
            for (k = 0; k < shape[0]; k++) {
                for (col = 0; col < shape[1]; col++) {
                    double d = fabs((double)w[k * shape[1] + col] -
                                    ref[(org[0] + k) * ref_shape[1] + org[1] + col]) /
                               den;

                    worst = d > worst ? d : worst;
                }
            }
            /* A data replica (same fsdp, sequence and tensor coordinates) holds the same
             * bits. */
            for (j = 0; j < i; j++) {
                const xfmr_comm_chip_t *cj = &r->c.chips[j];

                if (cj->coord[XFMR_AXIS_SEQUENCE] == ci->coord[XFMR_AXIS_SEQUENCE] &&
                    cj->coord[XFMR_AXIS_TENSOR] == ci->coord[XFMR_AXIS_TENSOR] &&
                    cj->coord[XFMR_AXIS_FSDP] == ci->coord[XFMR_AXIS_FSDP] &&
                    memcmp(w, tpu_xfmr_param(r->xf[j], p, NULL),
                           (size_t)(shape[0] * shape[1]) * sizeof(float)) != 0) {
                    fail_msg("%s: parameter %d differs between data replicas %d and %d", spec, p, j,
                             i);
                }
            }
        }
    }
    return worst;
}

static void layouts_equal_one_chip(void **state)
{
    static const char *const specs[][2] = {{"4x4", "data=16"},
                                           {"4x4", "data=4,tensor=4"},
                                           {"4x4", "sequence=4,tensor=4"},
                                           {"4x4", "data=4,sequence=4"},
                                           {"4x4", "data=2,tensor=2,sequence=4"},
                                           {"4x4", "fsdp=16"},
                                           {"4x4", "fsdp=4,tensor=4"},
                                           {"4x4", "data=2,fsdp=2,tensor=4"},
                                           {"4x4", "fsdp=2,sequence=2,tensor=4"},
                                           {"2x4/2", "dcn=2,fsdp=2,tensor=4"}};
    const size_t nspecs = sizeof(specs) / sizeof(specs[0]);
    static run_t one, r;
    size_t k;

    (void)state;
    tpu_test_xfmr_tokens(toks_x, toks_y);
    run_one_chip(&one);
    for (k = 0; k < nspecs; k++) {
        double worst;

        run_mesh(specs[k][0], specs[k][1], &r, k == 4 || k == 7 || k + 1 == nspecs);
        worst = compare(specs[k][1], &r, &one);
        print_message("%-28s losses %.6f %.6f %.6f, largest relative difference from one "
                      "chip %.3g\n",
                      specs[k][1], r.loss[0], r.loss[1], r.loss[2], worst);
        if (!(worst <= 1e-5)) {
            fail_msg("%s: %.3g from one chip (tolerance 1e-5)", specs[k][1], worst);
        }
        run_fini(&r);
    }
    print_message("one chip: losses %.6f %.6f %.6f\n", one.loss[0], one.loss[1], one.loss[2]);
    run_fini(&one);
}

typedef struct fail_arg {
    run_t *r;
    int bad; /* the local chip that fails */
} fail_arg_t;

/* Local chip 'bad' fails before its first collective; the others run a step (on a
 * thread: no cmocka assertion here). */
static tpu_status_t step_or_fail(void *arg, int i, tpu_err_t *err)
{
    fail_arg_t *f = arg;
    int32_t x[BATCH * SEQ], y[BATCH * SEQ];

    if (i == f->bad) {
        return tpu_err_set(err, TPU_ERR_INVALID, "local chip %d fails on purpose", i);
    }
    tpu__xfmr_comm_slice(&f->r->c, i, toks_x, x);
    tpu__xfmr_comm_slice(&f->r->c, i, toks_y, y);
    return tpu_xfmr_step(f->r->xf[i], x, y, LR, NULL, err);
}

/* A chip that fails ends the others' waits: the run returns its error, and the next
 * step runs. */
static void a_failing_chip_stops_the_others(void **state)
{
    static run_t r;
    fail_arg_t f = {&r, 5};
    tpu_err_t err = {0};

    (void)state;
    tpu_test_xfmr_tokens(toks_x, toks_y);
    run_mesh("4x4", "data=4,tensor=4", &r, 0);
    assert_int_equal(tpu__xfmr_comm_run(&r.c, step_or_fail, &f, &err), TPU_ERR_INVALID);
    assert_string_equal(err.msg, "local chip 5 fails on purpose");
    tpu_err_clear(&err);
    if (tpu__xfmr_comm_step(&r.c, r.xf, toks_x, toks_y, LR, NULL, &err) != TPU_OK) {
        fail_msg("the step after a failure: %s", err.msg);
    }
    run_fini(&r);
}

/* 'spec' on a 'shape' pod is refused with one line holding 'want1' and 'want2'. */
static void refused(const char *shape, const char *spec, tpu_status_t status, const char *want1,
                    const char *want2)
{
    tpu_xfmr_config_t cfg;
    tpu_topo_t topo;
    tpu_chip_spec_t chip;
    tpu_link_model_t link;
    tpu_xport_t *x = NULL;
    xfmr_comm_t c;
    tpu_err_t err = {0};

    make_pod(shape, &topo, &chip, &link);
    tpu_test_xfmr_config(&cfg);
    assert_int_equal(tpu_xport_loopback_create(topo.nchips, &x, &err), TPU_OK);
    assert_int_equal(tpu__xfmr_comm_init(&c, &topo, &link, &chip, x, spec, &cfg, NULL, &err),
                     status);
    print_message("%s on %s: %s\n", spec, shape, err.msg);
    if (strstr(err.msg, want1) == NULL || strstr(err.msg, want2) == NULL ||
        strchr(err.msg, '\n') != NULL) {
        fail_msg("%s: '%s' should name '%s' and '%s' in one line", spec, err.msg, want1, want2);
    }
    tpu_xport_destroy(x);
}

static void bad_layouts_refused(void **state)
{
    (void)state;
    refused("4x3", "data=4,tensor=3", TPU_ERR_INVALID, "heads 4", "tensor=3");
    refused("4x3", "data=3,tensor=4", TPU_ERR_INVALID, "batch 16", "data=3");
    refused("4x3", "sequence=3,data=4", TPU_ERR_INVALID, "seq 16", "sequence=3");
    refused("4x3", "data=4,model=3", TPU_ERR_INVALID, "heads 4", "model=3");
    refused("4x8", "sequence=16,fsdp=2", TPU_ERR_INVALID, "parameter pos", "fsdp=2");
    refused("4x8", "tensor=4,fsdp=8", TPU_ERR_INVALID, "parameter embed", "vocab / tensor = 12");
    refused("4x3", "data=4,fsdp=3", TPU_ERR_INVALID, "batch 16", "data=4 x fsdp=3 (12)");
    refused("4x3/2", "dcn=2,data=12", TPU_ERR_INVALID, "batch 16", "dcn=2 x data=12 (24)");
    refused("2x4", "dcn=2,tensor=4", TPU_ERR_INVALID, "dcn", "number of slices, 1, not 2");
    refused("4x4", "data=4,pipeline=4", TPU_ERR_INVALID, "pipeline", "unknown mesh axis");
    refused("4x4", "tensor=4,model=4", TPU_ERR_INVALID, "tensor", "model");
    refused("4x4", "data=4,tensor=2", TPU_ERR_INVALID, "8", "16");
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(layouts_equal_one_chip),
        cmocka_unit_test(bad_layouts_refused),
        cmocka_unit_test(a_failing_chip_stops_the_others),
    };

    return tpu_test_main(argc, argv, "transformer comm", tests, sizeof tests / sizeof tests[0]);
}
