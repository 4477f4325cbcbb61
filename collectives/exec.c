/*
 * The schedule executor: walks a plan's schedule over a transport, moving and
 * reducing real bytes.
 *
 * Two things are decoupled here.  The modeled time is a property of the plan:
 * the link-model walk of its schedule (timing.c), done once per run object and the
 * same on every chip and every transport, bit for bit (a chip's own finish time
 * comes from the same walk).  The host's messages carry the bytes: they follow
 * the same algorithm with a one-chunk pipeline (the model's pipeline depth
 * changes the modeled time, not how many host messages carry the bytes), so a
 * 1 MiB psum that the model pipelines into 16 chunks is 24 host messages per
 * chip on a 4x4, not 384.  A psum or a reduce-scatter moves through a host plan
 * instead (host_algorithms.def, host/: one round or two); a bf16 one carries the bf16
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
 *
 * This file holds the run object and a run's outline; the signature is
 * exec_sig.c's, the buffers exec_layout.c's, the modeled times exec_times.c's,
 * the messages exec_engine.c's.
 */
#include "exec.h"

#include "tpu/dtype.h"

#include "algo.h"
#include "alloc.h"
#include "build.h"
#include "clock.h"
#include "exec_engine.h"
#include "exec_inplace.h"
#include "exec_layout.h"
#include "exec_sig.h"
#include "exec_times.h"
#include "lines.h"
#include "plan.h"
#include "reduce.h"
#include "shm.h"
#include "shm_run.h"
#include "timing.h"

#include <stdio.h>
#include <string.h>

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

        if (tpu__exec_sig_diff(&all[0], &all[i], diff, sizeof(diff))) {
            char a[64], b[64], sa[192], sb[192];

            tpu__exec_chip_str(&ctx->plan->topo, 0, a, sizeof(a));
            tpu__exec_chip_str(&ctx->plan->topo, i, b, sizeof(b));
            tpu__exec_sig_str(&all[0], sa, sizeof(sa));
            tpu__exec_sig_str(&all[i], sb, sizeof(sb));
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
    tpu__exec_stage_free(exec);
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
    const tpu_host_algo_t *host = NULL;
    int i;

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
    tpu__exec_sig_init(plan, &e->sig);
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
    /* The first row of the host plans that applies (host_algorithms.def). */
    status = TPU_ERR_UNSUPPORTED;
    for (i = 0; x->moves_data && i < tpu__nhost_algos && status == TPU_ERR_UNSUPPORTED; i++) {
        if (tpu__host_algos[i].kind == plan->desc.kind) {
            host = &tpu__host_algos[i];
            status = host->build(plan, local, &e->data, err);
        }
    }
    if (status != TPU_ERR_UNSUPPORTED) {
        if (status != TPU_OK) {
            goto fail;
        }
        e->ps = &e->data;
        e->host = host;
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
               plan->model.bound || plan->model.repeat != NULL ||
               (plan->algo->pipelined && plan->args.chunks > 1) || local != NULL) {
        status = tpu__plan_build_local(plan, plan->algo, 1, -1, 0, local, &e->data, err);
        if (status != TPU_OK) {
            goto fail;
        }
        e->ps = &e->data;
    }
    /* Shared memory where the whole group is on the node: the all-gathers, and
     * the reductions that run a host plan (the additions in its order). */
    if (local != NULL && x->moves_data &&
        (plan->desc.kind == TPU_COLL_ALL_GATHER || e->host != NULL) &&
        ((status = tpu__shm_create(plan, x, e->host != NULL && e->host->from_member0, &e->shm)) !=
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
    if (tpu__exec_model_times(e, NULL) != TPU_OK) {
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


tpu_status_t tpu_coll_exec_run(tpu_coll_exec_t *exec, const tpu_coll_run_opts_t *opts,
                               void *const *in, void *const *out, double *modeled_us_p,
                               tpu_err_t *err)
{
    const tpu_coll_plan_t *plan = exec->plan;
    tpu_coll_run_opts_t defaults = {0, 0, 1, 0, NULL, NULL, NULL};
    tpu_coll_exec_t *ctx = exec;
    tpu_xport_t *x = exec->x;
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
    if (opts->observer != NULL) {
        /* The observer sees the same walk that gave the modeled time, every flow and
         * link load; the times it computes are those of exec create. */
        status = tpu__exec_model_times(ctx, opts->observer);
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
    status = tpu__exec_stage_inputs(ctx, in, out, &in, err);
    if (status != TPU_OK) {
        return status;
    }
    if (ctx->last_shm) {
        status = tpu__shm_run(ctx->shm, &ctx->sig, opts, in[0], out[0], err);
        if (status == TPU_OK) {
            *modeled_us_p = (opts->local_time ? ctx->local_end_s : ctx->end_s) * 1e6;
        }
        return status;
    }
    if (x->moves_data) {
        tpu__exec_prepare(ctx, in, out);
    }
    status = tpu__exec_messages(ctx, opts, epoch, err);
    if (status != TPU_OK) {
        return status;
    }
    if (x->moves_data) {
        tpu__exec_finish(ctx, out);
    }
    *modeled_us_p = (opts->local_time ? ctx->local_end_s : ctx->end_s) * 1e6;
    return TPU_OK;
}

const char *tpu_coll_exec_host_path(const tpu_coll_exec_t *exec)
{
    return exec->last_shm ? "shm" : "messages";
}

const tpu_host_algo_t *tpu__exec_host_algo(const tpu_coll_exec_t *e)
{
    return e->host;
}
