/*
 * The transformer's tokens for a real run (see train_tokens.h).  The files are
 * mapped, not read: a rank copies its window of each step's batch out of the
 * mapping (the prefetch reader, train_prefetch.c, does it ahead of the step),
 * so a rank's memory holds its share of the batch, not the dataset.  The ids a
 * rank reads are checked once, before the first step, so a bad id is one line
 * at the start and not a failure in the middle of the run.  The synthetic task
 * is made whole on every rank (4 B short sequences).
 */
#include "train_tokens.h"

#include "alloc.h"

#include <string.h>

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

tpu_status_t app_tokens_synth(app_tokens_t *t, const tpu_xfmr_config_t *m, uint64_t seed,
                              tpu_err_t *err)
{
    const int64_t S = m->seq, V = m->vocab, n = 4 * m->batch;
    uint64_t s = seed * 0x2545f4914f6cdd1dull + 24;
    int64_t b, i;

    memset(t, 0, sizeof(*t));
    t->sx = tpu__malloc((size_t)(n * S) * sizeof(int32_t));
    t->sy = tpu__malloc((size_t)(n * S) * sizeof(int32_t));
    if (t->sx == NULL || t->sy == NULL) {
        app_tokens_fini(t);
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "no memory for the synthetic tokens");
    }
    for (b = 0; b < n; b++) {
        int64_t a = (int64_t)(splitmix(&s) % (uint64_t)V), d = 1 + (int64_t)(splitmix(&s) % 4);

        for (i = 0; i < S; i++) {
            t->sx[b * S + i] = (int32_t)((a + i * d) % V);
            t->sy[b * S + i] = (int32_t)((a + (i + 1) * d) % V);
        }
    }
    t->x = t->sx;
    t->y = t->sy;
    t->rows = n;
    t->seq = S;
    t->batch = m->batch;
    return TPU_OK;
}

/* A token file mapped: int32 or int64 [rows, S]. */
static tpu_status_t map_tokens(const char *path, const char *what, int64_t seq, tpu_npy_t *f,
                               tpu_err_t *err)
{
    tpu_status_t status = tpu_npy_map(path, f, err);

    if (status == TPU_OK &&
        (f->type == TPU_NPY_F32 || f->ndim != 2 || f->shape[1] != seq || f->shape[0] < 1)) {
        status = tpu_err_set(err, TPU_ERR_INVALID,
                             "%s: %s must be int32 token ids of shape [rows, %lld] (--seq), got "
                             "%s of %d dimensions",
                             path, what, (long long)seq, tpu_npy_type_name(f->type), f->ndim);
    }
    return status;
}

tpu_status_t app_tokens_open(app_tokens_t *t, const char *data, const char *labels,
                             const tpu_xfmr_config_t *m, tpu_err_t *err)
{
    tpu_status_t status;

    memset(t, 0, sizeof(*t));
    status = map_tokens(data, "the tokens", m->seq, &t->fx, err);
    if (status == TPU_OK) {
        status = map_tokens(labels, "the targets", m->seq, &t->fy, err);
    }
    if (status == TPU_OK && t->fy.shape[0] != t->fx.shape[0]) {
        status = tpu_err_set(err, TPU_ERR_INVALID, "%s has %lld rows but %s has %lld", labels,
                             (long long)t->fy.shape[0], data, (long long)t->fx.shape[0]);
    }
    if (status == TPU_OK && t->fx.shape[0] < m->batch) {
        status = tpu_err_set(err, TPU_ERR_INVALID,
                             "%s has %lld rows, fewer than one batch of %lld (--batch)", data,
                             (long long)t->fx.shape[0], (long long)m->batch);
    }
    if (status != TPU_OK) {
        app_tokens_fini(t);
        return status;
    }
    t->x = t->fx.data;
    t->y = t->fy.data;
    t->wx = t->fx.type == TPU_NPY_I64;
    t->wy = t->fy.type == TPU_NPY_I64;
    t->rows = t->fx.shape[0];
    t->seq = m->seq;
    t->batch = m->batch;
    return TPU_OK;
}

/* Id k of 'ids' as int32 (an int64 out of int32 reads -1: outside every vocabulary). */
static int32_t id_at(const void *ids, int wide, int64_t k)
{
    int64_t v;

    if (!wide) {
        return ((const int32_t *)ids)[k];
    }
    v = ((const int64_t *)ids)[k];
    return v < INT32_MIN || v > INT32_MAX ? -1 : (int32_t)v;
}

/* Rows r0 + [0, w->rows) of 'ids', w's columns, in [0, vocab). */
static tpu_status_t check_rows(const app_tokens_t *t, const void *ids, int wide, int64_t r0,
                               const app_tokens_window_t *w, int64_t vocab, const char *path,
                               tpu_err_t *err)
{
    int64_t r, c;

    for (r = r0 + w->row0; r < r0 + w->row0 + w->rows; r++) {
        for (c = w->col0; c < w->col0 + w->cols; c++) {
            int32_t v = id_at(ids, wide, r * t->seq + c);

            if (v < 0 || v >= vocab) {
                return tpu_err_set(err, TPU_ERR_INVALID,
                                   "%s: token id %d at row %lld, column %lld is outside the "
                                   "vocabulary [0, %lld)",
                                   path, (int)v, (long long)r, (long long)c, (long long)vocab);
            }
        }
    }
    return TPU_OK;
}

tpu_status_t app_tokens_check(const app_tokens_t *t, const app_tokens_window_t *w, int steps,
                              int64_t vocab, const char *data, const char *labels, tpu_err_t *err)
{
    const int64_t nb = t->rows / t->batch, n = steps < nb ? steps : nb;
    int64_t s;
    int k;

    for (k = 0; k < 2; k++) {
        for (s = 0; s < n; s++) {
            tpu_status_t status = check_rows(t, k == 0 ? t->x : t->y, k == 0 ? t->wx : t->wy,
                                             tpu_xfmr_batch_row(t->rows, t->batch, s), w, vocab,
                                             k == 0 ? data : labels, err);

            if (status != TPU_OK) {
                return status;
            }
        }
    }
    return TPU_OK;
}

void app_tokens_read(const app_tokens_t *t, int64_t step, const app_tokens_window_t *w, int32_t *x,
                     int32_t *y)
{
    const int64_t r0 = tpu_xfmr_batch_row(t->rows, t->batch, step) + w->row0;
    int64_t r, c;

    for (r = 0; r < w->rows; r++) {
        const int64_t at = (r0 + r) * t->seq + w->col0;

        for (c = 0; c < w->cols; c++) {
            x[r * w->cols + c] = id_at(t->x, t->wx, at + c);
            y[r * w->cols + c] = id_at(t->y, t->wy, at + c);
        }
    }
}

void app_tokens_fini(app_tokens_t *t)
{
    tpu_npy_fini(&t->fx);
    tpu_npy_fini(&t->fy);
    tpu__free(t->sx);
    tpu__free(t->sy);
    memset(t, 0, sizeof(*t));
}
