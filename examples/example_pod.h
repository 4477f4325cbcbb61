/*
 * What every example does around its kernel: parse the common flags, build the
 * pod, pick the transport, hold one buffer per local chip, and run the built-in
 * all_gather the kernel is checked against.  Run alone, an example hosts every chip in one
 * process (loopback, one thread per chip); under 'mpirun -n N' each rank is one
 * chip (N must be the pod's chip count).  Header-only, for the examples.
 *
 *   --chip v5e  --topology 16  --wrap all  --timeout 30
 */
#ifndef EXAMPLE_POD_H
#define EXAMPLE_POD_H

#include "tpu/coll.h"
#include "tpu/mpi.h"
#include "tpu/pod.h"
#include "tpu/rdma.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct example {
    tpu_pod_t *pod;
    tpu_xport_t *x;
    tpu_rdma_t *rdma;
    int rank, size;
    double timeout_s;
} example_t;

/* The value of flag 'name' in argv, or 'dflt'. */
static inline const char *example_flag(int argc, char **argv, const char *name, const char *dflt)
{
    int i;

    for (i = 1; i + 1 < argc; i++) {
        if (strcmp(argv[i], name) == 0) {
            return argv[i + 1];
        }
    }
    return dflt;
}

/* Rank 0 prints (under mpirun every rank would otherwise). */
static inline int example_main_rank(const example_t *ex)
{
    return ex->rank == 0;
}

/* MPI_Init, pod, transport, runtime.  Returns 0, or 2 after printing the problem. */
static inline int example_open(example_t *ex, int argc, char **argv, const char *topology)
{
    tpu_pod_spec_t spec;
    tpu_err_t err;
    int nchips;

    memset(ex, 0, sizeof(*ex));
    tpu_err_clear(&err);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &ex->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ex->size);
    tpu_pod_spec_init(&spec);
    spec.chip = example_flag(argc, argv, "--chip", "v5e");
    spec.shape = example_flag(argc, argv, "--topology", topology);
    spec.wrap = example_flag(argc, argv, "--wrap", "all");
    ex->timeout_s = atof(example_flag(argc, argv, "--timeout", "30"));
    if (tpu_pod_create(&spec, &ex->pod, &err) != TPU_OK) {
        goto fail;
    }
    nchips = tpu_pod_topo(ex->pod)->nchips;
    if (ex->size == 1) {
        if (tpu_xport_loopback_create(nchips, &ex->x, &err) != TPU_OK) {
            goto fail;
        }
    } else if (ex->size != nchips) {
        tpu_err_set(&err, TPU_ERR_INVALID, "topology %s has %d chips and needs %d ranks (or 1)",
                    spec.shape, nchips, nchips);
        goto fail;
    } else if (tpu_xport_mpi_create(MPI_COMM_WORLD, &ex->x, &err) != TPU_OK) {
        goto fail;
    }
    if (tpu_rdma_create(ex->pod, ex->x, &ex->rdma, &err) != TPU_OK) {
        goto fail;
    }
    return 0;

fail:
    fprintf(stderr, "error: %s\n", err.msg);
    tpu_xport_destroy(ex->x);
    tpu_pod_destroy(ex->pod);
    MPI_Finalize();
    return 2;
}

static inline int example_close(example_t *ex, int rc)
{
    int all = rc;

    if (ex->size > 1) {
        MPI_Allreduce(&rc, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    }
    tpu_rdma_destroy(ex->rdma);
    tpu_xport_destroy(ex->x);
    tpu_pod_destroy(ex->pod);
    MPI_Finalize();
    return all;
}

/* One zeroed buffer of 'bytes' per chip of this process; NULL when out of memory. */
static inline void **example_bufs(const example_t *ex, uint64_t bytes)
{
    void **b = calloc((size_t)ex->x->nlocal, sizeof(void *));
    int i;

    for (i = 0; b != NULL && i < ex->x->nlocal; i++) {
        b[i] = calloc(1, bytes > 0 ? bytes : 1);
        if (b[i] == NULL) {
            while (i-- > 0) {
                free(b[i]);
            }
            free(b);
            return NULL;
        }
    }
    return b;
}

/* Free what example_bufs() gave (NULL: nothing). */
static inline void example_bufs_free(const example_t *ex, void **b)
{
    int i;

    for (i = 0; b != NULL && i < ex->x->nlocal; i++) {
        free(b[i]);
    }
    free(b);
}

/* The sum over the ranks of this process' count 'v' (how many chips differ). */
static inline uint64_t example_sum(const example_t *ex, uint64_t v)
{
    if (ex->size > 1) {
        MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    }
    return v;
}

/*
 * The built-in all_gather over the x axis, 'bytes' gathered per chip of 'dtype',
 * on the example's transport, from 'in' into 'out' (example_bufs()): its modeled
 * microseconds into '*us_p' and its algorithm's name into 'algo' ('len' bytes).
 * Returns 0, or 1 after printing the problem.
 */
static inline int example_builtin_allgather(const example_t *ex, uint64_t bytes, tpu_dtype_t dtype,
                                            void **in, void **out, double *us_p, char *algo,
                                            size_t len)
{
    tpu_coll_desc_t desc;
    tpu_coll_plan_t *plan = NULL;
    tpu_coll_exec_t *exec = NULL;
    tpu_coll_run_opts_t ropts;
    tpu_err_t err;
    int rc = 0;

    tpu_err_clear(&err);
    tpu_coll_desc_init(&desc);
    desc.kind = TPU_COLL_ALL_GATHER;
    desc.axes = 1u;
    desc.bytes = bytes;
    desc.dtype = dtype;
    memset(&ropts, 0, sizeof(ropts));
    ropts.timeout_s = ex->timeout_s;
    if (tpu_coll_plan_create(tpu_pod_topo(ex->pod), tpu_pod_link(ex->pod), &desc, &plan, &err) !=
            TPU_OK ||
        tpu_coll_exec_create(plan, ex->x, &exec, &err) != TPU_OK ||
        tpu_coll_exec_run(exec, &ropts, in, out, us_p, &err) != TPU_OK) {
        fprintf(stderr, "error: built-in all_gather: %s\n", err.msg);
        rc = 1;
    } else {
        snprintf(algo, len, "%s", tpu_coll_plan_algo(plan));
    }
    tpu_coll_exec_destroy(exec);
    tpu_coll_plan_destroy(plan);
    return rc;
}

/*
 * One step of the bidirectional ring that ring_allgather.c and collective_matmul.c
 * run along x (VMEM slots double-buffered): at step 's' a chip starts a copy to its
 * right and one to its left, into VMEM slot s % 2 of the receiver's 'rbuf' and
 * 'lbuf', from its own block in 'x' at step 0, else forwarding what arrived in slot
 * (s - 1) % 2.  On the last step of an even ring ('half') each moves half a block:
 * the first half to the right, the second half to the left.
 */
/* The ring's semaphores: numbers 0 to 3 of a kernel that runs it (its own come from
 * EXAMPLE_RING_NSEMS on), named EXAMPLE_RING_SEM_NAMES in that order. */
enum {
    EXAMPLE_SEND_R,
    EXAMPLE_SEND_L,
    EXAMPLE_RECV_R,
    EXAMPLE_RECV_L,
    EXAMPLE_RING_NSEMS
};
#define EXAMPLE_RING_SEM_NAMES "send_right", "send_left", "recv_right", "recv_left"

typedef struct example_ring {
    int x, rbuf, lbuf; /* buffers */
    int right, left;   /* the chips on either side */
    uint64_t block;    /* bytes of one block */
} example_ring_t;

static inline tpu_status_t example_ring_start(tpu_rdma_ctx_t *ctx, const example_ring_t *r, int s,
                                              int half, tpu_rdma_copy_t *cr, tpu_rdma_copy_t *cl,
                                              tpu_err_t *err)
{
    const uint64_t B = r->block;
    uint64_t len_r = half ? B / 2 : B, len_l = B - (half ? B / 2 : 0);
    uint64_t off_l = half ? B / 2 : 0, slot = (uint64_t)(s % 2) * B;
    uint64_t prev = (uint64_t)((s + 1) % 2) * B;
    tpu_status_t st;

    if (s == 0) {
        tpu_rdma_copy_init(cr, r->x, 0, r->rbuf, 0, len_r, EXAMPLE_SEND_R, EXAMPLE_RECV_R,
                           r->right);
        tpu_rdma_copy_init(cl, r->x, off_l, r->lbuf, off_l, len_l, EXAMPLE_SEND_L, EXAMPLE_RECV_L,
                           r->left);
    } else {
        tpu_rdma_copy_init(cr, r->rbuf, prev, r->rbuf, slot, len_r, EXAMPLE_SEND_R, EXAMPLE_RECV_R,
                           r->right);
        tpu_rdma_copy_init(cl, r->lbuf, prev + off_l, r->lbuf, slot + off_l, len_l, EXAMPLE_SEND_L,
                           EXAMPLE_RECV_L, r->left);
    }
    st = tpu_rdma_start(ctx, cr, err);
    if (st == TPU_OK) {
        st = tpu_rdma_start(ctx, cl, err);
    }
    return st;
}

/* Wait until both copies of a ring step have arrived and have left (slots free). */
static inline tpu_status_t example_ring_wait(tpu_rdma_ctx_t *ctx, tpu_rdma_copy_t *cr,
                                             tpu_rdma_copy_t *cl, tpu_err_t *err)
{
    tpu_status_t st = tpu_rdma_wait_recv(ctx, cr, err);

    if (st == TPU_OK) {
        st = tpu_rdma_wait_recv(ctx, cl, err);
    }
    if (st == TPU_OK) {
        st = tpu_rdma_wait_send(ctx, cr, err);
    }
    if (st == TPU_OK) {
        st = tpu_rdma_wait_send(ctx, cl, err);
    }
    return st;
}

#endif /* EXAMPLE_POD_H */
