/*
 * The MPI transport's shared memory (see xport_mpi.c): the MPI-3 shared window of
 * the ranks of one node, and each chip's region in it.
 */
#include "xport_mpi_shm.h"

#include "alloc.h"
#include "xport_mpi.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Shared memory per rank of a node: the executor's pieces are half of it. */
#define SHM_BYTES ((size_t)8 << 20)

void *tpu__xport_mpi_shm_region(tpu_xport_t *x, int chip, size_t *bytes_p)
{
    mpi_xport_t *mx = (mpi_xport_t *)x;

    *bytes_p = mx->shm_bytes;
    return mx->shm != NULL && chip >= 0 && chip < x->nchips ? mx->shm[chip] : NULL;
}

/*
 * The node's shared window, when every rank of the node wants one and has it
 * (agreed first, as allocating is collective over the node).  Collective over
 * the transport's communicator.  Without it (a failure, TPUEMU_HOST_SHM=0, one
 * rank on the node) the transport has no shared memory: never an error.
 */
void tpu__xport_mpi_shm_create(mpi_xport_t *mx)
{
    const char *on = getenv("TPUEMU_HOST_SHM"), *sz = getenv("TPUEMU_HOST_SHM_BYTES");
    long long want[2], all[2];
    int nnode = 0, ok, all_ok = 0, r, *node_ranks = NULL, *ranks = NULL;
    MPI_Group gnode, gcomm;
    MPI_Info info;
    void *base = NULL;

    mx->node = MPI_COMM_NULL;
    mx->win = MPI_WIN_NULL;
    if (MPI_Comm_split_type(mx->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &mx->node) !=
        MPI_SUCCESS) {
        mx->node = MPI_COMM_NULL;
        return;
    }
    MPI_Comm_set_errhandler(mx->node, MPI_ERRORS_RETURN);
    MPI_Comm_size(mx->node, &nnode);
    /* Every rank of the node: on, and the smallest region asked for (at least 64 KiB). */
    want[0] = on == NULL || strcmp(on, "0") != 0;
    want[1] = sz != NULL && atoll(sz) >= 65536 ? atoll(sz) : (long long)SHM_BYTES;
    if (MPI_Allreduce(want, all, 2, MPI_LONG_LONG, MPI_MIN, mx->node) != MPI_SUCCESS || !all[0] ||
        nnode < 2) {
        return;
    }
    mx->shm_bytes = (size_t)all[1] & ~(size_t)63;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shared_noncontig", "true");
    /* 64 bytes more: Open MPI's segments are 8-byte aligned (and their sizes rounded
     * up to pages); each region starts at
     * its segment's first 64-byte boundary. */
    ok = MPI_Win_allocate_shared((MPI_Aint)(mx->shm_bytes + 64), 64, info, mx->node, &base,
                                 &mx->win) == MPI_SUCCESS;
    MPI_Info_free(&info);
    if (!ok) {
        mx->win = MPI_WIN_NULL;
    }
    mx->shm = tpu__calloc((size_t)mx->base.nchips, sizeof(void *));
    node_ranks = tpu__malloc((size_t)nnode * sizeof(int));
    ranks = tpu__malloc((size_t)nnode * sizeof(int));
    ok = ok && mx->shm != NULL && node_ranks != NULL && ranks != NULL;
    if (ok) {
        MPI_Comm_group(mx->node, &gnode);
        MPI_Comm_group(mx->comm, &gcomm);
        for (r = 0; r < nnode; r++) {
            node_ranks[r] = r;
        }
        ok = MPI_Group_translate_ranks(gnode, nnode, node_ranks, gcomm, ranks) == MPI_SUCCESS;
        MPI_Group_free(&gnode);
        MPI_Group_free(&gcomm);
    }
    for (r = 0; r < nnode && ok; r++) {
        MPI_Aint bytes = 0;
        int disp = 0;
        void *p = NULL;

        ok = MPI_Win_shared_query(mx->win, r, &bytes, &disp, &p) == MPI_SUCCESS &&
             (size_t)bytes >= mx->shm_bytes + 64 && ranks[r] >= 0 && ranks[r] < mx->base.nchips;
        if (ok) {
            mx->shm[ranks[r]] = (void *)(((uintptr_t)p + 63) & ~(uintptr_t)63);
        }
    }
    if (ok) {
        /* The control blocks only (shm_psum.c: 512 bytes and an int32 per chip): the
         * data areas are written before they are read, and untouched pages cost no
         * memory. */
        size_t ctl = 64 + 512 + 4 * (size_t)mx->base.nchips + 64;

        memset(base, 0, ctl < mx->shm_bytes + 64 ? ctl : mx->shm_bytes + 64);
    }
    /* Every region zeroed before anyone reads it; and all of the node or none. */
    if (MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, mx->node) != MPI_SUCCESS || !all_ok) {
        tpu__free(mx->shm);
        mx->shm = NULL;
        mx->shm_bytes = 0;
    }
    tpu__free(node_ranks);
    tpu__free(ranks);
}
