/*
 * What every example does before its kernel: parse the common flags, build the
 * pod, and pick the transport.  Run alone, an example hosts every chip in one
 * process (loopback, one thread per chip); under 'mpirun -n N' each rank is one
 * chip (N must be the pod's chip count).  Header-only, for the examples.
 *
 *   --chip v5e  --topology 16  --wrap all  --timeout 30
 */
#ifndef EXAMPLE_POD_H
#define EXAMPLE_POD_H

#include "tpu/mpi.h"
#include "tpu/pod.h"
#include "tpu/rdma.h"

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

#endif /* EXAMPLE_POD_H */
