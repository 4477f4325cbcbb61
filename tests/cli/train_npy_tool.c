/*
 * Helper of the train tests (no numpy needed):
 *
 *   train_npy_tool gen DIR N H     write DIR/x.npy [N,784] f32, DIR/y.npy [N] int64,
 *                                  DIR/y32.npy [N] int32, a full set of initial
 *                                  weights for hidden H in DIR/init/, and broken
 *                                  files for the bad-input tests (DIR/bad_*.npy,
 *                                  DIR/init_bad/ with a w2 of the wrong shape)
 *   train_npy_tool compare A REF TOL
 *                                  compare the weights w1..b3 and losses.npy of two
 *                                  --save directories: for each, max |a - ref| /
 *                                  max |ref|; prints them, exits 1 above TOL
 *                                  (TOL 0: bit for bit)
 *   train_npy_tool slice X.npy Y.npy START COUNT DIR
 *                                  rows [START, START+COUNT) into DIR/x.npy, DIR/y.npy
 *   train_npy_tool compare-weights A REF TOL
 *                                  the same for the weights only (REF may be an
 *                                  --init directory)
 */
#include "tpu/mlp.h"
#include "tpu/npy.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

static int put(const char *dir, const char *name, tpu_npy_type_t t, int nd, const int64_t *shape,
               const void *data)
{
    char p[1024];
    tpu_err_t err = {0};

    snprintf(p, sizeof(p), "%s/%s", dir, name);
    if (tpu_npy_write(p, t, nd, shape, data, &err) != TPU_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    return 0;
}

/* Write a raw file: a version 1.0 header text and 'bytes' of data. */
static int put_raw(const char *dir, const char *name, const char *hdr, const void *data,
                   size_t bytes)
{
    char p[1024], h[256];
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
    size_t n;
    FILE *f;

    snprintf(h, sizeof(h), "%s", hdr);
    n = strlen(h);
    while ((10 + n + 1) % 64 != 0) {
        h[n++] = ' ';
    }
    h[n++] = '\n';
    pre[8] = (unsigned char)(n & 0xff);
    pre[9] = (unsigned char)(n >> 8);
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    f = fopen(p, "wb");
    if (f == NULL || fwrite(pre, 1, 10, f) != 10 || fwrite(h, 1, n, f) != n ||
        fwrite(data, 1, bytes, f) != bytes) {
        return 1;
    }
    return fclose(f) != 0;
}

static int gen(const char *dir, int64_t n, int64_t H)
{
    float *x = malloc((size_t)(n * 784) * sizeof(float));
    int64_t *y = malloc((size_t)n * sizeof(int64_t)), i;
    int32_t *y32 = malloc((size_t)n * sizeof(int32_t));
    uint64_t s = 12345;
    int bad = 0, p;
    char sub[1024], hdr[160];

    if (x == NULL || y == NULL || y32 == NULL) {
        return 1;
    }
    mkdir(dir, 0777);
    for (i = 0; i < n * 784; i++) {
        x[i] = (float)((double)lcg(&s) / 2147483648.0 * 2.0 - 1.0);
    }
    for (i = 0; i < n; i++) {
        y[i] = (int64_t)(lcg(&s) % 10);
        y32[i] = (int32_t)y[i];
    }
    {
        int64_t sx[2] = {n, 784}, sy[1] = {n}, sw[2] = {n, 783}, ss[1] = {n - 1};

        bad |= put(dir, "x.npy", TPU_NPY_F32, 2, sx, x);
        bad |= put(dir, "y.npy", TPU_NPY_I64, 1, sy, y);
        bad |= put(dir, "y32.npy", TPU_NPY_I32, 1, sy, y32);
        bad |= put(dir, "bad_x_783.npy", TPU_NPY_F32, 2, sw, x);
        bad |= put(dir, "bad_y_short.npy", TPU_NPY_I64, 1, ss, y);
        bad |= put(dir, "bad_y_f32.npy", TPU_NPY_F32, 1, sy, x);
        snprintf(hdr, sizeof(hdr),
                 "{'descr': '>f4', 'fortran_order': False, 'shape': (%lld, 784), }", (long long)n);
        bad |= put_raw(dir, "bad_x_bigendian.npy", hdr, x, (size_t)(n * 784) * 4);
        snprintf(hdr, sizeof(hdr),
                 "{'descr': '<f4', 'fortran_order': True, 'shape': (%lld, 784), }", (long long)n);
        bad |= put_raw(dir, "bad_x_fortran.npy", hdr, x, (size_t)(n * 784) * 4);
        snprintf(hdr, sizeof(hdr),
                 "{'descr': '<f4', 'fortran_order': False, 'shape': (%lld, 784), }", (long long)n);
        bad |= put_raw(dir, "bad_x_truncated.npy", hdr, x, (size_t)(n * 784) * 4 - 100);
        bad |= put_raw(dir, "bad_x_malformed.npy", "{'descr': '<f4', 'fortran_order': Nope}", x, 4);
        y[n / 2] = 12;
        bad |= put(dir, "bad_y_range.npy", TPU_NPY_I64, 1, sy, y);
    }
    /* Initial weights for hidden H, and a set whose w2 has the wrong shape. */
    snprintf(sub, sizeof(sub), "%s/init", dir);
    mkdir(sub, 0777);
    for (p = 0; p < TPU_MLP_NPARAMS; p++) {
        int64_t shape[2], cnt = tpu_mlp_param_count(H, p), k;
        int nd = tpu_mlp_param_shape(H, p, shape);
        float *w = malloc((size_t)cnt * sizeof(float));
        char name[32];

        if (w == NULL) {
            return 1;
        }
        for (k = 0; k < cnt; k++) {
            w[k] = (float)(((double)lcg(&s) / 2147483648.0 - 0.5) * 0.1);
        }
        snprintf(name, sizeof(name), "init/%s.npy", tpu_mlp_param_name(p));
        bad |= put(dir, name, TPU_NPY_F32, nd, shape, w);
        free(w);
    }
    snprintf(sub, sizeof(sub), "%s/init_bad", dir);
    mkdir(sub, 0777);
    for (p = 0; p < TPU_MLP_NPARAMS; p++) {
        int64_t shape[2], cnt;
        int nd = tpu_mlp_param_shape(H, p, shape);
        float *w;
        char name[32];

        if (p == 2) {
            shape[1] = H + 1;
        }
        cnt = nd == 2 ? shape[0] * shape[1] : shape[0];
        w = calloc((size_t)cnt, sizeof(float));
        snprintf(name, sizeof(name), "init_bad/%s.npy", tpu_mlp_param_name(p));
        bad |= w == NULL || put(dir, name, TPU_NPY_F32, nd, shape, w);
        free(w);
    }
    free(x);
    free(y);
    free(y32);
    return bad;
}

static int compare(const char *a, const char *ref, double tol, int nk)
{
    static const char *const names[] = {"w1", "b1", "w2", "b2", "w3", "b3", "losses"};
    double worst = 0;
    int k, bad = 0;

    for (k = 0; k < nk; k++) {
        char pa[1024], pr[1024];
        tpu_npy_t A, R;
        tpu_err_t err = {0};
        double num = 0, den = 0, e;
        int64_t i;

        snprintf(pa, sizeof(pa), "%s/%s.npy", a, names[k]);
        snprintf(pr, sizeof(pr), "%s/%s.npy", ref, names[k]);
        if (tpu_npy_read(pa, &A, &err) != TPU_OK || tpu_npy_read(pr, &R, &err) != TPU_OK) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        if (A.count != R.count || A.type != TPU_NPY_F32 || R.type != TPU_NPY_F32) {
            fprintf(stderr, "%s: %lld elements against %lld\n", names[k], (long long)A.count,
                    (long long)R.count);
            return 1;
        }
        for (i = 0; i < A.count; i++) {
            double x = ((float *)A.data)[i], r = ((float *)R.data)[i];

            num = fabs(x - r) > num ? fabs(x - r) : num;
            den = fabs(r) > den ? fabs(r) : den;
            if (tol == 0 && memcmp(&((float *)A.data)[i], &((float *)R.data)[i], 4) != 0) {
                bad = 1;
            }
            if (!isfinite(x)) {
                bad = 1;
            }
        }
        e = den > 0 ? num / den : num;
        worst = e > worst ? e : worst;
        printf("%-7s max relative difference %.3g\n", names[k], e);
        bad |= !(e <= tol);
        tpu_npy_fini(&A);
        tpu_npy_fini(&R);
    }
    printf("largest relative difference %.3g (tolerance %g): %s\n", worst, tol,
           bad ? "FAIL" : "ok");
    return bad;
}

/* Rows [start, start + count) of a data set, into DIR/x.npy and DIR/y.npy. */
static int slice(const char *xp, const char *yp, int64_t start, int64_t count, const char *dir)
{
    tpu_npy_t X, Y;
    tpu_err_t err = {0};
    int64_t sx[2] = {count, 784}, sy[1] = {count};
    int bad;

    if (tpu_npy_read(xp, &X, &err) != TPU_OK || tpu_npy_read(yp, &Y, &err) != TPU_OK ||
        start + count > X.shape[0]) {
        fprintf(stderr, "slice: %s\n", err.msg);
        return 1;
    }
    mkdir(dir, 0777);
    bad = put(dir, "x.npy", TPU_NPY_F32, 2, sx, (float *)X.data + start * 784);
    bad |= put(dir, "y.npy", Y.type, 1, sy, (char *)Y.data + start * tpu_npy_type_size(Y.type));
    tpu_npy_fini(&X);
    tpu_npy_fini(&Y);
    return bad;
}

int main(int argc, char **argv)
{
    if (argc == 7 && strcmp(argv[1], "slice") == 0) {
        return slice(argv[2], argv[3], atoll(argv[4]), atoll(argv[5]), argv[6]);
    }
    if (argc == 5 && strcmp(argv[1], "gen") == 0) {
        return gen(argv[2], atoll(argv[3]), atoll(argv[4]));
    }
    if (argc == 5 && strcmp(argv[1], "compare") == 0) {
        return compare(argv[2], argv[3], atof(argv[4]), 7);
    }
    if (argc == 5 && strcmp(argv[1], "compare-weights") == 0) {
        return compare(argv[2], argv[3], atof(argv[4]), 6);
    }
    fprintf(stderr, "usage: train_npy_tool gen DIR N H | compare[-weights] A REF TOL\n");
    return 2;
}
