/*
 * The transformer on one chip (include/tpu/transformer.h): the f32 loss
 * against an independent double-precision forward pass written here from
 * transformer.md, every parameter's gradient against central finite
 * differences of that double forward, the loss of an all-zero model (log V),
 * causality, bf16 against f32, SGD lowering the loss on a learnable task, the
 * hooks called where the collectives go, the .npy files (round trip and a
 * wrong shape), and the refused configs and tokens.
 */
#include "tpu/chip.h"
#include "tpu/npy.h"
#include "tpu/transformer.h"

#include "test_main.h"
#include "test_support.h"
#include "test_xfmr.h"

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

/* The tiny model of the checks: L=2, D=8, H=2, F=16, V=11, S=5, B=3. */
static void tiny_config(tpu_xfmr_config_t *cfg)
{
    tpu_xfmr_config_init(cfg);
    cfg->layers = 2;
    cfg->d_model = 8;
    cfg->heads = 2;
    cfg->d_ff = 16;
    cfg->vocab = 11;
    cfg->seq = 5;
    cfg->batch = 3;
}

static tpu_xfmr_t *make(const tpu_xfmr_config_t *cfg)
{
    tpu_chip_spec_t chip;
    tpu_xfmr_t *xf = NULL;
    tpu_err_t err = {0};

    assert_int_equal(tpu_chip_preset("v5e", &chip, &err), TPU_OK);
    if (tpu_xfmr_create(cfg, &chip, &xf, &err) != TPU_OK) {
        fail_msg("create: %s", err.msg);
    }
    return xf;
}

/* A small deterministic generator for the tests' data. */
static uint32_t lcg(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

static void random_tokens(int32_t *t, int64_t n, int64_t vocab, uint32_t seed)
{
    int64_t i;

    for (i = 0; i < n; i++) {
        t[i] = (int32_t)(lcg(&seed) % (uint32_t)vocab);
    }
}

/* ---- the double-precision reference forward, from transformer.md ---- */

typedef struct ref {
    int64_t L, D, H, F, V, S, B;
    double **p; /* every parameter, whole, in the order of tpu_xfmr_param_info */
} ref_t;

static void ref_from(tpu_xfmr_t *xf, ref_t *r)
{
    const tpu_xfmr_config_t *cfg = tpu_xfmr_config(xf);
    int p, n = tpu_xfmr_param_count(cfg);

    r->L = cfg->layers;
    r->D = cfg->d_model;
    r->H = cfg->heads;
    r->F = cfg->d_ff;
    r->V = cfg->vocab;
    r->S = cfg->seq;
    r->B = cfg->batch;
    r->p = calloc((size_t)n, sizeof(*r->p));
    assert_non_null(r->p);
    for (p = 0; p < n; p++) {
        int64_t shape[2], i, c;
        const float *w = tpu_xfmr_param(xf, p, shape);

        c = shape[0] * shape[1];
        r->p[p] = malloc((size_t)c * sizeof(double));
        assert_non_null(r->p[p]);
        for (i = 0; i < c; i++) {
            r->p[p][i] = w[i];
        }
    }
}

static void ref_fini(ref_t *r, int n)
{
    int p;

    for (p = 0; p < n; p++) {
        free(r->p[p]);
    }
    free(r->p);
}

static void ref_rms(const double *x, const double *g, int64_t S, int64_t D, double *out)
{
    int64_t i, j;

    for (i = 0; i < S; i++) {
        double ss = 0, sc;

        for (j = 0; j < D; j++) {
            ss += x[i * D + j] * x[i * D + j];
        }
        sc = 1.0 / sqrt(ss / (double)D + 1e-6);
        for (j = 0; j < D; j++) {
            out[i * D + j] = x[i * D + j] * sc * g[j];
        }
    }
}

/* out[S,n] = a[S,k] @ w[k,n] */
static void ref_mm(const double *a, const double *w, int64_t S, int64_t k, int64_t n, double *out)
{
    int64_t i, j, c;

    for (i = 0; i < S; i++) {
        for (j = 0; j < n; j++) {
            double s = 0;

            for (c = 0; c < k; c++) {
                s += a[i * k + c] * w[c * n + j];
            }
            out[i * n + j] = s;
        }
    }
}

static double ref_loss(const ref_t *r, const int32_t *x, const int32_t *y)
{
    const int64_t D = r->D, S = r->S, F = r->F, V = r->V, Dh = D / r->H;
    const int np = (int)(4 + 8 * r->L);
    double *h = malloc((size_t)(S * D) * sizeof(double)), *a = malloc((size_t)(S * D) * 8);
    double *q = malloc((size_t)(S * D) * 8), *k = malloc((size_t)(S * D) * 8);
    double *v = malloc((size_t)(S * D) * 8), *o = malloc((size_t)(S * D) * 8);
    double *t = malloc((size_t)(S * (F > V ? F : V)) * 8), *z = malloc((size_t)(S * D) * 8);
    double total = 0;
    int64_t b, l, i, j, c, hd;

    assert_true(h && a && q && k && v && o && t && z);
    for (b = 0; b < r->B; b++) {
        for (i = 0; i < S; i++) {
            for (j = 0; j < D; j++) {
                h[i * D + j] = r->p[0][x[b * S + i] * D + j] + r->p[1][i * D + j];
            }
        }
        for (l = 0; l < r->L; l++) {
            double *const *w = r->p + 2 + 8 * l;

            ref_rms(h, w[0], S, D, a);
            ref_mm(a, w[1], S, D, D, q);
            ref_mm(a, w[2], S, D, D, k);
            ref_mm(a, w[3], S, D, D, v);
            for (hd = 0; hd < r->H; hd++) {
                for (i = 0; i < S; i++) {
                    double s[64], mx = -INFINITY, sum = 0;

                    for (c = 0; c < S; c++) {
                        double dot = 0;

                        for (j = hd * Dh; j < (hd + 1) * Dh; j++) {
                            dot += q[i * D + j] * k[c * D + j];
                        }
                        s[c] = c > i ? -1e9 : dot / sqrt((double)Dh);
                        mx = s[c] > mx ? s[c] : mx;
                    }
                    for (c = 0; c < S; c++) {
                        s[c] = exp(s[c] - mx);
                        sum += s[c];
                    }
                    for (j = hd * Dh; j < (hd + 1) * Dh; j++) {
                        double acc = 0;

                        for (c = 0; c < S; c++) {
                            acc += s[c] / sum * v[c * D + j];
                        }
                        o[i * D + j] = acc;
                    }
                }
            }
            ref_mm(o, w[4], S, D, D, z);
            for (i = 0; i < S * D; i++) {
                h[i] += z[i];
            }
            ref_rms(h, w[5], S, D, a);
            ref_mm(a, w[6], S, D, F, t);
            for (i = 0; i < S * F; i++) {
                double u = t[i];

                t[i] = 0.5 * u * (1 + tanh(0.7978845608028654 * (u + 0.044715 * u * u * u)));
            }
            ref_mm(t, w[7], S, F, D, z);
            for (i = 0; i < S * D; i++) {
                h[i] += z[i];
            }
        }
        ref_rms(h, r->p[np - 2], S, D, a);
        ref_mm(a, r->p[np - 1], S, D, V, t);
        for (i = 0; i < S; i++) {
            double mx = -INFINITY, sum = 0;

            for (c = 0; c < V; c++) {
                mx = t[i * V + c] > mx ? t[i * V + c] : mx;
            }
            for (c = 0; c < V; c++) {
                sum += exp(t[i * V + c] - mx);
            }
            total += mx + log(sum) - t[i * V + y[b * S + i]];
        }
    }
    free(h);
    free(a);
    free(q);
    free(k);
    free(v);
    free(o);
    free(t);
    free(z);
    return total / (double)(r->B * S);
}

/* (a) The loss against the double forward, every gradient against central differences. */
static void gradients_match_finite_differences(void **state)
{
    tpu_xfmr_config_t cfg;
    tpu_xfmr_t *xf;
    tpu_err_t err = {0};
    ref_t r;
    int32_t x[15], y[15];
    double loss, rloss, worst = 0;
    int p, n, worst_p = 0;

    (void)state;
    tiny_config(&cfg);
    xf = make(&cfg);
    tpu_test_xfmr_init(xf, 3);
    random_tokens(x, 15, 11, 1);
    random_tokens(y, 15, 11, 2);
    if (tpu_xfmr_forward(xf, x, y, &loss, &err) != TPU_OK ||
        tpu_xfmr_backward(xf, &err) != TPU_OK) {
        fail_msg("%s", err.msg);
    }
    ref_from(xf, &r);
    rloss = ref_loss(&r, x, y);
    print_message("loss %.9f, double reference %.9f (relative %.2g)\n", loss, rloss,
                  fabs(loss - rloss) / rloss);
    assert_true(fabs(loss - rloss) <= 1e-6 * rloss);
    n = tpu_xfmr_param_count(&cfg);
    for (p = 0; p < n; p++) {
        char name[TPU_XFMR_NAME_LEN];
        int64_t shape[2], i, c;
        const float *g = tpu_xfmr_grad(xf, p, shape);
        double num = 0, den = 0, e;

        (void)tpu_xfmr_param_info(&cfg, p, name, shape);
        c = shape[0] * shape[1];
        for (i = 0; i < c; i++) {
            double keep = r.p[p][i], hstep = 1e-5 * (fabs(keep) > 1 ? fabs(keep) : 1), fd;

            r.p[p][i] = keep + hstep;
            fd = ref_loss(&r, x, y);
            r.p[p][i] = keep - hstep;
            fd = (fd - ref_loss(&r, x, y)) / (2 * hstep);
            r.p[p][i] = keep;
            num = fabs(g[i] - fd) > num ? fabs(g[i] - fd) : num;
            den = fabs(fd) > den ? fabs(fd) : den;
        }
        e = num / den;
        if (e > worst) {
            worst = e;
            worst_p = p;
        }
        if (!(e <= 1e-4)) {
            fail_msg("%s: gradient off by %.3g relative to its largest entry %.3g", name, e, den);
        }
    }
    {
        char name[TPU_XFMR_NAME_LEN];
        int64_t shape[2];

        (void)tpu_xfmr_param_info(&cfg, worst_p, name, shape);
        print_message("%d parameters: largest gradient error %.3g relative (%s), tolerance 1e-4\n",
                      n, worst, name);
    }
    ref_fini(&r, n);
    tpu_xfmr_destroy(xf);
}

/* (b) Every weight zero (as created): h = 0, rms(0) = 0, the logits are 0 and the loss is
 * log V. */
static void zero_model_loss_is_log_v(void **state)
{
    tpu_xfmr_config_t cfg;
    tpu_xfmr_t *xf;
    tpu_err_t err = {0};
    int32_t x[15], y[15];
    double loss;
    int64_t i;

    (void)state;
    tiny_config(&cfg);
    xf = make(&cfg);
    random_tokens(x, 15, 11, 5);
    random_tokens(y, 15, 11, 6);
    if (tpu_xfmr_forward(xf, x, y, &loss, &err) != TPU_OK) {
        fail_msg("%s", err.msg);
    }
    print_message("zero model: loss %.9f, log 11 = %.9f\n", loss, log(11.0));
    assert_true(fabs(loss - log(11.0)) < 1e-6);
    for (i = 0; i < 15 * 11; i++) {
        assert_true(tpu_xfmr_logits(xf)[i] == 0.0f);
    }
    tpu_xfmr_destroy(xf);
}

/* (c) A later token changes no earlier position's logits. */
static void causal(void **state)
{
    tpu_xfmr_config_t cfg;
    tpu_xfmr_t *xf;
    tpu_err_t err = {0};
    int32_t x[15], y[15];
    float before[15 * 11];
    double diff_before = 0, diff_after = 0;
    int64_t b, s, c;

    (void)state;
    tiny_config(&cfg);
    xf = make(&cfg);
    tpu_test_xfmr_init(xf, 9);
    random_tokens(x, 15, 11, 7);
    random_tokens(y, 15, 11, 8);
    assert_int_equal(tpu_xfmr_forward(xf, x, y, NULL, &err), TPU_OK);
    memcpy(before, tpu_xfmr_logits(xf), sizeof(before));
    x[1 * 5 + 3] = (x[1 * 5 + 3] + 4) % 11; /* sequence 1, position 3 */
    assert_int_equal(tpu_xfmr_forward(xf, x, y, NULL, &err), TPU_OK);
    for (b = 0; b < 3; b++) {
        for (s = 0; s < 5; s++) {
            for (c = 0; c < 11; c++) {
                int64_t i = (b * 5 + s) * 11 + c;
                double d = fabs((double)tpu_xfmr_logits(xf)[i] - before[i]);

                if (b == 1 && s >= 3) {
                    diff_after = d > diff_after ? d : diff_after;
                } else {
                    diff_before = d > diff_before ? d : diff_before;
                }
            }
        }
    }
    print_message("changing token 3: earlier positions and other sequences move by %g, "
                  "positions 3-4 by %g\n",
                  diff_before, diff_after);
    assert_true(diff_before == 0);
    assert_true(diff_after > 1e-3);
    tpu_xfmr_destroy(xf);
}

/* (d) bf16 matmul inputs against f32: the loss and every gradient. */
static void bf16_near_f32(void **state)
{
    tpu_xfmr_config_t cfg;
    tpu_xfmr_t *a, *b;
    tpu_err_t err = {0};
    int32_t x[15], y[15];
    double la, lb, worst = 0;
    int p, n;

    (void)state;
    tiny_config(&cfg);
    a = make(&cfg);
    cfg.precision = TPU_XFMR_BF16;
    b = make(&cfg);
    tpu_test_xfmr_init(a, 11);
    tpu_test_xfmr_init(b, 11);
    random_tokens(x, 15, 11, 12);
    random_tokens(y, 15, 11, 13);
    if (tpu_xfmr_forward(a, x, y, &la, &err) != TPU_OK || tpu_xfmr_backward(a, &err) != TPU_OK ||
        tpu_xfmr_forward(b, x, y, &lb, &err) != TPU_OK || tpu_xfmr_backward(b, &err) != TPU_OK) {
        fail_msg("%s", err.msg);
    }
    n = tpu_xfmr_param_count(&cfg);
    for (p = 0; p < n; p++) {
        int64_t shape[2], i;
        const float *ga = tpu_xfmr_grad(a, p, shape), *gb = tpu_xfmr_grad(b, p, NULL);
        double num = 0, den = 0;

        for (i = 0; i < shape[0] * shape[1]; i++) {
            num = fabs((double)ga[i] - gb[i]) > num ? fabs((double)ga[i] - gb[i]) : num;
            den = fabs((double)ga[i]) > den ? fabs((double)ga[i]) : den;
        }
        worst = num / den > worst ? num / den : worst;
    }
    print_message("bf16 vs f32: loss %.6f vs %.6f (relative %.2g, bound 1e-2); gradients %.3g "
                  "relative to their largest entry (bound 0.1)\n",
                  lb, la, fabs(lb - la) / la, worst);
    assert_true(fabs(lb - la) <= 1e-2 * la);
    assert_true(worst <= 0.1);
    tpu_xfmr_destroy(a);
    tpu_xfmr_destroy(b);
}

/* (e) SGD learns "the target is the previous token" (attention must look back). */
static void sgd_learns(void **state)
{
    enum {
        ROWS = 64,
        STEPS = 60
    };
    tpu_xfmr_config_t cfg;
    tpu_xfmr_t *xf;
    tpu_err_t err = {0};
    tpu_xfmr_report_t rep;
    int32_t *x, *y;
    double first = 0, last = 0;
    int64_t r, s, t;

    (void)state;
    tpu_xfmr_config_init(&cfg);
    cfg.layers = 2;
    cfg.d_model = 32;
    cfg.heads = 4;
    cfg.d_ff = 64;
    cfg.vocab = 16;
    cfg.seq = 8;
    cfg.batch = 8;
    xf = make(&cfg);
    tpu_xfmr_init_random(xf, 1);
    x = malloc(ROWS * 8 * sizeof(*x));
    y = malloc(ROWS * 8 * sizeof(*y));
    assert_true(x != NULL && y != NULL);
    random_tokens(x, ROWS * 8, 16, 21);
    for (r = 0; r < ROWS; r++) {
        for (s = 0; s < 8; s++) {
            y[r * 8 + s] = x[r * 8 + (s > 0 ? s - 1 : 0)];
        }
    }
    print_message("loss:");
    for (t = 0; t < STEPS; t++) {
        int64_t row = tpu_xfmr_batch_row(ROWS, 8, t);

        if (tpu_xfmr_step(xf, x + row * 8, y + row * 8, 0.5, &rep, &err) != TPU_OK) {
            fail_msg("step %lld: %s", (long long)t, err.msg);
        }
        first = t == 0 ? rep.loss : first;
        last = rep.loss;
        if (t % 10 == 0 || t == STEPS - 1) {
            print_message(" %lld:%.4f", (long long)t, rep.loss);
        }
    }
    print_message("\nstep: %lld matmuls, %.3g FLOPs, modeled %.2f us (MXU %.2f, VPU %.2f)\n",
                  (long long)rep.matmuls, rep.flops, rep.compute_us, rep.mxu_us, rep.vpu_us);
    assert_true(fabs(first - log(16.0)) < 0.5);
    assert_true(last < 0.5 * first);
    assert_true(rep.compute_us > 0 && rep.matmuls > 0);
    free(x);
    free(y);
    tpu_xfmr_destroy(xf);
}

/* The hooks: each point is reached as often as the header says, and an identity hook
 * changes nothing. */
static int64_t hook_calls[TPU_XFMR_HOOK_COUNT];

static tpu_status_t count_hook(void *arg, tpu_xfmr_hook_t hook, int index, float *buf,
                               int64_t count, tpu_err_t *err)
{
    (void)arg;
    (void)index;
    (void)buf;
    (void)err;
    assert_true(count > 0);
    hook_calls[hook]++;
    return TPU_OK;
}

static void hooks(void **state)
{
    tpu_xfmr_config_t cfg;
    tpu_xfmr_t *a, *b;
    tpu_err_t err = {0};
    int32_t x[15], y[15];
    double la, lb;
    int64_t L = 2;
    int64_t want[TPU_XFMR_HOOK_COUNT];
    int h;

    (void)state;
    tiny_config(&cfg);
    a = make(&cfg);
    cfg.hook = count_hook;
    b = make(&cfg);
    tpu_test_xfmr_init(a, 4);
    tpu_test_xfmr_init(b, 4);
    random_tokens(x, 15, 11, 31);
    random_tokens(y, 15, 11, 32);
    memset(hook_calls, 0, sizeof(hook_calls));
    assert_int_equal(tpu_xfmr_forward(a, x, y, &la, &err), TPU_OK);
    assert_int_equal(tpu_xfmr_forward(b, x, y, &lb, &err), TPU_OK);
    assert_int_equal(tpu_xfmr_backward(b, &err), TPU_OK);
    assert_true(fabs(la - lb) <= 1e-12 * la);
    want[TPU_XFMR_HOOK_EMBED] = 1;
    want[TPU_XFMR_HOOK_KV] = 2 * L;
    want[TPU_XFMR_HOOK_ATTN_OUT] = L;
    want[TPU_XFMR_HOOK_MLP_OUT] = L;
    want[TPU_XFMR_HOOK_VOCAB_MAX] = 1;
    want[TPU_XFMR_HOOK_VOCAB_SUM] = 1;
    want[TPU_XFMR_HOOK_LOSS] = 1;
    want[TPU_XFMR_HOOK_D_FINAL] = 1;
    want[TPU_XFMR_HOOK_D_MLP_IN] = L;
    want[TPU_XFMR_HOOK_D_KV] = 2 * L;
    want[TPU_XFMR_HOOK_D_ATTN_IN] = L;
    want[TPU_XFMR_HOOK_GRAD] = tpu_xfmr_param_count(&cfg);
    want[TPU_XFMR_HOOK_GATHER] = 0; /* fsdp only */
    for (h = 0; h < TPU_XFMR_HOOK_COUNT; h++) {
        if (hook_calls[h] != want[h]) {
            fail_msg("hook %s: %lld calls, expected %lld", tpu_xfmr_hook_name((tpu_xfmr_hook_t)h),
                     (long long)hook_calls[h], (long long)want[h]);
        }
    }
    tpu_xfmr_destroy(a);
    tpu_xfmr_destroy(b);
}

/* Save, load into another model (same bytes), and a file of the wrong shape. */
static void npy_files(void **state)
{
    char dir[] = "/tmp/test_transformer_XXXXXX", path[256];
    tpu_xfmr_config_t cfg;
    tpu_xfmr_t *a, *b;
    tpu_err_t err = {0};
    int64_t bad[2] = {8, 9};
    float zeros[72] = {0};
    int p, n;

    (void)state;
    assert_non_null(mkdtemp(dir));
    tiny_config(&cfg);
    a = make(&cfg);
    b = make(&cfg);
    tpu_xfmr_init_random(a, 17);
    if (tpu_xfmr_save(a, dir, &err) != TPU_OK || tpu_xfmr_load(b, dir, &err) != TPU_OK) {
        fail_msg("%s", err.msg);
    }
    n = tpu_xfmr_param_count(&cfg);
    for (p = 0; p < n; p++) {
        int64_t shape[2];
        const float *wa = tpu_xfmr_param(a, p, shape), *wb = tpu_xfmr_param(b, p, NULL);

        assert_memory_equal(wa, wb, (size_t)(shape[0] * shape[1]) * sizeof(float));
    }
    snprintf(path, sizeof(path), "%s/l1_wq.npy", dir);
    assert_int_equal(tpu_npy_write(path, TPU_NPY_F32, 2, bad, zeros, &err), TPU_OK);
    assert_int_equal(tpu_xfmr_load(b, dir, &err), TPU_ERR_INVALID);
    print_message("%s\n", err.msg);
    assert_non_null(strstr(err.msg, "l1_wq.npy"));
    assert_non_null(strstr(err.msg, "must have shape [8,8]"));
    for (p = 0; p < n; p++) {
        char name[TPU_XFMR_NAME_LEN];
        int64_t shape[2];

        (void)tpu_xfmr_param_info(&cfg, p, name, shape);
        snprintf(path, sizeof(path), "%s/%s.npy", dir, name);
        unlink(path);
    }
    rmdir(dir);
    tpu_xfmr_destroy(a);
    tpu_xfmr_destroy(b);
}

/* Refused: sizes, D not divisible by H, a sharded view without a hook, a range outside its
 * size, tokens out of range. */
static void refused(void **state)
{
    tpu_chip_spec_t chip;
    tpu_xfmr_config_t cfg;
    tpu_xfmr_t *xf = NULL;
    tpu_err_t err = {0};
    int32_t x[15] = {0}, y[15] = {0};

    (void)state;
    assert_int_equal(tpu_chip_preset("v5e", &chip, &err), TPU_OK);
    tiny_config(&cfg);
    cfg.heads = 3;
    assert_int_equal(tpu_xfmr_create(&cfg, &chip, &xf, &err), TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "not divisible by heads 3"));
    tiny_config(&cfg);
    cfg.vocab = 0;
    tpu_err_clear(&err);
    assert_int_equal(tpu_xfmr_create(&cfg, &chip, &xf, &err), TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "vocab"));
    tiny_config(&cfg);
    cfg.heads_range.lo = 0;
    cfg.heads_range.hi = 1;
    tpu_err_clear(&err);
    assert_int_equal(tpu_xfmr_create(&cfg, &chip, &xf, &err), TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "needs a hook"));
    tiny_config(&cfg);
    cfg.seq_range.lo = 2;
    cfg.seq_range.hi = 9;
    tpu_err_clear(&err);
    assert_int_equal(tpu_xfmr_create(&cfg, &chip, &xf, &err), TPU_ERR_INVALID);
    assert_null(xf);
    tiny_config(&cfg);
    xf = make(&cfg);
    y[2 * 5 + 4] = 11;
    tpu_err_clear(&err);
    assert_int_equal(tpu_xfmr_forward(xf, x, y, NULL, &err), TPU_ERR_INVALID);
    print_message("%s\n", err.msg);
    assert_non_null(strstr(err.msg, "row 2, column 4"));
    tpu_err_clear(&err);
    assert_int_equal(tpu_xfmr_backward(xf, &err), TPU_ERR_INVALID);
    assert_int_equal(tpu_xfmr_batch_row(10, 3, 4), 3);
    assert_int_equal(tpu_xfmr_batch_row(2, 3, 0), -1);
    tpu_xfmr_destroy(xf);
    tpu_xfmr_destroy(NULL);
}

/* The OOM loop: fail the k-th allocation for every k; each call returns TPU_OK or
 * TPU_ERR_NO_MEMORY and nothing leaks. */
static void out_of_memory(void **state)
{
    tpu_chip_spec_t chip;
    tpu_xfmr_config_t cfg;
    tpu_err_t err = {0};
    int32_t x[15], y[15];
    long budget;

    (void)state;
    assert_int_equal(tpu_chip_preset("v5e", &chip, &err), TPU_OK);
    tiny_config(&cfg);
    random_tokens(x, 15, 11, 41);
    random_tokens(y, 15, 11, 42);
    for (budget = 0;; budget++) {
        tpu_xfmr_t *xf = NULL;
        tpu_status_t status;
        int failed;

        tpu_test_alloc_fail_after(budget);
        status = tpu_xfmr_create(&cfg, &chip, &xf, &err);
        if (status == TPU_OK) {
            tpu_xfmr_init_random(xf, 1);
            status = tpu_xfmr_step(xf, x, y, 0.1, NULL, &err);
        }
        tpu_xfmr_destroy(xf);
        failed = tpu_test_alloc_failed();
        tpu_test_alloc_restore();
        assert_int_equal(tpu_test_alloc_live(), 0);
        if (status != TPU_OK && status != TPU_ERR_NO_MEMORY) {
            fail_msg("budget %ld: status %d: %s", budget, (int)status, err.msg);
        }
        if (!failed) {
            assert_int_equal(status, TPU_OK);
            break;
        }
        tpu_err_clear(&err);
    }
    print_message("OOM loop: %ld allocations, every failure clean\n", budget);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gradients_match_finite_differences),
        cmocka_unit_test(zero_model_loss_is_log_v),
        cmocka_unit_test(causal),
        cmocka_unit_test(bf16_near_f32),
        cmocka_unit_test(sgd_learns),
        cmocka_unit_test(hooks),
        cmocka_unit_test(npy_files),
        cmocka_unit_test(refused),
        cmocka_unit_test(out_of_memory),
    };

    return tpu_test_main(argc, argv, "transformer", tests, sizeof tests / sizeof tests[0]);
}
