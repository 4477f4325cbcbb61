/*
 * Processor sharing on the link model's resources (linkmodel.c, "Contention by
 * time overlap"): on a resource whose flows of a step do not all start together
 * with the same bytes, the flows being served share its bandwidth equally, an
 * event loop in virtual time (share()), filling the idle time the earlier steps
 * left.
 */
#include "linkmodel_share.h"

#include "alloc.h"
#include "linkmodel_busy.h"

#include <stdlib.h>
#include <string.h>

static tpu_status_t add_entry(tpu_linkmodel_t *lm, int32_t r, int32_t k, double m, double rem)
{
    tpu_lm_entry_t *e;

    if (lm->nent == lm->cap_ent) {
        int64_t cap = lm->cap_ent ? 2 * lm->cap_ent : 1024;
        tpu_lm_entry_t *p = tpu__realloc(lm->ent, (size_t)cap * sizeof(*p));

        if (p == NULL) {
            return TPU_ERR_NO_MEMORY;
        }
        lm->ent = p;
        lm->cap_ent = cap;
    }
    e = &lm->ent[lm->nent++];
    e->res = r;
    e->k = k;
    e->st = lm->st[k];
    e->end = lm->st[k];
    e->m = m;
    e->rem = rem;
    return TPU_OK;
}

/*
 * Sort one group of 'len' records of 'size' bytes by 'cmp', a total order (so any
 * correct sort gives the same result).  A group comes nearly sorted (records are
 * made in flow order): nothing to do when it is in order, insertion sort when it
 * is short, else a merge of its ascending runs, pairwise, through lm's scratch
 * (a few runs: a few passes, where a full sort would take log2(len) of them).
 */
/* Copy one record of 'size' bytes: the walk's two record sizes as fixed-size copies
 * (inlined), any other by memcpy. */
static void copy_rec(unsigned char *to, const unsigned char *from, size_t size)
{
    if (size == sizeof(tpu_lm_entry_t)) {
        memcpy(to, from, sizeof(tpu_lm_entry_t));
    } else if (size == sizeof(tpu_lm_batch_t)) {
        memcpy(to, from, sizeof(tpu_lm_batch_t));
    } else {
        memcpy(to, from, size);
    }
}

tpu_status_t tpu__linkmodel_sort_group(tpu_linkmodel_t *lm, void *base, int64_t len, size_t size,
                                       int (*cmp)(const void *, const void *))
{
    unsigned char x[64], *v = base, *from, *to, *t;
    int64_t i, j, nrun, r;

    for (i = 1; i < len && cmp(v + (size_t)(i - 1) * size, v + (size_t)i * size) <= 0; i++) {
    }
    if (i >= len) {
        return TPU_OK;
    }
    if (len <= 32 && size <= sizeof(x)) {
        for (; i < len; i++) {
            memcpy(x, v + (size_t)i * size, size);
            for (j = i; j > 0 && cmp(v + (size_t)(j - 1) * size, x) > 0; j--) {
            }
            memmove(v + (size_t)(j + 1) * size, v + (size_t)j * size, (size_t)(i - j) * size);
            memcpy(v + (size_t)j * size, x, size);
        }
        return TPU_OK;
    }
    if (lm->cap_sortbuf < (int64_t)((size_t)len * size) || lm->cap_runs < len + 1) {
        int64_t bytes = (int64_t)((size_t)len * size);

        if (lm->cap_sortbuf < bytes) {
            tpu__free(lm->sortbuf);
            lm->sortbuf = tpu__malloc((size_t)bytes);
            lm->cap_sortbuf = lm->sortbuf != NULL ? bytes : 0;
        }
        if (lm->cap_runs < len + 1) {
            tpu__free(lm->runs);
            lm->runs = tpu__malloc((size_t)(len + 1) * sizeof(*lm->runs));
            lm->cap_runs = lm->runs != NULL ? len + 1 : 0;
        }
        if (lm->sortbuf == NULL || lm->runs == NULL) {
            return TPU_ERR_NO_MEMORY;
        }
    }
    /* The ascending runs: [runs[r], runs[r + 1]). */
    nrun = 0;
    lm->runs[nrun++] = 0;
    for (i = 1; i < len; i++) {
        if (cmp(v + (size_t)(i - 1) * size, v + (size_t)i * size) > 0) {
            lm->runs[nrun++] = i;
        }
    }
    lm->runs[nrun] = len;
    from = v;
    to = lm->sortbuf;
    while (nrun > 1) {
        int64_t out = 0;

        for (r = 0; r < nrun; r += 2) {
            /* Run r and run r + 1 (none past the last: an odd run out is copied). */
            int64_t a = lm->runs[r], am = lm->runs[r + 1], b = am,
                    bm = r + 1 < nrun ? lm->runs[r + 2] : am, o = a;

            /* Ties take the left run first: stable (no two records compare equal). */
            while (a < am && b < bm) {
                if (cmp(from + (size_t)b * size, from + (size_t)a * size) < 0) {
                    copy_rec(to + (size_t)o++ * size, from + (size_t)b++ * size, size);
                } else {
                    copy_rec(to + (size_t)o++ * size, from + (size_t)a++ * size, size);
                }
            }
            memcpy(to + (size_t)o * size, from + (size_t)a * size, (size_t)(am - a) * size);
            o += am - a;
            memcpy(to + (size_t)o * size, from + (size_t)b * size, (size_t)(bm - b) * size);
            lm->runs[out++] = lm->runs[r];
        }
        lm->runs[out] = len;
        nrun = out;
        t = from;
        from = to;
        to = t;
    }
    if (from != v) {
        memcpy(v, from, (size_t)len * size);
    }
    return TPU_OK;
}

static int entry_cmp(const void *pa, const void *pb)
{
    const tpu_lm_entry_t *a = pa, *b = pb;

    if (a->res != b->res) {
        return a->res < b->res ? -1 : 1;
    }
    if (a->st != b->st) {
        return a->st < b->st ? -1 : 1;
    }
    return a->k < b->k ? -1 : a->k > b->k;
}

/*
 * Sort the step's entries by entry_cmp(), grouped by resource: the groups in the
 * order their resources first appear (each resource's drain is its own: the
 * order between groups changes no result), each group by (start, flow),
 * a total order, so the result is the one a full sort gives.  Entries come in
 * flow order, so a group is nearly sorted already: insertion sort, or qsort for
 * a large group.
 */
static tpu_status_t sort_entries(tpu_linkmodel_t *lm)
{
    int64_t e, nb = 0, g;
    tpu_lm_entry_t *t;

    int64_t cap;

    if (lm->cap_ent2 < lm->nent) {
        tpu__free(lm->ent2);
        lm->cap_ent2 = 0;
        lm->ent2 = tpu__malloc((size_t)lm->cap_ent * sizeof(*lm->ent2));
        if (lm->ent2 == NULL) {
            return TPU_ERR_NO_MEMORY;
        }
        lm->cap_ent2 = lm->cap_ent;
    }
    if (lm->cap_bstart < lm->nent + 1) {
        tpu__free(lm->bstart);
        lm->cap_bstart = 0;
        lm->bstart = tpu__malloc((size_t)(lm->cap_ent + 1) * sizeof(*lm->bstart));
        if (lm->bstart == NULL) {
            return TPU_ERR_NO_MEMORY;
        }
        lm->cap_bstart = lm->cap_ent + 1;
    }
    if (lm->slot == NULL) {
        lm->slot = tpu__malloc((size_t)lm->nres * sizeof(*lm->slot));
        if (lm->slot == NULL) {
            return TPU_ERR_NO_MEMORY;
        }
    }
    /* Every entry's resource is mixed (1); 2 marks it seen, with its group. */
    for (e = 0; e < lm->nent; e++) {
        int32_t r = lm->ent[e].res;

        if (lm->mixed[r] != 2) {
            lm->mixed[r] = 2;
            lm->slot[r] = (int32_t)nb;
            lm->bstart[nb++] = 0;
        }
        lm->bstart[lm->slot[r]]++;
    }
    for (g = 0, e = 0; g < nb; g++) {
        int64_t c = lm->bstart[g];

        lm->bstart[g] = e;
        e += c;
    }
    lm->bstart[nb] = e;
    for (e = 0; e < lm->nent; e++) {
        lm->ent2[lm->bstart[lm->slot[lm->ent[e].res]]++] = lm->ent[e];
    }
    for (g = nb; g > 0; g--) {
        lm->bstart[g] = lm->bstart[g - 1];
    }
    lm->bstart[0] = 0;
    for (g = 0; g < nb; g++) {
        if (tpu__linkmodel_sort_group(lm, lm->ent2 + lm->bstart[g],
                                      lm->bstart[g + 1] - lm->bstart[g], sizeof(tpu_lm_entry_t),
                                      entry_cmp) != TPU_OK) {
            return TPU_ERR_NO_MEMORY;
        }
    }
    t = lm->ent;
    lm->ent = lm->ent2;
    lm->ent2 = t;
    cap = lm->cap_ent;
    lm->cap_ent = lm->cap_ent2;
    lm->cap_ent2 = cap;
    return TPU_OK;
}

/* Keep [a, b) as served interval number i of share(). */
static tpu_status_t keep_seg(tpu_linkmodel_t *lm, int64_t i, double a, double b)
{
    if (i >= lm->cap_segs) {
        int64_t cap = lm->cap_segs ? 2 * lm->cap_segs : 64;
        double *q = tpu__realloc(lm->segs, (size_t)cap * 2 * sizeof(*q));

        if (q == NULL) {
            return TPU_ERR_NO_MEMORY;
        }
        lm->segs = q;
        lm->cap_segs = cap;
    }
    lm->segs[2 * i] = a;
    lm->segs[2 * i + 1] = b;
    return TPU_OK;
}

/* The heap of share(): entry indices by finish tag ('rem' once admitted), least first. */
static void heap_up(int64_t *h, const tpu_lm_entry_t *v, int64_t i)
{
    int64_t x = h[i];

    while (i > 0 && v[h[(i - 1) / 2]].rem > v[x].rem) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = x;
}

static void heap_down(int64_t *h, int64_t n, const tpu_lm_entry_t *v)
{
    int64_t i = 0, x = h[0];

    for (;;) {
        int64_t c = 2 * i + 1;

        if (c >= n) {
            break;
        }
        if (c + 1 < n && v[h[c + 1]].rem < v[h[c]].rem) {
            c++;
        }
        if (v[h[c]].rem >= v[x].rem) {
            break;
        }
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
}

/*
 * Processor sharing on resource r of the step's entries v[0 .. len) (sorted by
 * start): every copy of every entry that has started and not finished gets an
 * equal share of the bandwidth (an entry of weight m is m copies: the h
 * translates of a representative's flow that cross one link of a class), and
 * nothing is served while the resource is busy with an earlier step's work (its
 * intervals).  Each entry's 'end' is when its bytes are through; the intervals
 * served are added to the resource's busy intervals.  An event loop over starts,
 * finishes and the edges of busy intervals; the same arithmetic on the same
 * values in every mode, so the translates of a flow and the representative's
 * entry that stands for them end at the same moment, bit for bit.
 */
static tpu_status_t share(tpu_linkmodel_t *lm, int32_t r, tpu_lm_entry_t *v, int64_t len)
{
    const double *iv = tpu__linkmodel_busy_list(lm, r);
    /* V: the seconds of full bandwidth one copy has had since the first start (it
     * grows at 1/M per second, M the copies being served); an entry admitted at V
     * with 'rem' seconds to go is through when V reaches its tag V + rem. */
    double t = v[0].st, V = 0, M = 0, seg = -1;
    int64_t next = 0, nact = 0, i, nseg = 0, *h;
    int bi = tpu__linkmodel_busy_first_after(lm, r, t), niv = lm->niv[r];

    if (lm->cap_act < len) {
        int64_t *p = tpu__realloc(lm->act, (size_t)len * sizeof(*p));

        if (p == NULL) {
            return TPU_ERR_NO_MEMORY;
        }
        lm->act = p;
        lm->cap_act = len;
    }
    h = lm->act;
    while (next < len || nact > 0) {
        double tag, tfin, tblk, tarr, tn;

        while (next < len && v[next].st <= t) {
            v[next].rem = V + v[next].rem;
            h[nact] = next;
            heap_up(h, v, nact++);
            M += v[next].m;
            next++;
        }
        if (nact == 0) {
            /* Idle until the next entry starts: the interval served so far ends here. */
            if (seg >= 0 && t > seg && keep_seg(lm, nseg++, seg, t) != TPU_OK) {
                return TPU_ERR_NO_MEMORY;
            }
            seg = -1;
            t = v[next].st;
            continue;
        }
        while (bi < niv && iv[2 * bi + 1] <= t) {
            bi++;
        }
        if (bi < niv && iv[2 * bi] <= t) {
            /* An earlier step's work holds the resource until the end of the interval. */
            if (seg >= 0 && t > seg && keep_seg(lm, nseg++, seg, t) != TPU_OK) {
                return TPU_ERR_NO_MEMORY;
            }
            seg = -1;
            t = iv[2 * bi + 1];
            continue;
        }
        if (seg < 0) {
            seg = t;
        }
        tag = v[h[0]].rem;
        tfin = tag > V ? t + (tag - V) * M : t;
        tblk = bi < niv ? iv[2 * bi] : tfin;
        tarr = next < len ? v[next].st : tfin;
        if (tfin <= tblk && tfin <= tarr) {
            /* The least tags are through; the others are on at the same rate. */
            t = tfin;
            V = tag > V ? tag : V;
            while (nact > 0 && v[h[0]].rem <= tag) {
                v[h[0]].end = t;
                M -= v[h[0]].m;
                h[0] = h[--nact];
                if (nact > 0) {
                    heap_down(h, nact, v);
                }
            }
            continue;
        }
        tn = tblk < tarr ? tblk : tarr;
        V += (tn - t) / M;
        t = tn;
    }
    if (seg >= 0 && t > seg && keep_seg(lm, nseg++, seg, t) != TPU_OK) {
        return TPU_ERR_NO_MEMORY;
    }
    for (i = 0; i < nseg; i++) {
        if (tpu__linkmodel_busy_add(lm, r, lm->segs[2 * i], lm->segs[2 * i + 1]) != TPU_OK) {
            return TPU_ERR_NO_MEMORY;
        }
    }
    return TPU_OK;
}

/*
 * The resources whose flows of the step do not all start together with the same
 * bytes: processor sharing (share()); a flow's latest end there goes to md[k].
 */
tpu_status_t tpu__linkmodel_drain_mixed(tpu_linkmodel_t *lm, const tpu_flow_t *flows, int64_t n)
{
    int64_t k, a = 0, b, x;
    int i, m;

    lm->nent = 0;
    for (k = 0; k < n; k++) {
        const int32_t *rres = lm->sres + lm->roff[k];
        const double *rw = lm->sw + lm->roff[k];
        double bytes = (double)tpu__span_bytes(&flows[k].span);

        if (lm->lat[k] < 0) {
            continue;
        }
        m = (int)(lm->roff[k + 1] - lm->roff[k]);
        for (i = 0; i < m; i++) {
            int32_t r = rres[i];

            /* Copies: bytes x hops in representative mode, one flow otherwise. */
            if (lm->mixed[r] && lm->bw[r] > 0 &&
                add_entry(lm, r, (int32_t)k, rw[i] / bytes, bytes / lm->bw[r]) != TPU_OK) {
                return TPU_ERR_NO_MEMORY;
            }
        }
    }
    if (sort_entries(lm) != TPU_OK) {
        return TPU_ERR_NO_MEMORY;
    }
    while (a < lm->nent) {
        int32_t r = lm->ent[a].res;

        for (b = a; b < lm->nent && lm->ent[b].res == r; b++) {
        }
        if (share(lm, r, lm->ent + a, b - a) != TPU_OK) {
            return TPU_ERR_NO_MEMORY;
        }
        for (x = a; x < b; x++) {
            int32_t kx = lm->ent[x].k;
            double d = lm->ent[x].end - lm->st[kx];

            if (lm->ent[x].end > lm->nfree[r]) {
                lm->nfree[r] = lm->ent[x].end;
            }
            if (d > lm->md[kx]) {
                lm->md[kx] = d;
            }
        }
        a = b;
    }
    return TPU_OK;
}
