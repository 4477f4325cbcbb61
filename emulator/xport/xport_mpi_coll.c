/*
 * The MPI transport's exchanges of the whole job (see xport_mpi.c): the max of the
 * chips' clocks and the gather of their call signatures, each one nonblocking MPI
 * collective polled under the caller's timeout.
 */
#include "xport_mpi_coll.h"

#include "alloc.h"
#include "clock.h"
#include "xport_mpi.h"
#include "xport_mpi_wait.h"

#include <stdio.h>
#include <string.h>


/*
 * Wait for the exchange open in mx->coll as 'w' says: polled, calling the
 * caller's hook, backing off as tpu__xport_mpi_idle does.  Past the timeout the request is
 * left open (MPI cannot cancel a collective) with the buffers it writes, which
 * belong to the transport: the caller ends the job, and every later exchange
 * fails at once.
 */
static tpu_status_t wait_coll(mpi_xport_t *mx, const char *what, const tpu_xport_wait_t *w)
{
    double t0 = tpu__now_s();
    int flag = 0, rounds = 0, rc;

    for (;;) {
        rc = MPI_Test(&mx->coll, &flag, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            mx->coll = MPI_REQUEST_NULL;
            return tpu__xport_mpi_fail(&mx->base, what, rc);
        }
        if (flag) {
            return TPU_OK;
        }
        if (w != NULL && w->timeout_s > 0 && tpu__now_s() - t0 > w->timeout_s) {
            snprintf(mx->base.msg, sizeof(mx->base.msg),
                     "%s did not complete within %g s: a chip is behind", what, w->timeout_s);
            return TPU_ERR_TIMEOUT;
        }
        if (w != NULL && w->on_wait != NULL) {
            w->on_wait(w->on_wait_arg, -1);
        }
        tpu__xport_mpi_idle(&mx->base, rounds++);
    }
}

/* May an exchange start?  Not while one that timed out is still open. */
tpu_status_t tpu__xport_mpi_coll_ready(mpi_xport_t *mx)
{
    int flag = 1;

    if (mx->coll != MPI_REQUEST_NULL) {
        MPI_Test(&mx->coll, &flag, MPI_STATUS_IGNORE);
    }
    if (!flag) {
        snprintf(mx->base.msg, sizeof(mx->base.msg),
                 "an earlier exchange of the chips timed out and is still open");
        return TPU_ERR_TIMEOUT;
    }
    return TPU_OK;
}

tpu_status_t tpu__xport_mpi_max_time(tpu_xport_t *x, double local, double *max_p,
                                     const tpu_xport_wait_t *w)
{
    mpi_xport_t *mx = (mpi_xport_t *)x;
    tpu_status_t status = tpu__xport_mpi_coll_ready(mx);
    int rc;

    if (status != TPU_OK) {
        return status;
    }
    mx->dbl[0] = local;
    rc = MPI_Iallreduce(&mx->dbl[0], &mx->dbl[1], 1, MPI_DOUBLE, MPI_MAX, mx->comm, &mx->coll);
    if (rc != MPI_SUCCESS) {
        mx->coll = MPI_REQUEST_NULL;
        return tpu__xport_mpi_fail(x, "MPI_Iallreduce", rc);
    }
    status = wait_coll(mx, "the max of the chips' clocks (MPI_Iallreduce)", w);
    if (status == TPU_OK) {
        *max_p = mx->dbl[1];
    }
    return status;
}

tpu_status_t tpu__xport_mpi_gather_sigs(tpu_xport_t *x, const tpu_call_sig_t *mine,
                                        tpu_call_sig_t *all, const tpu_xport_wait_t *w)
{
    mpi_xport_t *mx = (mpi_xport_t *)x;
    tpu_status_t status = tpu__xport_mpi_coll_ready(mx);
    int rc;

    if (status != TPU_OK) {
        return status;
    }
    if (mx->sigs_out == NULL) {
        mx->sigs_in = tpu__malloc(sizeof(*mx->sigs_in));
        mx->sigs_out = tpu__malloc((size_t)x->nchips * sizeof(*mx->sigs_out));
        if (mx->sigs_in == NULL || mx->sigs_out == NULL) {
            tpu__free(mx->sigs_in);
            tpu__free(mx->sigs_out);
            mx->sigs_in = mx->sigs_out = NULL;
            snprintf(x->msg, sizeof(x->msg), "out of memory for the calls of %d chips", x->nchips);
            return TPU_ERR_NO_MEMORY;
        }
    }
    *mx->sigs_in = *mine;
    rc = MPI_Iallgather(mx->sigs_in, (int)sizeof(*mine), MPI_BYTE, mx->sigs_out, (int)sizeof(*mine),
                        MPI_BYTE, mx->comm, &mx->coll);
    if (rc != MPI_SUCCESS) {
        mx->coll = MPI_REQUEST_NULL;
        return tpu__xport_mpi_fail(x, "MPI_Iallgather", rc);
    }
    status = wait_coll(mx, "the comparison of the chips' calls (MPI_Iallgather)", w);
    if (status == TPU_OK) {
        memcpy(all, mx->sigs_out, (size_t)x->nchips * sizeof(*all));
    }
    return status;
}
