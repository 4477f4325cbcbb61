/*
 * The MLP workload over the loopback transport (all chips in this process):
 * every strategy on several meshes gives the losses and final weights of the
 * one-chip run (f32 within 1e-5 relative, bf16 within 1e-2), data-parallel
 * replicas hold bit-identical weights after every step, the gradient of a
 * tiny case equals a finite difference, the step's cost adds up, and bad specs
 * are refused with a message naming the value.
 */
#include "tpu/chip.h"
#include "tpu/mlp.h"

#include "alloc.h"
#include "test_main.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#define STEPS 3

typedef struct result {
    double loss[STEPS];
    float *w[TPU_MLP_NPARAMS];
    tpu_mlp_report_t rep;
} result_t;

static void result_fini(result_t *r)
{
    int p;

    for (p = 0; p < TPU_MLP_NPARAMS; p++) {
        tpu__free(r->w[p]);
        r->w[p] = NULL;
    }
}

/* Train STEPS steps on a 'shape' pod with mesh data x model; gather the weights. */
static void train(const char *shape, int data, int model, tpu_mlp_strategy_t strat,
                  tpu_mlp_precision_t prec, int64_t hidden, result_t *r)
{
    tpu_topo_t topo;
    tpu_chip_spec_t chip;
    tpu_link_model_t link;
    tpu_xport_t *x = NULL;
    tpu_mlp_t *mlp = NULL;
    tpu_mlp_spec_t spec;
    tpu_err_t err = {0};
    int dims[3], wrap[3] = {1, 1, 1}, naxes, s, p;

    assert_int_equal(tpu_topo_parse_shape(shape, dims, &naxes, &err), TPU_OK);
    assert_int_equal(tpu_topo_init(&topo, naxes, dims, wrap, 1, &err), TPU_OK);
    assert_int_equal(tpu_chip_preset("v5e", &chip, &err), TPU_OK);
    tpu_chip_link_model(&chip, &link);
    assert_int_equal(tpu_xport_loopback_create(topo.nchips, &x, &err), TPU_OK);
    tpu_mlp_spec_init(&spec);
    spec.batch = 32;
    spec.hidden = hidden;
    spec.lr = 0.05;
    spec.seed = 7;
    spec.precision = prec;
    spec.strategy = strat;
    spec.data = data;
    spec.model = model;
    if (tpu_mlp_create(&spec, &topo, &link, &chip, x, &mlp, &err) != TPU_OK) {
        fail_msg("create: %s", err.msg);
    }
    for (s = 0; s < STEPS; s++) {
        int i, j;

        if (tpu_mlp_step(mlp, s, &r->rep, &err) != TPU_OK) {
            fail_msg("step: %s", err.msg);
        }
        r->loss[s] = r->rep.loss;
        /* Replicas over data hold the same bytes (not fsdp: its chips hold pieces). */
        for (i = 0; strat != TPU_MLP_FSDP && i < x->nlocal; i++) {
            int di, mi, dj, mj;
            uint64_t hi = tpu_mlp_param_hash(mlp, i, &di, &mi);

            for (j = 0; j < x->nlocal; j++) {
                uint64_t hj = tpu_mlp_param_hash(mlp, j, &dj, &mj);

                if (mi == mj && hi != hj) {
                    fail_msg("step %d: chips %d and %d (model index %d) differ", s, i, j, mi);
                }
            }
        }
    }
    for (p = 0; p < TPU_MLP_NPARAMS; p++) {
        r->w[p] = tpu__malloc((size_t)tpu_mlp_param_count(hidden, p) * sizeof(float));
        assert_non_null(r->w[p]);
    }
    if (tpu_mlp_gather(mlp, r->w, &err) != TPU_OK) {
        fail_msg("gather: %s", err.msg);
    }
    tpu_mlp_destroy(mlp);
    tpu_xport_destroy(x);
}

/* The largest relative difference seen, for the log. */
static double worst;

static void compare(const result_t *a, const result_t *ref, int64_t hidden, double tol,
                    const char *what)
{
    int s, p;

    for (s = 0; s < STEPS; s++) {
        double e = fabs(a->loss[s] - ref->loss[s]) / fabs(ref->loss[s]);

        worst = e > worst ? e : worst;

        if (!(e <= tol)) {
            fail_msg("%s: loss of step %d: %.9g vs %.9g (rel %.3g)", what, s, a->loss[s],
                     ref->loss[s], e);
        }
    }
    for (p = 0; p < TPU_MLP_NPARAMS; p++) {
        double e = tpu_mlp_param_rel_diff(a->w[p], ref->w[p], tpu_mlp_param_count(hidden, p));

        worst = e > worst ? e : worst;

        if (!(e <= tol)) {
            fail_msg("%s: %s differs by %.3g relative", what, tpu_mlp_param_name(p), e);
        }
    }
}

static void sharded_equals_one_chip(tpu_mlp_precision_t prec, double tol)
{
    static const struct {
        const char *shape;
        int data, model;
        tpu_mlp_strategy_t strat;
    } cases[] = {
        {"2x2", 4, 1, TPU_MLP_DP},   {"2x2", 1, 4, TPU_MLP_TP},   {"2x2", 2, 2, TPU_MLP_DP_TP},
        {"2x2", 4, 1, TPU_MLP_FSDP}, {"2x2", 2, 2, TPU_MLP_FSDP}, {"4x2", 4, 2, TPU_MLP_AUTO},
        {"8", 8, 1, TPU_MLP_FSDP},
    };
    result_t ref, r;
    size_t k;

    worst = 0;
    memset(&ref, 0, sizeof(ref));
    train("1", 1, 1, TPU_MLP_AUTO, prec, 32, &ref);
    assert_true(ref.loss[STEPS - 1] < ref.loss[0]);
    for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        char what[64];

        memset(&r, 0, sizeof(r));
        train(cases[k].shape, cases[k].data, cases[k].model, cases[k].strat, prec, 32, &r);
        snprintf(what, sizeof(what), "%s data=%d,model=%d %s", cases[k].shape, cases[k].data,
                 cases[k].model, tpu_mlp_strategy_name(cases[k].strat));
        compare(&r, &ref, 32, tol, what);
        result_fini(&r);
    }
    print_message("%s: losses %.6f -> %.6f; largest relative difference from one chip %.3g "
                  "(tolerance %g)\n",
                  prec == TPU_MLP_BF16 ? "bf16" : "f32", ref.loss[0], ref.loss[STEPS - 1], worst,
                  tol);
    result_fini(&ref);
}

static void f32_matches(void **state)
{
    (void)state;
    sharded_equals_one_chip(TPU_MLP_F32, 1e-5);
}

static void bf16_matches(void **state)
{
    (void)state;
    sharded_equals_one_chip(TPU_MLP_BF16, 1e-2);
}

/* One step of a spec on a pod, with or without data; its report. */
static void one_step(const char *shape, int data, int model, tpu_mlp_strategy_t strat,
                     int model_only, tpu_mlp_report_t *rep)
{
    tpu_topo_t topo;
    tpu_chip_spec_t chip;
    tpu_link_model_t link;
    tpu_xport_t *x = NULL;
    tpu_mlp_t *mlp = NULL;
    tpu_mlp_spec_t spec;
    tpu_err_t err = {0};
    int dims[3], wrap[3] = {0, 0, 0}, naxes;

    assert_int_equal(tpu_topo_parse_shape(shape, dims, &naxes, &err), TPU_OK);
    assert_int_equal(tpu_topo_init(&topo, naxes, dims, wrap, 1, &err), TPU_OK);
    assert_int_equal(tpu_chip_preset("v5e", &chip, &err), TPU_OK);
    tpu_chip_link_model(&chip, &link);
    if (!model_only) {
        assert_int_equal(tpu_xport_loopback_create(topo.nchips, &x, &err), TPU_OK);
    }
    tpu_mlp_spec_init(&spec);
    spec.batch = 32;
    spec.hidden = 32;
    spec.precision = TPU_MLP_F32;
    spec.strategy = strat;
    spec.data = data;
    spec.model = model;
    spec.model_only = model_only;
    if (tpu_mlp_create(&spec, &topo, &link, &chip, x, &mlp, &err) != TPU_OK ||
        tpu_mlp_step(mlp, 0, rep, &err) != TPU_OK) {
        fail_msg("%s", err.msg);
    }
    tpu_mlp_destroy(mlp);
    tpu_xport_destroy(x);
}

/* The model without data gives the run's modeled numbers, bit for bit. */
static void model_only_equals_run(void **state)
{
    static const struct {
        const char *shape;
        int data, model;
        tpu_mlp_strategy_t strat;
    } cases[] = {
        {"1", 1, 1, TPU_MLP_AUTO},
        {"2x2", 2, 2, TPU_MLP_DP_TP},
        {"2x2", 4, 1, TPU_MLP_FSDP},
        {"4x2", 1, 8, TPU_MLP_TP},
    };
    size_t k;

    (void)state;
    for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        tpu_mlp_report_t a, b;
        int c;

        one_step(cases[k].shape, cases[k].data, cases[k].model, cases[k].strat, 0, &a);
        one_step(cases[k].shape, cases[k].data, cases[k].model, cases[k].strat, 1, &b);
        assert_memory_equal(&a.step_us, &b.step_us, sizeof(double));
        assert_memory_equal(&a.compute_us, &b.compute_us, sizeof(double));
        assert_memory_equal(&a.comm_us, &b.comm_us, sizeof(double));
        assert_memory_equal(&a.exposed_us, &b.exposed_us, sizeof(double));
        assert_int_equal(a.hbm_peak, b.hbm_peak);
        assert_int_equal(a.ncoll, b.ncoll);
        for (c = 0; c < a.ncoll; c++) {
            assert_memory_equal(&a.coll[c].modeled_us, &b.coll[c].modeled_us, sizeof(double));
            assert_int_equal(a.coll[c].bytes, b.coll[c].bytes);
        }
    }
}

/*
 * Figures computed by hand for one chip, B = 32, H = 32, f32: the model FLOPs,
 * the HBM peak (every array of the step is alive at the end of the backward
 * pass), and the collectives of dp_tp on a 2x2.
 */
static void by_hand(void **state)
{
    tpu_mlp_report_t r;
    /* Parameters: 784*32 + 32, 32*32 + 32, 32*10 + 10 floats. */
    const uint64_t params = 25120 + 1056 + 330;
    /* x, y, z1, h1, z2, h2, logits, the loss in and out, dh2, dh1; and the
     * gradients and their psum'ed copies. */
    const uint64_t acts = 32 * 784 + 32 + 4 * 32 * 32 + 32 * 10 + 2 + 32 * 32 + 32 * 32;
    const uint64_t grads = 2 * (25120 + 1056 + 330);

    (void)state;
    one_step("1", 1, 1, TPU_MLP_AUTO, 0, &r);
    /* 4*B*784*H + 6*B*H^2 + 6*B*H*10 */
    assert_true(r.model_flops == 3211264.0 + 196608.0 + 61440.0);
    assert_int_equal(r.hbm_peak, 4 * (params + acts + grads));
    assert_int_equal(r.ncoll, 0);
    assert_true(r.step_us == r.compute_us && r.exposed_us == 0);
    /* dp_tp on 2x2: the z2 psum over model (B/2 x H floats), the loss psum, the
     * three gradient psums over data (each chip's units, padded to 2). */
    one_step("2x2", 2, 2, TPU_MLP_DP_TP, 1, &r);
    assert_int_equal(r.ncoll, 5);
    assert_int_equal(r.coll[0].bytes, 16 * 32 * 4);
    assert_string_equal(r.coll[0].axis, "model");
    assert_int_equal(r.coll[1].bytes, 4);
    assert_int_equal(r.coll[2].bytes, 4 * 330);
    assert_int_equal(r.coll[3].bytes, 4 * (16 * 32 + 32));
    assert_int_equal(r.coll[4].bytes, 4 * (784 * 16 + 16));
    assert_true(r.coll[2].overlapped && !r.coll[0].overlapped);
    assert_true(r.step_us >= r.compute_us && r.step_us <= r.compute_us + r.comm_us + 1e-9);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(f32_matches),
        cmocka_unit_test(bf16_matches),
        cmocka_unit_test(model_only_equals_run),
        cmocka_unit_test(by_hand),
    };

    return tpu_test_main(argc, argv, "mlp", tests, sizeof tests / sizeof tests[0]);
}
