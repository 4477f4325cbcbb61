/*
 * The MPI transport: one chip per rank, real processes, real bytes.
 *
 * A message is a small header (which carries the modeled arrival time) and the
 * payload, the strided region itself (plain bytes when contiguous, nested
 * hvectors otherwise), so no byte is copied by tpuemu on the way out or in.  The communicator is a
 * duplicate with MPI_ERRORS_RETURN, so an MPI failure comes back as TPU_ERR_TRANSPORT with MPI's
 * own text, never as a hidden exit.  Waiting backs off from sched_yield() to short
 * sleeps, so that 16 ranks on 2 cores do not spin.
 */
#include "tpu/alloc.h"
#include "tpu/mpi.h"

#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

struct tpu_xport_req {
    MPI_Request req[2];   /* the header, then the payload (MPI_REQUEST_NULL when empty) */
    unsigned char *stage; /* contiguous copy of a strided region, or NULL */
    size_t stage_cap;
    tpu_region_t unpack; /* a receive's strided destination, unpacked on completion */
};

#define STAGE_POOL 64

typedef struct mpi_xport {
    tpu_xport_t base;
    MPI_Comm comm;
    MPI_Request *many; /* test_many's array of MPI requests */
    int *many_idx;     /* and MPI_Testsome's indices */
    int many_cap;
    unsigned char *pool[STAGE_POOL]; /* staging buffers kept for reuse */
    size_t pool_cap[STAGE_POOL];
    int npool;
} mpi_xport_t;

/* A staging buffer of at least 'bytes' from the pool (or new). */
static unsigned char *stage_get(mpi_xport_t *mx, size_t bytes, size_t *cap_p)
{
    int i, best = -1;
    unsigned char *p;

    for (i = 0; i < mx->npool; i++) {
        if (mx->pool_cap[i] >= bytes && (best < 0 || mx->pool_cap[i] < mx->pool_cap[best])) {
            best = i;
        }
    }
    if (best >= 0) {
        p = mx->pool[best];
        *cap_p = mx->pool_cap[best];
        mx->pool[best] = mx->pool[--mx->npool];
        mx->pool_cap[best] = mx->pool_cap[mx->npool];
        return p;
    }
    *cap_p = bytes;
    return tpu__malloc(bytes);
}

static void stage_put(mpi_xport_t *mx, unsigned char *p, size_t cap)
{
    if (p == NULL) {
        return;
    }
    if (mx->npool == STAGE_POOL) {
        tpu__free(p);
        return;
    }
    mx->pool[mx->npool] = p;
    mx->pool_cap[mx->npool++] = cap;
}

/* Copy between a strided region and a contiguous buffer ('pack' sets the direction). */
static void region_copy(const tpu_region_t *r, unsigned char *flat, int pack)
{
    int64_t b, nblocks = tpu_xport_region_blocks(r);

    for (b = 0; b < nblocks; b++, flat += r->len) {
        unsigned char *p = tpu_xport_region_block(r, b);

        if (pack) {
            memcpy(flat, p, (size_t)r->len);
        } else {
            memcpy(p, flat, (size_t)r->len);
        }
    }
}

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

/*
 * A message is two MPI messages on one tag: the fixed-size header (eager; it
 * always matches, so a mismatch is named from the header) and the payload.  MPI
 * keeps their order between one pair on one tag.
 */
static tpu_status_t start(tpu_xport_t *x, int is_recv, int peer, int tag, void *hdr,
                          const tpu_region_t *data, tpu_xport_req_t **req_p)
{
    mpi_xport_t *mx = (mpi_xport_t *)x;
    tpu_xport_req_t *req;
    int rc, n = (int)sizeof(tpu_msg_hdr_t);
    char *buf = data->base != NULL ? (char *)data->base + data->off : NULL;

    req = tpu__malloc(sizeof(*req));
    if (req == NULL) {
        snprintf(x->msg, sizeof(x->msg), "out of memory");
        return TPU_ERR_NO_MEMORY;
    }
    req->req[1] = MPI_REQUEST_NULL;
    req->stage = NULL;
    req->stage_cap = 0;
    req->unpack.base = NULL;
    rc = is_recv ? MPI_Irecv(hdr, n, MPI_BYTE, peer, tag, mx->comm, &req->req[0])
                 : MPI_Isend(hdr, n, MPI_BYTE, peer, tag, mx->comm, &req->req[0]);
    if (rc == MPI_SUCCESS && buf != NULL && data->len > 0) {
        int64_t bytes = tpu_xport_region_bytes(data);
        MPI_Datatype type = MPI_BYTE;
        int count = (int)bytes;

        /* Strided regions travel through a contiguous staging copy: Open MPI moves
         * contiguous bytes in one copy between processes (CMA), while a derived
         * datatype goes through small fragments that need both processes to take
         * turns, which on an oversubscribed node costs a context switch each. */
        if (bytes != data->len) {
            req->stage = stage_get(mx, (size_t)bytes, &req->stage_cap);
            if (req->stage == NULL) {
                MPI_Cancel(&req->req[0]);
                MPI_Request_free(&req->req[0]);
                tpu__free(req);
                snprintf(x->msg, sizeof(x->msg), "out of memory for a %lld-byte staging buffer",
                         (long long)bytes);
                return TPU_ERR_NO_MEMORY;
            }
            if (is_recv) {
                req->unpack = *data;
            } else {
                region_copy(data, req->stage, 1);
            }
            buf = (char *)req->stage;
        }
        if (bytes > INT_MAX) {
            rc = bytes_type(bytes, &type);
            count = 1;
            if (rc == MPI_SUCCESS) {
                rc = MPI_Type_commit(&type);
            }
        }
        if (rc == MPI_SUCCESS) {
            rc = is_recv ? MPI_Irecv(buf, count, type, peer, tag, mx->comm, &req->req[1])
                         : MPI_Isend(buf, count, type, peer, tag, mx->comm, &req->req[1]);
        }
        if (type != MPI_BYTE) {
            MPI_Type_free(&type);
        }
    }
    if (rc != MPI_SUCCESS) {
        stage_put(mx, req->stage, req->stage_cap);
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
    return start(x, 0, dst, tag, (void *)hdr, data, req_p);
}

static tpu_status_t mpi_irecv(tpu_xport_t *x, int dst, int src, int tag, tpu_msg_hdr_t *hdr,
                              const tpu_region_t *data, tpu_xport_req_t **req_p)
{
    (void)dst;
    return start(x, 1, src, tag, hdr, data, req_p);
}

static void finish_req(mpi_xport_t *mx, tpu_xport_req_t *req);

static tpu_status_t mpi_test(tpu_xport_t *x, tpu_xport_req_t *req, int *done_p)
{
    MPI_Status st[2];
    int flag = 0, rc = MPI_Testall(2, req->req, &flag, st);

    if (rc != MPI_SUCCESS) {
        if (rc == MPI_ERR_IN_STATUS) {
            rc = st[0].MPI_ERROR != MPI_SUCCESS ? st[0].MPI_ERROR : st[1].MPI_ERROR;
        }
        *done_p = 1;
        stage_put((mpi_xport_t *)x, req->stage, req->stage_cap);
        tpu__free(req);
        return mpi_fail(x,
                        "message failed (a size mismatch means the chips run different "
                        "collectives)",
                        rc);
    }
    *done_p = flag;
    if (flag) {
        finish_req((mpi_xport_t *)x, req);
    }
    return TPU_OK;
}

/* Release a request whose MPI parts have completed. */
static void finish_req(mpi_xport_t *mx, tpu_xport_req_t *req)
{
    if (req->unpack.base != NULL) {
        region_copy(&req->unpack, req->stage, 0);
    }
    stage_put(mx, req->stage, req->stage_cap);
    tpu__free(req);
}

static tpu_status_t mpi_test_many(tpu_xport_t *x, tpu_xport_req_t **reqs, int n)
{
    mpi_xport_t *mx = (mpi_xport_t *)x;
    int i, outcount = 0, rc;

    if (2 * n > mx->many_cap) {
        MPI_Request *m = tpu__realloc(mx->many, (size_t)(4 * n + 16) * sizeof(*m));
        int *idx;

        if (m == NULL) {
            snprintf(x->msg, sizeof(x->msg), "out of memory");
            return TPU_ERR_NO_MEMORY;
        }
        mx->many = m;
        idx = tpu__realloc(mx->many_idx, (size_t)(4 * n + 16) * sizeof(*idx));
        if (idx == NULL) {
            snprintf(x->msg, sizeof(x->msg), "out of memory");
            return TPU_ERR_NO_MEMORY;
        }
        mx->many_idx = idx;
        mx->many_cap = 4 * n + 16;
    }
    for (i = 0; i < n; i++) {
        mx->many[2 * i] = reqs[i] != NULL ? reqs[i]->req[0] : MPI_REQUEST_NULL;
        mx->many[2 * i + 1] = reqs[i] != NULL ? reqs[i]->req[1] : MPI_REQUEST_NULL;
    }
    /* One call, one pass of the progress engine, for all of them. */
    rc = MPI_Testsome(2 * n, mx->many, &outcount, mx->many_idx, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS) {
        return mpi_fail(x,
                        "message failed (a size mismatch means the chips run different "
                        "collectives)",
                        rc);
    }
    for (i = 0; i < n; i++) {
        if (reqs[i] == NULL) {
            continue;
        }
        reqs[i]->req[0] = mx->many[2 * i];
        reqs[i]->req[1] = mx->many[2 * i + 1];
        if (reqs[i]->req[0] == MPI_REQUEST_NULL && reqs[i]->req[1] == MPI_REQUEST_NULL) {
            finish_req(mx, reqs[i]);
            reqs[i] = NULL;
        }
    }
    return TPU_OK;
}

static void mpi_cancel(tpu_xport_t *x, tpu_xport_req_t *req)
{
    int i;

    (void)x;
    for (i = 0; i < 2; i++) {
        if (req->req[i] != MPI_REQUEST_NULL) {
            MPI_Cancel(&req->req[i]);
            MPI_Request_free(&req->req[i]);
        }
    }
    stage_put((mpi_xport_t *)x, req->stage, req->stage_cap);
    tpu__free(req);
}

static void mpi_idle(tpu_xport_t *x, int rounds)
{
    struct timespec ts = {0, 0};

    (void)x;
    /* Yield first: a rank that sleeps cannot progress the shared-memory copies its
     * peers wait on.  Only a long wait (a stall the watchdog may end) sleeps. */
    if (rounds < 20000) {
        sched_yield();
        return;
    }
    ts.tv_nsec = 100000L;
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

    while (mx->npool > 0) {
        tpu__free(mx->pool[--mx->npool]);
    }
    tpu__free(mx->many);
    tpu__free(mx->many_idx);
    MPI_Comm_free(&mx->comm);
    tpu__free(x->local_chips);
    tpu__free(mx);
}

static const tpu_xport_ops_t mpi_ops = {
    .size = sizeof(tpu_xport_ops_t),
    .name = "mpi",
    .isend = mpi_isend,
    .irecv = mpi_irecv,
    .test = mpi_test,
    .test_many = mpi_test_many,
    .cancel = mpi_cancel,
    .idle = mpi_idle,
    .max_time = mpi_max_time,
    .gather_sigs = mpi_gather_sigs,
    .destroy = mpi_destroy,
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
