/*
 * A bidirectional ring all-gather over one torus axis, written as a kernel
 * author writes it ("All-gather via permute by RDMA", seed 002), with
 * double-buffered VMEM.
 *
 * Every chip starts with its block (V/n bytes of the 'x' input) and ends with
 * all n blocks in 'out' (V bytes), block g from the chip at position g on the
 * axis.  Two streams go round the ring at once: one to the right (+1), one to
 * the left (-1).  Each stream lands in its own VMEM buffer of two slots, and
 * step s receives into slot s % 2 while it forwards from slot (s-1) % 2:
 *
 *   step 0:  send my block right and left        (from x in HBM)
 *   step s:  forward the blocks received at s-1  (from VMEM slot (s-1)%2 to the
 *            neighbour's slot s%2), and copy them VMEM -> HBM into 'out'
 *   steps:   K = floor(n/2); on an even ring the last step carries half a
 *            block each way (the block from the opposite chip arrives in two
 *            halves, one per stream)
 *
 *   n = 4, chip c, blocks by origin:   s=0: c -> c+1, c-1     s=1: c-1 -> c+1 (1st half)
 *                                                                  c+1 -> c-1 (2nd half)
 *
 * Why double buffering is enough: the neighbour writes slot s%2 again at step
 * s+2, which it starts only after it received this chip's step s+1 copy, which
 * this chip starts only after it waited for (and so consumed) slot s%2.
 *
 * Modeled time by hand: per step DMA issue + alpha + block/(W/2) (half a block
 * at the last step on an even ring), plus the last VMEM -> HBM copy:
 *     K * (issue + alpha) + (n-1) * (V/n) / W + issue + (V/n/2) / hbm_bw
 * The built-in ring all-gather takes (n-1)/n * V / W + K * alpha: the difference
 * is the K + 1 DMA issues and the last write-back to HBM, which the built-in
 * collective does not model (its data lands in HBM).
 *
 * The example checks its result against the built-in all_gather, bit for bit,
 * and its modeled time against the built-in's (within 5%).
 *
 *   ./ring_allgather --topology 16 --bytes 4M           (loopback, one process)
 *   mpirun -n 16 ./ring_allgather --topology 16 --bytes 4M
 *
 * It exits 1 when the result differs or the modeled time is off the built-in by
 * more than --tolerance (0.05): at small sizes the DMA issues weigh more (at
 * 4 KiB over 16 chips 0.9 us of 8 us).
 */
#include "tpu/coll.h"

#include "example_pod.h"

#include <math.h>
#include <stdint.h>

enum {
    X,
    OUT,
    RBUF,
    LBUF
}; /* buffers */
enum {
    LSEND = EXAMPLE_RING_NSEMS,
    LRECV
}; /* semaphores */

typedef struct ag_args {
    uint64_t shard; /* bytes of one block */
} ag_args_t;

static tpu_status_t ring_allgather(tpu_rdma_ctx_t *ctx, void *arg, tpu_err_t *err)
{
    const ag_args_t *a = arg;
    const uint64_t B = a->shard;
    int n = tpu_rdma_axis_size(ctx, 0), me = tpu_rdma_axis_index(ctx, 0);
    int K = n / 2, s, nlocal = 0, self = tpu_rdma_chip(ctx);
    example_ring_t ring = {X, RBUF, LBUF, 0, 0, B};
    tpu_rdma_copy_t cr, cl, lc;
    tpu_status_t st;

    st = tpu_rdma_axis_peer(ctx, 0, +1, &ring.right, err);
    if (st == TPU_OK) {
        st = tpu_rdma_axis_peer(ctx, 0, -1, &ring.left, err);
    }
    /* My own block into 'out' (a local DMA, HBM -> HBM). */
    tpu_rdma_copy_init(&lc, X, 0, OUT, (uint64_t)me * B, B, LSEND, LRECV, self);
    if (st == TPU_OK) {
        st = tpu_rdma_start(ctx, &lc, err);
        nlocal++;
    }
    for (s = 0; s < K && st == TPU_OK; s++) {
        /* On an even ring the last step moves half a block each way. */
        int half = (n % 2 == 0) && s == K - 1;
        uint64_t len_r = half ? B / 2 : B, len_l = half ? B - B / 2 : B;
        uint64_t off_l = half ? B / 2 : 0, slot = (uint64_t)(s % 2) * B;
        int from_r = ((me - s - 1) % n + n) % n, from_l = (me + s + 1) % n;

        st = example_ring_start(ctx, &ring, s, half, &cr, &cl, err);
        if (st == TPU_OK) {
            st = example_ring_wait(ctx, &cr, &cl, err);
        }
        /* The blocks that arrived: VMEM slot s%2 -> their place in 'out'. */
        tpu_rdma_copy_init(&lc, RBUF, slot, OUT, (uint64_t)from_r * B, len_r, LSEND, LRECV, self);
        if (st == TPU_OK) {
            st = tpu_rdma_start(ctx, &lc, err);
        }
        tpu_rdma_copy_init(&lc, LBUF, slot + off_l, OUT, (uint64_t)from_l * B + off_l, len_l, LSEND,
                           LRECV, self);
        if (st == TPU_OK) {
            st = tpu_rdma_start(ctx, &lc, err);
        }
        nlocal += 2;
    }
    /* Every local copy done before the kernel ends. */
    if (st == TPU_OK) {
        st = tpu_rdma_sem_wait(ctx, LSEND, nlocal, err);
    }
    if (st == TPU_OK) {
        st = tpu_rdma_sem_wait(ctx, LRECV, nlocal, err);
    }
    return st;
}

int main(int argc, char **argv)
{
    static const char *const sems[] = {EXAMPLE_RING_SEM_NAMES, "local_send", "local_recv"};
    tpu_dtype_t dtype = TPU_DTYPE_F32;
    example_t ex;
    tpu_err_t err;
    tpu_rdma_buf_t bufs[4];
    tpu_rdma_kernel_t k;
    tpu_rdma_stats_t stats;
    ag_args_t args;
    void **xin = NULL, **out = NULL, **ref = NULL;
    uint64_t bytes, wrong = 0;
    double builtin_us = 0, diff, tolerance;
    int rc = 1, i, n;
    char *end, algo[64];

    rc = example_open(&ex, argc, argv, "16");
    if (rc != 0) {
        return rc;
    }
    tpu_err_clear(&err);
    bytes = strtoull(example_flag(argc, argv, "--bytes", "4194304"), &end, 10);
    if (*end == 'K') {
        bytes <<= 10;
    } else if (*end == 'M') {
        bytes <<= 20;
    }
    n = tpu_pod_topo(ex.pod)->dims[0];
    if (tpu_pod_topo(ex.pod)->nchips != n || bytes == 0 || bytes % ((uint64_t)n * 8) != 0) {
        fprintf(stderr, "error: ring_allgather runs on one axis ('--topology 16') with --bytes "
                        "a multiple of 8 x the chips\n");
        return example_close(&ex, 2);
    }
    args.shard = bytes / (uint64_t)n;
    tolerance = atof(example_flag(argc, argv, "--tolerance", "0.05"));
    xin = example_bufs(&ex, args.shard);
    out = example_bufs(&ex, bytes);
    ref = example_bufs(&ex, bytes);
    if (xin == NULL || out == NULL || ref == NULL) {
        fprintf(stderr, "error: out of memory\n");
        goto done;
    }
    for (i = 0; i < ex.x->nlocal; i++) {
        tpu_coll_fill_exact(ex.x->local_chips[i], xin[i], args.shard, &dtype);
    }

    /* The kernel. */
    bufs[X] = (tpu_rdma_buf_t){"x", TPU_RDMA_HBM, args.shard, xin};
    bufs[OUT] = (tpu_rdma_buf_t){"out", TPU_RDMA_HBM, bytes, out};
    bufs[RBUF] = (tpu_rdma_buf_t){"vmem_right", TPU_RDMA_VMEM, 2 * args.shard, NULL};
    bufs[LBUF] = (tpu_rdma_buf_t){"vmem_left", TPU_RDMA_VMEM, 2 * args.shard, NULL};
    k = (tpu_rdma_kernel_t){"ring_allgather", 4, bufs, LRECV + 1, sems, ring_allgather, &args};
    if (tpu_rdma_run(ex.rdma, &k, &(tpu_rdma_opts_t){.timeout_s = ex.timeout_s}, &stats, &err) !=
        TPU_OK) {
        fprintf(stderr, "error: %s\n", err.msg);
        goto done;
    }

    /* The built-in all_gather on the same axis, bytes and transport. */
    if (example_builtin_allgather(&ex, bytes, dtype, xin, ref, &builtin_us, algo, sizeof(algo))) {
        goto done;
    }
    for (i = 0; i < ex.x->nlocal; i++) {
        wrong += memcmp(out[i], ref[i], bytes) != 0;
    }
    wrong = example_sum(&ex, wrong);
    diff = (stats.modeled_us - builtin_us) / builtin_us;
    if (example_main_rank(&ex)) {
        printf("ring_allgather on %s %s (%d chips) over %s, %llu bytes per chip gathered\n",
               tpu_pod_chip(ex.pod)->name, tpu_pod_shape(ex.pod), n, ex.x->ops->name,
               (unsigned long long)bytes);
        printf("result vs built-in all_gather: %s (%llu chips differ)\n",
               wrong == 0 ? "bit for bit equal" : "DIFFERENT", (unsigned long long)wrong);
        printf("modeled_us=%.6f modeled_hex=%a builtin_us=%.6f  (%s, %+.2f%%: %d DMA issues and "
               "the last "
               "VMEM->HBM copy)\n",
               stats.modeled_us, stats.modeled_us, builtin_us, algo, 100 * diff, n / 2 + 1);
        printf("copies=%lld on this host, host %.0f ms\n", (long long)stats.copies,
               stats.host_us / 1e3);
    }
    rc = wrong == 0 && fabs(diff) <= tolerance ? 0 : 1;

done:
    example_bufs_free(&ex, xin);
    example_bufs_free(&ex, out);
    example_bufs_free(&ex, ref);
    return example_close(&ex, rc);
}
