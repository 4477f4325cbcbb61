/*
 * The machinery of the collectives that go through the memory the chips of one
 * node share (the transport's shm_region: an MPI-3 shared window) instead of
 * messages, when every member of the chip's group is on its node: psum
 * (shm_psum.c), all-gather (shm_all_gather.c), reduce-scatter
 * (shm_reduce_scatter.c).
 *
 * Each chip's region starts with a control block (its phase counter, stamped
 * with the call number, its call signature, and the chips that read its areas
 * in its last call), then its data areas (psum: an input and a result area
 * of half the rest each; the others: one input area).  A call:
 *
 *   begin: wait until every reader of my areas in my last call has published
 *     its end of that call (or any later phase): they may be another group;
 *     then write my call's signature
 *   phases: fill my areas -> publish k -> wait for every member's k (the first
 *     time: check its call) -> read the members' areas -> publish k + 1 ...
 *   end: remember the phase my readers publish last (the next call waits for it)
 *
 * The one-round exchange (tpu__shm_exchange) is that loop over pieces of the
 * buffer, two phases a piece, with no wait after the last piece's second phase.
 *
 * Cost: one poll of n - 1 counters per phase; no message, no MPI call.
 *
 * Counters are per chip and stamped with the call number ((call + 1) << 32 |
 * phase), stored with release and read with acquire: a chip left behind by a
 * failed call never looks like the next call, and one found in a later call is
 * a mismatch.  Every wait polls (spin, then sched_yield, then short sleeps),
 * calls the caller's on_wait with the chip it waits for, and ends at the
 * caller's timeout naming that chip.  Restrictions: one local chip (the mpi
 * transport), the whole group on the node, increasing call numbers (else the
 * caller takes the message path; every chip decides alike).
 */
#include "shm.h"

#include "tpu/dtype.h"

#include "alloc.h"
#include "clock.h"
#include "exec_sig.h"
#include "plan.h"
#include "reduce.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* The control block's room at the start of a region (at least: then the list of
 * the last call's readers, one int32 per chip of the pod). */
#define SHM_HDR 512
/* Polls before the first yield, and yields before short sleeps. */
#define SPIN   64
#define YIELDS 20000

struct shm_ctl {
    _Atomic uint64_t seq; /* (call + 1) << 32 | phase, stored by the owner (release) */
    /* The owner's own: its last call + 1; the phase every reader of its areas in
     * that call publishes when done with them, and how many readers there were
     * (their chips follow the control block). */
    uint64_t last, pend_want;
    int32_t npend;
    unsigned char pad[36];
    tpu_call_sig_t sig; /* the owner's call, written before its first phase */
};

_Static_assert(sizeof(shm_ctl_t) <= SHM_HDR, "the control block fits its room");

void tpu__shm_destroy(tpu_shm_t *s)
{
    if (s == NULL) {
        return;
    }
    tpu__free(s->chips);
    tpu__free(s->ctl);
    tpu__free(s->in);
    tpu__free(s->res);
    tpu__free(s->acc);
    tpu__free(s);
}

tpu_status_t tpu__shm_create(const tpu_coll_plan_t *plan, tpu_xport_t *x, int first_zero,
                             tpu_shm_t **s_p)
{
    tpu_coll_kind_t kind = plan->desc.kind;
    int n = plan->group, g, me;
    size_t bytes = 0, b = 0;
    int64_t area, in_cap, piece, total,
        hdr = ((int64_t)SHM_HDR + 4 * (int64_t)x->nchips + 63) & ~63;
    tpu_shm_t *s;
    shm_ctl_t probe;

    *s_p = NULL;
    if ((kind != TPU_COLL_PSUM && kind != TPU_COLL_ALL_GATHER && kind != TPU_COLL_REDUCE_SCATTER) ||
        n < 2 || plan->desc.bytes == 0 || x->nlocal != 1 ||
        x->ops->size < sizeof(tpu_xport_ops_t) || x->ops->shm_region == NULL ||
        !atomic_is_lock_free(&probe.seq)) {
        return TPU_ERR_UNSUPPORTED;
    }
    me = x->local_chips[0];
    if (x->ops->shm_region(x, me, &bytes) == NULL || (int64_t)bytes < hdr + (int64_t)256 * n) {
        return TPU_ERR_UNSUPPORTED;
    }
    area = (int64_t)bytes - hdr;
    in_cap = kind == TPU_COLL_PSUM ? (area / 2) & ~(int64_t)63 : area & ~(int64_t)63;
    if (kind == TPU_COLL_PSUM) {
        piece = first_zero ? in_cap : in_cap / (64 * n) * (64 * n);
        total = (int64_t)plan->desc.bytes;
    } else {
        /* all-gather: pieces of my block; reduce-scatter: of every block at once. */
        piece = kind == TPU_COLL_ALL_GATHER ? in_cap : in_cap / n & ~(int64_t)63;
        total = plan->shard;
    }
    if (piece < 64 || (total + piece - 1) / piece >= ((int64_t)1 << 30)) {
        return TPU_ERR_UNSUPPORTED;
    }
    for (g = 0; g < n; g++) {
        if (x->ops->shm_region(x, tpu__plan_member(plan, me, g), &b) == NULL || b != bytes) {
            return TPU_ERR_UNSUPPORTED; /* a member elsewhere: the messages */
        }
    }
    s = tpu__calloc(1, sizeof(*s));
    if (s == NULL) {
        return TPU_ERR_NO_MEMORY;
    }
    s->plan = plan;
    s->x = x;
    s->n = n;
    s->mi = tpu__plan_member_index(plan, me);
    s->one_round = first_zero;
    s->wide = plan->data_scale == 2;
    s->esz = tpu_dtype_size(plan->desc.dtype);
    s->piece = piece;
    s->chips = tpu__malloc((size_t)n * sizeof(*s->chips));
    s->ctl = tpu__malloc((size_t)n * sizeof(*s->ctl));
    s->in = tpu__malloc((size_t)n * sizeof(*s->in));
    s->res = tpu__malloc((size_t)n * sizeof(*s->res));
    s->acc = s->wide ? tpu__malloc((size_t)piece * 2) : NULL;
    if (s->chips == NULL || s->ctl == NULL || s->in == NULL || s->res == NULL ||
        (s->wide && s->acc == NULL)) {
        tpu__shm_destroy(s);
        return TPU_ERR_NO_MEMORY;
    }
    for (g = 0; g < n; g++) {
        unsigned char *base;

        s->chips[g] = tpu__plan_member(plan, me, g);
        base = x->ops->shm_region(x, s->chips[g], &b);
        s->ctl[g] = (shm_ctl_t *)base;
        s->in[g] = base + hdr;
        s->res[g] = base + hdr + in_cap;
    }
    *s_p = s;
    return TPU_OK;
}

int tpu__shm_usable(const tpu_shm_t *s, uint64_t call)
{
    return call < 0xfffffffeull && call + 1 > s->ctl[s->mi]->last;
}

void tpu__shm_publish(tpu_shm_t *s, uint64_t v)
{
    atomic_store_explicit(&s->ctl[s->mi]->seq, v, memory_order_release);
}

/*
 * One round of a wait for chip 'chip' that found nothing: spin, then yield, then
 * nap; past the deadline, the watchdog's error ('why' ends its message).
 */
static tpu_status_t back_off(tpu_shm_t *s, long rounds, int chip, const char *why,
                             const tpu_coll_run_opts_t *opts, tpu_err_t *err)
{
    if (rounds <= SPIN) {
        return TPU_OK;
    }
    if (s->deadline > 0 && tpu__now_s() > s->deadline) {
        char a[64], b[64];

        tpu__exec_chip_str(&s->plan->topo, s->chips[s->mi], a, sizeof(a));
        tpu__exec_chip_str(&s->plan->topo, chip, b, sizeof(b));
        return tpu_err_set(err, TPU_ERR_TIMEOUT,
                           "watchdog: %s waited %.0f s in %s (call %llu) for %s%s", a,
                           opts->timeout_s, s->plan->name, (unsigned long long)opts->call, b, why);
    }
    if (opts->on_wait != NULL) {
        opts->on_wait(opts->on_wait_arg, chip);
    }
    if (rounds < SPIN + YIELDS) {
        sched_yield();
    } else {
        struct timespec ts = {0, 100000L};

        nanosleep(&ts, NULL);
    }
    return TPU_OK;
}

/* Wait until member 'g' has published 'want' (or a later phase of the same call). */
static tpu_status_t wait_one(tpu_shm_t *s, int g, uint64_t want, const tpu_coll_run_opts_t *opts,
                             tpu_err_t *err)
{
    _Atomic uint64_t *seq = &s->ctl[g]->seq;
    long rounds = 0;
    tpu_status_t status;

    for (;;) {
        uint64_t v = atomic_load_explicit(seq, memory_order_acquire);
        char a[64], b[64];

        if ((v >> 32) == (want >> 32) && v >= want) {
            return TPU_OK;
        }
        if ((v >> 32) > (want >> 32)) {
            tpu__exec_chip_str(&s->plan->topo, s->chips[s->mi], a, sizeof(a));
            tpu__exec_chip_str(&s->plan->topo, s->chips[g], b, sizeof(b));
            return tpu_err_set(err, TPU_ERR_MISMATCH,
                               "collective mismatch: %s is in call %llu of %s, but %s is "
                               "already in call %llu; they differ in call number",
                               a, (unsigned long long)(want >> 32) - 1, s->plan->name, b,
                               (unsigned long long)(v >> 32) - 1);
        }
        status = back_off(s, ++rounds, s->chips[g], "", opts, err);
        if (status != TPU_OK) {
            return status;
        }
    }
}

/*
 * Before this chip's areas are written again: every reader of them in its last
 * call (the members of that call's group, which may be another group) has
 * published that it is done with them, in that call or any later one.  Then
 * this call's signature.
 */
tpu_status_t tpu__shm_begin(tpu_shm_t *s, const tpu_call_sig_t *sig,
                            const tpu_coll_run_opts_t *opts, tpu_err_t *err)
{
    shm_ctl_t *mine = s->ctl[s->mi];
    const int32_t *chips = (const int32_t *)((const unsigned char *)mine + SHM_HDR);
    int i;

    s->deadline = opts->timeout_s > 0 ? tpu__now_s() + opts->timeout_s : 0;
    for (i = 0; i < mine->npend; i++) {
        size_t b;
        shm_ctl_t *peer = s->x->ops->shm_region(s->x, chips[i], &b);
        long rounds = 0;

        while (atomic_load_explicit(&peer->seq, memory_order_acquire) < mine->pend_want) {
            tpu_status_t status = back_off(s, ++rounds, chips[i],
                                           " (to finish reading its previous call)", opts, err);

            if (status != TPU_OK) {
                return status;
            }
        }
    }
    mine->npend = 0;
    mine->last = sig->call + 1;
    memcpy(&mine->sig, sig, sizeof(*sig));
    return TPU_OK;
}

/* The others may still read my areas: the next call waits for their 'want' first. */
void tpu__shm_end(tpu_shm_t *s, uint64_t want)
{
    shm_ctl_t *mine = s->ctl[s->mi];
    int g;

    for (g = 0; g < s->n; g++) {
        ((int32_t *)((unsigned char *)mine + SHM_HDR))[g] = s->chips[g];
    }
    mine->pend_want = want;
    mine->npend = s->n;
}

tpu_status_t tpu__shm_wait_all(tpu_shm_t *s, const tpu_call_sig_t *sig, uint64_t want, int check,
                               const tpu_coll_run_opts_t *opts, tpu_err_t *err)
{
    int g;

    for (g = 0; g < s->n; g++) {
        tpu_status_t status;
        tpu_call_sig_t peer;
        char diff[128];

        if (g == s->mi) {
            continue;
        }
        status = wait_one(s, g, want, opts, err);
        if (status != TPU_OK) {
            return status;
        }
        if (!check) {
            continue;
        }
        memcpy(&peer, &s->ctl[g]->sig, sizeof(peer));
        if (tpu__exec_sig_diff(sig, &peer, diff, sizeof(diff))) {
            char a[64], b[64], sa[192], sb[192];

            tpu__exec_chip_str(&s->plan->topo, s->chips[s->mi], a, sizeof(a));
            tpu__exec_chip_str(&s->plan->topo, s->chips[g], b, sizeof(b));
            tpu__exec_sig_str(sig, sa, sizeof(sa));
            tpu__exec_sig_str(&peer, sb, sizeof(sb));
            return tpu_err_set(err, TPU_ERR_MISMATCH,
                               "collective mismatch: %s is in %s, but %s is in %s; they differ "
                               "in %s",
                               a, sa, b, sb, diff);
        }
    }
    return TPU_OK;
}

tpu_status_t tpu__shm_exchange(tpu_shm_t *s, const tpu_call_sig_t *sig,
                               const tpu_coll_run_opts_t *opts, int64_t total, int64_t step,
                               tpu_shm_piece_fn fill, tpu_shm_piece_fn use, const void *in,
                               void *out, tpu_err_t *err)
{
    uint64_t stamp = (sig->call + 1) << 32, k = 0;
    tpu_status_t status;
    int64_t a;

    status = tpu__shm_begin(s, sig, opts, err);
    if (status != TPU_OK) {
        return status;
    }
    for (a = 0; a < total; a += step) {
        int64_t L = total - a < step ? total - a : step;

        fill(s, a, L, in, out);
        tpu__shm_publish(s, stamp | ++k);
        status = tpu__shm_wait_all(s, sig, stamp | k, a == 0, opts, err);
        if (status != TPU_OK) {
            return status;
        }
        use(s, a, L, in, out);
        tpu__shm_publish(s, stamp | ++k);
        if (a + L >= total) {
            break; /* the wait for the readers comes before the next call writes */
        }
        status = tpu__shm_wait_all(s, sig, stamp | k, 0, opts, err);
        if (status != TPU_OK) {
            return status;
        }
    }
    tpu__shm_end(s, stamp | k);
    return TPU_OK;
}

void tpu__shm_add(tpu_shm_t *s, int first, int64_t off, int64_t len, unsigned char *dst)
{
    size_t nel = (size_t)(len / s->esz);
    tpu_redop_t op = s->plan->desc.op;
    int g;

    if (s->wide) {
        tpu_dtype_bf16_widen((const uint16_t *)(s->in[first] + off), s->acc, nel);
        for (g = 0; g < s->n; g++) {
            if (g != first) {
                tpu__reduce_bf16(op, s->acc, (const uint16_t *)(s->in[g] + off), nel);
            }
        }
        tpu_dtype_bf16_narrow(s->acc, (uint16_t *)dst, nel);
        return;
    }
    memcpy(dst, s->in[first] + off, (size_t)len);
    for (g = 0; g < s->n; g++) {
        if (g != first) {
            tpu__reduce(s->plan->desc.dtype, op, dst, s->in[g] + off, nel);
        }
    }
}
