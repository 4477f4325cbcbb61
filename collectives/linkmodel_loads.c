/*
 * The loads of line timing (lines.c) in the link model: one step whose flows all
 * start together, kept per resource as bytes per message size, and the time a
 * flow takes under processor sharing of those loads, the same bits as the walk's
 * share() gives for such a step, without a flow list.
 */
#include "linkmodel_loads.h"

#include "alloc.h"

/*
 * One step whose flows all start together (line timing of the direct all-to-all,
 * lines.c): every flow is on its resources from the start, so a resource serves
 * its messages by processor sharing from one moment, and the one batch of message
 * starts is inside the hop latency.  A resource keeps its load per message size
 * (at most TPU_LM_SIZES sizes); shared_end() below gives what
 * tpu__linkmodel_step() gives for such a step, without a flow list.
 */
tpu_status_t tpu__linkmodel_add_load(tpu_linkmodel_t *lm, int r, double bytes, double size)
{
    double *z;
    int i, j;

    if (lm->szl == NULL || lm->nsz == NULL) {
        tpu__free(lm->szl);
        tpu__free(lm->nsz);
        lm->szl = tpu__malloc((size_t)lm->nres * 2 * TPU_LM_SIZES * sizeof(double));
        lm->nsz = tpu__malloc((size_t)lm->nres);
        if (lm->szl == NULL || lm->nsz == NULL) {
            tpu__free(lm->szl);
            tpu__free(lm->nsz);
            lm->szl = NULL;
            lm->nsz = NULL;
            return TPU_ERR_NO_MEMORY;
        }
    }
    if (lm->stamp[r] != lm->step_id) {
        lm->stamp[r] = lm->step_id;
        lm->touched[lm->ntouched++] = r;
        lm->sum[r] = 0;
        lm->nsz[r] = 0;
    }
    /* The messages' sizes, smallest first, with their bytes. */
    z = lm->szl + (size_t)r * 2 * TPU_LM_SIZES;
    for (i = 0; i < lm->nsz[r] && z[2 * i] < size; i++) {
    }
    if (i < lm->nsz[r] && z[2 * i] == size) {
        z[2 * i + 1] += bytes;
        lm->sum[r] += bytes;
        return TPU_OK;
    }
    if (lm->nsz[r] == TPU_LM_SIZES) {
        return TPU_ERR_INTERNAL;
    }
    lm->sum[r] += bytes;
    for (j = lm->nsz[r]; j > i; j--) {
        z[2 * j] = z[2 * (j - 1)];
        z[2 * j + 1] = z[2 * (j - 1) + 1];
    }
    z[2 * i] = size;
    z[2 * i + 1] = bytes;
    lm->nsz[r]++;
    return TPU_OK;
}

/*
 * When a message of 'size' bytes is through resource r, all of the step's
 * messages there having started together: its whole load over its bandwidth when
 * they are all of one size, else processor sharing, smallest first, with the
 * arithmetic of share() (the walk's), so that both give the same bits.
 */
static double shared_end(const tpu_linkmodel_t *lm, int32_t r, double size)
{
    const double *z = lm->szl + (size_t)r * 2 * TPU_LM_SIZES;
    double t = 0, V = 0, M = 0;
    int i, n = lm->nsz[r];

    if (n <= 1) {
        return lm->sum[r] / lm->bw[r];
    }
    for (i = 0; i < n; i++) {
        M += z[2 * i + 1] / z[2 * i];
    }
    for (i = 0; i < n; i++) {
        /* Every message was admitted at V = 0: its tag is its own time at full rate. */
        double tag = 0 + z[2 * i] / lm->bw[r];

        t = tag > V ? t + (tag - V) * M : t;
        V = tag > V ? tag : V;
        if (z[2 * i] >= size) {
            return t;
        }
        M -= z[2 * i + 1] / z[2 * i];
    }
    return t;
}

void tpu__linkmodel_time_flow(tpu_linkmodel_t *lm, const tpu_flow_t *f, double ready,
                              double *bytes_p, double *lat_p)
{
    double lat, d = 0, size = (double)tpu__span_bytes(&f->span);
    int i, m = tpu__linkmodel_flow_resources(lm, f, &lat);

    for (i = 0; i < m; i++) {
        int32_t r = lm->rres[i];

        if (lm->stamp[r] == lm->step_id && lm->bw[r] > 0) {
            double e = shared_end(lm, r, size);

            d = e > d ? e : d;
        }
    }
    *bytes_p = ready + d;
    *lat_p = m > 0 ? lat : 0;
}

void tpu__linkmodel_end_step(tpu_linkmodel_t *lm)
{
    int t;

    for (t = 0; t < lm->ntouched; t++) {
        int32_t r = lm->touched[t];

        if (lm->bw[r] > 0) {
            lm->busy[r] += lm->sum[r] / lm->bw[r];
            lm->bytes[r] += lm->sum[r];
        }
    }
    lm->ntouched = 0;
    lm->step_id++;
}

double tpu__linkmodel_load(const tpu_linkmodel_t *lm, int r)
{
    return lm->stamp[r] == lm->step_id ? lm->sum[r] : 0;
}
