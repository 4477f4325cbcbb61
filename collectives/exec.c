/*
 * The schedule executor: walks a plan's schedule over a transport, moving and
 * reducing real bytes.
 *
 * Two things are decoupled here.  The modeled time is a property of the plan:
 * the link-model walk of its schedule (time.c), done once per run object and the
 * same on every chip and every transport, bit for bit (a chip's own finish time
 * comes from the same walk).  The host's messages carry the bytes: they follow
 * the same algorithm with a one-chunk pipeline (the model's pipeline depth
 * changes the modeled time, not how many host messages carry the bytes), so a
 * 1 MiB psum that the model pipelines into 16 chunks is 24 host messages per
 * chip on a 4x4, not 384.  A psum moves through a host plan of one round
 * (build_direct) or two (build_direct2) instead; a bf16 one carries the bf16
 * words and accumulates in f32 on the receiving chip, rounded once (wide mode).
 *
 * Every receive is posted at once; a send goes out as soon as the flows it
 * depends on have arrived (and, when reducing, been added), so a chip never
 * waits for a neighbour whose data it does not need yet.  Reducing receives are
 * added into the buffer in flow order, whatever order they arrive in: the same
 * rounding every run.
 *
 * Every message carries the sender's full call signature (tpu_call_sig_t: the
 * request, the algorithm and pipeline depth, the shape, wrap, slices and every
 * link constant), checked on arrival together with the flow index and the size;
 * the optional first exchange (check_peers) compares every chip's signature
 * before any byte moves.  A mismatch names both chips and the differing field.
 * When every member of a psum's group is on this node and the transport shares
 * memory between them (mpi: an MPI-3 shared window), the host plan's additions
 * are done from the members' shared regions instead (shm_psum.c), in the same
 * order, so with the same bits; TPUEMU_HOST_SHM=0 turns that off.
 * Tags carry the call number (runs of the transport without options), so what
 * a failed call left in flight never matches a later call; the error path cancels exactly the
 * requests still live, and the run object can run again after any error.
 *
 * A run object (tpu_coll_exec_t) holds what runs of one plan over one transport
 * share: the data schedule (built once), the modeled times, the chip maps, and
 * the working and scratch buffers (fresh ones would page-fault on every call).
 * The plan itself is never changed.
 */
#include "tpu/dtype.h"

#include "algo.h"
#include "alloc.h"
#include "clock.h"
#include "lines.h"
#include "plan.h"
#include "reduce.h"
#include "shm.h"
#include "timing.h"

#include <stdio.h>
#include <string.h>

typedef struct pending {
    tpu_xport_req_t *req; /* NULL once complete */
    int64_t flow;
    int posted;
    tpu_msg_hdr_t hdr;
    unsigned char *scratch; /* reduce receives land here */
} pending_t;

struct tpu_coll_exec {
    const tpu_coll_plan_t *plan;
    const tpu_plan_sched_t *ps; /* the data schedule: &data or &plan->model */
    tpu_plan_sched_t data;      /* built here when the model's is one chip's or pipelined */
    tpu_xport_t *x;
    int *local_index; /* chip -> index among local chips, or -1 */
    uint8_t *is_local;
    unsigned char **send;   /* per local chip: the buffer flows read */
    unsigned char **recv;   /* per local chip: the buffer flows write */
    unsigned char **work;   /* per local chip: the working buffer, or NULL */
    int nwork;              /* entries of 'work' (the transport's local chips) */
    unsigned char *scratch; /* receive scratch of reducing flows */
    tpu_call_sig_t sig;     /* the current run's call */
    tpu_dtype_t work_dtype;
    double end_s;       /* modeled time of the collective (the plan's walk) */
    double local_end_s; /* the latest arrival at or from a local chip */
    int flow_bits;      /* tag = epoch << (flow_bits + 1) | flow << 1 */
    int send_from_recv; /* the host plan works in the output buffer (direct2) */
    int scale;          /* working bytes per user byte of the data schedule's flows */
    /* A bf16 reduction on a host plan (wide): messages carry the bf16 words, each
     * local chip accumulates the range its reducing receives cover in f32
     * ('acc', from byte acc_off of the user's buffer, acc_len user bytes) and
     * rounds it into the output once, after the last of its acc_nred receives
     * (acc_from_input: the accumulator starts from the chip's own input). */
    int wide, acc_from_input;
    float **acc;
    int64_t *acc_off, *acc_len;
    int *acc_nred, *acc_seen;
    int epochs;
    /* With chips elsewhere (MPI): the flows' message ids, each flow's number among
     * the flows between its two chips in schedule order, which both chips count
     * alike from their own part of the schedule; NULL: the flow index. */
    int32_t *msg_id;
    /* The collective through the node's shared memory (shm.c), or NULL; whether
     * the last run went through it. */
    tpu_shm_t *shm;
    int last_shm;
};

/* "chip 5 (1,1)" or "chip 17 (slice 1, 0,1)". */
static void chip_str(const tpu_topo_t *topo, int chip, char *buf, size_t len)
{
    int c[TPU_MAX_AXES], a, used;

    tpu_topo_coords(topo, chip, c);
    used = topo->slices > 1
               ? snprintf(buf, len, "chip %d (slice %d, ", chip, tpu_topo_slice_of(topo, chip))
               : snprintf(buf, len, "chip %d (", chip);
    for (a = 0; a < topo->naxes && used < (int)len; a++) {
        used += snprintf(buf + used, len - (size_t)used, "%s%d", a ? "," : "", c[a]);
    }
    if (used < (int)len) {
        snprintf(buf + used, len - (size_t)used, ")");
    }
}

static void sig_str(const tpu_call_sig_t *s, char *buf, size_t len)
{
    char axes[32];

    tpu_topo_axes_str((unsigned)s->axes, axes, sizeof(axes));
    snprintf(buf, len, "call %llu: %s over %s of %llu bytes %s %s (%.*s)",
             (unsigned long long)s->call, tpu_coll_name((tpu_coll_kind_t)s->kind),
             s->kind == TPU_COLL_P2P ? "-" : axes, (unsigned long long)s->bytes,
             tpu_dtype_name((tpu_dtype_t)s->dtype), tpu_redop_name((tpu_redop_t)s->op),
             (int)sizeof(s->algo), s->algo);
}

/* FNV-1a over 'n' bytes. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    size_t i;

    for (i = 0; i < n; i++) {
        h = (h ^ b[i]) * 1099511628211ull;
    }
    return h;
}

/*
 * Every constant of the link model, hashed field by field (never the padding).
 * A constant added to tpu_link_model_t is added here, so that two chips that
 * time differently never run together.
 */
static uint64_t link_hash(const tpu_link_model_t *l)
{
    uint64_t h = 14695981039346656037ull;

    h = fnv(h, &l->ici_bw, sizeof(l->ici_bw));
    h = fnv(h, &l->ici_latency, sizeof(l->ici_latency));
    h = fnv(h, &l->dcn_bw, sizeof(l->dcn_bw));
    h = fnv(h, &l->dcn_latency, sizeof(l->dcn_latency));
    h = fnv(h, l->host_dims, sizeof(l->host_dims));
    h = fnv(h, &l->msg_cost, sizeof(l->msg_cost));
    h = fnv(h, &l->reduce_bw, sizeof(l->reduce_bw));
    h = fnv(h, &l->pcie_bw, sizeof(l->pcie_bw));
    h = fnv(h, &l->nic_bw, sizeof(l->nic_bw));
    h = fnv(h, &l->ici_efficiency, sizeof(l->ici_efficiency));
    h = fnv(h, &l->launch, sizeof(l->launch));
    return h;
}

/* The signature of the plan's call (everything but the call number). */
static void sig_init(const tpu_coll_plan_t *p, tpu_call_sig_t *s)
{
    int a;

    memset(s, 0, sizeof(*s));
    s->bytes = p->desc.bytes;
    s->kind = (int32_t)p->desc.kind;
    s->axes = (int32_t)p->desc.axes;
    s->dtype = (int32_t)p->desc.dtype;
    s->op = (int32_t)p->desc.op;
    s->chunks = p->args.chunks;
    s->slices = p->topo.slices;
    s->shift = p->desc.kind == TPU_COLL_PPERMUTE ? p->desc.shift : 0;
    s->src = p->desc.kind == TPU_COLL_P2P ? p->desc.src : 0;
    s->dst = p->desc.kind == TPU_COLL_P2P ? p->desc.dst : 0;
    for (a = 0; a < 3; a++) {
        s->dims[a] = a < TPU_MAX_AXES ? p->topo.dims[a] : 1;
        s->wrap[a] = a < TPU_MAX_AXES ? p->topo.wrap[a] : 0;
        s->host_dims[a] = a < TPU_MAX_AXES ? p->link.host_dims[a] : 1;
    }
    s->ici_bw = p->link.ici_bw;
    s->ici_latency = p->link.ici_latency;
    s->dcn_bw = p->link.dcn_bw;
    s->dcn_latency = p->link.dcn_latency;
    s->link_hash = link_hash(&p->link);
    if (p->desc.groups != NULL || p->desc.pairs != NULL) {
        /* Groups or pairs: a hash of them, so chips in different sets mismatch. */
        const int32_t *v = p->desc.groups != NULL ? p->groups.chips : p->pairs;
        int64_t n = p->desc.groups != NULL ? (int64_t)p->groups.ngroups * p->groups.size
                                           : 2 * (int64_t)p->desc.npairs;

        s->set_hash = fnv(p->desc.groups != NULL ? 1 : 2, v, (size_t)n * sizeof(*v));
    }
    snprintf(s->algo, sizeof(s->algo), "%s", p->algo->name);
}

/*
 * The first field in which two signatures differ, written as "chunks (2 vs 4)";
 * returns 0 when they are the same call.
 */
static int sig_diff(const tpu_call_sig_t *a, const tpu_call_sig_t *b, char *buf, size_t len)
{
#define INT_FIELD(f, name)                                                               \
    if (a->f != b->f) {                                                                  \
        snprintf(buf, len, "%s (%lld vs %lld)", name, (long long)a->f, (long long)b->f); \
        return 1;                                                                        \
    }
#define DBL_FIELD(f, name)                                                         \
    if (a->f != b->f) {                                                            \
        snprintf(buf, len, "%s (%.6g vs %.6g)", name, (double)a->f, (double)b->f); \
        return 1;                                                                  \
    }
    int i;

    /* The causes first (shape, link constants), then what follows from them. */
    INT_FIELD(call, "call number")
    if (a->kind != b->kind) {
        snprintf(buf, len, "collective (%s vs %s)", tpu_coll_name((tpu_coll_kind_t)a->kind),
                 tpu_coll_name((tpu_coll_kind_t)b->kind));
        return 1;
    }
    INT_FIELD(axes, "axes mask")
    INT_FIELD(bytes, "bytes")
    if (a->dtype != b->dtype) {
        snprintf(buf, len, "dtype (%s vs %s)", tpu_dtype_name((tpu_dtype_t)a->dtype),
                 tpu_dtype_name((tpu_dtype_t)b->dtype));
        return 1;
    }
    if (a->op != b->op) {
        snprintf(buf, len, "reduction (%s vs %s)", tpu_redop_name((tpu_redop_t)a->op),
                 tpu_redop_name((tpu_redop_t)b->op));
        return 1;
    }
    INT_FIELD(shift, "ppermute shift")
    INT_FIELD(src, "p2p source")
    INT_FIELD(dst, "p2p destination")
    INT_FIELD(slices, "slices")
    for (i = 0; i < 3; i++) {
        if (a->dims[i] != b->dims[i]) {
            snprintf(buf, len, "topology (axis %d: %d vs %d chips)", i, a->dims[i], b->dims[i]);
            return 1;
        }
        if (a->wrap[i] != b->wrap[i]) {
            snprintf(buf, len, "wrap (axis %d: %s vs %s)", i, a->wrap[i] ? "wraps" : "open",
                     b->wrap[i] ? "wraps" : "open");
            return 1;
        }
        if (a->host_dims[i] != b->host_dims[i]) {
            snprintf(buf, len, "chips per host (axis %d: %d vs %d)", i, a->host_dims[i],
                     b->host_dims[i]);
            return 1;
        }
    }
    DBL_FIELD(ici_bw, "ici_bw in B/s")
    DBL_FIELD(ici_latency, "ici_latency in s")
    DBL_FIELD(dcn_bw, "dcn_bw in B/s")
    DBL_FIELD(dcn_latency, "dcn_latency in s")
    if (a->set_hash != b->set_hash) {
        snprintf(buf, len, "groups or pairs (hash %016llx vs %016llx)",
                 (unsigned long long)a->set_hash, (unsigned long long)b->set_hash);
        return 1;
    }
    if (a->link_hash != b->link_hash) {
        snprintf(buf, len, "link model constants (hash %016llx vs %016llx)",
                 (unsigned long long)a->link_hash, (unsigned long long)b->link_hash);
        return 1;
    }
    if (strncmp(a->algo, b->algo, sizeof(a->algo)) != 0) {
        snprintf(buf, len, "algorithm (%.*s vs %.*s)", (int)sizeof(a->algo), a->algo,
                 (int)sizeof(b->algo), b->algo);
        return 1;
    }
    INT_FIELD(chunks, "chunks")
#undef INT_FIELD
#undef DBL_FIELD
    return 0;
}

static tpu_region_t span_region(void *base, const tpu_span_t *sp, int64_t off, int scale)
{
    tpu_region_t r;
    int i;

    r.base = base;
    r.off = off * scale;
    r.len = sp->len * scale;
    for (i = 0; i < 3; i++) {
        r.stride[i] = sp->stride[i] * scale;
        r.count[i] = sp->count[i];
    }
    return r;
}

/* Add the contiguous 'src' into the strided region 'r' (same byte count). */
static void reduce_into(const tpu_coll_exec_t *ctx, const tpu_region_t *r, const unsigned char *src)
{
    int64_t b, nblocks = tpu_xport_region_blocks(r);
    int esz = tpu_dtype_size(ctx->work_dtype);

    for (b = 0; b < nblocks; b++, src += r->len) {
        tpu__reduce(ctx->work_dtype, ctx->plan->desc.op, tpu_xport_region_block(r, b), src,
                    (size_t)(r->len / esz));
    }
}

/*
 * Wide mode (a bf16 reduction on a host plan): the bf16 words of flow 'f' ('src')
 * into local chip 'li''s f32 accumulator, the first of them copied (direct: member
 * 0's) unless the accumulator starts from the chip's input; after the chip's last
 * reducing receive, the accumulator is rounded once into the output, so the
 * chip's sends of it (direct2) carry the rounded bf16 words.
 */
static void wide_reduce(tpu_coll_exec_t *ctx, int li, const tpu_flow_t *f, const unsigned char *src)
{
    float *acc = ctx->acc[li] + (f->span.dst_off - ctx->acc_off[li]) / 2;
    size_t n = (size_t)(f->span.len / 2);

    if (ctx->acc_seen[li] == 0 && !ctx->acc_from_input) {
        tpu_dtype_bf16_widen((const uint16_t *)src, acc, n);
    } else {
        tpu__reduce_bf16(ctx->plan->desc.op, acc, (const uint16_t *)src, n);
    }
    if (++ctx->acc_seen[li] == ctx->acc_nred[li]) {
        tpu_dtype_bf16_narrow(ctx->acc[li], (uint16_t *)(ctx->recv[li] + ctx->acc_off[li]),
                              (size_t)(ctx->acc_len[li] / 2));
    }
}

/* The state of one run. */
typedef struct engine {
    tpu_coll_exec_t *ctx;
    const tpu_coll_run_opts_t *opts;
    pending_t *recv; /* receives of the local chips, in flow order */
    int nrecv;
    pending_t *send; /* sends of the local chips, in flow order */
    int nsend;
    uint8_t *state; /* per flow: 1 arrived, 2 arrived and reduced (usable) */
    int rr;         /* next receive (index into recv) to reduce, in order */
    int send_first; /* every send before it is posted */
    int recv_left, send_left, send_unposted;
    int recv_open;          /* every receive before it has completed */
    int send_open;          /* every send before it has completed */
    tpu_xport_req_t **reqs; /* scratch for test_many */
    int *which;
    double deadline;
    int tag_base; /* this run's epoch, shifted into place */
} engine_t;

/* The id that names flow 'f' in its messages (its tag and header). */
static int64_t msg_id(const tpu_coll_exec_t *ctx, int64_t f)
{
    return ctx->msg_id != NULL ? ctx->msg_id[f] : f;
}

/* The tag of flow 'f' in this run: even, unique per pair of chips modulo 2^flow_bits. */
static int flow_tag(const engine_t *e, int64_t f)
{
    return e->tag_base | (int)((msg_id(e->ctx, f) & ((1 << e->ctx->flow_bits) - 1)) << 1);
}

/* Move 'open' past the requests of 'pend[open, n)' that are posted and complete. */
static void skip_done(const pending_t *pend, int *open_p, int n)
{
    while (*open_p < n && pend[*open_p].posted && pend[*open_p].req == NULL) {
        (*open_p)++;
    }
}

/*
 * Test every open receive and send in one call of the transport: one pass of
 * the MPI progress engine per pass of the engine, not one per request (testing
 * hundreds one by one would burn the CPU the other ranks of an oversubscribed
 * node need) nor one per kind (an MPI library that yields the CPU when a pass
 * finds nothing yields once per test, and on 16 ranks on 2 cores each yield
 * waits a turn of every other process).  Completed ones get req = NULL, also
 * when the transport reports an error; '*nrecv_p' and '*nsend_p' count them.
 */
static tpu_status_t test_open(engine_t *e, int *nrecv_p, int *nsend_p)
{
    int i, k = 0;
    tpu_status_t status;

    skip_done(e->recv, &e->recv_open, e->nrecv);
    skip_done(e->send, &e->send_open, e->nsend);
    for (i = e->recv_open; i < e->nrecv; i++) {
        if (e->recv[i].req != NULL) {
            e->reqs[k] = e->recv[i].req;
            e->which[k++] = i;
        }
    }
    for (i = e->send_open; i < e->nsend; i++) {
        if (e->send[i].req != NULL) {
            e->reqs[k] = e->send[i].req;
            e->which[k++] = e->nrecv + i;
        }
    }
    *nrecv_p = *nsend_p = 0;
    if (k == 0) {
        return TPU_OK;
    }
    status = e->ctx->x->ops->test_many(e->ctx->x, e->reqs, k);
    for (i = 0; i < k; i++) {
        if (e->reqs[i] == NULL) {
            if (e->which[i] < e->nrecv) {
                e->recv[e->which[i]].req = NULL;
                (*nrecv_p)++;
            } else {
                e->send[e->which[i] - e->nrecv].req = NULL;
                (*nsend_p)++;
            }
        }
    }
    return status;
}

static tpu_status_t fail_transport(engine_t *e, const char *what, tpu_status_t status,
                                   tpu_err_t *err)
{
    char me[64];

    chip_str(&e->ctx->plan->topo, e->ctx->x->local_chips[0], me, sizeof(me));
    return tpu_err_set(err, status, "%s: transport %s failed %s in %s: %s", me,
                       e->ctx->x->ops->name, what, e->ctx->plan->name, e->ctx->x->msg);
}

/* A message that does not belong to this chip's call: name both chips and the field. */
static tpu_status_t fail_header(engine_t *e, const pending_t *p, const tpu_flow_t *f,
                                tpu_err_t *err)
{
    const tpu_coll_exec_t *ctx = e->ctx;
    char a[64], b[64], sa[192], sb[192], diff[128];

    chip_str(&ctx->plan->topo, f->dst, a, sizeof(a));
    chip_str(&ctx->plan->topo, f->src, b, sizeof(b));
    sig_str(&ctx->sig, sa, sizeof(sa));
    sig_str(&p->hdr.sig, sb, sizeof(sb));
    if (!sig_diff(&ctx->sig, &p->hdr.sig, diff, sizeof(diff))) {
        snprintf(diff, sizeof(diff), "%s (flow %lld of %lld bytes vs flow %lld of %lld bytes)",
                 "the message", (long long)msg_id(ctx, p->flow),
                 (long long)(tpu__span_bytes(&f->span) * ctx->scale), (long long)p->hdr.flow,
                 (long long)p->hdr.bytes);
    }
    return tpu_err_set(err, TPU_ERR_MISMATCH,
                       "collective mismatch: %s is in %s, but %s sent a message of %s; they "
                       "differ in %s",
                       a, sa, b, sb, diff);
}

/* The 'ndone' receives test_open completed (from 'first' on): check their headers;
 * then reduce in order. */
static tpu_status_t poll_recvs(engine_t *e, int first, int ndone, int *progress_p, tpu_err_t *err)
{
    tpu_coll_exec_t *ctx = e->ctx;
    const tpu_sched_t *sc = &ctx->ps->s;
    int i;

    for (i = first; ndone > 0 && i < e->nrecv; i++) {
        pending_t *p = &e->recv[i];
        const tpu_flow_t *f = &sc->flows[p->flow];

        if (p->req != NULL || e->state[p->flow] != 0) {
            continue;
        }
        ndone--;
        e->recv_left--;
        *progress_p = 1;
        if (p->hdr.flow != msg_id(ctx, p->flow) ||
            p->hdr.bytes != tpu__span_bytes(&f->span) * ctx->scale ||
            sig_diff(&ctx->sig, &p->hdr.sig, NULL, 0)) {
            return fail_header(e, p, f, err);
        }
        e->state[p->flow] = f->reduce && ctx->x->moves_data ? 1 : 2;
    }
    while (e->rr < e->nrecv) {
        pending_t *p = &e->recv[e->rr];
        const tpu_flow_t *f = &sc->flows[p->flow];

        if (e->state[p->flow] == 0) {
            break;
        }
        if (e->state[p->flow] == 1 && ctx->wide) {
            wide_reduce(ctx, ctx->local_index[f->dst], f, p->scratch);
            e->state[p->flow] = 2;
        } else if (e->state[p->flow] == 1) {
            int li = ctx->local_index[f->dst];
            tpu_region_t r = span_region(ctx->recv[li], &f->span, f->span.dst_off, ctx->scale);

            reduce_into(ctx, &r, p->scratch);
            e->state[p->flow] = 2;
        }
        e->rr++;
    }
    return TPU_OK;
}

/* Post the sends whose data is there (their dependencies arrived and were added). */
static tpu_status_t post_sends(engine_t *e, int *progress_p, tpu_err_t *err)
{
    tpu_coll_exec_t *ctx = e->ctx;
    const tpu_sched_t *sc = &ctx->ps->s;
    tpu_xport_t *x = ctx->x;
    int i, wait_step = -1;

    for (i = e->send_first; i < e->nsend && e->send_unposted > 0; i++) {
        pending_t *p = &e->send[i];
        const tpu_flow_t *f = &sc->flows[p->flow];
        int32_t k, ok = 1;
        tpu_region_t r;
        tpu_status_t status;

        if (p->posted) {
            if (i == e->send_first) {
                e->send_first++;
            }
            continue;
        }
        if (wait_step >= 0 && f->step > wait_step) {
            break;
        }
        for (k = 0; k < f->ndeps && ok; k++) {
            ok = e->state[sc->deps[f->dep_first + k]] == 2;
        }
        if (!ok) {
            wait_step = f->step;
            continue;
        }
        p->hdr.sig = ctx->sig;
        p->hdr.flow = msg_id(ctx, p->flow);
        p->hdr.arrival = 0;
        p->hdr.bytes = tpu__span_bytes(&f->span) * ctx->scale;
        r = span_region(x->moves_data ? ctx->send[ctx->local_index[f->src]] : NULL, &f->span,
                        f->span.off, ctx->scale);
        status = x->ops->isend(x, f->src, f->dst, flow_tag(e, p->flow), &p->hdr, &r, &p->req);
        if (status != TPU_OK) {
            return fail_transport(e, "sending", status, err);
        }
        p->posted = 1;
        e->send_unposted--;
        *progress_p = 1;
        if (i == e->send_first) {
            e->send_first++;
        }
    }
    return TPU_OK;
}

static tpu_status_t watchdog(engine_t *e, tpu_err_t *err)
{
    const tpu_coll_plan_t *plan = e->ctx->plan;
    char me[64], who[512];
    int used = 0, i;

    chip_str(&plan->topo, e->ctx->x->local_chips[0], me, sizeof(me));
    who[0] = '\0';
    for (i = 0; i < e->nrecv && used < (int)sizeof(who) - 64; i++) {
        if (e->recv[i].req != NULL) {
            char c[64];
            int src = e->ctx->ps->s.flows[e->recv[i].flow].src;

            chip_str(&plan->topo, src, c, sizeof(c));
            if (strstr(who, c) == NULL) {
                used +=
                    snprintf(who + used, sizeof(who) - (size_t)used, "%s%s", used ? ", " : "", c);
            }
        }
    }
    return tpu_err_set(err, TPU_ERR_TIMEOUT, "watchdog: %s waited %.0f s in %s (call %llu) for %s",
                       me, e->opts->timeout_s, plan->name, (unsigned long long)e->opts->call,
                       used ? who : "its sends to complete");
}

/* The source chip of the oldest receive still open; -1 when only sends are. */
static int waited_chip(const engine_t *e)
{
    int i;

    for (i = e->recv_open; i < e->nrecv; i++) {
        if (e->recv[i].req != NULL) {
            return e->ctx->ps->s.flows[e->recv[i].flow].src;
        }
    }
    return -1;
}

static tpu_status_t run_engine(engine_t *e, tpu_err_t *err)
{
    int rounds = 0;

    while (e->recv_left > 0 || e->send_left > 0 || e->send_unposted > 0) {
        int progress, nrecv, nsend, first = e->recv_open;
        tpu_status_t status = test_open(e, &nrecv, &nsend);

        if (status != TPU_OK) {
            /* The transport's message names the request that failed. */
            return fail_transport(e, "testing its requests", status, err);
        }
        e->send_left -= nsend;
        progress = nsend > 0;
        status = poll_recvs(e, first, nrecv, &progress, err);
        if (status == TPU_OK) {
            status = post_sends(e, &progress, err);
        }
        if (status != TPU_OK) {
            return status;
        }
        if (progress) {
            rounds = 0;
            continue;
        }
        if (e->deadline > 0 && tpu__now_s() > e->deadline) {
            return watchdog(e, err);
        }
        if (e->opts->on_wait != NULL) {
            e->opts->on_wait(e->opts->on_wait_arg, waited_chip(e));
        }
        if (e->ctx->x->nlocal == e->ctx->x->nchips) {
            /* Every chip is here and none can move: nothing outside can change that. */
            return tpu_err_set(err, TPU_ERR_INTERNAL,
                               "the %s schedule stalled with every chip in this process (%d "
                               "receives and %d sends open)",
                               e->ctx->plan->name, e->recv_left, e->send_left);
        }
        e->ctx->x->ops->idle(e->ctx->x, rounds++);
    }
    return TPU_OK;
}

/* Convert 'n' elements between the user's dtype and the working dtype. */
static void widen(const tpu_coll_exec_t *ctx, void *dst, const void *src, size_t bytes)
{
    if (ctx->plan->data_scale == 2) {
        tpu_dtype_bf16_widen(src, dst, bytes / 2);
    } else {
        memcpy(dst, src, bytes);
    }
}

static void narrow(const tpu_coll_exec_t *ctx, void *dst, const void *src, size_t bytes)
{
    if (ctx->plan->data_scale == 2) {
        tpu_dtype_bf16_narrow(src, dst, bytes / 2);
    } else {
        memcpy(dst, src, bytes);
    }
}

/*
 * Set up the buffers the schedule works on.  The all-gather family works in its
 * working layout (schedule.h): the input is permuted into it here, and out of
 * it in finish().  The others read the input and write the output directly.
 */
static void prepare(tpu_coll_exec_t *ctx, void *const *in, void *const *out)
{
    const tpu_coll_plan_t *p = ctx->plan;
    const tpu_sched_t *sc = &ctx->ps->s;
    tpu_coll_kind_t kind = p->desc.kind;
    int64_t scale = p->data_scale, V = (int64_t)p->desc.bytes;
    int i, k;

    for (i = 0; i < ctx->x->nlocal; i++) {
        int chip = ctx->x->local_chips[i];
        int64_t me =
            kind == TPU_COLL_P2P || p->desc.pairs != NULL ? 0 : tpu__plan_member_index(p, chip);
        unsigned char *w = ctx->work[i];
        int64_t g;

        if (sc->nlayout == 0) {
            ctx->send[i] = ctx->send_from_recv ? out[i] : in[i];
            ctx->recv[i] = out[i];
            for (k = 0; k < sc->nlocal; k++) {
                const tpu_copy_t *c = &sc->local[k];

                memcpy((unsigned char *)out[i] + c->dst_off + me * sc->local_dst_shift,
                       (unsigned char *)in[i] + c->src_off + me * sc->local_src_shift,
                       (size_t)c->len);
            }
            if (ctx->wide) {
                ctx->acc_seen[i] = 0;
                if (ctx->acc_from_input && ctx->acc_nred[i] > 0) {
                    /* From the local copy just made: the chip's own block. */
                    tpu_dtype_bf16_widen(
                        (const uint16_t *)((unsigned char *)out[i] + ctx->acc_off[i]), ctx->acc[i],
                        (size_t)(ctx->acc_len[i] / 2));
                }
            }
            continue;
        }
        ctx->send[i] = ctx->recv[i] = w;
        for (k = 0; k < sc->nlayout; k++) {
            const tpu_layout_t *l = &sc->layout[k];

            if (kind == TPU_COLL_ALL_GATHER) {
                memcpy(w + tpu__layout_offset(l, me), (unsigned char *)in[i] + l->sub_off,
                       (size_t)l->sub_len);
                continue;
            }
            for (g = 0; g < p->group; g++) {
                int64_t uo = g * p->shard + l->sub_off, lo = tpu__layout_offset(l, g) * scale;
                int64_t n = uo >= V ? 0 : (uo + l->sub_len > V ? V - uo : l->sub_len);

                /* A psum's padding (past V) starts at zero. */
                widen(ctx, w + lo, (unsigned char *)in[i] + uo, (size_t)n);
                memset(w + lo + n * scale, 0, (size_t)((l->sub_len - n) * scale));
            }
        }
    }
}

static void finish(tpu_coll_exec_t *ctx, void *const *out)
{
    const tpu_coll_plan_t *p = ctx->plan;
    const tpu_sched_t *sc = &ctx->ps->s;
    int64_t scale = p->data_scale, V = (int64_t)p->desc.bytes;
    int i, k;

    for (i = 0; i < ctx->x->nlocal && sc->nlayout > 0; i++) {
        int64_t me = tpu__plan_member_index(p, ctx->x->local_chips[i]);
        unsigned char *w = ctx->work[i], *o = out[i];
        int64_t g;

        for (k = 0; k < sc->nlayout; k++) {
            const tpu_layout_t *l = &sc->layout[k];

            if (p->desc.kind == TPU_COLL_REDUCE_SCATTER) {
                narrow(ctx, o + l->sub_off, w + tpu__layout_offset(l, me) * scale,
                       (size_t)l->sub_len);
                continue;
            }
            for (g = 0; g < p->group; g++) {
                int64_t uo = g * p->shard + l->sub_off;
                int64_t n = uo >= V ? 0 : (uo + l->sub_len > V ? V - uo : l->sub_len);

                narrow(ctx, o + uo, w + tpu__layout_offset(l, g) * scale, (size_t)n);
            }
        }
    }
}

static tpu_status_t check_peers(tpu_coll_exec_t *ctx, const tpu_coll_run_opts_t *opts,
                                tpu_err_t *err)
{
    tpu_xport_t *x = ctx->x;
    tpu_xport_wait_t w = {opts->timeout_s, opts->on_wait, opts->on_wait_arg};
    tpu_call_sig_t *mine = NULL, *all = NULL;
    tpu_status_t status = TPU_OK;
    int i;

    mine = tpu__malloc((size_t)x->nlocal * sizeof(*mine));
    all = tpu__malloc((size_t)x->nchips * sizeof(*all));
    if (mine == NULL || all == NULL) {
        status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory checking peers");
        goto out;
    }
    for (i = 0; i < x->nlocal; i++) {
        mine[i] = ctx->sig;
    }
    status = x->ops->gather_sigs(x, mine, all, &w);
    if (status != TPU_OK) {
        status = tpu_err_set(err, status, "transport %s failed comparing calls: %s", x->ops->name,
                             x->msg);
        goto out;
    }
    for (i = 0; i < x->nchips; i++) {
        char diff[128];

        if (sig_diff(&all[0], &all[i], diff, sizeof(diff))) {
            char a[64], b[64], sa[192], sb[192];

            chip_str(&ctx->plan->topo, 0, a, sizeof(a));
            chip_str(&ctx->plan->topo, i, b, sizeof(b));
            sig_str(&all[0], sa, sizeof(sa));
            sig_str(&all[i], sb, sizeof(sb));
            status = tpu_err_set(err, TPU_ERR_MISMATCH,
                                 "collective mismatch: %s is in %s, but %s is in %s; they differ "
                                 "in %s",
                                 a, sa, b, sb, diff);
            goto out;
        }
    }
out:
    tpu__free(all);
    tpu__free(mine);
    return status;
}

/* Scratch bytes all reducing receives of the local chips need (each its own). */
static int64_t scratch_need(const tpu_plan_sched_t *ps, const uint8_t *is_local, int scale)
{
    int64_t sum = 0, i;

    for (i = 0; i < ps->s.nflows; i++) {
        const tpu_flow_t *f = &ps->s.flows[i];

        if (f->reduce && is_local[f->dst]) {
            sum += tpu__span_bytes(&f->span) * scale;
        }
    }
    return sum;
}

/*
 * The modeled times from the per-chip ends of the selector's walk (schedule.h):
 * the same maxima of the same arrivals as model_times()'s walk, in O(chips).
 */
static tpu_status_t ends_times(tpu_coll_exec_t *e, const tpu_plan_sched_t *ps)
{
    const tpu_coll_plan_t *plan = e->plan;
    const tpu_chip_ends_t *ce = ps->ends;
    int n = plan->topo.nchips, c, i;
    double end = 0, local = 0;

    for (c = 0; c < n; c++) {
        if (ce->end[c] > end) {
            end = ce->end[c];
        }
    }
    if (ps->orbit) {
        tpu_algo_args_t args;
        uint8_t *mark = tpu__calloc((size_t)n, 1);

        /* The chips whose stand-in is the stand-in of a local chip (model_times). */
        if (mark == NULL) {
            return TPU_ERR_NO_MEMORY;
        }
        memset(&args, 0, sizeof(args));
        args.topo = &plan->topo;
        args.period = ps->period;
        args.reflect = ps->reflect;
        for (i = 0; i < e->x->nlocal; i++) {
            mark[tpu__algo_canon(&args, e->x->local_chips[i])] = 1;
        }
        for (c = 0; c < n; c++) {
            if (mark[tpu__algo_canon(&args, c)] && ce->end[c] > local) {
                local = ce->end[c];
            }
        }
        tpu__free(mark);
    } else {
        for (i = 0; i < e->x->nlocal; i++) {
            if (ce->end[e->x->local_chips[i]] > local) {
                local = ce->end[e->x->local_chips[i]];
            }
        }
    }
    e->end_s = end + ce->chain + ce->launch;
    e->local_end_s = local + ce->chain + ce->launch;
    return TPU_OK;
}

/*
 * The modeled times, once: the plan's own schedule walked through the link model
 * (time.c), as tpu_coll_plan_model() does; the local end is the latest arrival at
 * or from a local chip.  In representative mode every chip ends with the pod.  In
 * orbit mode a chip ends with the chip of the domain that stands for it (the
 * symmetry maps its flows onto that chip's, times and all).  Line timing times
 * the chip's own flows (the data schedule) on the pod's loads.  Nothing here
 * grows beyond O(chips) tables and the local chips' flows, unless an observer
 * wants every flow of the pod.
 */
static tpu_status_t model_times(tpu_coll_exec_t *e, const tpu_coll_observer_t *obs)
{
    const tpu_coll_plan_t *plan = e->plan;
    const tpu_plan_sched_t *ps = &plan->model;
    const tpu_sched_t *sc;
    tpu_plan_sched_t full;
    tpu_timing_t t;
    tpu_err_t err = {0};
    uint8_t *mark = NULL;

    memset(&full, 0, sizeof(full));
    if (obs == NULL && ps->lines) {
        return tpu__lines_time_own(&plan->topo, &plan->link, ps, &e->ps->s, e->is_local,
                                   &e->local_end_s, &e->end_s, NULL);
    }
    if (obs == NULL && ps->ends != NULL && ps->ends->filled) {
        return ends_times(e, ps);
    }
    if (obs != NULL && (ps->orbit || ps->lines)) {
        /* The observer is told of every flow of the pod: walk every chip's schedule
         * (the same modeled time). */
        if (tpu__plan_build(plan, plan->algo, plan->args.chunks, -1, 0, &full, &err) != TPU_OK) {
            return TPU_ERR_NO_MEMORY;
        }
        ps = &full;
    }
    sc = &ps->s;
    if (ps->orbit) {
        tpu_algo_args_t args;
        int c, i;

        /* The chips whose stand-in is the stand-in of a local chip. */
        memset(&args, 0, sizeof(args));
        args.topo = &plan->topo;
        args.period = ps->period;
        args.reflect = ps->reflect;
        mark = tpu__calloc((size_t)plan->topo.nchips, 1);
        if (mark == NULL) {
            return TPU_ERR_NO_MEMORY;
        }
        for (i = 0; i < e->x->nlocal; i++) {
            mark[tpu__algo_canon(&args, e->x->local_chips[i])] = 2;
        }
        for (c = 0; c < plan->topo.nchips; c++) {
            mark[c] = mark[c] || mark[tpu__algo_canon(&args, c)] == 2;
        }
    }
    if (tpu__timing_init(&t, &plan->topo, &plan->link, ps) != TPU_OK) {
        tpu__free(mark);
        tpu__plan_sched_fini(&full);
        return TPU_ERR_NO_MEMORY;
    }
    if (tpu__timing_observe(&t, obs) != TPU_OK) {
        tpu__timing_fini(&t);
        tpu__free(mark);
        tpu__plan_sched_fini(&full);
        return TPU_ERR_NO_MEMORY;
    }
    if (tpu__timing_walk(&t, ps) != TPU_OK) {
        tpu__timing_fini(&t);
        tpu__plan_sched_fini(&full);
        return TPU_ERR_NO_MEMORY;
    }
    e->end_s = tpu__timing_local_end(&t, sc, NULL);
    e->local_end_s =
        ps->rep >= 0 ? e->end_s : tpu__timing_local_end(&t, sc, mark != NULL ? mark : e->is_local);
    tpu__timing_report(&t);
    tpu__timing_fini(&t);
    tpu__free(mark);
    tpu__plan_sched_fini(&full);
    return TPU_OK;
}

/* Tag bits: the flow index below, the run's epoch above, within the transport's tag_ub. */
static void tag_bits(tpu_coll_exec_t *e)
{
    int bits = 0;

    while (bits < 31 && ((int64_t)1 << (bits + 1)) - 1 <= (int64_t)e->x->tag_ub) {
        bits++;
    }
    /* bit 0: the transport's second message; then the flow; at least 4 bits of epoch. */
    e->flow_bits = bits - 1 - 8 >= 22 ? 22 : bits - 1 - 4;
    if (e->flow_bits < 1) {
        e->flow_bits = 1;
    }
    e->epochs = 1 << (bits - 1 - e->flow_bits > 0 ? bits - 1 - e->flow_bits : 0);
}

/* Empty 'ps' for a host plan and set 'f' up as its first flow: one span, no offsets. */
static void host_plan_start(tpu_plan_sched_t *ps, tpu_flow_t *f)
{
    tpu__plan_sched_fini(ps);
    tpu__sched_init(&ps->s);
    ps->rep = -1;
    memset(f, 0, sizeof(*f));
    f->span.count[0] = f->span.count[1] = f->span.count[2] = 1;
}

/* Sort and index a host plan of one stream in 'nsteps' steps, named 'algo'. */
static tpu_status_t host_plan_finish(tpu_plan_sched_t *ps, int nsteps, const char *algo,
                                     tpu_err_t *err)
{
    ps->s.nsteps = nsteps;
    ps->s.nstreams = 1;
    if (tpu__sched_sort(&ps->s) != TPU_OK || tpu__plan_sched_index(ps) != TPU_OK) {
        tpu__plan_sched_fini(ps);
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for the host plan");
    }
    snprintf(ps->s.algo, sizeof(ps->s.algo), "%s", algo);
    return TPU_OK;
}

/*
 * The host's one-round plan for a small psum: every chip sends its buffer to
 * every member of its group (itself included), and adds what it receives in
 * group order, starting from a copy of member 0's (bf16: widened into an f32
 * accumulator, rounded once at the end): one dependency round instead
 * of the ring's 2 * sum(n_i - 1), and every chip adds the same values in the same
 * order, so every chip ends with the same bits.  Used only to move the host's
 * bytes when they are few (DIRECT_MAX_BYTES per chip, DIRECT_MAX_TOTAL received);
 * the modeled time is still the plan's own schedule.  Returns TPU_ERR_UNSUPPORTED
 * when it does not apply (then the one-chunk schedule of the algorithm is used).
 */
#define DIRECT_MAX_BYTES 16384
#define DIRECT_MAX_TOTAL (256 * 1024)
#define DIRECT_MAX_FLOWS 100000

static tpu_status_t build_direct(const tpu_coll_plan_t *p, const uint8_t *local,
                                 tpu_plan_sched_t *ps, tpu_err_t *err)
{
    const tpu_topo_t *topo = &p->topo;
    int n = p->group, src, g, wide = p->data_scale == 2;
    tpu_flow_t f;

    if (p->desc.kind != TPU_COLL_PSUM || (p->desc.axes & TPU_AXIS_MASK_DCN) ||
        p->desc.bytes > DIRECT_MAX_BYTES || p->desc.bytes * (uint64_t)n > DIRECT_MAX_TOTAL ||
        (double)topo->nchips * n > DIRECT_MAX_FLOWS) {
        return TPU_ERR_UNSUPPORTED;
    }
    /* Receives are added in flow order, which is source-chip order: that must be
     * group order. */
    for (src = 0; src < topo->nchips; src++) {
        for (g = 1; g < n; g++) {
            if (tpu__plan_member(p, src, g) <= tpu__plan_member(p, src, g - 1)) {
                return TPU_ERR_UNSUPPORTED;
            }
        }
    }
    host_plan_start(ps, &f);
    f.span.len = (int64_t)p->desc.bytes;
    for (src = 0; src < topo->nchips; src++) {
        int me = tpu__plan_member_index(p, src);

        for (g = 0; g < n; g++) {
            f.src = src;
            f.dst = tpu__plan_member(p, src, g);
            f.reduce = wide || me != 0;
            if (local != NULL && !local[f.src] && !local[f.dst]) {
                continue; /* a rank's own part: the flows of its chips */
            }
            if (tpu__sched_add(&ps->s, &f) < 0) {
                tpu__plan_sched_fini(ps);
                return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for the host plan");
            }
        }
    }
    return host_plan_finish(ps, 1, "direct", err);
}

/*
 * The host's two-round plan for a larger psum: block j (the plan's shard) of
 * every chip goes to member j of its group, which adds the others' into its own
 * copy (in flow order: the same order every run); then member j sends its
 * reduced block to every other member.  Two dependency rounds, 2 (n - 1) messages
 * and 2 (n - 1) / n * V bytes per chip, as a ring moves but without its
 * 2 * sum(n_i - 1) rounds.  Each block is reduced in one place and copied from
 * there, so every chip ends with the same bits (bf16: the owner accumulates its
 * block in f32 and rounds it once before sending it on).  The chip works in its output
 * buffer (the input copied there first), so its sends read the output.
 */
static tpu_status_t build_direct2(const tpu_coll_plan_t *p, const uint8_t *local,
                                  tpu_plan_sched_t *ps, tpu_err_t *err)
{
    const tpu_topo_t *topo = &p->topo;
    int n = p->group, d, g, k;
    int64_t V = (int64_t)p->desc.bytes, shard = p->shard;
    int32_t *deps = NULL;
    tpu_flow_t f;

    if (p->desc.kind != TPU_COLL_PSUM || (p->desc.axes & TPU_AXIS_MASK_DCN) ||
        (double)topo->nchips * n * 2 > DIRECT_MAX_FLOWS) {
        return TPU_ERR_UNSUPPORTED;
    }
    deps = tpu__malloc((size_t)n * sizeof(*deps));
    if (deps == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for the host plan");
    }
    host_plan_start(ps, &f);
    /* Round 1: the blocks to their owners, added there. */
    f.step = 0;
    f.reduce = 1;
    for (d = 0; d < topo->nchips; d++) {
        int me = tpu__plan_member_index(p, d);
        int64_t off = me * shard, len = off >= V ? 0 : (off + shard > V ? V - off : shard);

        for (g = 0; g < n && len > 0; g++) {
            int src = tpu__plan_member(p, d, g);

            if (src == d || (local != NULL && !local[src] && !local[d])) {
                continue;
            }
            f.src = src;
            f.dst = d;
            f.span.off = f.span.dst_off = off;
            f.span.len = len;
            if (tpu__sched_add(&ps->s, &f) < 0) {
                goto nomem;
            }
        }
    }
    /* Round 2: every owner's block to the others, once all of it has arrived. */
    f.step = 1;
    f.reduce = 0;
    for (d = 0; d < topo->nchips; d++) {
        int me = tpu__plan_member_index(p, d);
        int64_t off = me * shard, len = off >= V ? 0 : (off + shard > V ? V - off : shard);

        for (g = 0, k = 0; g < (int)ps->s.nflows && len > 0; g++) {
            if (ps->s.flows[g].step == 0 && ps->s.flows[g].dst == d) {
                deps[k++] = g;
            }
        }
        for (g = 0; g < n && len > 0; g++) {
            int dst = tpu__plan_member(p, d, g);
            int64_t i;

            if (dst == d || (local != NULL && !local[d] && !local[dst])) {
                continue;
            }
            f.src = d;
            f.dst = dst;
            f.span.off = f.span.dst_off = off;
            f.span.len = len;
            i = tpu__sched_add(&ps->s, &f);
            if (i < 0 || tpu__sched_add_deps(&ps->s, i, deps, k) != TPU_OK) {
                goto nomem;
            }
        }
    }
    tpu__free(deps);
    ps->s.local[0].src_off = ps->s.local[0].dst_off = 0;
    ps->s.local[0].len = V;
    ps->s.nlocal = 1;
    return host_plan_finish(ps, 2, "direct2", err);
nomem:
    tpu__free(deps);
    tpu__plan_sched_fini(ps);
    return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for the host plan");
}

/*
 * The host's plan for a reduce-scatter: block j of every chip goes to member j
 * of its group, which adds the others' into a copy of its own block, in flow
 * order (group order): round 1 of the two-round psum (build_direct2).  One
 * dependency round, n - 1 messages and (n - 1) / n * V bytes per chip, where the
 * ring takes n - 1 rounds; each block is reduced in one place, in the same order
 * every run (bf16: accumulated in f32 from the owner's block, rounded once),
 * the order the shared-memory reduce-scatter (shm_reduce_scatter.c) follows.
 * The chip's sends read its input; its output starts as a copy of its block.
 * Not with line timing (the data schedule times the chip's own flows there).
 */
static tpu_status_t build_rs(const tpu_coll_plan_t *p, const uint8_t *local, tpu_plan_sched_t *ps,
                             tpu_err_t *err)
{
    const tpu_topo_t *topo = &p->topo;
    int n = p->group, d, g;
    int64_t shard = p->shard;
    tpu_flow_t f;

    if (p->desc.kind != TPU_COLL_REDUCE_SCATTER || (p->desc.axes & TPU_AXIS_MASK_DCN) ||
        p->model.lines || shard == 0 || (double)topo->nchips * n > DIRECT_MAX_FLOWS) {
        return TPU_ERR_UNSUPPORTED;
    }
    host_plan_start(ps, &f);
    f.reduce = 1;
    f.span.len = shard;
    for (d = 0; d < topo->nchips; d++) {
        int me = tpu__plan_member_index(p, d);

        for (g = 0; g < n; g++) {
            int src = tpu__plan_member(p, d, g);

            if (src == d || (local != NULL && !local[src] && !local[d])) {
                continue;
            }
            f.src = src;
            f.dst = d;
            f.span.off = me * shard;
            f.span.dst_off = 0;
            if (tpu__sched_add(&ps->s, &f) < 0) {
                tpu__plan_sched_fini(ps);
                return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for the host plan");
            }
        }
    }
    ps->s.local[0].src_off = ps->s.local[0].dst_off = 0;
    ps->s.local[0].len = shard;
    ps->s.nlocal = 1;
    ps->s.local_src_shift = shard;
    ps->s.local_dst_shift = 0;
    return host_plan_finish(ps, 1, "direct_rs", err);
}

/*
 * The message ids of a rank's own part (ctx->msg_id): flow f's number among the
 * flows between its two chips, in schedule order.  The sender counts the flows
 * it sends to the receiver, the receiver those it receives from the sender: both
 * have all of them, in the same order (a part keeps the full schedule's order).
 */
static tpu_status_t msg_ids(tpu_coll_exec_t *e)
{
    const tpu_sched_t *sc = &e->ps->s;
    int n = e->x->nchips;
    int32_t *count = tpu__calloc((size_t)e->x->nlocal * n * 2, sizeof(int32_t));
    int64_t f;

    e->msg_id = tpu__malloc((size_t)(sc->nflows ? sc->nflows : 1) * sizeof(int32_t));
    if (count == NULL || e->msg_id == NULL) {
        tpu__free(count);
        return TPU_ERR_NO_MEMORY;
    }
    for (f = 0; f < sc->nflows; f++) {
        const tpu_flow_t *fl = &sc->flows[f];
        int ls = e->local_index[fl->src], ld = e->local_index[fl->dst];

        e->msg_id[f] = ls >= 0   ? count[((int64_t)ls * n + fl->dst) * 2]++
                       : ld >= 0 ? count[((int64_t)ld * n + fl->src) * 2 + 1]++
                                 : -1;
    }
    tpu__free(count);
    return TPU_OK;
}

/*
 * Wide mode's accumulators: per local chip, the range its reducing receives
 * cover (every one of them covers the same range on a host plan: the whole
 * buffer in direct, the chip's own block in direct2) and how many there are.
 */
static tpu_status_t wide_init(tpu_coll_exec_t *e)
{
    const tpu_sched_t *sc = &e->ps->s;
    int n = e->x->nlocal, i;
    int64_t f;

    e->wide = 1;
    e->acc_from_input = sc->nlocal > 0;
    e->acc = tpu__calloc((size_t)n, sizeof(*e->acc));
    e->acc_off = tpu__calloc((size_t)n, sizeof(*e->acc_off));
    e->acc_len = tpu__calloc((size_t)n, sizeof(*e->acc_len));
    e->acc_nred = tpu__calloc((size_t)n, sizeof(*e->acc_nred));
    e->acc_seen = tpu__calloc((size_t)n, sizeof(*e->acc_seen));
    if (e->acc == NULL || e->acc_off == NULL || e->acc_len == NULL || e->acc_nred == NULL ||
        e->acc_seen == NULL) {
        return TPU_ERR_NO_MEMORY;
    }
    for (f = 0; f < sc->nflows; f++) {
        const tpu_flow_t *fl = &sc->flows[f];
        int li = e->local_index[fl->dst];

        if (li < 0 || !fl->reduce) {
            continue;
        }
        if (e->acc_nred[li]++ == 0) {
            e->acc_off[li] = fl->span.dst_off;
            e->acc_len[li] = fl->span.len;
        } else if (fl->span.dst_off != e->acc_off[li] || fl->span.len != e->acc_len[li]) {
            return TPU_ERR_INTERNAL; /* not a host plan's flows */
        }
    }
    for (i = 0; i < n; i++) {
        if (e->acc_nred[i] > 0) {
            e->acc[i] = tpu__malloc((size_t)e->acc_len[i] * 2);
            if (e->acc[i] == NULL) {
                return TPU_ERR_NO_MEMORY;
            }
        }
    }
    return TPU_OK;
}

void tpu__exec_times(const tpu_coll_exec_t *e, double *end_s_p, double *local_end_s_p)
{
    *end_s_p = e->end_s;
    *local_end_s_p = e->local_end_s;
}

void tpu_coll_exec_destroy(tpu_coll_exec_t *exec)
{
    int i;

    if (exec == NULL) {
        return;
    }
    for (i = 0; i < exec->nwork; i++) {
        tpu__free(exec->work[i]);
        if (exec->acc != NULL) {
            tpu__free(exec->acc[i]);
        }
    }
    tpu__free(exec->work);
    tpu__free(exec->acc);
    tpu__free(exec->acc_off);
    tpu__free(exec->acc_len);
    tpu__free(exec->acc_nred);
    tpu__free(exec->acc_seen);
    tpu__free(exec->scratch);
    tpu__free(exec->recv);
    tpu__free(exec->send);
    tpu__free(exec->is_local);
    tpu__free(exec->local_index);
    tpu__free(exec->msg_id);
    tpu__shm_destroy(exec->shm);
    tpu__plan_sched_fini(&exec->data);
    tpu__free(exec);
}

tpu_status_t tpu_coll_exec_create(const tpu_coll_plan_t *plan, tpu_xport_t *x,
                                  tpu_coll_exec_t **exec_p, tpu_err_t *err)
{
    tpu_coll_exec_t *e;
    const uint8_t *local;
    tpu_status_t status;
    int i, host_plan = 0;

    if (x->nchips != plan->topo.nchips) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "the transport hosts a pod of %d chips, the plan is for %d", x->nchips,
                           plan->topo.nchips);
    }
    e = tpu__calloc(1, sizeof(*e));
    if (e == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory running %s", plan->name);
    }
    e->plan = plan;
    e->x = x;
    e->work_dtype = plan->data_scale == 2 ? TPU_DTYPE_F32 : plan->desc.dtype;
    e->scale = plan->data_scale;
    sig_init(plan, &e->sig);
    tag_bits(e);
    e->local_index = tpu__malloc((size_t)x->nchips * sizeof(int));
    e->is_local = tpu__calloc((size_t)x->nchips, 1);
    e->send = tpu__calloc((size_t)x->nlocal, sizeof(void *));
    e->recv = tpu__calloc((size_t)x->nlocal, sizeof(void *));
    e->work = tpu__calloc((size_t)x->nlocal, sizeof(void *));
    if (e->local_index == NULL || e->is_local == NULL || e->send == NULL || e->recv == NULL ||
        e->work == NULL) {
        status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory running %s", plan->name);
        goto fail;
    }
    e->nwork = x->nlocal;
    for (i = 0; i < x->nchips; i++) {
        e->local_index[i] = -1;
    }
    for (i = 0; i < x->nlocal; i++) {
        e->local_index[x->local_chips[i]] = i;
        e->is_local[x->local_chips[i]] = 1;
    }
    /* The host's bytes move through the one-chunk schedule; the model's may be one
     * chip's, a domain's, line tables, or pipelined.  With chips elsewhere (one per
     * MPI rank) only the flows of the local chips are built: a rank's own part. */
    local = x->nlocal < x->nchips ? e->is_local : NULL;
    e->ps = &plan->model;
    if (x->moves_data &&
        ((status = build_direct(plan, local, &e->data, err)) != TPU_ERR_UNSUPPORTED ||
         (status = build_direct2(plan, local, &e->data, err)) != TPU_ERR_UNSUPPORTED ||
         (status = build_rs(plan, local, &e->data, err)) != TPU_ERR_UNSUPPORTED)) {
        if (status != TPU_OK) {
            goto fail;
        }
        e->ps = &e->data;
        host_plan = 1;
        e->send_from_recv = e->data.s.nlocal > 0 && plan->desc.kind == TPU_COLL_PSUM;
        if (plan->data_scale == 2) {
            /* bf16 words on the wire, f32 accumulators here. */
            e->scale = 1;
            status = wide_init(e);
            if (status != TPU_OK) {
                status =
                    tpu_err_set(err, status, "cannot set up the accumulators of %s", plan->name);
                goto fail;
            }
        }
    } else if (plan->model.rep >= 0 || plan->model.orbit || plan->model.lines ||
               (plan->algo->pipelined && plan->args.chunks > 1) || local != NULL) {
        status = tpu__plan_build_local(plan, plan->algo, 1, -1, 0, local, &e->data, err);
        if (status != TPU_OK) {
            goto fail;
        }
        e->ps = &e->data;
    }
    /* Shared memory where the whole group is on the node: the all-gathers, and
     * the reductions that run a host plan (the additions in its order). */
    if (local != NULL && x->moves_data && (plan->desc.kind == TPU_COLL_ALL_GATHER || host_plan) &&
        ((status = tpu__shm_create(plan, x, strcmp(e->data.s.algo, "direct") == 0, &e->shm)) !=
             TPU_OK &&
         status != TPU_ERR_UNSUPPORTED)) {
        status = tpu_err_set(err, status, "out of memory for the shared-memory %s",
                             tpu_coll_name(plan->desc.kind));
        goto fail;
    }
    if (local != NULL && msg_ids(e) != TPU_OK) {
        status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory running %s", plan->name);
        goto fail;
    }
    if (model_times(e, NULL) != TPU_OK) {
        status =
            tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for the timing of %s", plan->name);
        goto fail;
    }
    if (x->moves_data) {
        size_t work = (size_t)plan->work_bytes * (size_t)plan->data_scale;
        int64_t need = scratch_need(e->ps, e->is_local, e->scale);

        for (i = 0; i < x->nlocal && e->ps->s.nlayout > 0; i++) {
            e->work[i] = tpu__malloc(work);
            if (e->work[i] == NULL) {
                status = tpu_err_set(err, TPU_ERR_NO_MEMORY,
                                     "out of memory for the working buffers of %s", plan->name);
                goto fail;
            }
        }
        if (need > 0) {
            e->scratch = tpu__malloc((size_t)need);
            if (e->scratch == NULL) {
                status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for receive scratch");
                goto fail;
            }
        }
    }
    *exec_p = e;
    return TPU_OK;
fail:
    tpu_coll_exec_destroy(e);
    return status;
}

/* Cancel what is still live, so that nothing of this run is left for the next. */
static void cancel_all(engine_t *e)
{
    tpu_xport_t *x = e->ctx->x;
    int i;

    for (i = 0; i < e->nrecv + e->nsend; i++) {
        pending_t *p = i < e->nrecv ? &e->recv[i] : &e->send[i - e->nrecv];

        if (p->req != NULL) {
            x->ops->cancel(x, p->req);
            p->req = NULL;
        }
    }
}

tpu_status_t tpu_coll_exec_run(tpu_coll_exec_t *exec, const tpu_coll_run_opts_t *opts,
                               void *const *in, void *const *out, double *modeled_us_p,
                               tpu_err_t *err)
{
    const tpu_coll_plan_t *plan = exec->plan;
    const tpu_sched_t *sc = &exec->ps->s;
    tpu_coll_run_opts_t defaults = {0, 0, 1, 0, NULL, NULL, NULL};
    tpu_coll_exec_t *ctx = exec;
    tpu_xport_t *x = exec->x;
    pending_t *pend = NULL;
    unsigned char *scratch = exec->scratch;
    engine_t e;
    int64_t f, sused = 0;
    uint64_t epoch = x->runs++;
    tpu_status_t status;

    if (opts == NULL) {
        defaults.call = epoch;
        opts = &defaults;
    }
    /* The caller's call number orders the tags: a chip that skipped a failed call
     * still never meets its leftovers. */
    epoch = opts->call;
    ctx->sig.call = opts->call;
    memset(&e, 0, sizeof(e));
    if (opts->observer != NULL) {
        /* The observer sees the same walk that gave the modeled time, every flow and
         * link load; the times it computes are those of exec create. */
        status = model_times(ctx, opts->observer);
        if (status != TPU_OK) {
            return tpu_err_set(err, status, "out of memory for the timing of %s", plan->name);
        }
    }
    if (opts->check_peers) {
        status = check_peers(ctx, opts, err);
        if (status != TPU_OK) {
            return status;
        }
    }
    ctx->last_shm = ctx->shm != NULL && tpu__shm_usable(ctx->shm, opts->call);
    if (ctx->last_shm) {
        status = tpu__shm_run(ctx->shm, &ctx->sig, opts, in[0], out[0], err);
        if (status == TPU_OK) {
            *modeled_us_p = (opts->local_time ? ctx->local_end_s : ctx->end_s) * 1e6;
        }
        return status;
    }
    if (x->moves_data) {
        prepare(ctx, in, out);
    }
    e.ctx = ctx;
    e.opts = opts;
    e.deadline = opts->timeout_s > 0 ? tpu__now_s() + opts->timeout_s : 0;
    e.tag_base = (int)(epoch % (uint64_t)ctx->epochs) << (ctx->flow_bits + 1);
    for (f = 0; f < sc->nflows; f++) {
        e.nrecv += ctx->is_local[sc->flows[f].dst];
        e.nsend += ctx->is_local[sc->flows[f].src];
    }
    pend = tpu__calloc((size_t)(e.nrecv + e.nsend + 1), sizeof(*pend));
    e.state = tpu__calloc((size_t)sc->nflows + 1, 1);
    e.reqs = tpu__malloc((size_t)(e.nrecv + e.nsend + 1) * sizeof(*e.reqs));
    e.which = tpu__malloc((size_t)(e.nrecv + e.nsend + 1) * sizeof(*e.which));
    if (pend == NULL || e.state == NULL || e.reqs == NULL || e.which == NULL) {
        status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for pending requests");
        goto out;
    }
    e.recv = pend;
    e.send = pend + e.nrecv;
    e.nrecv = e.nsend = 0;
    for (f = 0; f < sc->nflows; f++) {
        if (ctx->is_local[sc->flows[f].src]) {
            e.send[e.nsend++].flow = f;
        }
    }
    e.send_left = e.send_unposted = e.nsend;
    /* Every receive at once, each into its own place. */
    status = TPU_OK;
    for (f = 0; f < sc->nflows && status == TPU_OK; f++) {
        const tpu_flow_t *fl = &sc->flows[f];
        pending_t *p;
        tpu_region_t r;

        if (!ctx->is_local[fl->dst]) {
            continue;
        }
        p = &e.recv[e.nrecv];
        p->flow = f;
        if (x->moves_data && fl->reduce) {
            tpu_span_t flat = fl->span;

            flat.len = tpu__span_bytes(&fl->span);
            flat.count[0] = flat.count[1] = flat.count[2] = 1;
            p->scratch = scratch + sused;
            r = span_region(p->scratch, &flat, 0, ctx->scale);
            sused += flat.len * ctx->scale;
        } else {
            r = span_region(x->moves_data ? ctx->recv[ctx->local_index[fl->dst]] : NULL, &fl->span,
                            fl->span.dst_off, ctx->scale);
        }
        status = x->ops->irecv(x, fl->dst, fl->src, flow_tag(&e, f), &p->hdr, &r, &p->req);
        if (status != TPU_OK) {
            fail_transport(&e, "receiving", status, err);
            break;
        }
        p->posted = 1;
        e.nrecv++;
    }
    e.recv_left = e.nrecv;
    if (status == TPU_OK) {
        status = run_engine(&e, err);
    }
    if (status != TPU_OK) {
        cancel_all(&e);
        goto out;
    }
    if (x->moves_data) {
        finish(ctx, out);
    }
    *modeled_us_p = (opts->local_time ? ctx->local_end_s : ctx->end_s) * 1e6;
out:
    tpu__free(e.which);
    tpu__free(e.reqs);
    tpu__free(e.state);
    tpu__free(pend);
    return status;
}

void tpu__exec_chip_str(const tpu_topo_t *topo, int chip, char *buf, size_t len)
{
    chip_str(topo, chip, buf, len);
}

void tpu__exec_sig_str(const tpu_call_sig_t *s, char *buf, size_t len)
{
    sig_str(s, buf, len);
}

const char *tpu_coll_exec_host_path(const tpu_coll_exec_t *exec)
{
    return exec->last_shm ? "shm" : "messages";
}

int tpu__exec_sig_diff(const tpu_call_sig_t *a, const tpu_call_sig_t *b, char *buf, size_t len)
{
    return sig_diff(a, b, buf, len);
}
