/*
 * bench's baseline: the host MPI library's own collectives (bench_mpi.c).
 * Private to launch/.
 */
#ifndef APP_CMD_BENCH_MPI_H
#define APP_CMD_BENCH_MPI_H

#include "job.h"

#include <mpi.h>

/* A communicator per collective group of 'd' (p2p: the pair, the source first; the
 * other ranks get MPI_COMM_NULL).  Collective over the job's ranks. */
MPI_Comm app_bench_group_comm(app_job_t *job, const tpu_coll_desc_t *d);
/* One call of the host MPI's own collective on the case's buffers over 'group' ('me':
 * this rank's index in it): this rank's wall time, seconds (0 with MPI_COMM_NULL). */
double app_bench_mpi_once(app_case_t *c, MPI_Comm group, int me);

#endif /* APP_CMD_BENCH_MPI_H */
