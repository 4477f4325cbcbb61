/* The MPI transport's shared window of a node (xport_mpi_shm.c).  Private. */
#ifndef TPU_XPORT_MPI_SHM_H
#define TPU_XPORT_MPI_SHM_H

#include "xport_mpi.h"

#include <stddef.h>

/* The op shm_region (tpu_xport_ops_t): chip's region of the window, or NULL. */
void *tpu__xport_mpi_shm_region(tpu_xport_t *x, int chip, size_t *bytes_p);
/*
 * The node's shared window, when every rank of the node wants one and has it.
 * Collective over the transport's communicator; never an error.
 */
void tpu__xport_mpi_shm_create(mpi_xport_t *mx);

#endif
