/* The MPI transport's exchanges of the whole job (xport_mpi_coll.c).  Private. */
#ifndef TPU_XPORT_MPI_COLL_H
#define TPU_XPORT_MPI_COLL_H

#include "xport_mpi.h"

/* May an exchange start?  Not while one that timed out is still open. */
tpu_status_t tpu__xport_mpi_coll_ready(mpi_xport_t *mx);
/* The ops max_time and gather_sigs (tpu_xport_ops_t). */
tpu_status_t tpu__xport_mpi_max_time(tpu_xport_t *x, double local, double *max_p,
                                     const tpu_xport_wait_t *w);
tpu_status_t tpu__xport_mpi_gather_sigs(tpu_xport_t *x, const tpu_call_sig_t *mine,
                                        tpu_call_sig_t *all, const tpu_xport_wait_t *w);

#endif
