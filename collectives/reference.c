/*
 * Reference results: a collective computed directly from every chip's input, in
 * doubles, to verify what the executor produced.
 */
#include "tpu/dtype.h"

#include "alloc.h"
#include "plan.h"

#include <string.h>

/* Element 'i' of a buffer of 'dtype' as a double. */
static double get_elem(tpu_dtype_t dtype, const void *buf, size_t i)
{
    switch (dtype) {
    case TPU_DTYPE_BF16:
        return tpu_dtype_bf16_to_f32(((const uint16_t *)buf)[i]);
    case TPU_DTYPE_I32:
        return ((const int32_t *)buf)[i];
    default:
        return ((const float *)buf)[i];
    }
}

static void put_elem(tpu_dtype_t dtype, void *buf, size_t i, double v)
{
    switch (dtype) {
    case TPU_DTYPE_BF16:
        ((uint16_t *)buf)[i] = tpu_dtype_f32_to_bf16((float)v);
        break;
    case TPU_DTYPE_I32:
        ((int32_t *)buf)[i] = (int32_t)v;
        break;
    default:
        ((float *)buf)[i] = (float)v;
        break;
    }
}

tpu_status_t tpu_coll_reference(const tpu_coll_plan_t *plan, int chip, tpu_coll_fill_fn_t fill,
                                void *arg, void *out, tpu_err_t *err)
{
    const tpu_coll_desc_t *d = &plan->desc;
    int64_t elem = tpu_dtype_size(d->dtype);
    int me = d->kind == TPU_COLL_P2P || d->pairs != NULL ? 0 : tpu__plan_member_index(plan, chip);
    unsigned char *in = tpu__malloc(plan->in_bytes);
    double *acc = NULL;
    int j;
    size_t i, n;

    if (in == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for a reference result");
    }
    switch (d->kind) {
    case TPU_COLL_ALL_GATHER:
        for (j = 0; j < plan->group; j++) {
            fill(tpu__plan_member(plan, chip, j), (unsigned char *)out + j * plan->shard,
                 (uint64_t)plan->shard, arg);
        }
        break;
    case TPU_COLL_PSUM:
    case TPU_COLL_REDUCE_SCATTER:
        n = plan->out_bytes / (size_t)elem;
        acc = tpu__malloc(n * sizeof(double));
        if (acc == NULL) {
            tpu__free(in);
            return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for a reference result");
        }
        for (j = 0; j < plan->group; j++) {
            size_t base = d->kind == TPU_COLL_PSUM ? 0 : (size_t)(me * plan->shard / elem);

            fill(tpu__plan_member(plan, chip, j), in, plan->in_bytes, arg);
            for (i = 0; i < n; i++) {
                double v = get_elem(d->dtype, in, base + i);

                if (j == 0) {
                    acc[i] = v;
                } else if (d->op == TPU_REDOP_SUM) {
                    acc[i] += v;
                } else if (d->op == TPU_REDOP_MAX) {
                    acc[i] = v > acc[i] ? v : acc[i];
                } else {
                    acc[i] = v < acc[i] ? v : acc[i];
                }
            }
        }
        for (i = 0; i < n; i++) {
            put_elem(d->dtype, out, i, acc[i]);
        }
        break;
    case TPU_COLL_ALL_TO_ALL:
        for (j = 0; j < plan->group; j++) {
            fill(tpu__plan_member(plan, chip, j), in, plan->in_bytes, arg);
            memcpy((unsigned char *)out + j * plan->shard, in + me * plan->shard,
                   (size_t)plan->shard);
        }
        break;
    case TPU_COLL_PPERMUTE: {
        int n_ = plan->group;

        if (d->pairs != NULL) {
            /* The chip that sends to 'chip', or zeros (jax.lax.ppermute). */
            memset(out, 0, (size_t)plan->out_bytes);
            for (j = 0; j < d->npairs; j++) {
                if (d->pairs[2 * j + 1] == chip) {
                    fill(d->pairs[2 * j], out, plan->out_bytes, arg);
                }
            }
            break;
        }
        int from = tpu__plan_member(plan, chip, ((me - d->shift) % n_ + n_) % n_);

        fill(from, out, plan->out_bytes, arg);
        break;
    }
    case TPU_COLL_P2P:
        if (chip == d->dst) {
            fill(d->src, out, plan->out_bytes, arg);
        }
        break;
    default:
        break;
    }
    tpu__free(acc);
    tpu__free(in);
    return TPU_OK;
}
