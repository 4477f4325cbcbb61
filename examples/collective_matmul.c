/*
 * Collective matmul (the JAX scaling book, "Sharded Matrices and How to Multiply
 * Them": overlap each step's remote copy of the next shard with the matmul on
 * the current one), written as a kernel.
 *
 * Y = all_gather_x(X) @ W on a ring of n chips along x: chip i holds X_i
 * (m x k, bf16, the rows i*m .. i*m+m-1 of X) and its own W (k x N, bf16), and
 * ends with Y (n*m x N, f32).  Instead of gathering X first and multiplying
 * after, the kernel multiplies the blocks it has while the next ones travel,
 * around a bidirectional ring (as ring_allgather.c, VMEM slots double-buffered):
 *
 *   step 0:  start X_i -> right, X_i -> left;   matmul X_i W      -> rows of i
 *   step s:  forward the blocks of step s-1;    matmul them       -> their rows
 *   end:     matmul the blocks of the last step (two halves on an even ring)
 *
 *   time ~ sum over steps of max(copy, matmul)  instead of  all_gather + matmul
 *
 * The report compares the kernel's modeled time with the built-in all_gather
 * followed by one matmul of the gathered X, and says how much of the
 * all-gather's time the overlap hid:
 *     hidden = (T_all_gather + T_matmul - T_kernel) / T_all_gather
 * Matmul time is tpu_mxu_seconds() (the MXU, padded to its shape), the same
 * helper for both.  The result is checked against the built-in path, bit for
 * bit (the host matmul runs with the same blocks, whole k, in both).
 *
 *   ./collective_matmul --topology 8 --m 128 --k 512 --n 2048
 *   mpirun -n 8 ./collective_matmul --topology 8
 */
#include "tpu/coll.h"
#include "tpu/mxu.h"

#include "example_pod.h"

#include <math.h>
#include <stdint.h>

enum {
    X,
    W,
    Y,
    RBUF,
    LBUF
}; /* buffers */

typedef struct cm_args {
    int64_t m, k, n; /* X_i is m x k, W is k x n */
} cm_args_t;

static void mm_desc(const cm_args_t *a, int64_t rows, tpu_mxu_desc_t *d)
{
    tpu_mxu_desc_init(d, rows, a->k, a->n, TPU_DTYPE_BF16);
    d->out = TPU_DTYPE_F32;
    d->bm = a->m / 2; /* the same blocks for every matmul: equal rounding */
    d->bk = a->k;
    d->bn = a->n;
}

/* Y rows [row, row + rows) = A (rows x k, bf16) @ W, and the MXU's time on the clock. */
static tpu_status_t matmul_rows(tpu_rdma_ctx_t *ctx, const cm_args_t *a, const void *A, int64_t row,
                                int64_t rows, tpu_err_t *err)
{
    const tpu_chip_spec_t *spec = tpu_pod_chip(tpu_rdma_pod(ctx));
    float *y = (float *)tpu_rdma_buf_data(ctx, Y) + row * a->n;
    tpu_mxu_desc_t d;
    tpu_status_t st;

    mm_desc(a, rows, &d);
    st = tpu_mxu_matmul(tpu_rdma_vmem(ctx), &d, A, tpu_rdma_buf_data(ctx, W), y, NULL, err);
    tpu_rdma_compute(ctx, tpu_mxu_seconds(spec, rows, a->k, a->n, TPU_DTYPE_BF16));
    return st;
}

static tpu_status_t collective_matmul(tpu_rdma_ctx_t *ctx, void *arg, tpu_err_t *err)
{
    const cm_args_t *a = arg;
    const uint64_t B = (uint64_t)(a->m * a->k * 2), row_bytes = (uint64_t)a->k * 2;
    int n = tpu_rdma_axis_size(ctx, 0), me = tpu_rdma_axis_index(ctx, 0);
    int K = n / 2, s;
    unsigned char *rb = tpu_rdma_buf_data(ctx, RBUF), *lb = tpu_rdma_buf_data(ctx, LBUF);
    example_ring_t ring = {X, RBUF, LBUF, 0, 0, B};
    tpu_rdma_copy_t cr, cl;
    tpu_status_t st;

    st = tpu_rdma_axis_peer(ctx, 0, +1, &ring.right, err);
    if (st == TPU_OK) {
        st = tpu_rdma_axis_peer(ctx, 0, -1, &ring.left, err);
    }
    for (s = 0; s < K && st == TPU_OK; s++) {
        int half = (n % 2 == 0) && s == K - 1;
        uint64_t prev = (uint64_t)((s + 1) % 2) * B; /* the slot of step s - 1 */

        st = example_ring_start(ctx, &ring, s, half, &cr, &cl, err);
        /* While they travel: the blocks this chip already has. */
        if (st == TPU_OK && s == 0) {
            st = matmul_rows(ctx, a, tpu_rdma_buf_data(ctx, X), (int64_t)me * a->m, a->m, err);
        } else if (st == TPU_OK) {
            int from_r = ((me - s) % n + n) % n, from_l = (me + s) % n;

            st = matmul_rows(ctx, a, rb + prev, (int64_t)from_r * a->m, a->m, err);
            if (st == TPU_OK) {
                st = matmul_rows(ctx, a, lb + prev, (int64_t)from_l * a->m, a->m, err);
            }
        }
        if (st == TPU_OK) {
            st = example_ring_wait(ctx, &cr, &cl, err);
        }
    }
    /* The blocks of the last step (halves of the opposite chip's on an even ring). */
    if (st == TPU_OK && K > 0) {
        int half = n % 2 == 0;
        uint64_t slot = (uint64_t)((K - 1) % 2) * B;
        int64_t rows_r = half ? a->m / 2 : a->m, rows_l = a->m - (half ? a->m / 2 : 0);
        int from_r = ((me - K) % n + n) % n, from_l = (me + K) % n;
        int64_t skip = half ? a->m / 2 : 0;

        st = matmul_rows(ctx, a, rb + slot, (int64_t)from_r * a->m, rows_r, err);
        if (st == TPU_OK) {
            st = matmul_rows(ctx, a, lb + slot + (uint64_t)skip * row_bytes,
                             (int64_t)from_l * a->m + skip, rows_l, err);
        }
    }
    return st;
}

static int64_t flag_int(int argc, char **argv, const char *name, const char *dflt)
{
    return atoll(example_flag(argc, argv, name, dflt));
}

/* bf16 bits of small exact values that vary with the chip and the index. */
static void fill_bf16(uint16_t *p, int64_t count, int chip, int salt)
{
    int64_t i;

    for (i = 0; i < count; i++) {
        float v = (float)((i * 7 + chip * 13 + salt) % 17 - 8) / 8.0f;
        uint32_t bits;

        memcpy(&bits, &v, sizeof(bits));
        p[i] = (uint16_t)(bits >> 16); /* exact: v has few mantissa bits */
    }
}

int main(int argc, char **argv)
{
    static const char *const sems[] = {EXAMPLE_RING_SEM_NAMES};
    example_t ex;
    tpu_err_t err;
    tpu_rdma_buf_t bufs[5];
    tpu_rdma_kernel_t kern;
    tpu_rdma_stats_t stats;
    tpu_mxu_desc_t md;
    cm_args_t a;
    void **xs = NULL, **ws = NULL, **ys = NULL, **xg = NULL, **yref = NULL;
    uint64_t xbytes, wbytes, ybytes, wrong = 0;
    double ag_us = 0, mm_us, base_us, hidden;
    int rc = 1, i, n, nl, ok = 1;
    char algo[64];

    rc = example_open(&ex, argc, argv, "8");
    if (rc != 0) {
        return rc;
    }
    tpu_err_clear(&err);
    a.m = flag_int(argc, argv, "--m", "128");
    a.k = flag_int(argc, argv, "--k", "512");
    a.n = flag_int(argc, argv, "--n", "2048");
    n = tpu_pod_topo(ex.pod)->dims[0];
    if (tpu_pod_topo(ex.pod)->nchips != n || n < 2 || a.m < 2 || a.m % 2 != 0 || a.k < 1 ||
        a.n < 1 || a.m * a.k > ((int64_t)1 << 28) || a.k * a.n > ((int64_t)1 << 28)) {
        fprintf(stderr, "error: collective_matmul runs on one axis of 2 or more chips "
                        "('--topology 8') with an even --m\n");
        return example_close(&ex, 2);
    }
    xbytes = (uint64_t)(a.m * a.k * 2);
    wbytes = (uint64_t)(a.k * a.n * 2);
    ybytes = (uint64_t)n * (uint64_t)(a.m * a.n) * 4;
    nl = ex.x->nlocal;
    xs = example_bufs(&ex, xbytes);
    ws = example_bufs(&ex, wbytes);
    ys = example_bufs(&ex, ybytes);
    xg = example_bufs(&ex, xbytes * (uint64_t)n);
    yref = example_bufs(&ex, ybytes);
    if (!xs || !ws || !ys || !xg || !yref) {
        fprintf(stderr, "error: out of memory\n");
        goto done;
    }
    for (i = 0; i < nl; i++) {
        fill_bf16(xs[i], a.m * a.k, ex.x->local_chips[i], 1);
        fill_bf16(ws[i], a.k * a.n, ex.x->local_chips[i], 5);
    }

    /* The kernel. */
    bufs[X] = (tpu_rdma_buf_t){"x", TPU_RDMA_HBM, xbytes, xs};
    bufs[W] = (tpu_rdma_buf_t){"w", TPU_RDMA_HBM, wbytes, ws};
    bufs[Y] = (tpu_rdma_buf_t){"y", TPU_RDMA_HBM, ybytes, ys};
    bufs[RBUF] = (tpu_rdma_buf_t){"vmem_right", TPU_RDMA_VMEM, 2 * xbytes, NULL};
    bufs[LBUF] = (tpu_rdma_buf_t){"vmem_left", TPU_RDMA_VMEM, 2 * xbytes, NULL};
    kern = (tpu_rdma_kernel_t){"collective_matmul", 5, bufs, EXAMPLE_RING_NSEMS, sems,
                               collective_matmul,   &a};
    if (tpu_rdma_run(ex.rdma, &kern, &(tpu_rdma_opts_t){.timeout_s = ex.timeout_s}, &stats, &err) !=
        TPU_OK) {
        fprintf(stderr, "error: %s\n", err.msg);
        goto done;
    }

    /* The unfused path: the built-in all_gather, then one matmul. */
    if (example_builtin_allgather(&ex, xbytes * (uint64_t)n, TPU_DTYPE_BF16, xs, xg, &ag_us, algo,
                                  sizeof(algo))) {
        goto done;
    }
    {
        tpu_vmem_t *vmem = NULL;

        mm_desc(&a, a.m * n, &md);
        ok = tpu_vmem_create(tpu_pod_chip(ex.pod), &vmem, &err) == TPU_OK;
        for (i = 0; ok && i < nl; i++) {
            ok = tpu_mxu_matmul(vmem, &md, xg[i], ws[i], yref[i], NULL, &err) == TPU_OK;
            wrong += memcmp(ys[i], yref[i], ybytes) != 0;
        }
        tpu_vmem_destroy(vmem);
        if (!ok) {
            fprintf(stderr, "error: matmul: %s\n", err.msg);
            goto done;
        }
    }
    wrong = example_sum(&ex, wrong);
    mm_us = tpu_mxu_seconds(tpu_pod_chip(ex.pod), a.m * n, a.k, a.n, TPU_DTYPE_BF16) * 1e6;
    base_us = ag_us + mm_us;
    hidden = (base_us - stats.modeled_us) / ag_us;
    if (example_main_rank(&ex)) {
        printf("collective_matmul on %s %s (%d chips) over %s: Y[%lld x %lld] = "
               "all_gather(X)[%lld x %lld] @ W[%lld x %lld] per chip, bf16 -> f32\n",
               tpu_pod_chip(ex.pod)->name, tpu_pod_shape(ex.pod), n, ex.x->ops->name,
               (long long)(a.m * n), (long long)a.n, (long long)(a.m * n), (long long)a.k,
               (long long)a.k, (long long)a.n);
        printf("result vs all_gather + matmul: %s (%llu chips differ)\n",
               wrong == 0 ? "bit for bit equal" : "DIFFERENT", (unsigned long long)wrong);
        printf("all_gather + matmul: %.3f + %.3f = %.3f us\n", ag_us, mm_us, base_us);
        printf("collective matmul:   modeled_us=%.6f modeled_hex=%a (compute %.3f us)\n",
               stats.modeled_us, stats.modeled_us, stats.compute_us);
        printf("hidden: %.1f%% of the all-gather's %.3f us\n", 100 * hidden, ag_us);
    }
    rc = wrong == 0 ? 0 : 1;

done:
    example_bufs_free(&ex, xs);
    example_bufs_free(&ex, ws);
    example_bufs_free(&ex, ys);
    example_bufs_free(&ex, xg);
    example_bufs_free(&ex, yref);
    return example_close(&ex, rc);
}
