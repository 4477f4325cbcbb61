/*
 * The call signature of a run (tpu_call_sig_t: the request, the algorithm and
 * pipeline depth, the shape, wrap, slices and every link constant) and its
 * diagnostics: the signature of a plan, the first field in which two differ, and
 * both written out with the chips that hold them.  Every message of a run carries
 * its sender's signature (exec_engine.c); the shared-memory collectives (shm.c)
 * publish it in their control blocks; both name a mismatch with these.
 */
#include "exec_sig.h"

#include "tpu/dtype.h"

#include <stdio.h>
#include <string.h>

/* "chip 5 (1,1)" or "chip 17 (slice 1, 0,1)". */
void tpu__exec_chip_str(const tpu_topo_t *topo, int chip, char *buf, size_t len)
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

void tpu__exec_sig_str(const tpu_call_sig_t *s, char *buf, size_t len)
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
void tpu__exec_sig_init(const tpu_coll_plan_t *p, tpu_call_sig_t *s)
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
int tpu__exec_sig_diff(const tpu_call_sig_t *a, const tpu_call_sig_t *b, char *buf, size_t len)
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
