/* Where each chip runs: MPI node, host name, core (hwloc).  Private to launch/. */
#ifndef APP_PLACEMENT_H
#define APP_PLACEMENT_H

#include "json.h"
#include "launch.h"

#include <mpi.h>

typedef struct app_place {
    char host[64];  /* MPI_Get_processor_name */
    int node;       /* index of the MPI node (shared-memory domain), 0-based */
    int node_ranks; /* ranks on that node */
    int node_cores; /* cores on that node (hwloc) */
    int node_pus;   /* hardware threads on that node (hwloc) */
    int core;       /* logical index of the core the rank last ran on, -1 unknown */
    int pu;         /* OS index of that hardware thread, -1 unknown */
    int bound;      /* 1 when the rank is bound to a subset of the node's PUs */
    int rank;       /* MPI_COMM_WORLD rank */
} app_place_t;

/* This rank's placement.  Collective over 'comm'. */
tpu_status_t app_place_local(MPI_Comm comm, app_place_t *p, tpu_err_t *err);

/*
 * The chip that world rank 'rank' emulates: chips are dealt to ranks host by host
 * (all chips of TPU host 0, then of host 1, ...), so that ranks filled node by node
 * keep every emulated TPU host on one MPI node.
 */
int app_place_chip_of_rank(const tpu_topo_t *topo, const int host_dims[TPU_MAX_AXES], int rank);

/* Print the placement table (rank 0, from all ranks' places indexed by chip). */
void app_place_print(FILE *out, const tpu_pod_t *pod, const app_place_t *all);
/* The same as a JSON array of objects, one per chip. */
void app_place_json(app_json_t *j, const tpu_pod_t *pod, const app_place_t *all);
/* Check that the chips of each emulated TPU host share one MPI node; returns the
 * number of hosts that do not (a warning, not an error). */
int app_place_split_hosts(const tpu_pod_t *pod, const app_place_t *all, int *example_host_p);

#endif
