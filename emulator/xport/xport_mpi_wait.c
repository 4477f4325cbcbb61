/*
 * What every file of the MPI transport uses when a call fails or has to wait
 * (see xport_mpi.c): an MPI error as a transport error with MPI's text, and the
 * transport's idle op (yield, then after a long wait sleep).
 */
#include "xport_mpi_wait.h"

#include <sched.h>
#include <stdio.h>
#include <time.h>


tpu_status_t tpu__xport_mpi_fail(tpu_xport_t *x, const char *what, int rc)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;

    MPI_Error_string(rc, text, &len);
    snprintf(x->msg, sizeof(x->msg), "%s: %.*s", what, len, text);
    return TPU_ERR_TRANSPORT;
}

void tpu__xport_mpi_idle(tpu_xport_t *x, int rounds)
{
    struct timespec ts = {0, 0};

    /* Yield first: a rank that sleeps cannot progress the shared-memory copies its
     * peers wait on.  Only a long wait (a stall the watchdog may end) sleeps.  The
     * yield is MPI's own when the library yields in the test before this call. */
    if (rounds < 20000) {
        if (!((mpi_xport_t *)x)->lib_yields) {
            sched_yield();
        }
        return;
    }
    ts.tv_nsec = 100000L;
    nanosleep(&ts, NULL);
}
