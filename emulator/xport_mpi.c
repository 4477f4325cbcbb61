/*
 * The MPI transport: one chip per rank, real processes, real bytes.
 *
 * A message is one MPI message: a struct datatype joins the header (which
 * carries the modeled arrival time) and the strided region (nested hvectors), so
 * no byte is copied on the way out or in.  The communicator is a duplicate with
 * MPI_ERRORS_RETURN, so an MPI failure comes back as TPU_ERR_TRANSPORT with MPI's
 * own text, never as a hidden exit.  Waiting backs off from sched_yield() to short
 * sleeps, so that 16 ranks on 2 cores do not spin.
 */
#include "tpu/alloc.h"
#include "tpu/mpi.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

struct tpu_xport_req {
    MPI_Request req;
};

typedef struct mpi_xport {
    tpu_xport_t base;
    MPI_Comm comm;
} mpi_xport_t;

static tpu_status_t mpi_fail(tpu_xport_t *x, const char *what, int rc)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;

    MPI_Error_string(rc, text, &len);
    snprintf(x->msg, sizeof(x->msg), "%s: %.*s", what, len, text);
    return TPU_ERR_TRANSPORT;
}

/* A datatype of 'bytes' contiguous bytes, also past INT_MAX. */
static int bytes_type(int64_t bytes, MPI_Datatype *type_p)
{
    const int64_t unit = 1 << 20;
    MPI_Datatype big, parts[2];
    int rc, lens[2] = {1, 1};
    MPI_Aint disp[2];

    if (bytes <= (int64_t)1 << 30) {
        return MPI_Type_contiguous((int)bytes, MPI_BYTE, type_p);
    }
    rc = MPI_Type_contiguous((int)unit, MPI_BYTE, &big);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    rc = MPI_Type_contiguous((int)(bytes / unit), big, &parts[0]);
    MPI_Type_free(&big);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    rc = MPI_Type_contiguous((int)(bytes % unit), MPI_BYTE, &parts[1]);
    if (rc != MPI_SUCCESS) {
        MPI_Type_free(&parts[0]);
        return rc;
    }
    disp[0] = 0;
    disp[1] = (MPI_Aint)(bytes / unit * unit);
    rc = MPI_Type_create_struct(2, lens, disp, parts, type_p);
    MPI_Type_free(&parts[0]);
    MPI_Type_free(&parts[1]);
    return rc;
}

/* The datatype of header + region, addressed from MPI_BOTTOM.  Committed. */
static int message_type(const void *hdr, const tpu_region_t *r, MPI_Datatype *type_p)
{
    MPI_Datatype t, next, parts[2];
    int lens[2] = {(int)sizeof(tpu_msg_hdr_t), 1};
    MPI_Aint disp[2];
    int rc, i, n = 1;

    rc = bytes_type(r->len, &t);
    for (i = 2; i >= 0 && rc == MPI_SUCCESS; i--) {
        if (r->count[i] <= 1) {
            continue;
        }
        rc = MPI_Type_create_hvector(r->count[i], 1, (MPI_Aint)r->stride[i], t, &next);
        MPI_Type_free(&t);
        t = next;
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    MPI_Get_address(hdr, &disp[0]);
    parts[0] = MPI_BYTE;
    parts[1] = t;
    if (r->base != NULL && r->len > 0) {
        MPI_Get_address((const char *)r->base + r->off, &disp[1]);
        n = 2;
    }
    rc = MPI_Type_create_struct(n, lens, disp, parts, type_p);
    MPI_Type_free(&t);
    if (rc == MPI_SUCCESS) {
        rc = MPI_Type_commit(type_p);
    }
    return rc;
}

static tpu_status_t start(tpu_xport_t *x, int is_recv, int peer, int tag, const void *hdr,
                          const tpu_region_t *data, tpu_xport_req_t **req_p)
{
    mpi_xport_t *mx = (mpi_xport_t *)x;
    tpu_xport_req_t *req;
    MPI_Datatype type;
    int rc;

    req = tpu__malloc(sizeof(*req));
    if (req == NULL) {
        snprintf(x->msg, sizeof(x->msg), "out of memory");
        return TPU_ERR_NO_MEMORY;
    }
    rc = message_type(hdr, data, &type);
    if (rc != MPI_SUCCESS) {
        tpu__free(req);
        return mpi_fail(x, "building a datatype", rc);
    }
    if (is_recv) {
        rc = MPI_Irecv(MPI_BOTTOM, 1, type, peer, tag, mx->comm, &req->req);
    } else {
        rc = MPI_Isend(MPI_BOTTOM, 1, type, peer, tag, mx->comm, &req->req);
    }
    MPI_Type_free(&type);
    if (rc != MPI_SUCCESS) {
        tpu__free(req);
        return mpi_fail(x, is_recv ? "MPI_Irecv" : "MPI_Isend", rc);
    }
    *req_p = req;
    return TPU_OK;
}

static tpu_status_t mpi_isend(tpu_xport_t *x, int src, int dst, int tag, const tpu_msg_hdr_t *hdr,
                              const tpu_region_t *data, tpu_xport_req_t **req_p)
{
    (void)src;
    return start(x, 0, dst, tag, hdr, data, req_p);
}

static tpu_status_t mpi_irecv(tpu_xport_t *x, int dst, int src, int tag, tpu_msg_hdr_t *hdr,
                              const tpu_region_t *data, tpu_xport_req_t **req_p)
{
    (void)dst;
    return start(x, 1, src, tag, hdr, data, req_p);
}

static tpu_status_t mpi_test(tpu_xport_t *x, tpu_xport_req_t *req, int *done_p)
{
    MPI_Status st;
    int flag = 0, rc = MPI_Test(&req->req, &flag, &st);

    if (rc != MPI_SUCCESS) {
        if (rc == MPI_ERR_IN_STATUS) {
            rc = st.MPI_ERROR;
        }
        *done_p = 1;
        tpu__free(req);
        return mpi_fail(x,
                        "message failed (a size mismatch means the chips run different "
                        "collectives)",
                        rc);
    }
    *done_p = flag;
    if (flag) {
        tpu__free(req);
    }
    return TPU_OK;
}

static void mpi_cancel(tpu_xport_t *x, tpu_xport_req_t *req)
{
    (void)x;
    MPI_Cancel(&req->req);
    MPI_Request_free(&req->req);
    tpu__free(req);
}

static void mpi_idle(tpu_xport_t *x, int rounds)
{
    struct timespec ts = {0, 0};

    (void)x;
    if (rounds < 16) {
        sched_yield();
        return;
    }
    ts.tv_nsec = rounds < 26 ? 1000L << (rounds - 16) : 1000000L;
    nanosleep(&ts, NULL);
}

static tpu_status_t mpi_max_time(tpu_xport_t *x, double local, double *max_p)
{
    int rc = MPI_Allreduce(&local, max_p, 1, MPI_DOUBLE, MPI_MAX, ((mpi_xport_t *)x)->comm);

    return rc == MPI_SUCCESS ? TPU_OK : mpi_fail(x, "MPI_Allreduce", rc);
}

static tpu_status_t mpi_gather_sigs(tpu_xport_t *x, const tpu_call_sig_t *mine, tpu_call_sig_t *all)
{
    int rc = MPI_Allgather(mine, (int)sizeof(*mine), MPI_BYTE, all, (int)sizeof(*mine), MPI_BYTE,
                           ((mpi_xport_t *)x)->comm);

    return rc == MPI_SUCCESS ? TPU_OK : mpi_fail(x, "MPI_Allgather", rc);
}

static void mpi_destroy(tpu_xport_t *x)
{
    mpi_xport_t *mx = (mpi_xport_t *)x;

    MPI_Comm_free(&mx->comm);
    tpu__free(x->local_chips);
    tpu__free(mx);
}

static const tpu_xport_ops_t mpi_ops = {
    sizeof(tpu_xport_ops_t),
    "mpi",
    mpi_isend,
    mpi_irecv,
    mpi_test,
    mpi_cancel,
    mpi_idle,
    mpi_max_time,
    mpi_gather_sigs,
    mpi_destroy,
};

tpu_status_t tpu_xport_mpi_create(MPI_Comm comm, tpu_xport_t **x_p, tpu_err_t *err)
{
    mpi_xport_t *mx = tpu__calloc(1, sizeof(*mx));
    int rank, size, rc;

    if (mx == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for the mpi transport");
    }
    mx->base.local_chips = tpu__malloc(sizeof(int));
    if (mx->base.local_chips == NULL) {
        tpu__free(mx);
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for the mpi transport");
    }
    rc = MPI_Comm_dup(comm, &mx->comm);
    if (rc != MPI_SUCCESS) {
        tpu__free(mx->base.local_chips);
        tpu__free(mx);
        return tpu_err_set(err, TPU_ERR_TRANSPORT, "MPI_Comm_dup failed (code %d)", rc);
    }
    MPI_Comm_set_errhandler(mx->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(mx->comm, &rank);
    MPI_Comm_size(mx->comm, &size);
    mx->base.ops = &mpi_ops;
    mx->base.nchips = size;
    mx->base.nlocal = 1;
    mx->base.local_chips[0] = rank;
    mx->base.moves_data = 1;
    *x_p = &mx->base;
    return TPU_OK;
}

MPI_Comm tpu_xport_mpi_comm(const tpu_xport_t *x)
{
    return ((const mpi_xport_t *)x)->comm;
}
