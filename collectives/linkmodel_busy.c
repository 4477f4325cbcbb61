/*
 * The busy intervals of the link model's resources (linkmodel.c): every interval
 * in which a resource was busy, sorted, disjoint and merged where they touch,
 * and the queries the walk makes of them (the wait of work that fills the idle
 * gaps, the first idle moment, a gap that fits).
 */
#include "linkmodel_busy.h"

#include "alloc.h"

#include <string.h>

/*
 * Queueing behind the earlier steps.  A resource keeps every interval in which
 * it was busy (sorted, disjoint, merged where they touch).  Work w that reaches
 * it at time t fills its idle gaps from t on: the wait is the busy time it
 * skips before w seconds of idle time have passed.  A step that the schedule
 * orders later but that is ready earlier (the next chunk of a pipeline, or any
 * flow of a schedule turned around in time) is thus not queued behind work that
 * only starts after it.  (An earlier version kept only the last 8 intervals and the
 * oldest two merged, their gap counted as busy: a reversed pipeline lost most of
 * its idle time, test_linkmodel's test_many_gaps.)
 */

/* The busy intervals of resource r: in place, or on the heap once there are more. */
double *tpu__linkmodel_busy_list(const tpu_linkmodel_t *lm, int32_t r)
{
    return lm->ivx[r] != NULL ? lm->ivx[r] : &lm->iv[(size_t)r * 2 * TPU_LM_IV_INLINE];
}

/*
 * The first interval of resource r that ends after t (niv[r] if none).  Work
 * mostly comes after the last interval or near where the resource's previous
 * question landed (its hint): those first, then a search by halves.
 */
int tpu__linkmodel_busy_first_after(const tpu_linkmodel_t *lm, int32_t r, double t)
{
    const double *iv = tpu__linkmodel_busy_list(lm, r);
    int lo = 0, hi = lm->niv[r], h = lm->ivhint[r];

    if (hi == 0 || lm->ivend[r] <= t) {
        return hi;
    }
    if (h < hi && iv[2 * h + 1] > t && (h == 0 || iv[2 * (h - 1) + 1] <= t)) {
        return h;
    }
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;

        if (iv[2 * mid + 1] <= t) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lm->ivhint[r] = lo;
    return lo;
}

double tpu__linkmodel_busy_wait(const tpu_linkmodel_t *lm, int32_t r, double t, double w)
{
    const double *iv = tpu__linkmodel_busy_list(lm, r);
    double q = 0;
    int i;

    for (i = tpu__linkmodel_busy_first_after(lm, r, t); i < lm->niv[r]; i++) {
        double a = iv[2 * i], b = iv[2 * i + 1];

        if (a > t) {
            if (w <= a - t) {
                return q;
            }
            w -= a - t;
            t = a;
        }
        q += b - t;
        t = b;
    }
    return q;
}

/* The first moment at or after t when resource r is idle. */
double tpu__linkmodel_busy_idle(const tpu_linkmodel_t *lm, int32_t r, double t)
{
    const double *iv = tpu__linkmodel_busy_list(lm, r);
    int i = tpu__linkmodel_busy_first_after(lm, r, t);

    /* Intervals that touch are merged: the end of the one holding t is idle. */
    if (i < lm->niv[r] && iv[2 * i] <= t) {
        t = iv[2 * i + 1];
    }
    return t;
}

/* Mark [a, b) busy on resource r; TPU_ERR_NO_MEMORY if its list cannot grow. */
tpu_status_t tpu__linkmodel_busy_add(tpu_linkmodel_t *lm, int32_t r, double a, double b)
{
    double *iv = tpu__linkmodel_busy_list(lm, r);
    int n = lm->niv[r], i, j;

    if (!(b > a)) {
        return TPU_OK;
    }
    if (n > 0 && a == lm->ivend[r]) {
        /* The most common case, from the dense end alone: [a, b) extends the last
         * interval (what the merge below does, without reading the list first). */
        iv[2 * (n - 1) + 1] = b;
        lm->ivend[r] = b;
        return TPU_OK;
    }
    if ((n == 0 || a > lm->ivend[r]) && n < (lm->ivx[r] != NULL ? lm->civ[r] : TPU_LM_IV_INLINE)) {
        /* After every interval, with room: appended. */
        iv[2 * n] = a;
        iv[2 * n + 1] = b;
        lm->niv[r] = n + 1;
        lm->ivend[r] = b;
        return TPU_OK;
    }
    /* The first interval that ends at or after a, and the first that starts after b. */
    for (i = tpu__linkmodel_busy_first_after(lm, r, a); i > 0 && iv[2 * (i - 1) + 1] >= a; i--) {
    }
    for (j = i; j < n && iv[2 * j] <= b; j++) {
    }
    if (j > i) {
        /* [a, b) overlaps or touches intervals i .. j - 1: merge them into i. */
        iv[2 * i] = iv[2 * i] < a ? iv[2 * i] : a;
        iv[2 * i + 1] = iv[2 * (j - 1) + 1] > b ? iv[2 * (j - 1) + 1] : b;
        if (j - i > 1) {
            memmove(iv + 2 * (i + 1), iv + 2 * j, (size_t)(n - j) * 2 * sizeof(double));
        }
        lm->niv[r] = n - (j - i - 1);
        lm->ivend[r] = iv[2 * (lm->niv[r] - 1) + 1];
        return TPU_OK;
    }
    if (n == (lm->ivx[r] != NULL ? lm->civ[r] : TPU_LM_IV_INLINE)) {
        /* Full: the list moves to (a larger) one on the heap. */
        int32_t cap = 2 * n;
        double *p = tpu__realloc(lm->ivx[r], (size_t)cap * 2 * sizeof(double));

        if (p == NULL) {
            return TPU_ERR_NO_MEMORY;
        }
        if (lm->ivx[r] == NULL) {
            memcpy(p, iv, (size_t)n * 2 * sizeof(double));
        }
        lm->ivx[r] = iv = p;
        lm->civ[r] = cap;
    }
    memmove(iv + 2 * (i + 1), iv + 2 * i, (size_t)(n - i) * 2 * sizeof(double));
    iv[2 * i] = a;
    iv[2 * i + 1] = b;
    lm->niv[r] = n + 1;
    lm->ivend[r] = iv[2 * n + 1];
    return TPU_OK;
}

/* The first moment at or after t from which resource r is idle for w seconds. */
double tpu__linkmodel_busy_fit(const tpu_linkmodel_t *lm, int32_t r, double t, double w)
{
    const double *iv = tpu__linkmodel_busy_list(lm, r);
    int i = tpu__linkmodel_busy_first_after(lm, r, t);

    while (i < lm->niv[r] && iv[2 * i] < t + w) {
        if (iv[2 * i + 1] > t) {
            t = iv[2 * i + 1];
        }
        i++;
    }
    return t;
}

void tpu__linkmodel_busy_forget(tpu_linkmodel_t *lm, int32_t r, double t)
{
    double *iv = tpu__linkmodel_busy_list(lm, r);
    int i = tpu__linkmodel_busy_first_after(lm, r, t);

    if (i > 0) {
        memmove(iv, iv + 2 * i, (size_t)(lm->niv[r] - i) * 2 * sizeof(double));
        lm->niv[r] -= i;
        lm->ivhint[r] = 0;
    }
}
