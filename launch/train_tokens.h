/*
 * The transformer's tokens for a real run (train --model transformer): the
 * --data and --labels files mapped (only the pages a rank reads are read) or
 * the synthetic task, and a chip's window of a step's batch copied out of them.
 * Private to launch/.
 */
#ifndef APP_TRAIN_TOKENS_H
#define APP_TRAIN_TOKENS_H

#include "tpu/npy.h"
#include "tpu/transformer.h"

#include <stdint.h>

/* A chip's window of the global batch [B, S] (tpu_xfmr_pod_shard). */
typedef struct app_tokens_window {
    int64_t row0, rows, col0, cols;
} app_tokens_window_t;

/* The token source: the files' ids or the synthetic ones, [rows, seq] each. */
typedef struct app_tokens {
    tpu_npy_t fx, fy;  /* the mapped files (zero: synthetic) */
    const void *x, *y; /* the ids: int32, or int64 when wx (x), wy (y) */
    int wx, wy;
    int64_t rows, seq, batch;
    int32_t *sx, *sy; /* the synthetic task's (owned) */
} app_tokens_t;

/*
 * Map --data 'data' and --labels 'labels' for 'm' (seq columns, batch rows a
 * step): int32 or int64 [rows, seq], the same rows, at least one batch.  The
 * ids are checked by app_tokens_check.  Free with app_tokens_fini.
 */
tpu_status_t app_tokens_open(app_tokens_t *t, const char *data, const char *labels,
                             const tpu_xfmr_config_t *m, tpu_err_t *err);
/*
 * The synthetic task of train_xfmr.c from 'seed': 4 B progressions modulo V,
 * x[i] = (a + i d) mod V, a random in [0, V), d in 1..4, y[i] = x[i + 1].
 */
tpu_status_t app_tokens_synth(app_tokens_t *t, const tpu_xfmr_config_t *m, uint64_t seed,
                              tpu_err_t *err);
/*
 * Every id window 'w' reads in the batches of 'steps' steps is in [0, vocab);
 * else TPU_ERR_INVALID naming the file, the id, its row and column.
 */
tpu_status_t app_tokens_check(const app_tokens_t *t, const app_tokens_window_t *w, int steps,
                              int64_t vocab, const char *data, const char *labels, tpu_err_t *err);
/* Step 'step''s window 'w' into x and y ([w->rows, w->cols] int32 each). */
void app_tokens_read(const app_tokens_t *t, int64_t step, const app_tokens_window_t *w, int32_t *x,
                     int32_t *y);
/* Unmap or free; a zeroed 't' is a no-op. */
void app_tokens_fini(app_tokens_t *t);

#endif /* APP_TRAIN_TOKENS_H */
