/*
 * The prefetch reader of a real transformer run (see train_prefetch.h).
 *
 * The ring has depth + 1 slots: the one the step uses and 'depth' read ahead,
 * as tf.data's prefetch(depth) buffers 'depth' elements beside the one being
 * consumed.  The reader fills the slots in step order: it waits for a free
 * slot, copies every local chip's window of the step's batch out of the token
 * source, and, with a rate, holds the batch until its tokens took their time
 * at that rate (tokens / rate after it began: a producer makes one batch at a
 * time and only into a free slot, so an idle producer banks no time).  With
 * depth 0 there is no thread: the step reads its batch itself, and the wait is
 * the whole read and its pacing.
 *
 * The loop's wait is the wall time app_prefetch_take blocks.  The reader has
 * SIGINT and SIGTERM blocked, so the signals reach the main thread (whose
 * handler, launch/interrupt.c, ends the process); destroy wakes the reader from
 * any wait, including its pacing, and joins it.
 */
#include "train_prefetch.h"

#include "alloc.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>

struct app_prefetch {
    app_prefetch_opts_t o;
    app_tokens_window_t *win;
    int nslots;
    int32_t *buf;             /* [nslots][2][tokens] */
    const int32_t **xs, **ys; /* [nslots][nwin] */
    int64_t tokens;           /* of one slot, every window */
    int next;                 /* the step taken next */
    int filled;               /* slots ready, from slot next % nslots */
    int stop;
    int thread_started;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t ready, freed; /* a slot filled; a slot freed or stop */
};

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static struct timespec at_s(double t)
{
    struct timespec ts;

    ts.tv_sec = (time_t)t;
    ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

/* Step 'step''s windows into slot 'k'; the time its tokens take at the rate (0: none). */
static double fill(app_prefetch_t *pf, int k, int step)
{
    int i;

    for (i = 0; i < pf->o.nwin; i++) {
        app_tokens_read(pf->o.src, step, &pf->win[i], (int32_t *)pf->xs[k * pf->o.nwin + i],
                        (int32_t *)pf->ys[k * pf->o.nwin + i]);
    }
    return pf->o.tokens_per_s > 0 ? (double)pf->tokens / pf->o.tokens_per_s : 0;
}

static void *reader(void *arg)
{
    app_prefetch_t *pf = arg;
    int s;

    for (s = 0; s < pf->o.steps; s++) {
        double t0, until;
        struct timespec ts;

        pthread_mutex_lock(&pf->mu);
        while (!pf->stop && pf->filled == pf->nslots) {
            pthread_cond_wait(&pf->freed, &pf->mu);
        }
        if (pf->stop) {
            pthread_mutex_unlock(&pf->mu);
            break;
        }
        pthread_mutex_unlock(&pf->mu);
        t0 = now_s();
        /* The slot is the reader's alone: the filled ones (the taken one among them) are others. */
        until = t0 + fill(pf, s % pf->nslots, s);
        ts = at_s(until);
        pthread_mutex_lock(&pf->mu);
        while (!pf->stop && now_s() < until) {
            if (pthread_cond_timedwait(&pf->freed, &pf->mu, &ts) == ETIMEDOUT) {
                break;
            }
        }
        pf->filled++;
        pthread_cond_signal(&pf->ready);
        pthread_mutex_unlock(&pf->mu);
    }
    return NULL;
}

/* Start the reader with SIGINT and SIGTERM blocked in it. */
static tpu_status_t start(app_prefetch_t *pf, tpu_err_t *err)
{
    sigset_t block, old;
    int rc;

    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    rc = pthread_create(&pf->thread, NULL, reader, pf);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        return tpu_err_set(err, TPU_ERR_INTERNAL, "cannot start the prefetch reader: %s",
                           strerror(rc));
    }
    pf->thread_started = 1;
    return TPU_OK;
}

tpu_status_t app_prefetch_create(const app_prefetch_opts_t *o, app_prefetch_t **pf_p,
                                 tpu_err_t *err)
{
    app_prefetch_t *pf = tpu__calloc(1, sizeof(*pf));
    pthread_condattr_t ca;
    int64_t at = 0;
    int k, i;

    if (pf == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "no memory for the prefetch reader");
    }
    pf->o = *o;
    pf->nslots = o->depth < o->steps ? o->depth + 1 : o->steps; /* more would stay empty */
    pf->nslots = pf->nslots < 1 ? 1 : pf->nslots;
    for (i = 0; i < o->nwin; i++) {
        pf->tokens += o->win[i].rows * o->win[i].cols;
    }
    pf->win = tpu__calloc((size_t)o->nwin, sizeof(*pf->win));
    pf->buf = tpu__malloc((size_t)(2 * pf->tokens * pf->nslots) * sizeof(int32_t));
    pf->xs = tpu__calloc((size_t)(2 * o->nwin * pf->nslots), sizeof(*pf->xs));
    if (pf->win == NULL || pf->buf == NULL || pf->xs == NULL) {
        tpu__free(pf->win);
        tpu__free(pf->buf);
        tpu__free(pf->xs);
        tpu__free(pf);
        return tpu_err_set(err, TPU_ERR_NO_MEMORY,
                           "no memory for %d batches of %lld tokens (--prefetch %d)", pf->nslots,
                           (long long)pf->tokens, o->depth);
    }
    memcpy(pf->win, o->win, (size_t)o->nwin * sizeof(*pf->win));
    pf->ys = pf->xs + o->nwin * pf->nslots;
    for (k = 0; k < pf->nslots; k++) {
        for (i = 0; i < o->nwin; i++) {
            pf->xs[k * o->nwin + i] = pf->buf + at;
            pf->ys[k * o->nwin + i] = pf->buf + at + o->win[i].rows * o->win[i].cols;
            at += 2 * o->win[i].rows * o->win[i].cols;
        }
    }
    pthread_mutex_init(&pf->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&pf->freed, &ca);
    pthread_cond_init(&pf->ready, &ca);
    pthread_condattr_destroy(&ca);
    if (o->depth > 0 && o->steps > 0 && start(pf, err) != TPU_OK) {
        app_prefetch_destroy(pf);
        return TPU_ERR_INTERNAL;
    }
    *pf_p = pf;
    return TPU_OK;
}

void app_prefetch_take(app_prefetch_t *pf, const int32_t *const **x_p, const int32_t *const **y_p,
                       double *wait_us_p)
{
    const int k = pf->next % pf->nslots;
    double t0 = now_s();

    if (!pf->thread_started) {
        double until = t0 + fill(pf, k, pf->next);
        struct timespec ts = at_s(until);

        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
        }
    } else {
        pthread_mutex_lock(&pf->mu);
        while (pf->filled == 0) {
            pthread_cond_wait(&pf->ready, &pf->mu);
        }
        pthread_mutex_unlock(&pf->mu);
    }
    *wait_us_p = (now_s() - t0) * 1e6;
    *x_p = pf->xs + k * pf->o.nwin;
    *y_p = pf->ys + k * pf->o.nwin;
}

void app_prefetch_release(app_prefetch_t *pf)
{
    pthread_mutex_lock(&pf->mu);
    pf->next++;
    if (pf->thread_started) {
        pf->filled--;
        pthread_cond_signal(&pf->freed);
    }
    pthread_mutex_unlock(&pf->mu);
}

void app_prefetch_destroy(app_prefetch_t *pf)
{
    if (pf == NULL) {
        return;
    }
    if (pf->thread_started) {
        pthread_mutex_lock(&pf->mu);
        pf->stop = 1;
        pthread_cond_broadcast(&pf->freed);
        pthread_mutex_unlock(&pf->mu);
        pthread_join(pf->thread, NULL);
    }
    pthread_cond_destroy(&pf->ready);
    pthread_cond_destroy(&pf->freed);
    pthread_mutex_destroy(&pf->mu);
    tpu__free(pf->win);
    tpu__free(pf->buf);
    tpu__free(pf->xs);
    tpu__free(pf);
}
