/*
 * The message starts of the link model (linkmodel.c, "Message starts"): each
 * port's DMA engine starts the batches of messages it is given one at a time,
 * msg_cost each, in the order they are ready.
 */
#include "linkmodel_starts.h"

#include "alloc.h"
#include "linkmodel_busy.h"
#include "linkmodel_share.h"

#include <stdlib.h>
#include <string.h>

static int batch_cmp(const void *pa, const void *pb)
{
    const tpu_lm_batch_t *a = pa, *b = pb;

    if (a->eng != b->eng) {
        return a->eng < b->eng ? -1 : 1;
    }
    if (a->st != b->st) {
        return a->st < b->st ? -1 : 1;
    }
    return a->k < b->k ? -1 : a->k > b->k;
}

/*
 * Sort the 'n' distinct non-negative ids of 'v' increasingly, through 'tmp' (room
 * for n): left alone when sorted, by insertion when short, else by counting
 * passes of 8 bits up to the largest id's highest byte (the order qsort gives, in
 * linear time).
 */
static void sort_ids(int32_t *v, int32_t *tmp, int64_t n)
{
    int64_t i, j, cnt[256];
    int32_t top = 0, *from = v, *to = tmp, *t;
    int shift;

    for (i = 1; i < n && v[i - 1] < v[i]; i++) {
    }
    if (i >= n) {
        return;
    }
    if (n <= 32) {
        for (; i < n; i++) {
            int32_t x = v[i];

            for (j = i; j > 0 && v[j - 1] > x; j--) {
                v[j] = v[j - 1];
            }
            v[j] = x;
        }
        return;
    }
    for (i = 0; i < n; i++) {
        top = v[i] > top ? v[i] : top;
    }
    for (shift = 0; shift == 0 || (shift < 32 && ((uint32_t)top >> shift) != 0); shift += 8) {
        int64_t sum = 0;

        memset(cnt, 0, sizeof(cnt));
        for (i = 0; i < n; i++) {
            cnt[((uint32_t)from[i] >> shift) & 0xff]++;
        }
        for (i = 0; i < 256; i++) {
            int64_t c = cnt[i];

            cnt[i] = sum;
            sum += c;
        }
        for (i = 0; i < n; i++) {
            to[cnt[((uint32_t)from[i] >> shift) & 0xff]++] = from[i];
        }
        t = from;
        from = to;
        to = t;
    }
    if (from != v) {
        memcpy(v, from, (size_t)n * sizeof(*v));
    }
}

/*
 * Sort the step's nb batch records by batch_cmp(): grouped by engine with a
 * counting pass (the groups in engine order), then each group by (start, flow),
 * left as it is when it already is (the common case: a step's flows come
 * in order), by insertion when small, else by merging its runs.  The result is a full sort's.
 */
static tpu_status_t sort_batches(tpu_linkmodel_t *lm, int64_t nb)
{
    int64_t i, g, ng = 0, *start;
    tpu_lm_batch_t *t;

    for (i = 1; i < nb && batch_cmp(&lm->batch[i - 1], &lm->batch[i]) <= 0; i++) {
    }
    if (i >= nb) {
        return TPU_OK;
    }
    if (lm->cap_batch2 < nb) {
        tpu__free(lm->batch2);
        lm->batch2 = tpu__malloc((size_t)nb * sizeof(*lm->batch2));
        lm->cap_batch2 = lm->batch2 != NULL ? nb : 0;
        if (lm->batch2 == NULL) {
            return TPU_ERR_NO_MEMORY;
        }
    }
    if (lm->eslot == NULL || lm->estamp == NULL) {
        tpu__free(lm->eslot);
        tpu__free(lm->estamp);
        lm->eslot = tpu__malloc((size_t)lm->nres * sizeof(*lm->eslot));
        lm->estamp = tpu__calloc((size_t)lm->nres, sizeof(*lm->estamp));
        if (lm->eslot == NULL || lm->estamp == NULL) {
            tpu__free(lm->eslot);
            tpu__free(lm->estamp);
            lm->eslot = NULL;
            lm->estamp = NULL;
            return TPU_ERR_NO_MEMORY;
        }
    }
    /* Engines in increasing order get the groups in order: count them first. */
    lm->ebatch_id++;
    for (i = 0; i < nb; i++) {
        int32_t e = lm->batch[i].eng;

        if (lm->estamp[e] != lm->ebatch_id) {
            lm->estamp[e] = lm->ebatch_id;
            lm->eslot[e] = 0;
            ng++;
        }
        lm->eslot[e]++;
    }
    /* Prefix sums in engine order: walk the engines of the step sorted. */
    {
        int32_t *engs;
        int64_t ne = 0, sum = 0;

        if (lm->cap_engs < ng) {
            /* The engines (and the sort's room) and where each one's group starts (one
             * more): sized together. */
            tpu__free(lm->engs);
            tpu__free(lm->bgroup);
            lm->engs = tpu__malloc((size_t)ng * 2 * sizeof(*lm->engs));
            lm->bgroup = tpu__malloc((size_t)(ng + 1) * sizeof(*lm->bgroup));
            lm->cap_engs = lm->engs != NULL && lm->bgroup != NULL ? ng : 0;
            if (lm->cap_engs == 0) {
                tpu__free(lm->engs);
                tpu__free(lm->bgroup);
                lm->engs = NULL;
                lm->bgroup = NULL;
                return TPU_ERR_NO_MEMORY;
            }
        }
        engs = lm->engs;
        start = lm->bgroup;
        for (i = 0; i < nb; i++) {
            int32_t e = lm->batch[i].eng;

            if (lm->estamp[e] == lm->ebatch_id) {
                lm->estamp[e] = lm->ebatch_id + 1; /* listed */
                engs[ne++] = e;
            }
        }
        sort_ids(engs, engs + lm->cap_engs, ne);
        for (g = 0; g < ne; g++) {
            int64_t c = lm->eslot[engs[g]];

            lm->eslot[engs[g]] = sum;
            start[g] = sum;
            sum += c;
        }
        start[ne] = sum;
        lm->ebatch_id++;
        for (i = 0; i < nb; i++) {
            lm->batch2[lm->eslot[lm->batch[i].eng]++] = lm->batch[i];
        }
        for (g = 0; g < ne; g++) {
            if (tpu__linkmodel_sort_group(lm, lm->batch2 + start[g], start[g + 1] - start[g],
                                          sizeof(tpu_lm_batch_t), batch_cmp) != TPU_OK) {
                return TPU_ERR_NO_MEMORY;
            }
        }
    }
    t = lm->batch;
    lm->batch = lm->batch2;
    lm->batch2 = t;
    {
        int64_t cap = lm->cap_batch;

        lm->cap_batch = lm->cap_batch2;
        lm->cap_batch2 = cap;
    }
    return TPU_OK;
}

/*
 * The message starts.  The flows that are ready at one moment on one port are
 * one batch; the port's DMA engine starts its batches one at a time, each taking
 * msg_cost of the engine, in the order they are ready, filling the engine's idle
 * time from the moment a batch is ready.  Ready times are real ones: the flow's
 * ready time for its bytes plus 'off' (the latency of its chain so far), NULL for
 * none.  lm->wait[k] receives how long flow k's start waited.
 */
tpu_status_t tpu__linkmodel_engine_starts(tpu_linkmodel_t *lm, int64_t n, const double *off)
{
    double msg = lm->link.msg_cost;
    int64_t k, nb = 0, i, j;

    if (n > lm->cap_batch) {
        tpu_lm_batch_t *p = tpu__realloc(lm->batch, (size_t)n * sizeof(*p));

        if (p == NULL) {
            return TPU_ERR_NO_MEMORY;
        }
        lm->batch = p;
        lm->cap_batch = n;
    }
    for (k = 0; k < n; k++) {
        /* A flow that crosses no link or DCN port (a reduction on its own chip) has
         * no message to start. */
        if (lm->lat[k] >= 0 && lm->sres[lm->roff[k]] < (lm->classes ? lm->port0 : lm->nic0)) {
            tpu_lm_batch_t *b = &lm->batch[nb++];

            b->eng = lm->eng0 + lm->sres[lm->roff[k]];
            b->st = lm->st[k] + (off != NULL ? off[k] : 0);
            b->k = k;
        }
    }
    if (sort_batches(lm, nb) != TPU_OK) {
        return TPU_ERR_NO_MEMORY;
    }
    for (i = 0; i < nb; i = j) {
        const tpu_lm_batch_t *b = &lm->batch[i];
        double at = tpu__linkmodel_busy_fit(lm, b->eng, b->st, msg);

        if (tpu__linkmodel_busy_add(lm, b->eng, at, at + msg) != TPU_OK) {
            return TPU_ERR_NO_MEMORY;
        }
        for (j = i; j < nb && lm->batch[j].eng == b->eng && lm->batch[j].st == b->st; j++) {
            lm->wait[lm->batch[j].k] = at - b->st;
        }
    }
    return TPU_OK;
}
