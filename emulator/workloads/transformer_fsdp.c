/*
 * The transformer's fsdp weight movement (see transformer_fsdp.h and "The
 * fsdp shard" in include/tpu/transformer.h): which parameters make a unit,
 * the copy of the owned rows into a block and the all-gather hook that fills
 * the rest, the release of a gathered block, and the gradient hook with the
 * owned rows of its result kept.
 */
#include "transformer_fsdp.h"

#include <math.h>
#include <string.h>

int tpu__xfmr_units(const tpu_xfmr_t *xf)
{
    return (int)xf->cfg.layers + 2;
}

/* Unit u's parameters [*p0, *p1). */
static void unit_params(const tpu_xfmr_t *xf, int u, int *p0, int *p1)
{
    if (u == 0) {
        *p0 = XFMR_P_EMBED;
        *p1 = XFMR_P_POS + 1;
    } else if (u <= (int)xf->cfg.layers) {
        *p0 = XFMR_P_LAYER(u - 1, 0);
        *p1 = *p0 + XFMR_PER_LAYER;
    } else {
        *p0 = xf->nparams - 2;
        *p1 = xf->nparams;
    }
}

static int64_t block_count(const xfmr_param_t *q)
{
    return (q->r1 - q->r0) * (q->c1 - q->c0);
}

/* Where the owned rows start in the block, and how many floats they are. */
static int64_t owned_off(const xfmr_param_t *q)
{
    return (q->s0 - q->r0) * (q->c1 - q->c0);
}

static int64_t owned_count(const xfmr_param_t *q)
{
    return (q->s1 - q->s0) * (q->c1 - q->c0);
}

tpu_status_t tpu__xfmr_gather_unit(tpu_xfmr_t *xf, int u, tpu_err_t *err)
{
    tpu_status_t status = TPU_OK;
    int p, p0, p1;

    if (!xf->fsdp) {
        return TPU_OK;
    }
    unit_params(xf, u, &p0, &p1);
    for (p = p0; p < p1 && status == TPU_OK; p++) {
        xfmr_param_t *q = &xf->par[p];

        memcpy(q->w + owned_off(q), q->ws, (size_t)owned_count(q) * sizeof(float));
        status = tpu__xfmr_hook(xf, TPU_XFMR_HOOK_GATHER, p, q->w, block_count(q), err);
    }
    return status;
}

void tpu__xfmr_release_unit(tpu_xfmr_t *xf, int u)
{
    int p, p0, p1;
    int64_t i;

    if (!xf->fsdp) {
        return;
    }
    unit_params(xf, u, &p0, &p1);
    for (p = p0; p < p1; p++) {
        xfmr_param_t *q = &xf->par[p];

        for (i = 0; i < block_count(q); i++) {
            q->w[i] = NAN;
        }
    }
}

tpu_status_t tpu__xfmr_reduce_unit(tpu_xfmr_t *xf, int u, tpu_err_t *err)
{
    tpu_status_t status = TPU_OK;
    int p, p0, p1;

    unit_params(xf, u, &p0, &p1);
    for (p = p0; p < p1 && status == TPU_OK; p++) {
        xfmr_param_t *q = &xf->par[p];

        status = tpu__xfmr_hook(xf, TPU_XFMR_HOOK_GRAD, p, q->g, block_count(q), err);
        if (status == TPU_OK && xf->fsdp) {
            memcpy(q->gs, q->g + owned_off(q), (size_t)owned_count(q) * sizeof(float));
        }
    }
    return status;
}
