/*
 * The input pipeline of a real transformer run: a reader thread fills a
 * bounded ring of --prefetch batches (each local chip's window of a step's
 * batch, read from the token source) ahead of the training loop, at the
 * producer's --input-rate, and the loop's wait for each batch is measured.
 * Private to launch/.
 */
#ifndef APP_TRAIN_PREFETCH_H
#define APP_TRAIN_PREFETCH_H

#include "tpu/status.h"

#include "train_tokens.h"

typedef struct app_prefetch app_prefetch_t;

typedef struct app_prefetch_opts {
    const app_tokens_t *src;        /* borrowed until app_prefetch_destroy */
    int nwin;                       /* the local chips */
    const app_tokens_window_t *win; /* [nwin], copied */
    int depth;                      /* batches read ahead; 0: read when taken, no thread */
    int steps;                      /* batches in all, steps 0 .. steps - 1 in order */
    double tokens_per_s;            /* this process's producer (0: unlimited) */
} app_prefetch_opts_t;

/*
 * Start the pipeline (the reader thread, with depth >= 1, starts reading step
 * 0's batch at once).  Destroy with app_prefetch_destroy.
 * @return TPU_OK, TPU_ERR_NO_MEMORY, TPU_ERR_INTERNAL (no thread).
 */
tpu_status_t app_prefetch_create(const app_prefetch_opts_t *o, app_prefetch_t **pf_p,
                                 tpu_err_t *err);
/*
 * The next step's batch: x_p[0][i], y_p[0][i] local chip i's window, valid
 * until app_prefetch_release; '*wait_us_p' the wall time the caller waited for
 * it (reading and pacing included with depth 0).
 */
void app_prefetch_take(app_prefetch_t *pf, const int32_t *const **x_p, const int32_t *const **y_p,
                       double *wait_us_p);
/* The batch taken last is done with: its slot takes a later batch. */
void app_prefetch_release(app_prefetch_t *pf);
/* Stop the reader (at once, also in the middle of its pacing) and free; NULL is a no-op. */
void app_prefetch_destroy(app_prefetch_t *pf);

#endif /* APP_TRAIN_PREFETCH_H */
