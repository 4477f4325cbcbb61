/*
 * The MPI transport: one chip per MPI rank.  The only public header that
 * includes <mpi.h>; include it only where MPI is wanted (as hwloc/cuda.h).
 */
#ifndef TPU_MPI_H
#define TPU_MPI_H

#include "tpu/status.h"
#include "tpu/xport.h"

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A transport over 'comm': rank r hosts chip r.  The transport duplicates 'comm'
 * (so its tags never meet the caller's) and sets MPI_ERRORS_RETURN on the copy,
 * turning MPI errors into TPU_ERR_TRANSPORT with MPI's text.  Collective over
 * 'comm'.  Destroy it with tpu_xport_destroy() before MPI_Finalize.
 */
TPU_API tpu_status_t tpu_xport_mpi_create(MPI_Comm comm, tpu_xport_t **x_p, tpu_err_t *err);

/* The duplicated communicator of an mpi transport (for the caller's own reductions). */
TPU_API MPI_Comm tpu_xport_mpi_comm(const tpu_xport_t *x);

#ifdef __cplusplus
}
#endif

#endif /* TPU_MPI_H */
