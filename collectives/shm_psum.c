/*
 * psum through the memory the chips of one node share (the transport's
 * shm_region: an MPI-3 shared window), instead of messages, when every member
 * of the chip's group is on its node.
 *
 * Each chip's region starts with a control block (its phase counter, stamped
 * with the call number, its call signature, and the chips that read its areas
 * in its last call), then an input area and a result area.  The buffer goes
 * through in pieces of half a region, rounded to 64 n bytes.  With n members:
 *
 *   first: wait until every reader of my areas in my last call has published
 *     its end of that call (or any later phase): they may be another group
 *   per piece i, one round (the one-round host plan's sizes, one piece):
 *     copy my piece in -> publish 2i+1 -> wait for every member's 2i+1 (the first
 *     time: check its call) -> add every member's piece into my output
 *     -> publish 2i+2 [-> wait for every member's 2i+2, but after the last piece]
 *   per piece i, two rounds (larger):
 *     copy my piece in -> publish 2i+1 -> wait 2i+1 -> add my 1/n of the piece
 *     from every member's input into my result area -> publish 2i+2 -> wait 2i+2
 *     -> copy every member's result into my output;  after the last piece:
 *     publish 2N+1 (the end: the next call waits for it)
 *
 * Cost: per chip, V bytes copied in, V (two rounds) or n V (one round) read and
 * added, V copied out (two rounds); one synchronisation per call and piece in
 * one round, two per piece and one per call in two rounds, each a poll of n - 1
 * counters.  No message, no MPI call.
 *
 * Every element is added in the order the message path adds it (exec.c's host
 * plans): the one-round plan starts from member 0's value and adds the others in
 * group order; the two-round plan starts from the value of the block's owner
 * (the member the element's block belongs to) and adds the others in group
 * order.  Which chip adds does not change the bits: the results are identical to
 * the message path's (bf16: the same f32 accumulation, rounded once).
 *
 * Counters are per chip and stamped with the call number ((call + 1) << 32 |
 * phase), stored with release and read with acquire: a chip left behind by a
 * failed call never looks like the next call, and one found in a later call is
 * a mismatch.  Every wait polls (spin, then sched_yield, then short sleeps),
 * calls the caller's on_wait with the chip it waits for, and ends at the
 * caller's timeout naming that chip.  Restrictions: psum, one local chip (the
 * mpi transport), the whole group on the node, increasing call numbers (else
 * the caller takes the message path; every chip decides alike).
 */
#include "shm_psum.h"

#include "tpu/alloc.h"
#include "tpu/dtype.h"

#include "clock.h"
#include "plan.h"
#include "reduce.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* The control block's room at the start of a region (at least: then the list of
 * the last call's readers, one int32 per chip of the pod). */
#define SHM_HDR 512
/* Polls before the first yield, and yields before short sleeps. */
#define SPIN   64
#define YIELDS 20000

typedef struct shm_ctl {
    _Atomic uint64_t seq; /* (call + 1) << 32 | phase, stored by the owner (release) */
    /* The owner's own: its last call + 1; the phase every reader of its areas in
     * that call publishes when done with them, and how many readers there were
     * (their chips follow the control block). */
    uint64_t last, pend_want;
    int32_t npend;
    unsigned char pad[36];
    tpu_call_sig_t sig; /* the owner's call, written before its first phase */
} shm_ctl_t;

_Static_assert(sizeof(shm_ctl_t) <= SHM_HDR, "the control block fits its room");

struct tpu_shm_psum {
    const tpu_coll_plan_t *plan;
    tpu_xport_t *x;
    int n, mi;           /* members, and mine */
    int one_round;       /* the one-round plan (every element from member 0) */
    int wide;            /* bf16 words, f32 accumulation */
    int esz;             /* user bytes per element */
    int64_t piece;       /* bytes per piece */
    int *chips;          /* the members' chips, group order */
    shm_ctl_t **ctl;     /* per member: its control block */
    unsigned char **in;  /* per member: its input area */
    unsigned char **res; /* per member: its result area */
    float *acc;          /* wide: the accumulator */
};

void tpu__shm_psum_destroy(tpu_shm_psum_t *s)
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

tpu_status_t tpu__shm_psum_create(const tpu_coll_plan_t *plan, tpu_xport_t *x, int first_zero,
                                  tpu_shm_psum_t **s_p)
{
    int n = plan->group, g, me;
    size_t bytes = 0, b = 0;
    int64_t in_cap, piece, hdr = ((int64_t)SHM_HDR + 4 * (int64_t)x->nchips + 63) & ~63;
    tpu_shm_psum_t *s;
    shm_ctl_t probe;

    *s_p = NULL;
    if (plan->desc.kind != TPU_COLL_PSUM || n < 2 || plan->desc.bytes == 0 || x->nlocal != 1 ||
        x->ops->size < sizeof(tpu_xport_ops_t) || x->ops->shm_region == NULL ||
        !atomic_is_lock_free(&probe.seq)) {
        return TPU_ERR_UNSUPPORTED;
    }
    me = x->local_chips[0];
    if (x->ops->shm_region(x, me, &bytes) == NULL || (int64_t)bytes < hdr + (int64_t)256 * n) {
        return TPU_ERR_UNSUPPORTED;
    }
    in_cap = (((int64_t)bytes - hdr) / 2) & ~(int64_t)63;
    piece = first_zero ? in_cap : in_cap / (64 * n) * (64 * n);
    if (piece < 64 || ((int64_t)plan->desc.bytes + piece - 1) / piece >= ((int64_t)1 << 30)) {
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
        tpu__shm_psum_destroy(s);
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

int tpu__shm_psum_usable(const tpu_shm_psum_t *s, uint64_t call)
{
    return call < 0xfffffffeull && call + 1 > s->ctl[s->mi]->last;
}

static void publish(tpu_shm_psum_t *s, uint64_t v)
{
    atomic_store_explicit(&s->ctl[s->mi]->seq, v, memory_order_release);
}

/*
 * One round of a wait for chip 'chip' that found nothing: spin, then yield, then
 * nap; past the deadline, the watchdog's error ('why' ends its message).
 */
static tpu_status_t back_off(tpu_shm_psum_t *s, long rounds, int chip, const char *why,
                             const tpu_coll_run_opts_t *opts, double deadline, tpu_err_t *err)
{
    if (rounds <= SPIN) {
        return TPU_OK;
    }
    if (deadline > 0 && tpu__now_s() > deadline) {
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
static tpu_status_t wait_one(tpu_shm_psum_t *s, int g, uint64_t want,
                             const tpu_coll_run_opts_t *opts, double deadline, tpu_err_t *err)
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
        status = back_off(s, ++rounds, s->chips[g], "", opts, deadline, err);
        if (status != TPU_OK) {
            return status;
        }
    }
}

/*
 * Before this chip's areas are written again: every reader of them in its last
 * call (the members of that call's group, which may be another group) has
 * published that it is done with them, in that call or any later one.
 */
static tpu_status_t wait_readers(tpu_shm_psum_t *s, const tpu_coll_run_opts_t *opts,
                                 double deadline, tpu_err_t *err)
{
    shm_ctl_t *mine = s->ctl[s->mi];
    const int32_t *chips = (const int32_t *)((const unsigned char *)mine + SHM_HDR);
    int i;

    for (i = 0; i < mine->npend; i++) {
        size_t b;
        shm_ctl_t *peer = s->x->ops->shm_region(s->x, chips[i], &b);
        long rounds = 0;

        while (atomic_load_explicit(&peer->seq, memory_order_acquire) < mine->pend_want) {
            tpu_status_t status =
                back_off(s, ++rounds, chips[i], " (to finish reading its previous call)", opts,
                         deadline, err);

            if (status != TPU_OK) {
                return status;
            }
        }
    }
    mine->npend = 0;
    return TPU_OK;
}

/* Wait for every other member's phase 'want'; 'check': then compare its call. */
static tpu_status_t wait_all(tpu_shm_psum_t *s, const tpu_call_sig_t *sig, uint64_t want, int check,
                             const tpu_coll_run_opts_t *opts, double deadline, tpu_err_t *err)
{
    int g;

    for (g = 0; g < s->n; g++) {
        tpu_status_t status;
        tpu_call_sig_t peer;
        char diff[128];

        if (g == s->mi) {
            continue;
        }
        status = wait_one(s, g, want, opts, deadline, err);
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

/* Bytes [off, off + len) of the piece, summed from member 'first' on, into 'dst'. */
static void add_seg(tpu_shm_psum_t *s, int first, int64_t off, int64_t len, unsigned char *dst)
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

/* Bytes [lo, lo + len) of the buffer (in the piece from 'a'), summed into 'dst':
 * split at the blocks' ends when each block starts from its owner's value. */
static void add_range(tpu_shm_psum_t *s, int64_t a, int64_t lo, int64_t len, unsigned char *dst)
{
    int64_t shard = s->plan->shard;

    while (len > 0) {
        int64_t seg = len, j = 0;

        if (!s->one_round) {
            j = lo / shard;
            if (lo + seg > (j + 1) * shard) {
                seg = (j + 1) * shard - lo;
            }
        }
        add_seg(s, (int)j, lo - a, seg, dst);
        lo += seg;
        dst += seg;
        len -= seg;
    }
}

tpu_status_t tpu__shm_psum_run(tpu_shm_psum_t *s, const tpu_call_sig_t *sig,
                               const tpu_coll_run_opts_t *opts, const void *in, void *out,
                               tpu_err_t *err)
{
    const unsigned char *src = in;
    unsigned char *dst = out;
    int64_t V = (int64_t)s->plan->desc.bytes, a;
    uint64_t stamp = (sig->call + 1) << 32, k = 0;
    double deadline = opts->timeout_s > 0 ? tpu__now_s() + opts->timeout_s : 0;
    shm_ctl_t *mine = s->ctl[s->mi];
    tpu_status_t status;
    int g;

    status = wait_readers(s, opts, deadline, err);
    if (status != TPU_OK) {
        return status;
    }
    mine->last = sig->call + 1;
    memcpy(&mine->sig, sig, sizeof(*sig));
    for (a = 0; a < V; a += s->piece) {
        int64_t L = V - a < s->piece ? V - a : s->piece;
        int64_t q = ((L + s->n - 1) / s->n + s->esz - 1) / s->esz * s->esz;

        memcpy(s->in[s->mi], src + a, (size_t)L);
        publish(s, stamp | ++k);
        status = wait_all(s, sig, stamp | k, a == 0, opts, deadline, err);
        if (status != TPU_OK) {
            return status;
        }
        if (s->one_round) {
            add_range(s, a, a, L, dst + a);
        } else {
            int64_t lo = (int64_t)s->mi * q < L ? (int64_t)s->mi * q : L;

            add_range(s, a, a + lo, (lo + q < L ? lo + q : L) - lo, s->res[s->mi]);
        }
        publish(s, stamp | ++k);
        if (s->one_round && a + L >= V) {
            break; /* the wait for the readers comes before the next call writes */
        }
        status = wait_all(s, sig, stamp | k, 0, opts, deadline, err);
        if (status != TPU_OK) {
            return status;
        }
        for (g = 0; g < s->n && !s->one_round; g++) {
            int64_t lo = (int64_t)g * q < L ? (int64_t)g * q : L;
            int64_t hi = lo + q < L ? lo + q : L;

            memcpy(dst + a + lo, s->res[g], (size_t)(hi - lo));
        }
    }
    if (!s->one_round) {
        publish(s, stamp | ++k);
    }
    /* The others may still read my areas: the next call waits for them first. */
    for (g = 0; g < s->n; g++) {
        ((int32_t *)((unsigned char *)mine + SHM_HDR))[g] = s->chips[g];
    }
    mine->pend_want = stamp | k;
    mine->npend = s->n;
    return TPU_OK;
}
