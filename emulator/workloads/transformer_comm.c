/*
 * The transformer's collectives over the mesh axes dcn, data, fsdp, sequence
 * and tensor (see transformer_comm.h): the mesh, each chip's shard view, the
 * hooks as the SPMD runtime's collectives, their log, and the lock step of the
 * local chips.
 *
 * Design.  A collective of the runtime takes every local chip's buffer in one
 * call (in[i], out[i]), as the MLP's step does (mlp_step.c runs each phase
 * over all local chips, then calls the collective).  The transformer's passes
 * (transformer_fwd.c, transformer_bwd.c) are written for one chip and call a
 * hook in the middle of a layer; cutting them into phases would mean
 * rewriting them as resumable state machines.  So the local chips run their
 * unchanged passes in lock step instead, one thread each (as
 * tests/unit/workloads/test_transformer_shard.c and the RDMA runs do): each
 * hook prepares the chip's buffers, and the last local chip to arrive makes
 * the one collective call for all of them while the others wait; then each
 * chip takes its result.  Under MPI there is one local chip and no wait.
 * Only one thread is ever inside the runtime, which is not thread-safe.
 *
 * The batch is split over dcn x data x fsdp (dcn slowest: a chip's sequences
 * are rows ((dcn index * data + data index) * fsdp + fsdp index) * batch of
 * the global batch); dcn is an outer data axis whose groups cross the slices
 * (the mesh gives it exactly the slices, tpu/mesh.h).  The hooks
 * (tpu_xfmr_hook_t), their collective and mesh axes:
 *   embed, attn_out, mlp_out, d_final, d_mlp_in, d_attn_in, vocab_sum
 *                             psum over tensor (in place)
 *   vocab_max                 pmax over tensor
 *   kv                        all-gather over sequence: the chip's positions of
 *                             [batch, heads, S, Dh] packed to [batch, heads, Sl, Dh],
 *                             gathered (member k holds positions [k Sl, (k+1) Sl)),
 *                             unpacked into every position
 *   d_kv                      reduce-scatter over sequence: [batch, heads, S, Dh]
 *                             packed by position block, reduced, the chip's block
 *                             unpacked (other positions zeroed)
 *   loss                      psum over dcn, data, fsdp and sequence
 *   gather                    all-gather over fsdp of the block's rows (member k
 *                             owns part k, contiguous: gathered in place)
 *   grad                      without fsdp: psum over dcn, data and sequence
 *                             (pos, split over sequence, over dcn and data); with
 *                             fsdp: a reduce-scatter over fsdp of the block (the
 *                             chip keeps the sum of its part), then a psum of that
 *                             part over dcn, data and sequence (pos: dcn, data).
 *                             Two calls rather than one reduce-scatter over the
 *                             combined group: the replicas over data hold the same
 *                             part, so the part is scattered over fsdp only, and
 *                             the psum moves 1/fsdp of the block's bytes.
 * An axis of size 1 drops out of a collective; a collective left with none
 * is no call (the buffer is already complete) and is not logged.
 *
 * Not yet: model-only runs without data.
 */
#include "transformer_comm.h"

#include "alloc.h"
#include "transformer_layout.h"

#include <stdio.h>
#include <string.h>

/* ---- the mesh ---- */

/* Part k of n in 'parts': [k n / parts, (k + 1) n / parts). */
static tpu_xfmr_range_t part(int64_t n, int parts, int k)
{
    tpu_xfmr_range_t r = {k * n / parts, (k + 1) * n / parts};

    return r;
}

static tpu_status_t hook_fn(void *arg, tpu_xfmr_hook_t hook, int index, float *buf, int64_t count,
                            tpu_err_t *err);

/* Local chip i: its chip id, coordinates and shard view. */
static void chip_setup(xfmr_comm_t *c, int i)
{
    xfmr_comm_chip_t *me = &c->chips[i];
    tpu_xfmr_config_t *cfg = &me->cfg;
    int a;

    me->c = c;
    me->local = i;
    me->chip = tpu_spmd_local_chip(c->spmd, i);
    for (a = 0; a < XFMR_NAXES; a++) {
        me->coord[a] = c->axis[a] < 0 ? 0 : tpu_mesh_axis_index(c->mesh, me->chip, c->axis[a]);
    }
    *cfg = c->model;
    cfg->batch = c->model.batch /
                 (c->size[XFMR_AXIS_DCN] * c->size[XFMR_AXIS_DATA] * c->size[XFMR_AXIS_FSDP]);
    cfg->batch_global = c->model.batch;
    cfg->heads_range = part(cfg->heads, c->size[XFMR_AXIS_TENSOR], me->coord[XFMR_AXIS_TENSOR]);
    cfg->ff_range = part(cfg->d_ff, c->size[XFMR_AXIS_TENSOR], me->coord[XFMR_AXIS_TENSOR]);
    cfg->vocab_range = part(cfg->vocab, c->size[XFMR_AXIS_TENSOR], me->coord[XFMR_AXIS_TENSOR]);
    cfg->seq_range = part(cfg->seq, c->size[XFMR_AXIS_SEQUENCE], me->coord[XFMR_AXIS_SEQUENCE]);
    cfg->fsdp_parts = c->size[XFMR_AXIS_FSDP];
    cfg->fsdp_index = me->coord[XFMR_AXIS_FSDP];
    cfg->hook = hook_fn;
    cfg->hook_arg = me;
}

tpu_status_t tpu__xfmr_comm_init(xfmr_comm_t *c, const tpu_topo_t *topo,
                                 const tpu_link_model_t *link, const tpu_chip_spec_t *chip,
                                 tpu_xport_t *x, const char *mesh_spec,
                                 const tpu_xfmr_config_t *model, const tpu_spmd_opts_t *opts,
                                 tpu_err_t *err)
{
    tpu_spmd_opts_t o;
    tpu_status_t status;
    int a, i;

    memset(c, 0, sizeof(*c));
    c->model = *model;
    c->model.heads_range = c->model.ff_range = (tpu_xfmr_range_t){0, 0};
    c->model.vocab_range = c->model.seq_range = (tpu_xfmr_range_t){0, 0};
    c->model.hook = NULL;
    c->model.hook_arg = NULL;
    c->model.fsdp_parts = 1;
    c->model.fsdp_index = 0;
    c->model.batch_global = 0;
    status = tpu__xfmr_layout_read(mesh_spec, &c->model, c->size, c->axis, c->name, err);
    if (status != TPU_OK) {
        return status;
    }
    if (x == NULL) {
        return tpu_err_set(err, TPU_ERR_UNSUPPORTED,
                           "transformer: a run needs a transport that moves data (loopback, mpi)");
    }
    status = tpu_mesh_create(topo, mesh_spec, NULL, 0, &c->mesh, err);
    if (status != TPU_OK) {
        return status;
    }
    if (opts != NULL) {
        o = *opts;
    } else {
        tpu_spmd_opts_init(&o);
    }
    o.check_peers = 0; /* every chip runs the same step: no need to compare calls */
    status = tpu_spmd_create(topo, link, chip, c->mesh, x, &o, &c->spmd, err);
    if (status != TPU_OK) {
        goto fail;
    }
    if (!tpu_spmd_moves_data(c->spmd)) {
        status = tpu_err_set(err, TPU_ERR_UNSUPPORTED,
                             "transformer: a run needs a transport that moves data (loopback, "
                             "mpi), not a model-only one");
        goto fail;
    }
    for (a = 0; a < XFMR_NAXES; a++) {
        tpu_groups_t g;

        if (c->axis[a] < 0) {
            snprintf(c->layout[a], sizeof(c->layout[a]), "-");
            snprintf(c->groups[a], sizeof(c->groups[a]), "-");
            continue;
        }
        tpu_mesh_axis_layout(c->mesh, c->axis[a], c->layout[a], sizeof(c->layout[a]));
        memset(&g, 0, sizeof(g));
        status = tpu_mesh_groups(c->mesh, c->name[a], &g, err);
        if (status != TPU_OK) {
            goto fail;
        }
        tpu_groups_str(&g, c->groups[a], sizeof(c->groups[a]));
        tpu_groups_fini(&g);
    }
    c->nlocal = tpu_spmd_nlocal(c->spmd);
    c->chips = tpu__calloc((size_t)c->nlocal, sizeof(*c->chips));
    if (c->chips == NULL) {
        status =
            tpu_err_set(err, TPU_ERR_NO_MEMORY, "transformer: no memory for %d chips", c->nlocal);
        goto fail;
    }
    for (i = 0; i < c->nlocal; i++) {
        chip_setup(c, i);
    }
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    return TPU_OK;
fail:
    tpu_spmd_destroy(c->spmd);
    tpu_mesh_destroy(c->mesh);
    memset(c, 0, sizeof(*c));
    return status;
}

void tpu__xfmr_comm_fini(xfmr_comm_t *c)
{
    int i;

    if (c->chips != NULL) {
        for (i = 0; i < c->nlocal; i++) {
            tpu__free(c->chips[i].pack);
            tpu__free(c->chips[i].unpack);
        }
        pthread_mutex_destroy(&c->mu);
        pthread_cond_destroy(&c->cv);
    }
    tpu__free(c->chips);
    tpu__free(c->log);
    tpu_spmd_destroy(c->spmd);
    tpu_mesh_destroy(c->mesh);
    memset(c, 0, sizeof(*c));
}

const tpu_xfmr_config_t *tpu__xfmr_comm_config(const xfmr_comm_t *c, int i)
{
    return i >= 0 && i < c->nlocal ? &c->chips[i].cfg : NULL;
}

void tpu__xfmr_comm_window(const xfmr_comm_t *c, int i, int64_t *row0_p, int64_t *rows_p,
                           int64_t *col0_p, int64_t *cols_p)
{
    const tpu_xfmr_config_t *cfg = &c->chips[i].cfg;
    const int *k = c->chips[i].coord;

    *row0_p = (((int64_t)k[XFMR_AXIS_DCN] * c->size[XFMR_AXIS_DATA] + k[XFMR_AXIS_DATA]) *
                   c->size[XFMR_AXIS_FSDP] +
               k[XFMR_AXIS_FSDP]) *
              cfg->batch;
    *rows_p = cfg->batch;
    *col0_p = cfg->seq_range.lo;
    *cols_p = cfg->seq_range.hi - cfg->seq_range.lo;
}

void tpu__xfmr_comm_slice(const xfmr_comm_t *c, int i, const int32_t *tok, int32_t *out)
{
    const int64_t S = c->chips[i].cfg.seq;
    int64_t row0, rows, s0, sl, b;

    tpu__xfmr_comm_window(c, i, &row0, &rows, &s0, &sl);
    for (b = 0; b < rows; b++) {
        memcpy(out + b * sl, tok + (row0 + b) * S + s0, (size_t)sl * sizeof(int32_t));
    }
}

/* ---- the log ---- */

int64_t tpu__xfmr_comm_log_count(const xfmr_comm_t *c)
{
    return c->nlog;
}

const xfmr_comm_entry_t *tpu__xfmr_comm_log_at(const xfmr_comm_t *c, int64_t k)
{
    return k >= 0 && k < c->nlog ? &c->log[k] : NULL;
}

void tpu__xfmr_comm_log_clear(xfmr_comm_t *c)
{
    c->nlog = 0;
}

static tpu_status_t log_add(xfmr_comm_t *c, const xfmr_comm_entry_t *e, tpu_err_t *err)
{
    if (c->nlog == c->cap_log) {
        int64_t cap = c->cap_log > 0 ? 2 * c->cap_log : 64;
        xfmr_comm_entry_t *log = tpu__realloc(c->log, (size_t)cap * sizeof(*log));

        if (log == NULL) {
            return tpu_err_set(err, TPU_ERR_NO_MEMORY, "transformer: no memory for the log");
        }
        c->log = log;
        c->cap_log = cap;
    }
    c->log[c->nlog++] = *e;
    return TPU_OK;
}

/* ---- one collective ---- */

/* The hook's collective: its kind, reduction and mesh axes (bits), before sizes of 1 drop
 * (grad's psum; its reduce-scatter over fsdp is set by grad_hook). */
static void hook_coll(tpu_xfmr_hook_t hook, int index, xfmr_comm_entry_t *e)
{
    memset(e, 0, sizeof(*e));
    e->hook = hook;
    e->index = index;
    e->kind = TPU_COLL_PSUM;
    e->op = TPU_REDOP_SUM;
    e->axes = 1 << XFMR_AXIS_TENSOR;
    switch (hook) {
    case TPU_XFMR_HOOK_KV:
        e->kind = TPU_COLL_ALL_GATHER;
        e->axes = 1 << XFMR_AXIS_SEQUENCE;
        break;
    case TPU_XFMR_HOOK_D_KV:
        e->kind = TPU_COLL_REDUCE_SCATTER;
        e->axes = 1 << XFMR_AXIS_SEQUENCE;
        break;
    case TPU_XFMR_HOOK_LOSS:
        e->axes = XFMR_BATCH_AXES | (1 << XFMR_AXIS_SEQUENCE);
        break;
    case TPU_XFMR_HOOK_GRAD:
        /* pos (parameter 1) is split over sequence: its pieces are summed over the batch only */
        e->axes =
            (XFMR_BATCH_AXES & ~(1 << XFMR_AXIS_FSDP)) | (index == 1 ? 0 : 1 << XFMR_AXIS_SEQUENCE);
        break;
    case TPU_XFMR_HOOK_GATHER:
        e->kind = TPU_COLL_ALL_GATHER;
        e->axes = 1 << XFMR_AXIS_FSDP;
        break;
    case TPU_XFMR_HOOK_VOCAB_MAX:
        e->op = TPU_REDOP_MAX;
        break;
    default:
        break;
    }
}

/* e's axes without those of size 1, their names ("data,sequence") and group size; 0 when
 * none is left (every group is one chip). */
static int entry_axes(const xfmr_comm_t *c, xfmr_comm_entry_t *e)
{
    int a, len = 0;

    e->group_size = 1;
    e->axes_name[0] = '\0';
    for (a = 0; a < XFMR_NAXES; a++) {
        if ((e->axes & (1 << a)) && c->size[a] > 1) {
            len += snprintf(e->axes_name + len, sizeof(e->axes_name) - (size_t)len, "%s%s",
                            len > 0 ? "," : "", c->name[a]);
            e->group_size *= c->size[a];
        } else {
            e->axes &= ~(1 << a);
        }
    }
    return e->axes;
}

/* The collective for every local chip (their in/out set): one runtime call, logged. */
static tpu_status_t collective(xfmr_comm_t *c, xfmr_comm_entry_t *e, int64_t count, tpu_err_t *err)
{
    void **in = tpu__calloc((size_t)c->nlocal, sizeof(*in));
    void **out = tpu__calloc((size_t)c->nlocal, sizeof(*out));
    const tpu_spmd_call_t *call;
    tpu_status_t status = TPU_OK;
    uint64_t n = (uint64_t)count;
    int i;

    if (in == NULL || out == NULL) {
        status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "transformer: no memory");
        goto out;
    }
    for (i = 0; i < c->nlocal; i++) {
        if (c->chips[i].hook != c->chips[0].hook || c->chips[i].count != c->chips[0].count) {
            status =
                tpu_err_set(err, TPU_ERR_INTERNAL,
                            "transformer: chips %d and %d meet in different collectives "
                            "(%s of %lld, %s of %lld)",
                            c->chips[0].chip, c->chips[i].chip,
                            tpu_xfmr_hook_name(c->chips[0].hook), (long long)c->chips[0].count,
                            tpu_xfmr_hook_name(c->chips[i].hook), (long long)c->chips[i].count);
            goto out;
        }
        in[i] = c->chips[i].in;
        out[i] = c->chips[i].out;
    }
    if (e->kind == TPU_COLL_ALL_GATHER) {
        status = tpu_spmd_all_gather(c->spmd, e->axes_name, TPU_DTYPE_F32,
                                     n / (uint64_t)e->group_size, in, out, err);
    } else if (e->kind == TPU_COLL_REDUCE_SCATTER) {
        status = tpu_spmd_psum_scatter(c->spmd, e->axes_name, TPU_DTYPE_F32, TPU_REDOP_SUM, n, in,
                                       out, err);
    } else {
        status = tpu_spmd_psum(c->spmd, e->axes_name, TPU_DTYPE_F32, e->op, n, in, out, err);
    }
    if (status != TPU_OK) {
        goto out;
    }
    call = tpu_spmd_call_at(c->spmd, tpu_spmd_call_count(c->spmd) - 1);
    if (call != NULL) {
        e->bytes = call->bytes;
        e->modeled_us = call->modeled_us;
        snprintf(e->algorithm, sizeof(e->algorithm), "%s", call->algorithm);
    }
    /* The runtime keeps a log of every call; this module keeps its own. */
    tpu_spmd_log_clear(c->spmd);
    status = log_add(c, e, err);
out:
    tpu__free(in);
    tpu__free(out);
    return status;
}

/* Wait until every local chip has reached this hook; the last one runs the collective. */
static tpu_status_t meet(xfmr_comm_t *c, xfmr_comm_entry_t *e, int64_t count, tpu_err_t *err)
{
    tpu_status_t status;
    int gen;

    pthread_mutex_lock(&c->mu);
    gen = c->generation;
    if (!c->failed && ++c->arrived == c->nlocal) {
        tpu_err_t cerr = {0};

        c->arrived = 0;
        status = collective(c, e, count, &cerr);
        if (status != TPU_OK) {
            c->failed = 1;
            c->status = status;
            c->err = cerr;
        }
        c->generation++;
        pthread_cond_broadcast(&c->cv);
    }
    while (!c->failed && c->generation == gen) {
        pthread_cond_wait(&c->cv, &c->mu);
    }
    status = c->failed ? c->status : TPU_OK;
    if (status != TPU_OK) {
        tpu_err_set(err, status, "%s", c->err.msg);
    }
    pthread_mutex_unlock(&c->mu);
    return status;
}

/* Room for n floats in each of the chip's scratch buffers. */
static tpu_status_t scratch(xfmr_comm_chip_t *me, int64_t n, tpu_err_t *err)
{
    if (me->pack_n < n) {
        tpu__free(me->pack);
        tpu__free(me->unpack);
        me->pack = tpu__malloc((size_t)n * sizeof(float));
        me->unpack = tpu__malloc((size_t)n * sizeof(float));
        me->pack_n = me->pack != NULL && me->unpack != NULL ? n : 0;
        if (me->pack_n == 0) {
            return tpu_err_set(err, TPU_ERR_NO_MEMORY, "transformer: no memory for %lld floats",
                               (long long)n);
        }
    }
    return TPU_OK;
}

/*
 * Copy position block 'blk' (rows [blk sl, (blk + 1) sl) of every [S, dh] slab of
 * 'full' [bh, S, dh]) to or from 'packed' [bh, sl, dh].
 */
static void block_copy(float *full, float *packed, int64_t bh, int64_t S, int64_t sl, int64_t dh,
                       int64_t blk, int to_packed)
{
    const size_t len = (size_t)(sl * dh) * sizeof(float);
    int64_t j;

    for (j = 0; j < bh; j++) {
        float *f = full + (j * S + blk * sl) * dh, *p = packed + j * sl * dh;

        if (to_packed) {
            memcpy(p, f, len);
        } else {
            memcpy(f, p, len);
        }
    }
}

/* Chip 'me' in collective 'e' on 'in' and 'out' ('count' as collective() takes it). */
static tpu_status_t run_coll(xfmr_comm_chip_t *me, xfmr_comm_entry_t *e, void *in, void *out,
                             int64_t count, tpu_err_t *err)
{
    me->hook = e->hook;
    me->count = count;
    me->in = in;
    me->out = out;
    return meet(me->c, e, count, err);
}

/* kv and d_kv: the sequence all-gather and reduce-scatter of [batch, heads, S, Dh]. */
static tpu_status_t seq_hook(xfmr_comm_chip_t *me, xfmr_comm_entry_t *e, float *buf, int64_t count,
                             tpu_err_t *err)
{
    const tpu_xfmr_config_t *cfg = &me->cfg;
    const int G = me->c->size[XFMR_AXIS_SEQUENCE], own = me->coord[XFMR_AXIS_SEQUENCE];
    const int64_t S = cfg->seq, sl = S / G, dh = cfg->d_model / cfg->heads;
    const int64_t bh = cfg->batch * (cfg->heads_range.hi - cfg->heads_range.lo);
    tpu_status_t status;
    int k;

    if (count != bh * S * dh) {
        return tpu_err_set(err, TPU_ERR_INTERNAL,
                           "transformer: %s of %lld floats, expected [%lld, %lld, %lld]",
                           tpu_xfmr_hook_name(e->hook), (long long)count, (long long)bh,
                           (long long)S, (long long)dh);
    }
    status = scratch(me, count, err);
    if (status != TPU_OK) {
        return status;
    }
    for (k = 0; k < G; k++) {
        /* all-gather: the chip's own block in; reduce-scatter: every block, in order */
        if (e->kind == TPU_COLL_REDUCE_SCATTER || k == own) {
            block_copy(buf, me->pack + (e->kind == TPU_COLL_REDUCE_SCATTER ? k : 0) * bh * sl * dh,
                       bh, S, sl, dh, k, 1);
        }
    }
    status = run_coll(me, e, me->pack, me->unpack, count, err);
    if (status != TPU_OK) {
        return status;
    }
    if (e->kind == TPU_COLL_ALL_GATHER) {
        for (k = 0; k < G; k++) {
            block_copy(buf, me->unpack + k * bh * sl * dh, bh, S, sl, dh, k, 0);
        }
    } else {
        memset(buf, 0, (size_t)count * sizeof(float));
        block_copy(buf, me->unpack, bh, S, sl, dh, own, 0);
    }
    return TPU_OK;
}

/* grad with fsdp: the block reduce-scattered over fsdp into the chip's part, the part
 * summed over the replicas, and put back at its rows of the block. */
static tpu_status_t grad_fsdp(xfmr_comm_chip_t *me, xfmr_comm_entry_t *psum, float *buf,
                              int64_t count, tpu_err_t *err)
{
    const int F = me->c->size[XFMR_AXIS_FSDP];
    const int64_t part = count / F;
    xfmr_comm_entry_t rs = *psum;
    tpu_status_t status = scratch(me, part, err);

    rs.kind = TPU_COLL_REDUCE_SCATTER;
    rs.axes = 1 << XFMR_AXIS_FSDP;
    entry_axes(me->c, &rs);
    status = status == TPU_OK ? run_coll(me, &rs, buf, me->pack, count, err) : status;
    if (status == TPU_OK && entry_axes(me->c, psum) != 0) {
        status = run_coll(me, psum, me->pack, me->pack, part, err);
    }
    if (status == TPU_OK) {
        memcpy(buf + me->coord[XFMR_AXIS_FSDP] * part, me->pack, (size_t)part * sizeof(float));
    }
    return status;
}

static tpu_status_t hook_fn(void *arg, tpu_xfmr_hook_t hook, int index, float *buf, int64_t count,
                            tpu_err_t *err)
{
    xfmr_comm_chip_t *me = arg;
    xfmr_comm_t *c = me->c;
    const int F = c->size[XFMR_AXIS_FSDP];
    xfmr_comm_entry_t e;
    tpu_status_t status;

    hook_coll(hook, index, &e);
    if (hook == TPU_XFMR_HOOK_GRAD && F > 1) {
        return grad_fsdp(me, &e, buf, count, err);
    }
    if (entry_axes(c, &e) == 0) {
        return TPU_OK; /* every group is one chip: the buffer is complete */
    }
    if (hook == TPU_XFMR_HOOK_KV || hook == TPU_XFMR_HOOK_D_KV) {
        return seq_hook(me, &e, buf, count, err);
    }
    if (hook == TPU_XFMR_HOOK_GATHER) {
        /* the chip's part in, every part out in member (fsdp) order: the block */
        const int64_t part = count / F;

        status = scratch(me, part, err);
        if (status != TPU_OK) {
            return status;
        }
        memcpy(me->pack, buf + me->coord[XFMR_AXIS_FSDP] * part, (size_t)part * sizeof(float));
        return run_coll(me, &e, me->pack, buf, count, err);
    }
    return run_coll(me, &e, buf, buf, count, err);
}

/* ---- the lock step ---- */

typedef struct runner {
    xfmr_comm_t *c;
    xfmr_comm_fn_t fn;
    void *arg;
    int local;
    tpu_status_t status;
    tpu_err_t err;
} runner_t;

/* A chip failed outside a collective: the others stop waiting for it. */
static void fail_all(xfmr_comm_t *c, tpu_status_t status, const tpu_err_t *err)
{
    pthread_mutex_lock(&c->mu);
    if (!c->failed) {
        c->failed = 1;
        c->status = status;
        c->err = *err;
    }
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

static void *runner_main(void *arg)
{
    runner_t *r = arg;

    r->status = r->fn(r->arg, r->local, &r->err);
    if (r->status != TPU_OK) {
        fail_all(r->c, r->status, &r->err);
    }
    return NULL;
}

tpu_status_t tpu__xfmr_comm_run(xfmr_comm_t *c, xfmr_comm_fn_t fn, void *arg, tpu_err_t *err)
{
    runner_t *r = tpu__calloc((size_t)c->nlocal, sizeof(*r));
    pthread_t *th = tpu__calloc((size_t)c->nlocal, sizeof(*th));
    tpu_status_t status = TPU_OK;
    int i, started = 0;

    if (r == NULL || th == NULL) {
        status =
            tpu_err_set(err, TPU_ERR_NO_MEMORY, "transformer: no memory for %d chips", c->nlocal);
        goto out;
    }
    c->failed = 0;
    c->arrived = 0;
    c->status = TPU_OK;
    tpu_err_clear(&c->err);
    for (i = 0; i < c->nlocal; i++) {
        r[i].c = c;
        r[i].fn = fn;
        r[i].arg = arg;
        r[i].local = i;
    }
    if (c->nlocal == 1) {
        runner_main(&r[0]); /* one chip (under MPI): no thread */
    } else {
        for (started = 0; started < c->nlocal; started++) {
            if (pthread_create(&th[started], NULL, runner_main, &r[started]) != 0) {
                tpu_err_t e = {0};

                tpu_err_set(&e, TPU_ERR_RESOURCE_EXHAUSTED,
                            "transformer: cannot start the thread of local chip %d", started);
                fail_all(c, e.status, &e);
                break;
            }
        }
        for (i = 0; i < started; i++) {
            pthread_join(th[i], NULL);
        }
    }
    if (c->failed) {
        status = tpu_err_set(err, c->status, "%s", c->err.msg);
    }
out:
    tpu__free(r);
    tpu__free(th);
    return status;
}

typedef struct step_arg {
    xfmr_comm_t *c;
    tpu_xfmr_t *const *xfs;
    const int32_t *x, *y;
    double lr;
    tpu_xfmr_report_t *reps;
} step_arg_t;

static tpu_status_t step_one(void *arg, int i, tpu_err_t *err)
{
    step_arg_t *s = arg;
    const tpu_xfmr_config_t *cfg = &s->c->chips[i].cfg;
    const int64_t n = cfg->batch * (cfg->seq_range.hi - cfg->seq_range.lo);
    int32_t *x = tpu__malloc((size_t)(2 * n) * sizeof(int32_t));
    tpu_xfmr_report_t rep;
    tpu_status_t status;

    if (x == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "transformer: no memory for the tokens");
    }
    tpu__xfmr_comm_slice(s->c, i, s->x, x);
    tpu__xfmr_comm_slice(s->c, i, s->y, x + n);
    status = tpu_xfmr_step(s->xfs[i], x, x + n, s->lr, &rep, err);
    if (status == TPU_OK && s->reps != NULL) {
        s->reps[i] = rep;
    }
    tpu__free(x);
    return status;
}

tpu_status_t tpu__xfmr_comm_step(xfmr_comm_t *c, tpu_xfmr_t *const *xfs, const int32_t *x,
                                 const int32_t *y, double lr, tpu_xfmr_report_t *reps,
                                 tpu_err_t *err)
{
    step_arg_t s = {c, xfs, x, y, lr, reps};

    return tpu__xfmr_comm_run(c, step_one, &s, err);
}
