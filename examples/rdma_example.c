/*
 * The RDMA example of seed 002 ("Pallas Inter-chip Communication RDMA"), on 4
 * chips in a ring along x:
 *
 *     def example_kernel(input_ref, output_ref, send_sem, recv_sem):
 *         device_id = lax.axis_index('x')
 *         copy_0_to_1 = pltpu.make_async_remote_copy(input_ref, output_ref,
 *                                                    send_sem, recv_sem, device_id=1)
 *         ...
 *         @pl.when(device_id == 0)  copy_0_to_1.start(); copy_0_to_1.wait_send()
 *         @pl.when(device_id == 1)  copy_0_to_1.wait_recv()
 *         @pl.when(device_id == 2)  copy_2_to_3.start(); .wait_send(); copy_3_to_2.wait_recv()
 *         @pl.when(device_id == 3)  copy_3_to_2.start(); .wait_send(); copy_2_to_3.wait_recv()
 *
 *     chip 0 --input--> chip 1        chip 2 <--input--> chip 3
 *
 * Each chip's input is an (8, 128) f32 tile of its own values; after the kernel
 * chip 1's output holds chip 0's input, chips 2 and 3 hold each other's, and
 * chip 0's output is untouched (zeros).  The modeled time by hand, every copy
 * one hop: DMA issue + alpha + 4096 B / (W/2) = 0.1 + 1 + 4096 / 45e9 s on v5e
 * = 1.191 us.
 *
 *   ./rdma_example                 all 4 chips in this process (loopback)
 *   mpirun -n 4 ./rdma_example     one chip per rank
 *   --bug wait-twice               chip 1 waits for a second copy nobody sends: a
 *                                  deadlock (loopback) or the watchdog (MPI, --timeout)
 */
#include "example_pod.h"

#include <math.h>

enum {
    IN,
    OUT
}; /* buffers */
enum {
    SEND,
    RECV
}; /* semaphores */
#define ROWS 8
#define COLS 128
#define TILE (ROWS * COLS * sizeof(float))

static tpu_status_t example_kernel(tpu_rdma_ctx_t *ctx, void *arg, tpu_err_t *err)
{
    const int *bug = arg;
    int device_id = tpu_rdma_axis_index(ctx, 0);
    tpu_rdma_copy_t copy_0_to_1, copy_2_to_3, copy_3_to_2;
    tpu_status_t st = TPU_OK;

    tpu_rdma_copy_init(&copy_0_to_1, IN, 0, OUT, 0, TILE, SEND, RECV, 1);
    tpu_rdma_copy_init(&copy_2_to_3, IN, 0, OUT, 0, TILE, SEND, RECV, 3);
    tpu_rdma_copy_init(&copy_3_to_2, IN, 0, OUT, 0, TILE, SEND, RECV, 2);
    if (device_id == 0) {
        st = tpu_rdma_start(ctx, &copy_0_to_1, err);
        if (st == TPU_OK) {
            st = tpu_rdma_wait_send(ctx, &copy_0_to_1, err);
        }
    } else if (device_id == 1) {
        st = tpu_rdma_wait_recv(ctx, &copy_0_to_1, err);
        if (st == TPU_OK && *bug) {
            /* --bug: wait for a second copy that nobody sends. */
            st = tpu_rdma_wait_recv(ctx, &copy_0_to_1, err);
        }
    } else if (device_id == 2) {
        st = tpu_rdma_start(ctx, &copy_2_to_3, err);
        if (st == TPU_OK) {
            st = tpu_rdma_wait_send(ctx, &copy_2_to_3, err);
        }
        if (st == TPU_OK) {
            st = tpu_rdma_wait_recv(ctx, &copy_3_to_2, err);
        }
    } else if (device_id == 3) {
        st = tpu_rdma_start(ctx, &copy_3_to_2, err);
        if (st == TPU_OK) {
            st = tpu_rdma_wait_send(ctx, &copy_3_to_2, err);
        }
        if (st == TPU_OK) {
            st = tpu_rdma_wait_recv(ctx, &copy_2_to_3, err);
        }
    }
    return st;
}

static float value(int chip, int i)
{
    return (float)(chip * 10000 + i);
}

int main(int argc, char **argv)
{
    static const char *const sem_names[] = {"send_sem", "recv_sem"};
    example_t ex;
    tpu_rdma_buf_t bufs[2];
    tpu_rdma_kernel_t k;
    tpu_rdma_stats_t stats;
    tpu_err_t err;
    float *in[4] = {0}, *out[4] = {0};
    int nlocal, i, j, wrong = 0, rc, bug;
    double want_us;

    rc = example_open(&ex, argc, argv, "4");
    if (rc != 0) {
        return rc;
    }
    tpu_err_clear(&err);
    bug = strcmp(example_flag(argc, argv, "--bug", "none"), "wait-twice") == 0;
    if (tpu_pod_topo(ex.pod)->nchips != 4 || tpu_pod_topo(ex.pod)->naxes != 1) {
        fprintf(stderr, "error: the seed's example runs on a ring of 4 chips (--topology 4)\n");
        return example_close(&ex, 2);
    }
    nlocal = ex.x->nlocal;
    for (i = 0; i < nlocal; i++) {
        in[i] = calloc(ROWS * COLS, sizeof(float));
        out[i] = calloc(ROWS * COLS, sizeof(float));
        if (in[i] == NULL || out[i] == NULL) {
            fprintf(stderr, "error: out of memory\n");
            rc = 1;
            goto done;
        }
        for (j = 0; j < ROWS * COLS; j++) {
            in[i][j] = value(ex.x->local_chips[i], j);
        }
    }
    bufs[IN] = (tpu_rdma_buf_t){"input_ref", TPU_RDMA_HBM, TILE, (void *const *)in};
    bufs[OUT] = (tpu_rdma_buf_t){"output_ref", TPU_RDMA_HBM, TILE, (void *const *)out};
    k = (tpu_rdma_kernel_t){"example_kernel", 2, bufs, 2, sem_names, example_kernel, &bug};
    if (tpu_rdma_run(ex.rdma, &k, &(tpu_rdma_opts_t){.timeout_s = ex.timeout_s}, &stats, &err) !=
        TPU_OK) {
        fprintf(stderr, "error: %s\n", err.msg);
        rc = 1;
        goto done;
    }
    for (i = 0; i < nlocal; i++) {
        int chip = ex.x->local_chips[i];
        int from = chip == 1 ? 0 : chip == 2 ? 3 : chip == 3 ? 2 : -1;

        for (j = 0; j < ROWS * COLS; j++) {
            float want = from < 0 ? 0.0f : value(from, j);

            wrong += memcmp(&out[i][j], &want, sizeof(float)) != 0;
        }
    }
    if (ex.size > 1) {
        MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    }
    want_us = (TPU_RDMA_DMA_ISSUE_S + tpu_pod_link(ex.pod)->ici_latency +
               (double)TILE / (tpu_pod_link(ex.pod)->ici_bw / 2)) *
              1e6;
    if (example_main_rank(&ex)) {
        printf("rdma_example on %s %s over %s: %d wrong elements\n", tpu_pod_chip(ex.pod)->name,
               tpu_pod_shape(ex.pod), ex.x->ops->name, wrong);
        printf("modeled_us=%.6f modeled_hex=%a (one hop by hand: %.6f)\n", stats.modeled_us,
               stats.modeled_us, want_us);
    }
    rc = wrong != 0 || fabs(stats.modeled_us - want_us) > 1e-9 * want_us ? 1 : 0;

done:
    for (i = 0; i < nlocal; i++) {
        free(in[i]);
        free(out[i]);
    }
    return example_close(&ex, rc);
}
