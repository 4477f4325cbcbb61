/*
 * In-place runs: a chip's input and output may share memory, as in NCCL.  The
 * forms NCCL defines (and tpu_coll_in_place_offsets() gives) are: psum,
 * all-to-all, ppermute and p2p with the input at the output; all-gather with the
 * input at the chip's block of the output (output + index * input bytes);
 * reduce-scatter with the output at the chip's block of the input (input +
 * index * output bytes).  Any other overlap works too.
 *
 * Which paths need nothing: the all-gather family's working layout reads the
 * whole input into the working buffer before the first message and writes the
 * output after the last (exec_layout.c); the shared-memory paths (shm_*.c) copy
 * piece i of the input into the shared region before they write piece i of the
 * output, and write no output byte past it, so NCCL's forms are safe there.  The
 * message path that works on the user's buffers (every other one) sends from the
 * input while receives land in the output: there an overlapping input is first
 * copied aside (one copy of the input, counted in the run's measured time) and
 * the run reads the copy.
 */
#include "exec_inplace.h"

#include "alloc.h"
#include "exec.h"

#include <stdint.h>
#include <string.h>

static int overlap(const void *a, uint64_t na, const void *b, uint64_t nb)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;

    return na > 0 && nb > 0 && x < y + nb && y < x + na;
}

/* Is the overlap of 'in' and 'out' one the shared-memory path handles as it is? */
static int shm_safe(const tpu_coll_plan_t *p, const void *in, const void *out)
{
    uintptr_t i = (uintptr_t)in, o = (uintptr_t)out;
    uintptr_t shard = (uintptr_t)(p->shard > 0 ? p->shard : 1);

    switch (p->desc.kind) {
    case TPU_COLL_ALL_GATHER:
        return i >= o && (i - o) % shard == 0;
    case TPU_COLL_REDUCE_SCATTER:
        return o >= i && (o - i) % shard == 0;
    default:
        return i == o;
    }
}

tpu_status_t tpu_coll_in_place_offsets(const tpu_coll_plan_t *plan, int chip, uint64_t *in_off_p,
                                       uint64_t *out_off_p, uint64_t *bytes_p, tpu_err_t *err)
{
    uint64_t index = 0;

    if (chip < 0 || chip >= plan->topo.nchips) {
        return tpu_err_set(err, TPU_ERR_INVALID, "chip %d is not one of the pod's %d chips", chip,
                           plan->topo.nchips);
    }
    if (plan->desc.kind == TPU_COLL_ALL_GATHER || plan->desc.kind == TPU_COLL_REDUCE_SCATTER) {
        index = (uint64_t)tpu__plan_member_index(plan, chip);
    }
    *in_off_p = plan->desc.kind == TPU_COLL_ALL_GATHER ? index * plan->in_bytes : 0;
    *out_off_p = plan->desc.kind == TPU_COLL_REDUCE_SCATTER ? index * plan->out_bytes : 0;
    *bytes_p = plan->in_bytes > plan->out_bytes ? plan->in_bytes : plan->out_bytes;
    return TPU_OK;
}

tpu_status_t tpu__exec_stage_inputs(tpu_coll_exec_t *ctx, void *const *in, void *const *out,
                                    void *const **in_p, tpu_err_t *err)
{
    const tpu_coll_plan_t *p = ctx->plan;
    uint64_t n = p->in_bytes;
    int i, staged = 0;

    *in_p = in;
    if (!ctx->x->moves_data || (!ctx->last_shm && ctx->ps->s.nlayout > 0)) {
        return TPU_OK;
    }
    for (i = 0; i < ctx->x->nlocal; i++) {
        int aliased = overlap(in[i], n, out[i], p->out_bytes);

        if (!aliased || (ctx->last_shm && shm_safe(p, in[i], out[i]))) {
            continue;
        }
        if (ctx->stage == NULL) {
            ctx->stage = tpu__malloc((size_t)ctx->x->nlocal * (size_t)(n > 0 ? n : 1));
            ctx->stage_in = tpu__calloc((size_t)ctx->x->nlocal, sizeof(*ctx->stage_in));
            if (ctx->stage == NULL || ctx->stage_in == NULL) {
                tpu__exec_stage_free(ctx);
                return tpu_err_set(err, TPU_ERR_NO_MEMORY,
                                   "out of memory for the copy of an in-place input of %s",
                                   p->name);
            }
        }
        if (!staged) {
            memcpy(ctx->stage_in, in, (size_t)ctx->x->nlocal * sizeof(*ctx->stage_in));
            staged = 1;
        }
        ctx->stage_in[i] = ctx->stage + (size_t)i * (size_t)n;
        memcpy(ctx->stage_in[i], in[i], (size_t)n);
    }
    if (staged) {
        *in_p = ctx->stage_in;
    }
    return TPU_OK;
}

void tpu__exec_stage_free(tpu_coll_exec_t *ctx)
{
    tpu__free(ctx->stage);
    tpu__free(ctx->stage_in);
    ctx->stage = NULL;
    ctx->stage_in = NULL;
}
