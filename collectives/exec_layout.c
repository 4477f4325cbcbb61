/*
 * The buffers of a run: the user's input into the buffer the data schedule works
 * on, before the messages, and the result out of it after.  The all-gather
 * family works in its working layout (schedule.h), the input permuted into it and
 * the output out of it (a bf16 reduction widened to f32 and narrowed back); the
 * others read the input and write the output directly, after the schedule's
 * local copies.
 */
#include "exec_layout.h"

#include "tpu/dtype.h"

#include <string.h>

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
void tpu__exec_prepare(tpu_coll_exec_t *ctx, void *const *in, void *const *out)
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

void tpu__exec_finish(tpu_coll_exec_t *ctx, void *const *out)
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
