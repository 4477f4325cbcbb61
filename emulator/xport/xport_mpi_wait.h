/* The MPI transport's error text and back-off (xport_mpi_wait.c).  Private to emulator/xport. */
#ifndef TPU_XPORT_MPI_WAIT_H
#define TPU_XPORT_MPI_WAIT_H

#include "xport_mpi.h"

/* An MPI error code 'rc' of 'what' as TPU_ERR_TRANSPORT, MPI's text in x->msg. */
tpu_status_t tpu__xport_mpi_fail(tpu_xport_t *x, const char *what, int rc);
/* The transport's idle op: yield, then after a long wait sleep. */
void tpu__xport_mpi_idle(tpu_xport_t *x, int rounds);

#endif
