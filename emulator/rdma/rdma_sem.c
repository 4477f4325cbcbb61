/*
 * RDMA semaphores: each holds its signals (a modeled time, the sender, and for a
 * receive the bytes it carries); a wait takes the earliest ones, in an order that
 * does not depend on the host's, and writes the received bytes into their
 * buffers then.
 */
#include "rdma_sem.h"

#include "alloc.h"

#include <string.h>

/* ---- semaphores ---- */

int tpu__rdma_sem_push(sem_t_ *s, const signal_t *sig)
{
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 8;
        signal_t *p = tpu__realloc(s->sig, (size_t)cap * sizeof(*p));

        if (p == NULL) {
            return -1;
        }
        s->sig = p;
        s->cap = cap;
    }
    s->sig[s->n++] = *sig;
    return 0;
}

/* Signal a before b: by modeled time, then by sender, then by its order. */
static int sig_before(const signal_t *a, const signal_t *b)
{
    if (a->t != b->t) {
        return a->t < b->t;
    }
    if (a->src != b->src) {
        return a->src < b->src;
    }
    return a->seq < b->seq;
}

/*
 * Take the 'count' earliest signals of 's' and return the latest time taken.
 * The bytes of the receives taken appear in their buffers now, earliest first:
 * a chip's buffers change only at its own waits, whatever the host's order.
 */
double tpu__rdma_sem_take(sem_t_ *s, int count, void *const *bufs)
{
    double latest = 0;
    int k, i, best;

    for (k = 0; k < count; k++) {
        best = 0;
        for (i = 1; i < s->n; i++) {
            if (sig_before(&s->sig[i], &s->sig[best])) {
                best = i;
            }
        }
        if (s->sig[best].t > latest) {
            latest = s->sig[best].t;
        }
        if (s->sig[best].data != NULL) {
            memcpy((unsigned char *)bufs[s->sig[best].buf] + s->sig[best].off, s->sig[best].data,
                   (size_t)s->sig[best].bytes);
            tpu__free(s->sig[best].data);
        }
        s->sig[best] = s->sig[--s->n];
    }
    return latest;
}
