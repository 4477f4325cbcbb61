/*
 * The transformer's shard view (include/tpu/transformer.h) run for real: one
 * thread per chip, each with its own tpu_xfmr_t holding its piece of the
 * model, and a hook written here that does each collective between the
 * threads (psum, max, the sequence all-gather of k and v) over the groups of a
 * data x sequence x tensor mesh.  Every layout's losses and final weights
 * equal one chip's within 1e-5 (weights relative to each parameter's largest
 * entry), and data-parallel replicas hold bit-identical weights.  This checks
 * the ranges and the hook points the pod's collectives will use (issue 24);
 * it does not use the collective engine.
 */
#include "tpu/chip.h"
#include "tpu/transformer.h"

#include "test_main.h"
#include "test_xfmr.h"

#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define MAXC  8
#define STEPS 3
#define ROWS  8
#define BATCH 4 /* global batch, sequences */
#define SEQ   5
#define VOCAB 11
#define LR    0.2
#define NPMAX 32

typedef struct mesh {
    int data, seq, tensor, n;
    pthread_barrier_t bar;
    float *bufs[MAXC];
    struct chip *chips[MAXC];
    const int32_t *x, *y;
} mesh_t;

typedef struct chip {
    mesh_t *m;
    int id, d, s, tp;
    tpu_xfmr_config_t cfg;
    tpu_xfmr_t *xf;
    double loss[STEPS];
    char err[640]; /* the first failure, for the main thread */
} chip_t;

/* Part k of n items split in 'parts': [k n / parts, (k + 1) n / parts). */
static tpu_xfmr_range_t part(int64_t n, int parts, int k)
{
    tpu_xfmr_range_t r = {k * n / parts, (k + 1) * n / parts};

    return r;
}

/* The group of 'c' for a hook: chips equal to c in every coordinate the group keeps. */
static int same_group(const chip_t *a, const chip_t *b, int keep_d, int keep_s, int keep_tp)
{
    return (!keep_d || a->d == b->d) && (!keep_s || a->s == b->s) && (!keep_tp || a->tp == b->tp);
}

static tpu_status_t mesh_hook(void *arg, tpu_xfmr_hook_t hook, int index, float *buf, int64_t count,
                              tpu_err_t *err)
{
    chip_t *c = arg;
    mesh_t *m = c->m;
    const tpu_xfmr_config_t *cfg = &c->cfg;
    int keep_d = 1, keep_s = 1, keep_tp = 0, is_max = 0, gather = 0, g;
    float *res = malloc((size_t)count * sizeof(float));
    int64_t i;

    (void)err;
    switch (hook) {
    case TPU_XFMR_HOOK_KV:
        gather = 1;
        /* fall through */
    case TPU_XFMR_HOOK_D_KV:
        keep_s = 0;
        keep_tp = 1;
        break;
    case TPU_XFMR_HOOK_LOSS:
        keep_d = keep_s = 0;
        keep_tp = 1;
        break;
    case TPU_XFMR_HOOK_GRAD:
        /* pos is split over sequence: summed over data only */
        keep_d = 0;
        keep_s = index == 1;
        keep_tp = 1;
        break;
    case TPU_XFMR_HOOK_VOCAB_MAX:
        is_max = 1;
        break;
    default: /* the tensor psums */
        break;
    }
    m->bufs[c->id] = buf;
    pthread_barrier_wait(&m->bar);
    memcpy(res, buf, (size_t)count * sizeof(float));
    if (gather) {
        /* [B, nh, S, Dh]: copy each other member's positions. */
        int64_t bh = cfg->batch * (cfg->heads_range.hi - cfg->heads_range.lo);
        int64_t dh = cfg->d_model / cfg->heads, S = cfg->seq, j;

        for (g = 0; g < m->n; g++) {
            const chip_t *o = m->chips[g];

            if (g == c->id || !same_group(c, o, keep_d, keep_s, keep_tp)) {
                continue;
            }
            for (j = 0; j < bh; j++) {
                int64_t off = (j * S + o->cfg.seq_range.lo) * dh;

                memcpy(res + off, m->bufs[g] + off,
                       (size_t)((o->cfg.seq_range.hi - o->cfg.seq_range.lo) * dh) * sizeof(float));
            }
        }
    } else {
        int first = 1;

        /* Every member sums in chip order, so all get the same bits. */
        for (g = 0; g < m->n; g++) {
            if (!same_group(c, m->chips[g], keep_d, keep_s, keep_tp)) {
                continue;
            }
            for (i = 0; i < count; i++) {
                float v = m->bufs[g][i];

                res[i] = first ? v : is_max ? (v > res[i] ? v : res[i]) : res[i] + v;
            }
            first = 0;
        }
    }
    pthread_barrier_wait(&m->bar);
    memcpy(buf, res, (size_t)count * sizeof(float));
    free(res);
    return TPU_OK;
}

static void *chip_main(void *arg)
{
    chip_t *c = arg;
    const tpu_xfmr_config_t *cfg = &c->cfg;
    int64_t sl = cfg->seq_range.hi - cfg->seq_range.lo, b, i, t;
    int32_t x[BATCH * SEQ], y[BATCH * SEQ];
    tpu_chip_spec_t spec;
    tpu_err_t err = {0};

    if (tpu_chip_preset("v5e", &spec, &err) != TPU_OK ||
        tpu_xfmr_create(cfg, &spec, &c->xf, &err) != TPU_OK) {
        snprintf(c->err, sizeof(c->err), "chip %d: %s", c->id, err.msg);
        return NULL; /* the others then wait at a barrier: the test's TIMEOUT reports it */
    }
    tpu_test_xfmr_init(c->xf, 3);
    for (t = 0; t < STEPS; t++) {
        int64_t row = tpu_xfmr_batch_row(ROWS, BATCH, t) + c->d * cfg->batch;
        tpu_xfmr_report_t rep;

        for (b = 0; b < cfg->batch; b++) {
            for (i = 0; i < sl; i++) {
                x[b * sl + i] = c->m->x[(row + b) * SEQ + cfg->seq_range.lo + i];
                y[b * sl + i] = c->m->y[(row + b) * SEQ + cfg->seq_range.lo + i];
            }
        }
        if (tpu_xfmr_step(c->xf, x, y, LR, &rep, &err) != TPU_OK) {
            snprintf(c->err, sizeof(c->err), "chip %d step %lld: %s", c->id, (long long)t, err.msg);
            return NULL;
        }
        c->loss[t] = rep.loss;
    }
    return NULL;
}

/* Run the mesh data x seq x tensor (one thread per chip); chips[] keep their models. */
static void run_mesh(mesh_t *m, chip_t *chips, const int32_t *x, const int32_t *y)
{
    pthread_t th[MAXC];
    int i;

    m->n = m->data * m->seq * m->tensor;
    m->x = x;
    m->y = y;
    assert_true(m->n <= MAXC);
    assert_int_equal(pthread_barrier_init(&m->bar, NULL, (unsigned)m->n), 0);
    for (i = 0; i < m->n; i++) {
        chip_t *c = &chips[i];
        tpu_xfmr_config_t *cfg = &c->cfg;

        memset(c, 0, sizeof(*c));
        c->m = m;
        c->id = i;
        c->tp = i % m->tensor;
        c->s = i / m->tensor % m->seq;
        c->d = i / (m->tensor * m->seq);
        m->chips[i] = c;
        tpu_xfmr_config_init(cfg);
        cfg->layers = 2;
        cfg->d_model = 8;
        cfg->heads = 2;
        cfg->d_ff = 16;
        cfg->vocab = VOCAB;
        cfg->seq = SEQ;
        cfg->batch = BATCH / m->data;
        cfg->batch_global = BATCH;
        cfg->heads_range = part(cfg->heads, m->tensor, c->tp);
        cfg->ff_range = part(cfg->d_ff, m->tensor, c->tp);
        cfg->vocab_range = part(VOCAB, m->tensor, c->tp);
        cfg->seq_range = part(SEQ, m->seq, c->s);
        cfg->hook = mesh_hook;
        cfg->hook_arg = c;
    }
    for (i = 0; i < m->n; i++) {
        assert_int_equal(pthread_create(&th[i], NULL, chip_main, &chips[i]), 0);
    }
    for (i = 0; i < m->n; i++) {
        pthread_join(th[i], NULL);
    }
    pthread_barrier_destroy(&m->bar);
    for (i = 0; i < m->n; i++) {
        if (chips[i].err[0] != '\0') {
            fail_msg("%s", chips[i].err);
        }
    }
}

static void free_mesh(const mesh_t *m, chip_t *chips)
{
    int i;

    for (i = 0; i < m->n; i++) {
        tpu_xfmr_destroy(chips[i].xf);
    }
}

static void layouts_equal_one_chip(void **state)
{
    static const int layouts[][3] = {{2, 1, 1}, {1, 2, 1}, {1, 1, 2}, {2, 1, 2},
                                     {1, 2, 2}, {2, 2, 1}, {2, 2, 2}};
    static chip_t one[1], chips[MAXC];
    int32_t x[ROWS * SEQ], y[ROWS * SEQ];
    uint32_t seed = 77;
    mesh_t m1, m;
    double worst = 0;
    size_t k;
    int i, p, t, np;

    (void)state;
    memset(&m1, 0, sizeof(m1));
    m1.data = m1.seq = m1.tensor = 1;
    for (i = 0; i < ROWS * SEQ; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (int32_t)((seed >> 8) % VOCAB);
        y[i] = i % SEQ > 0 ? x[i - 1] : x[i];
    }
    run_mesh(&m1, one, x, y);
    np = tpu_xfmr_param_count(&one[0].cfg);
    assert_true(np <= NPMAX);
    for (k = 0; k < sizeof(layouts) / sizeof(layouts[0]); k++) {
        double lworst = 0;

        memset(&m, 0, sizeof(m));
        m.data = layouts[k][0];
        m.seq = layouts[k][1];
        m.tensor = layouts[k][2];
        run_mesh(&m, chips, x, y);
        for (t = 0; t < STEPS; t++) {
            for (i = 0; i < m.n; i++) {
                double e = fabs(chips[i].loss[t] - one[0].loss[t]) / one[0].loss[t];

                lworst = e > lworst ? e : lworst;
            }
        }
        for (p = 0; p < np; p++) {
            int64_t ref_shape[2], shape[2], org[2], r, c;
            const float *ref = tpu_xfmr_param(one[0].xf, p, ref_shape);
            double num[MAXC] = {0}, den = 0;

            for (r = 0; r < ref_shape[0] * ref_shape[1]; r++) {
                den = fabs(ref[r]) > den ? fabs(ref[r]) : den;
            }
            for (i = 0; i < m.n; i++) {
                const float *w = tpu_xfmr_param(chips[i].xf, p, shape);

                assert_int_equal(tpu_xfmr_param_origin(chips[i].xf, p, org), 0);
                for (r = 0; r < shape[0]; r++) {
                    for (c = 0; c < shape[1]; c++) {
                        double d = fabs((double)w[r * shape[1] + c] -
                                        ref[(org[0] + r) * ref_shape[1] + org[1] + c]);

                        num[i] = d > num[i] ? d : num[i];
                    }
                }
                lworst = num[i] / den > lworst ? num[i] / den : lworst;
                /* A data replica (same s and tp, other d) holds the same bits. */
                if (chips[i].d > 0) {
                    const float *w0 = tpu_xfmr_param(chips[i - m.seq * m.tensor].xf, p, NULL);

                    if (memcmp(w, w0, (size_t)(shape[0] * shape[1]) * sizeof(float)) != 0) {
                        fail_msg("data=%d seq=%d tensor=%d: parameter %d differs between data "
                                 "replicas %d and %d",
                                 m.data, m.seq, m.tensor, p, i, i - m.seq * m.tensor);
                    }
                }
            }
        }
        print_message("data=%d seq=%d tensor=%d: losses %.6f %.6f %.6f, largest relative "
                      "difference from one chip %.3g\n",
                      m.data, m.seq, m.tensor, chips[0].loss[0], chips[0].loss[1], chips[0].loss[2],
                      lworst);
        if (!(lworst <= 1e-5)) {
            fail_msg("data=%d seq=%d tensor=%d: %.3g from one chip (tolerance 1e-5)", m.data, m.seq,
                     m.tensor, lworst);
        }
        worst = lworst > worst ? lworst : worst;
        free_mesh(&m, chips);
    }
    print_message("one chip: losses %.6f %.6f %.6f; every layout within %.3g\n", one[0].loss[0],
                  one[0].loss[1], one[0].loss[2], worst);
    free_mesh(&m1, one);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(layouts_equal_one_chip),
    };

    return tpu_test_main(argc, argv, "transformer shard", tests, sizeof tests / sizeof tests[0]);
}
