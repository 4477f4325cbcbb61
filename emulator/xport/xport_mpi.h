/* The MPI transport's state, which its files share.  Private to emulator/xport. */
#ifndef TPU_XPORT_MPI_H
#define TPU_XPORT_MPI_H

#include "tpu/mpi.h"
#include "tpu/xport.h"

#include <stddef.h>

#define STAGE_POOL 64

typedef struct mpi_xport {
    tpu_xport_t base;
    MPI_Comm comm;
    MPI_Request *many;   /* test_many's array of MPI requests */
    MPI_Status *many_st; /* and their statuses */
    int *many_idx;       /* and MPI_Testsome's indices */
    int many_cap;
    unsigned char *pool[STAGE_POOL]; /* staging buffers kept for reuse */
    size_t pool_cap[STAGE_POOL];
    int npool;
    tpu_xport_req_t *free_reqs;  /* released requests, for reuse */
    tpu_xport_req_t *quarantine; /* requests MPI may still write: freed at destroy */
    double cancel_deadline;      /* the error path's waits end here */
    int lib_yields;              /* MPI's progress yields the CPU when it finds nothing */
    /* The exchanges of max_time and gather_sigs: their request (left open when one
     * timed out, as MPI cannot cancel a collective) and buffers that outlive it. */
    MPI_Request coll;
    tpu_call_sig_t *sigs_in, *sigs_out;
    double dbl[2];
    /* Shared memory of the node's ranks: the window, and every chip's region (NULL
     * off this node); NULL when there is none. */
    MPI_Comm node;
    MPI_Win win;
    void **shm;
    size_t shm_bytes;
} mpi_xport_t;


#endif
