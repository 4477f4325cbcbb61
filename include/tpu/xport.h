/*
 * The transport: how the schedule executor moves bytes between chips.
 *
 * A transport hosts some chips of the pod ("local chips": one per MPI rank for
 * the mpi transport, all of them for loopback and sim) and moves messages
 * between them.  A message is a small header (which carries the modeled arrival
 * time, so the receiver's virtual clock never depends on the host) and a strided
 * region of a buffer.  The sim transport moves the headers only.
 *
 * Every operation is nonblocking: isend and irecv start an operation and return a
 * request; test() reports completion and then frees the request.  Buffers are
 * borrowed until test() reports completion.  Requests between one pair of chips
 * with one tag match in order.
 */
#ifndef TPU_XPORT_H
#define TPU_XPORT_H

#include "tpu/status.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A strided region of a buffer: count[0]*count[1]*count[2] blocks of 'len' bytes. */
typedef struct tpu_region {
    void *base;
    int64_t off;
    int64_t len;
    int64_t stride[3];
    int32_t count[3];
} tpu_region_t;

/* Bytes of a region: count[0] * count[1] * count[2] * len. */
static inline int64_t tpu_xport_region_bytes(const tpu_region_t *r)
{
    return r->len * r->count[0] * r->count[1] * r->count[2];
}

/* Blocks of a region. */
static inline int64_t tpu_xport_region_blocks(const tpu_region_t *r)
{
    return (int64_t)r->count[0] * r->count[1] * r->count[2];
}

/*
 * Address of block 'b' of a region, blocks in (i, j, k) order with k fastest:
 * base + off + i * stride[0] + j * stride[1] + k * stride[2].  The one walker
 * of strided regions: the executor, and the transports that pack and copy.
 */
static inline unsigned char *tpu_xport_region_block(const tpu_region_t *r, int64_t b)
{
    int64_t k = b % r->count[2], j = (b / r->count[2]) % r->count[1];
    int64_t i = b / ((int64_t)r->count[2] * r->count[1]);

    return (unsigned char *)r->base + r->off + i * r->stride[0] + j * r->stride[1] +
           k * r->stride[2];
}

/*
 * What a chip is running: everything that changes the schedule or its times, so
 * that two chips in different collectives (or the same one planned differently)
 * are told apart, by field, and both sides of a mismatch can be named.
 */
typedef struct tpu_call_sig {
    uint64_t call;  /* call number on this chip */
    uint64_t bytes; /* the collective's size */
    int32_t kind;   /* tpu_coll_kind_t */
    int32_t axes;   /* axis mask */
    int32_t dtype;  /* tpu_dtype_t */
    int32_t op;     /* tpu_redop_t */
    int32_t chunks; /* pipeline depth chosen */
    int32_t slices;
    int32_t shift; /* ppermute */
    int32_t src;   /* p2p */
    int32_t dst;   /* p2p */
    int32_t dims[3];
    int32_t wrap[3];
    int32_t host_dims[3];
    double ici_bw, ici_latency, dcn_bw, dcn_latency;
    uint64_t link_hash; /* every constant of the link model, hashed */
    uint64_t set_hash;  /* the groups or ppermute pairs, hashed (0: the axes' groups) */
    char algo[32];      /* the algorithm chosen */
} tpu_call_sig_t;

/* The header every message carries. */
typedef struct tpu_msg_hdr {
    tpu_call_sig_t sig; /* the sender's call */
    int64_t flow;       /* index of the flow in the schedule */
    double arrival;     /* unused by the executor (modeled time comes from the plan) */
    int64_t bytes;      /* payload bytes */
} tpu_msg_hdr_t;

typedef struct tpu_xport tpu_xport_t;
typedef struct tpu_xport_req tpu_xport_req_t;

/*
 * How a collective exchange of the transport (max_time, gather_sigs) waits for
 * the other chips: a chip that is stopped or dead must not leave the others in
 * it forever.  NULL: wait as long as it takes.
 */
typedef struct tpu_xport_wait {
    double timeout_s; /* > 0: give up after this many seconds with TPU_ERR_TIMEOUT */
    /* Called while waiting, with chip -1 (everyone is waited for); NULL: none. */
    void (*on_wait)(void *arg, int chip);
    void *on_wait_arg;
} tpu_xport_wait_t;

typedef struct tpu_xport_ops {
    size_t size;      /* sizeof(tpu_xport_ops_t) the implementation was built against */
    const char *name; /* "mpi", "loopback", "sim" */
    /* Start sending 'hdr' and 'data' from local chip 'src' to chip 'dst' with 'tag'.
     * Never blocks.  'hdr' and 'data' are borrowed until completion.  Tags are even
     * and below tpu_xport_t.tag_ub; a transport may use tag + 1 for a second message
     * of the same request. */
    tpu_status_t (*isend)(tpu_xport_t *x, int src, int dst, int tag, const tpu_msg_hdr_t *hdr,
                          const tpu_region_t *data, tpu_xport_req_t **req_p);
    /* Start receiving into 'hdr' and 'data' at local chip 'dst' from chip 'src'.  The
     * payload is written only when the header declares exactly the region's bytes;
     * otherwise the request completes with the header alone (the caller compares
     * hdr->bytes and names the mismatch), so nothing is ever written past 'data'. */
    tpu_status_t (*irecv)(tpu_xport_t *x, int dst, int src, int tag, tpu_msg_hdr_t *hdr,
                          const tpu_region_t *data, tpu_xport_req_t **req_p);
    /* Set '*done_p' to 1 and release 'req' when it has completed.  Never blocks. */
    tpu_status_t (*test)(tpu_xport_t *x, tpu_xport_req_t *req, int *done_p);
    /* Test 'n' requests at once (one pass of the progress engine); release those
     * that completed and set their entries of 'reqs' to NULL.  Never blocks.  Also on
     * an error every entry is either NULL (released) or a live request. */
    tpu_status_t (*test_many)(tpu_xport_t *x, tpu_xport_req_t **reqs, int n);
    /* Cancel and release an incomplete request (on error paths). */
    void (*cancel)(tpu_xport_t *x, tpu_xport_req_t *req);
    /* Wait a little for progress without burning the CPU (called when nothing completed). */
    void (*idle)(tpu_xport_t *x, int rounds);
    /* The largest modeled time over all chips of the transport (a max-reduction).
     * Collective over all chips; waits as 'w' says (TPU_ERR_TIMEOUT past its timeout). */
    tpu_status_t (*max_time)(tpu_xport_t *x, double local, double *max_p,
                             const tpu_xport_wait_t *w);
    /* Gather the call of every chip into 'all' (nchips entries), from the local ones'
     * 'mine' (nlocal entries).  Collective over all chips; waits as 'w' says. */
    tpu_status_t (*gather_sigs)(tpu_xport_t *x, const tpu_call_sig_t *mine, tpu_call_sig_t *all,
                                const tpu_xport_wait_t *w);
    void (*destroy)(tpu_xport_t *x);
    /* Memory shared by the chips of one node (NULL: the transport has none).  The
     * address in this process of chip 'chip''s region, which every chip of its node
     * maps: 64-byte aligned, zero when the transport was made, '*bytes_p' bytes (the
     * same for every chip), written only by its chip's executor.  NULL when 'chip'
     * is on another node or the transport made no shared memory. */
    void *(*shm_region)(tpu_xport_t *x, int chip, size_t *bytes_p);
} tpu_xport_ops_t;

/* The fields every transport starts with. */
struct tpu_xport {
    const tpu_xport_ops_t *ops;
    int nchips;       /* chips in the pod */
    int nlocal;       /* chips hosted here */
    int *local_chips; /* their ids, increasing */
    int moves_data;   /* 0 for sim: regions are ignored */
    int tag_ub;       /* the largest tag (MPI_TAG_UB for mpi) */
    uint64_t runs;    /* collective runs started over this transport (tag epochs) */
    char msg[256];    /* text of the last transport failure, for error messages */
};

/* A transport with all 'nchips' chips in this process that copies real bytes. */
TPU_API tpu_status_t tpu_xport_loopback_create(int nchips, tpu_xport_t **x_p, tpu_err_t *err);
/* A transport with all 'nchips' chips in this process that moves sizes only. */
TPU_API tpu_status_t tpu_xport_sim_create(int nchips, tpu_xport_t **x_p, tpu_err_t *err);
/* Destroy any transport; NULL is a no-op. */
TPU_API void tpu_xport_destroy(tpu_xport_t *x);

#ifdef __cplusplus
}
#endif

#endif /* TPU_XPORT_H */
