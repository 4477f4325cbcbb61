/*
 * The in-process transports: loopback (real bytes) and sim (sizes only).
 *
 * All chips live in this process and the executor drives them from one thread,
 * step by step.  A send and a receive match on (src, dst, tag), in posting order;
 * whichever comes second completes both, copying the header and, for loopback,
 * the bytes (between two strided regions of the same size).  Deterministic, and
 * friendly to ASan and valgrind.
 */
#include "tpu/xport.h"

#include "alloc.h"

#include <stdio.h>
#include <string.h>

#define NBUCKETS 4096

struct tpu_xport_req {
    struct tpu_xport_req *next; /* in its bucket, while unmatched */
    int is_recv;
    int src, dst, tag;
    const tpu_msg_hdr_t *send_hdr;
    tpu_msg_hdr_t *recv_hdr;
    tpu_region_t region;
    int done;
};

typedef struct local_xport {
    tpu_xport_t base;
    tpu_xport_ops_t ops;               /* local_ops, named "loopback" or "sim" */
    tpu_xport_req_t *bucket[NBUCKETS]; /* unmatched requests */
} local_xport_t;

static unsigned bucket_of(int src, int dst, int tag)
{
    unsigned h = (unsigned)src * 2654435761u ^ (unsigned)dst * 40503u ^ (unsigned)tag * 97u;

    return h % NBUCKETS;
}

/* Address of byte 'pos' of a region, and how many bytes follow it in its block. */
static unsigned char *region_at(const tpu_region_t *r, int64_t pos, int64_t *run_p)
{
    int64_t in = pos % r->len;

    *run_p = r->len - in;
    return tpu_xport_region_block(r, pos / r->len) + in;
}

static void region_copy(const tpu_region_t *dst, const tpu_region_t *src)
{
    int64_t total = tpu_xport_region_bytes(src), pos = 0;

    if (tpu_xport_region_bytes(dst) < total) {
        total = tpu_xport_region_bytes(dst);
    }
    while (pos < total) {
        int64_t rs, rd, n;
        const unsigned char *s = region_at(src, pos, &rs);
        unsigned char *d = region_at(dst, pos, &rd);

        n = rs < rd ? rs : rd;
        if (n > total - pos) {
            n = total - pos;
        }
        memcpy(d, s, (size_t)n);
        pos += n;
    }
}

static void complete(local_xport_t *lx, tpu_xport_req_t *send, tpu_xport_req_t *recv)
{
    *recv->recv_hdr = *send->send_hdr;
    /* The payload only when the sizes agree: a mismatch is named from the header. */
    if (lx->base.moves_data && send->region.len > 0 &&
        tpu_xport_region_bytes(&send->region) == tpu_xport_region_bytes(&recv->region)) {
        region_copy(&recv->region, &send->region);
    }
    send->done = 1;
    recv->done = 1;
}

static tpu_status_t post(tpu_xport_t *x, int is_recv, int src, int dst, int tag,
                         const tpu_msg_hdr_t *shdr, tpu_msg_hdr_t *rhdr, const tpu_region_t *data,
                         tpu_xport_req_t **req_p)
{
    local_xport_t *lx = (local_xport_t *)x;
    unsigned b = bucket_of(src, dst, tag);
    tpu_xport_req_t *req, **pp;

    if (src < 0 || src >= x->nchips || dst < 0 || dst >= x->nchips) {
        snprintf(x->msg, sizeof(x->msg), "chip %d -> %d outside the pod of %d", src, dst,
                 x->nchips);
        return TPU_ERR_TRANSPORT;
    }
    req = tpu__calloc(1, sizeof(*req));
    if (req == NULL) {
        snprintf(x->msg, sizeof(x->msg), "out of memory");
        return TPU_ERR_NO_MEMORY;
    }
    req->is_recv = is_recv;
    req->src = src;
    req->dst = dst;
    req->tag = tag;
    req->send_hdr = shdr;
    req->recv_hdr = rhdr;
    req->region = *data;
    for (pp = &lx->bucket[b]; *pp != NULL; pp = &(*pp)->next) {
        tpu_xport_req_t *o = *pp;

        if (o->is_recv != is_recv && o->src == src && o->dst == dst && o->tag == tag) {
            *pp = o->next;
            o->next = NULL;
            if (is_recv) {
                complete(lx, o, req);
            } else {
                complete(lx, req, o);
            }
            *req_p = req;
            return TPU_OK;
        }
    }
    /* Append, so that matching keeps posting order. */
    *pp = req;
    *req_p = req;
    return TPU_OK;
}

static tpu_status_t local_isend(tpu_xport_t *x, int src, int dst, int tag, const tpu_msg_hdr_t *hdr,
                                const tpu_region_t *data, tpu_xport_req_t **req_p)
{
    return post(x, 0, src, dst, tag, hdr, NULL, data, req_p);
}

static tpu_status_t local_irecv(tpu_xport_t *x, int dst, int src, int tag, tpu_msg_hdr_t *hdr,
                                const tpu_region_t *data, tpu_xport_req_t **req_p)
{
    return post(x, 1, src, dst, tag, NULL, hdr, data, req_p);
}

static void unlink_req(local_xport_t *lx, tpu_xport_req_t *req)
{
    tpu_xport_req_t **pp = &lx->bucket[bucket_of(req->src, req->dst, req->tag)];

    for (; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == req) {
            *pp = req->next;
            return;
        }
    }
}

static tpu_status_t local_test(tpu_xport_t *x, tpu_xport_req_t *req, int *done_p)
{
    (void)x;
    *done_p = req->done;
    if (req->done) {
        tpu__free(req);
    }
    return TPU_OK;
}

static tpu_status_t local_test_many(tpu_xport_t *x, tpu_xport_req_t **reqs, int n)
{
    int i;

    (void)x;
    for (i = 0; i < n; i++) {
        if (reqs[i] != NULL && reqs[i]->done) {
            tpu__free(reqs[i]);
            reqs[i] = NULL;
        }
    }
    return TPU_OK;
}

static void local_cancel(tpu_xport_t *x, tpu_xport_req_t *req)
{
    if (!req->done) {
        unlink_req((local_xport_t *)x, req);
    }
    tpu__free(req);
}

static void local_idle(tpu_xport_t *x, int rounds)
{
    /* Everything completes while posting: a request still open after a full round
     * of tests has no partner, and waiting cannot change that; the watchdog ends it. */
    (void)x;
    (void)rounds;
}

static tpu_status_t local_max_time(tpu_xport_t *x, double local, double *max_p,
                                   const tpu_xport_wait_t *w)
{
    (void)x;
    (void)w;
    *max_p = local; /* the executor already took the max over all (local) chips */
    return TPU_OK;
}

static tpu_status_t local_gather_sigs(tpu_xport_t *x, const tpu_call_sig_t *mine,
                                      tpu_call_sig_t *all, const tpu_xport_wait_t *w)
{
    (void)w;
    memcpy(all, mine, (size_t)x->nchips * sizeof(*all));
    return TPU_OK;
}

static void local_destroy(tpu_xport_t *x)
{
    local_xport_t *lx = (local_xport_t *)x;
    int b;

    for (b = 0; b < NBUCKETS; b++) {
        while (lx->bucket[b] != NULL) {
            tpu_xport_req_t *r = lx->bucket[b];

            lx->bucket[b] = r->next;
            tpu__free(r);
        }
    }
    tpu__free(x->local_chips);
    tpu__free(x);
}

/* The in-process operations; each transport copies them and sets its name. */
static const tpu_xport_ops_t local_ops = {
    .size = sizeof(tpu_xport_ops_t),
    .name = "local",
    .isend = local_isend,
    .irecv = local_irecv,
    .test = local_test,
    .test_many = local_test_many,
    .cancel = local_cancel,
    .idle = local_idle,
    .max_time = local_max_time,
    .gather_sigs = local_gather_sigs,
    .destroy = local_destroy,
};

static tpu_status_t local_create(int nchips, const char *name, int moves_data, tpu_xport_t **x_p,
                                 tpu_err_t *err)
{
    local_xport_t *lx;
    int i;

    if (nchips < 1) {
        return tpu_err_set(err, TPU_ERR_INVALID, "a %s transport needs at least 1 chip", name);
    }
    lx = tpu__calloc(1, sizeof(*lx));
    if (lx == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for the %s transport", name);
    }
    lx->base.local_chips = tpu__malloc((size_t)nchips * sizeof(int));
    if (lx->base.local_chips == NULL) {
        tpu__free(lx);
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for the %s transport", name);
    }
    for (i = 0; i < nchips; i++) {
        lx->base.local_chips[i] = i;
    }
    lx->ops = local_ops;
    lx->ops.name = name;
    lx->base.ops = &lx->ops;
    lx->base.nchips = nchips;
    lx->base.nlocal = nchips;
    lx->base.tag_ub = 0x7fffffff;
    lx->base.moves_data = moves_data;
    *x_p = &lx->base;
    return TPU_OK;
}

tpu_status_t tpu_xport_loopback_create(int nchips, tpu_xport_t **x_p, tpu_err_t *err)
{
    return local_create(nchips, "loopback", 1, x_p, err);
}

tpu_status_t tpu_xport_sim_create(int nchips, tpu_xport_t **x_p, tpu_err_t *err)
{
    return local_create(nchips, "sim", 0, x_p, err);
}

void tpu_xport_destroy(tpu_xport_t *x)
{
    if (x != NULL) {
        x->ops->destroy(x);
    }
}
