/*
 * The replay walk's state and what it records into the report: warnings (each
 * once), the row of each instruction, new collective and op rows, the memo of
 * collectives already timed, and the execution sequence.
 */
#include "replay_state.h"

#include "alloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

tpu_status_t tpu__replay_oom(walker_t *w)
{
    return tpu_err_set(w->err, TPU_ERR_NO_MEMORY, "out of memory replaying module '%s'",
                       w->mod->name);
}

tpu_status_t tpu__replay_warn(walker_t *w, const char *fmt, ...)
{
    tpu_replay_report_t *r = w->rep;
    va_list ap;

    char msg[TPU_REPLAY_WARNING_LEN];
    int k;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    for (k = 0; k < r->nwarnings; k++) {
        if (strcmp(r->warnings[k], msg) == 0) {
            return TPU_OK;
        }
    }
    if (r->nwarnings == w->warncap) {
        int ncap = w->warncap ? w->warncap * 2 : 8;
        void *n = tpu__realloc(r->warnings, (size_t)ncap * TPU_REPLAY_WARNING_LEN);

        if (n == NULL) {
            return tpu__replay_oom(w);
        }
        r->warnings = n;
        w->warncap = ncap;
    }
    memcpy(r->warnings[r->nwarnings], msg, sizeof(msg));
    r->nwarnings++;
    return TPU_OK;
}

/* ---------------------------------------------------------------- rows */

int *tpu__replay_rowslot(walker_t *w, const tpu_hlo_comp_t *c, int i)
{
    int ci = (int)(c - w->mod->comps);

    if (w->rowmap[ci] == NULL) {
        int k;

        w->rowmap[ci] = tpu__malloc((size_t)c->ninstrs * sizeof(int));
        if (w->rowmap[ci] == NULL) {
            return NULL;
        }
        for (k = 0; k < c->ninstrs; k++) {
            w->rowmap[ci][k] = -1;
        }
    }
    return &w->rowmap[ci][i];
}

tpu_replay_coll_t *tpu__replay_new_coll(walker_t *w)
{
    tpu_replay_report_t *r = w->rep;

    if (r->ncolls == w->collcap) {
        int ncap = w->collcap ? w->collcap * 2 : 16;
        void *n = tpu__realloc(r->colls, (size_t)ncap * sizeof(*r->colls));

        if (n == NULL) {
            return NULL;
        }
        r->colls = n;
        w->collcap = ncap;
    }
    memset(&r->colls[r->ncolls], 0, sizeof(r->colls[0]));
    return &r->colls[r->ncolls++];
}

tpu_replay_op_t *tpu__replay_new_op(walker_t *w)
{
    tpu_replay_report_t *r = w->rep;

    if (r->nops == w->opcap) {
        int ncap = w->opcap ? w->opcap * 2 : 16;
        void *n = tpu__realloc(r->ops, (size_t)ncap * sizeof(*r->ops));

        if (n == NULL) {
            return NULL;
        }
        r->ops = n;
        w->opcap = ncap;
    }
    memset(&r->ops[r->nops], 0, sizeof(r->ops[0]));
    return &r->ops[r->nops++];
}

static uint32_t desc_hash(const tpu_coll_desc_t *d)
{
    uint64_t h = 1469598103934665603ULL;
    uint64_t v[6];
    int i;

    v[0] = (uint64_t)d->kind;
    v[1] = d->axes;
    v[2] = d->bytes;
    v[3] = (uint64_t)d->dtype;
    v[4] = (uint64_t)d->op;
    v[5] = (uint64_t)(int64_t)d->shift;
    for (i = 0; i < 6; i++) {
        h = (h ^ v[i]) * 1099511628211ULL;
    }
    return (uint32_t)(h ^ (h >> 32));
}

static int desc_same(const tpu_coll_desc_t *a, const tpu_coll_desc_t *b)
{
    return a->kind == b->kind && a->axes == b->axes && a->bytes == b->bytes &&
           a->dtype == b->dtype && a->op == b->op && a->shift == b->shift;
}

/* A row timed before for the same request; -1 when none. */
int tpu__replay_memo_find(const walker_t *w, const tpu_coll_desc_t *d)
{
    uint32_t h;

    if (w->memo == NULL) {
        return -1;
    }
    for (h = desc_hash(d) & w->memo_mask; w->memo[h] != 0; h = (h + 1) & w->memo_mask) {
        if (desc_same(&w->rep->colls[w->memo[h] - 1].desc, d)) {
            return w->memo[h] - 1;
        }
    }
    return -1;
}

tpu_status_t tpu__replay_memo_add(walker_t *w, int row)
{
    uint32_t h;

    if (w->memo == NULL || (uint32_t)(w->memo_n + 1) * 2 > w->memo_mask + 1) {
        uint32_t size = w->memo ? (w->memo_mask + 1) * 2 : 256, k;
        int32_t *old = w->memo, *nm = tpu__calloc(size, sizeof(int32_t));
        uint32_t old_size = w->memo ? w->memo_mask + 1 : 0;

        if (nm == NULL) {
            return tpu__replay_oom(w);
        }
        w->memo = nm;
        w->memo_mask = size - 1;
        for (k = 0; k < old_size; k++) {
            if (old[k] != 0) {
                for (h = desc_hash(&w->rep->colls[old[k] - 1].desc) & w->memo_mask; w->memo[h] != 0;
                     h = (h + 1) & w->memo_mask) {
                }
                w->memo[h] = old[k];
            }
        }
        tpu__free(old);
    }
    for (h = desc_hash(&w->rep->colls[row].desc) & w->memo_mask; w->memo[h] != 0;
         h = (h + 1) & w->memo_mask) {
    }
    w->memo[h] = row + 1;
    w->memo_n++;
    return TPU_OK;
}

/* Append 'n' entries to the execution sequence: a copy of seq[from, from + n), or 'row' when from <
 * 0. */
tpu_status_t tpu__replay_seq_append(walker_t *w, int64_t from, int64_t n, int32_t row)
{
    tpu_replay_report_t *r = w->rep;
    int64_t k;

    if (!w->record || r->seq_truncated) {
        return TPU_OK;
    }
    if (r->nseq + n > TPU_REPLAY_MAX_SEQ) {
        r->seq_truncated = 1;
        return TPU_OK;
    }
    if (r->nseq + n > w->seqcap) {
        int64_t ncap = w->seqcap ? w->seqcap : 64;
        void *nb;

        while (ncap < r->nseq + n) {
            ncap *= 2;
        }
        nb = tpu__realloc(r->seq, (size_t)ncap * sizeof(int32_t));
        if (nb == NULL) {
            return tpu__replay_oom(w);
        }
        r->seq = nb;
        w->seqcap = ncap;
    }
    for (k = 0; k < n; k++) {
        r->seq[r->nseq + k] = from >= 0 ? r->seq[from + k] : row;
    }
    r->nseq += n;
    return TPU_OK;
}
