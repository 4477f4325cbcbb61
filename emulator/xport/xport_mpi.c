/*
 * The MPI transport: one chip per rank, real processes, real bytes.
 *
 * A request is at most two MPI messages between one pair of ranks:
 *   - the first, on the request's (even) tag: the header, followed by the payload
 *     itself when it is at most INLINE_MAX bytes, so that a small flow is one
 *     message;
 *   - the payload of a larger flow, on tag + 1: sent at once (contiguous bytes in
 *     place, or a strided region through one contiguous staging copy, which Open
 *     MPI moves between processes in a single copy), and received only after the
 *     receiver has read the header and found exactly the bytes it expects.
 * Every first message fits the receiver's first buffer (header + INLINE_MAX), so
 * MPI never has to truncate anything, and a header that declares other bytes
 * completes the receive with the header alone: the executor names the mismatch,
 * and the payload nobody asked for stays unmatched on a tag of a past run.
 *
 * The communicator is a duplicate with MPI_ERRORS_RETURN, so an MPI failure
 * comes back as TPU_ERR_TRANSPORT with MPI's own text, never as a hidden exit.
 * Request handles are written back after every test, also on errors, so the error
 * path cancels only live requests.  Waiting backs off from sched_yield() to short
 * sleeps, so that 16 ranks on 2 cores do not spin; when the MPI library itself
 * yields in a progress pass that finds nothing (Open MPI's mpi_yield_when_idle,
 * read through the MPI tool interface), the executor's one test per pass already
 * yielded and idle adds no second yield (on 16 ranks on 2 cores, each yield waits
 * a turn of every other process: two per pass made every wait twice as long).
 *
 * Shared memory: the ranks of one node (MPI_Comm_split_type, MPI_COMM_TYPE_SHARED)
 * allocate one MPI-3 shared window when the transport is made, a region of
 * SHM_BYTES per rank (TPUEMU_HOST_SHM_BYTES overrides it; TPUEMU_HOST_SHM=0 makes
 * none), and the executor reads and writes the regions of its node's chips
 * directly (shm_region).  The window is never freed before MPI_Finalize:
 * MPI_Win_free is collective and would wait forever for a stopped rank. *
 * Files: the requests and the point-to-point ops here; the whole-job exchanges
 * (max_time, gather_sigs) in xport_mpi_coll.c; the shared window in
 * xport_mpi_shm.c; the state they share in xport_mpi.h.
 */
#include "xport_mpi.h"

#include "tpu/mpi.h"

#include "alloc.h"
#include "clock.h"
#include "xport_mpi_coll.h"
#include "xport_mpi_shm.h"
#include "xport_mpi_wait.h"

#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

/* The largest payload carried in the first message, after the header. */
#define INLINE_MAX 16384
#define FIRST_CAP  (sizeof(tpu_msg_hdr_t) + INLINE_MAX)
/* How long the error path waits for a receive that MPI had already matched. */
#define CANCEL_WAIT_S 1.0

struct tpu_xport_req {
    tpu_xport_req_t *next; /* in the free list or the quarantine */
    MPI_Request req[2];    /* the first message, then the payload (MPI_REQUEST_NULL when none) */
    int is_recv;
    int peer, tag;
    int failed;
    int64_t bytes;        /* the region's bytes */
    tpu_msg_hdr_t *hdr;   /* a receive's header, filled from the first message */
    tpu_region_t region;  /* a receive's destination */
    unsigned char *stage; /* contiguous copy of a strided payload, or NULL */
    size_t stage_cap;
    int unpack; /* a receive: copy 'stage' into 'region' on completion */
    union {
        tpu_msg_hdr_t hdr;
        unsigned char bytes[FIRST_CAP];
    } first; /* the first message: header, then an inline payload */
};

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

static tpu_xport_req_t *req_get(mpi_xport_t *mx)
{
    tpu_xport_req_t *req = mx->free_reqs;

    if (req != NULL) {
        mx->free_reqs = req->next;
    } else {
        req = tpu__malloc(sizeof(*req));
        if (req == NULL) {
            return NULL;
        }
    }
    req->next = NULL;
    req->req[0] = req->req[1] = MPI_REQUEST_NULL;
    req->is_recv = 0;
    req->failed = 0;
    req->bytes = 0;
    req->hdr = NULL;
    req->stage = NULL;
    req->stage_cap = 0;
    req->unpack = 0;
    return req;
}

/* Back to the free list, with its staging buffer back to the pool. */
static void req_put(mpi_xport_t *mx, tpu_xport_req_t *req)
{
    stage_put(mx, req->stage, req->stage_cap);
    req->stage = NULL;
    req->next = mx->free_reqs;
    mx->free_reqs = req;
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

/* Start a payload of 'bytes' at 'buf' on 'tag' (a derived type past INT_MAX). */
static int payload_start(mpi_xport_t *mx, int is_recv, void *buf, int64_t bytes, int peer, int tag,
                         MPI_Request *req_p)
{
    MPI_Datatype type = MPI_BYTE;
    int rc = MPI_SUCCESS, count = (int)bytes;

    if (bytes > INT_MAX) {
        rc = bytes_type(bytes, &type);
        count = 1;
        if (rc == MPI_SUCCESS) {
            rc = MPI_Type_commit(&type);
        }
    }
    if (rc == MPI_SUCCESS) {
        rc = is_recv ? MPI_Irecv(buf, count, type, peer, tag, mx->comm, req_p)
                     : MPI_Isend(buf, count, type, peer, tag, mx->comm, req_p);
    }
    if (type != MPI_BYTE) {
        MPI_Type_free(&type);
    }
    return rc;
}

static tpu_status_t mpi_isend(tpu_xport_t *x, int src, int dst, int tag, const tpu_msg_hdr_t *hdr,
                              const tpu_region_t *data, tpu_xport_req_t **req_p)
{
    mpi_xport_t *mx = (mpi_xport_t *)x;
    tpu_xport_req_t *req = req_get(mx);
    int64_t bytes = data->base != NULL && data->len > 0 ? tpu_xport_region_bytes(data) : 0;
    int rc;

    (void)src;
    if (req == NULL) {
        snprintf(x->msg, sizeof(x->msg), "out of memory");
        return TPU_ERR_NO_MEMORY;
    }
    req->peer = dst;
    req->tag = tag;
    req->bytes = bytes;
    req->first.hdr = *hdr;
    if (bytes <= INLINE_MAX) {
        if (bytes > 0) {
            region_copy(data, req->first.bytes + sizeof(tpu_msg_hdr_t), 1);
        }
        rc = MPI_Isend(req->first.bytes, (int)(sizeof(tpu_msg_hdr_t) + (size_t)bytes), MPI_BYTE,
                       dst, tag, mx->comm, &req->req[0]);
        if (rc != MPI_SUCCESS) {
            req_put(mx, req);
            return tpu__xport_mpi_fail(x, "MPI_Isend", rc);
        }
        *req_p = req;
        return TPU_OK;
    }
    {
        unsigned char *buf = (unsigned char *)data->base + data->off;

        if (bytes != data->len) {
            req->stage = stage_get(mx, (size_t)bytes, &req->stage_cap);
            if (req->stage == NULL) {
                req_put(mx, req);
                snprintf(x->msg, sizeof(x->msg), "out of memory for a %lld-byte staging buffer",
                         (long long)bytes);
                return TPU_ERR_NO_MEMORY;
            }
            region_copy(data, req->stage, 1);
            buf = req->stage;
        }
        rc = MPI_Isend(req->first.bytes, (int)sizeof(tpu_msg_hdr_t), MPI_BYTE, dst, tag, mx->comm,
                       &req->req[0]);
        if (rc == MPI_SUCCESS) {
            rc = payload_start(mx, 0, buf, bytes, dst, tag + 1, &req->req[1]);
            if (rc != MPI_SUCCESS) {
                /* The header went out alone: let it complete, keep the request. */
                req->next = mx->quarantine;
                mx->quarantine = req;
                return tpu__xport_mpi_fail(x, "MPI_Isend", rc);
            }
        }
        if (rc != MPI_SUCCESS) {
            req_put(mx, req);
            return tpu__xport_mpi_fail(x, "MPI_Isend", rc);
        }
    }
    *req_p = req;
    return TPU_OK;
}

static tpu_status_t mpi_irecv(tpu_xport_t *x, int dst, int src, int tag, tpu_msg_hdr_t *hdr,
                              const tpu_region_t *data, tpu_xport_req_t **req_p)
{
    mpi_xport_t *mx = (mpi_xport_t *)x;
    tpu_xport_req_t *req = req_get(mx);
    int rc;

    (void)dst;
    if (req == NULL) {
        snprintf(x->msg, sizeof(x->msg), "out of memory");
        return TPU_ERR_NO_MEMORY;
    }
    req->is_recv = 1;
    req->peer = src;
    req->tag = tag;
    req->hdr = hdr;
    req->region = *data;
    req->bytes = data->base != NULL && data->len > 0 ? tpu_xport_region_bytes(data) : 0;
    rc = MPI_Irecv(req->first.bytes, (int)FIRST_CAP, MPI_BYTE, src, tag, mx->comm, &req->req[0]);
    if (rc != MPI_SUCCESS) {
        req_put(mx, req);
        return tpu__xport_mpi_fail(x, "MPI_Irecv", rc);
    }
    *req_p = req;
    return TPU_OK;
}

/*
 * A receive's first message has arrived (status 'st'): take the header, the
 * inline payload, or start the payload when the header declares exactly the
 * bytes expected.  A header that declares other bytes ends the request with the
 * header alone.
 */
static tpu_status_t recv_first(mpi_xport_t *mx, tpu_xport_req_t *req, const MPI_Status *st)
{
    tpu_xport_t *x = &mx->base;
    int count = 0, rc;
    int64_t declared;

    MPI_Get_count(st, MPI_BYTE, &count);
    if (count < (int)sizeof(tpu_msg_hdr_t)) {
        snprintf(x->msg, sizeof(x->msg),
                 "a %d-byte message from rank %d, shorter than a header (not a tpuemu peer?)",
                 count, req->peer);
        return TPU_ERR_TRANSPORT;
    }
    *req->hdr = req->first.hdr;
    declared = req->first.hdr.bytes;
    if (declared != req->bytes) {
        return TPU_OK; /* the executor names the mismatch from the header */
    }
    if (declared <= INLINE_MAX) {
        if ((int64_t)count != (int64_t)sizeof(tpu_msg_hdr_t) + declared) {
            snprintf(x->msg, sizeof(x->msg),
                     "a %d-byte message from rank %d declares %lld payload bytes", count, req->peer,
                     (long long)declared);
            return TPU_ERR_TRANSPORT;
        }
        if (declared > 0) {
            region_copy(&req->region, req->first.bytes + sizeof(tpu_msg_hdr_t), 0);
        }
        return TPU_OK;
    }
    {
        unsigned char *buf = (unsigned char *)req->region.base + req->region.off;

        if (declared != req->region.len) {
            req->stage = stage_get(mx, (size_t)declared, &req->stage_cap);
            if (req->stage == NULL) {
                snprintf(x->msg, sizeof(x->msg), "out of memory for a %lld-byte staging buffer",
                         (long long)declared);
                return TPU_ERR_NO_MEMORY;
            }
            req->unpack = 1;
            buf = req->stage;
        }
        rc = payload_start(mx, 1, buf, declared, req->peer, req->tag + 1, &req->req[1]);
        return rc == MPI_SUCCESS ? TPU_OK : tpu__xport_mpi_fail(x, "MPI_Irecv", rc);
    }
}

/* Release a request whose MPI parts have completed. */
static void finish_req(mpi_xport_t *mx, tpu_xport_req_t *req)
{
    if (req->unpack && !req->failed) {
        region_copy(&req->region, req->stage, 0);
    }
    req_put(mx, req);
}

/* Make room for 'n' requests in test_many's arrays. */
static tpu_status_t many_reserve(mpi_xport_t *mx, int n)
{
    int cap = 4 * n + 16;
    MPI_Request *m;
    MPI_Status *st;
    int *idx;

    if (2 * n <= mx->many_cap) {
        return TPU_OK;
    }
    m = tpu__realloc(mx->many, (size_t)cap * sizeof(*m));
    if (m == NULL) {
        return TPU_ERR_NO_MEMORY;
    }
    mx->many = m;
    st = tpu__realloc(mx->many_st, (size_t)cap * sizeof(*st));
    if (st == NULL) {
        return TPU_ERR_NO_MEMORY;
    }
    mx->many_st = st;
    idx = tpu__realloc(mx->many_idx, (size_t)cap * sizeof(*idx));
    if (idx == NULL) {
        return TPU_ERR_NO_MEMORY;
    }
    mx->many_idx = idx;
    mx->many_cap = cap;
    return TPU_OK;
}

static tpu_status_t mpi_test_many(tpu_xport_t *x, tpu_xport_req_t **reqs, int n)
{
    mpi_xport_t *mx = (mpi_xport_t *)x;
    int i, k, outcount = 0, rc;
    tpu_status_t status = TPU_OK;

    if (many_reserve(mx, n) != TPU_OK) {
        snprintf(x->msg, sizeof(x->msg), "out of memory");
        return TPU_ERR_NO_MEMORY;
    }
    for (i = 0; i < n; i++) {
        mx->many[2 * i] = reqs[i] != NULL ? reqs[i]->req[0] : MPI_REQUEST_NULL;
        mx->many[2 * i + 1] = reqs[i] != NULL ? reqs[i]->req[1] : MPI_REQUEST_NULL;
    }
    /* One call, one pass of the progress engine, for all of them. */
    rc = MPI_Testsome(2 * n, mx->many, &outcount, mx->many_idx, mx->many_st);
    /* The handles first, whatever happened: completed ones are MPI_REQUEST_NULL now. */
    for (i = 0; i < n; i++) {
        if (reqs[i] != NULL) {
            reqs[i]->req[0] = mx->many[2 * i];
            reqs[i]->req[1] = mx->many[2 * i + 1];
        }
    }
    if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) {
        return tpu__xport_mpi_fail(x, "MPI_Testsome", rc);
    }
    for (k = 0; outcount != MPI_UNDEFINED && k < outcount; k++) {
        int j = mx->many_idx[k];
        tpu_xport_req_t *req = reqs[j / 2];
        int e = rc == MPI_ERR_IN_STATUS ? mx->many_st[k].MPI_ERROR : MPI_SUCCESS;
        tpu_status_t s = TPU_OK;

        if (e != MPI_SUCCESS) {
            s = tpu__xport_mpi_fail(x,
                                    "message failed (a size mismatch means the chips run different "
                                    "collectives)",
                                    e);
        } else if (j % 2 == 0 && req->is_recv) {
            s = recv_first(mx, req, &mx->many_st[k]);
        }
        if (s != TPU_OK) {
            req->failed = 1;
            if (status == TPU_OK) {
                status = s;
            }
        }
    }
    for (i = 0; i < n; i++) {
        if (reqs[i] != NULL && reqs[i]->req[0] == MPI_REQUEST_NULL &&
            reqs[i]->req[1] == MPI_REQUEST_NULL) {
            finish_req(mx, reqs[i]);
            reqs[i] = NULL;
        }
    }
    return status;
}

static tpu_status_t mpi_test(tpu_xport_t *x, tpu_xport_req_t *req, int *done_p)
{
    tpu_xport_req_t *one[1];
    tpu_status_t status;

    one[0] = req;
    status = mpi_test_many(x, one, 1);
    *done_p = one[0] == NULL;
    return status;
}

/*
 * Cancel a live request and wait for it, briefly.  A receive MPI has not matched
 * is cancelled at once; one it has matched, and a send (Open MPI does not cancel
 * sends), complete when the peer has moved the data, which a peer still in the
 * call does soon; a peer that gave up never matches this call's tags again.  The
 * waits of one error share one deadline.  A request MPI may still read or write
 * is kept until the transport is destroyed, never reused (a send's user buffer
 * is the caller's: it stays valid until the error is handled).
 */
static void mpi_cancel(tpu_xport_t *x, tpu_xport_req_t *req)
{
    mpi_xport_t *mx = (mpi_xport_t *)x;
    double now = tpu__now_s();
    int i, flag = 0;

    if (now > mx->cancel_deadline + CANCEL_WAIT_S) {
        mx->cancel_deadline = now + CANCEL_WAIT_S; /* a new error */
    }
    for (i = 0; i < 2; i++) {
        if (req->req[i] != MPI_REQUEST_NULL) {
            MPI_Cancel(&req->req[i]);
        }
    }
    while (MPI_Testall(2, req->req, &flag, MPI_STATUSES_IGNORE) == MPI_SUCCESS && !flag &&
           tpu__now_s() < mx->cancel_deadline) {
        sched_yield();
    }
    if (flag) {
        req->failed = 1;
        req_put(mx, req);
        return;
    }
    for (i = 0; i < 2; i++) {
        if (req->req[i] != MPI_REQUEST_NULL) {
            MPI_Request_free(&req->req[i]);
        }
    }
    req->next = mx->quarantine;
    mx->quarantine = req;
}

static void mpi_destroy(tpu_xport_t *x)
{
    mpi_xport_t *mx = (mpi_xport_t *)x;
    int open = tpu__xport_mpi_coll_ready(mx) != TPU_OK;

    while (mx->npool > 0) {
        tpu__free(mx->pool[--mx->npool]);
    }
    if (!open) {
        tpu__free(mx->sigs_in);
        tpu__free(mx->sigs_out);
    }
    tpu__free(mx->many);
    tpu__free(mx->many_st);
    tpu__free(mx->many_idx);
    tpu__free(mx->shm); /* (the window and the node's communicator: see the top) */
    MPI_Comm_free(&mx->comm);
    while (mx->free_reqs != NULL) {
        tpu_xport_req_t *r = mx->free_reqs;

        mx->free_reqs = r->next;
        tpu__free(r);
    }
    while (mx->quarantine != NULL) {
        tpu_xport_req_t *r = mx->quarantine;

        mx->quarantine = r->next;
        tpu__free(r->stage);
        tpu__free(r);
    }
    tpu__free(x->local_chips);
    if (!open) {
        tpu__free(mx); /* else MPI may still write its buffers: kept to the end of the process */
    }
}

/*
 * Does the MPI library yield the CPU in a progress pass that finds nothing?
 * Open MPI's control variable mpi_yield_when_idle, through the MPI tool
 * interface; 0 when the library has no such variable or the interface fails.
 */
static int lib_yields_when_idle(void)
{
    int provided, idx, count, yields = 0;
    MPI_T_cvar_handle h;
    long long val = 0; /* wide enough for the variable's int or bool */

    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) {
        return 0;
    }
    if (MPI_T_cvar_get_index("mpi_yield_when_idle", &idx) == MPI_SUCCESS &&
        MPI_T_cvar_handle_alloc(idx, NULL, &h, &count) == MPI_SUCCESS) {
        if (count == 1 && MPI_T_cvar_read(h, &val) == MPI_SUCCESS) {
            yields = val != 0;
        }
        MPI_T_cvar_handle_free(&h);
    }
    MPI_T_finalize();
    return yields;
}

static const tpu_xport_ops_t mpi_ops = {
    .size = sizeof(tpu_xport_ops_t),
    .name = "mpi",
    .isend = mpi_isend,
    .irecv = mpi_irecv,
    .test = mpi_test,
    .test_many = mpi_test_many,
    .cancel = mpi_cancel,
    .idle = tpu__xport_mpi_idle,
    .max_time = tpu__xport_mpi_max_time,
    .gather_sigs = tpu__xport_mpi_gather_sigs,
    .destroy = mpi_destroy,
    .shm_region = tpu__xport_mpi_shm_region,
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
    mx->coll = MPI_REQUEST_NULL;
    MPI_Comm_rank(mx->comm, &rank);
    MPI_Comm_size(mx->comm, &size);
    mx->base.ops = &mpi_ops;
    mx->base.nchips = size;
    mx->base.nlocal = 1;
    mx->base.local_chips[0] = rank;
    mx->base.moves_data = 1;
    mx->lib_yields = lib_yields_when_idle();
    tpu__xport_mpi_shm_create(mx);
    {
        int *ub = NULL, flag = 0;

        MPI_Comm_get_attr(mx->comm, MPI_TAG_UB, &ub, &flag);
        /* The standard guarantees at least 32767. */
        mx->base.tag_ub = flag && ub != NULL && *ub > 32767 ? *ub : 32767;
    }
    *x_p = &mx->base;
    return TPU_OK;
}

MPI_Comm tpu_xport_mpi_comm(const tpu_xport_t *x)
{
    return ((const mpi_xport_t *)x)->comm;
}
