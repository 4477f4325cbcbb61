/*
 * psum through the memory the chips of one node share (shm.c: the regions, the
 * phase counters, the waits), instead of messages, when every member of the
 * chip's group is on its node.  The buffer goes through in pieces of half a
 * region (the input area), rounded to 64 n bytes.  With n members:
 *
 *   one round (the one-round host plan's sizes): tpu__shm_exchange, per piece:
 *     copy my piece in -> publish 2i+1 -> wait for every member's 2i+1 (the first
 *     time: check its call) -> add every member's piece into my output
 *     -> publish 2i+2 [-> wait for every member's 2i+2, but after the last piece]
 *   two rounds (larger), per piece i:
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
 * Every element is added in the order the message path adds it (the host
 * plans, host_algorithms.def): the one-round plan starts from member 0's value and adds the others
 * in group order; the two-round plan starts from the value of the block's owner (the member the
 * element's block belongs to) and adds the others in group order.  Which chip adds does not change
 * the bits: the results are identical to the message path's (bf16: the same f32 accumulation,
 * rounded once). Restrictions: those of shm.c.
 */
#include "shm_psum.h"

#include "plan.h"

#include <string.h>

/* Bytes [lo, lo + len) of the buffer (in the piece from 'a'), summed into 'dst':
 * split at the blocks' ends when each block starts from its owner's value. */
static void add_range(tpu_shm_t *s, int64_t a, int64_t lo, int64_t len, unsigned char *dst)
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
        tpu__shm_add(s, (int)j, lo - a, seg, dst);
        lo += seg;
        dst += seg;
        len -= seg;
    }
}

/* The one-round exchange's steps: my piece in; every member's piece added. */
static void fill_piece(tpu_shm_t *s, int64_t a, int64_t len, const void *in, void *out)
{
    (void)out;
    memcpy(s->in[s->mi], (const unsigned char *)in + a, (size_t)len);
}

static void add_piece(tpu_shm_t *s, int64_t a, int64_t len, const void *in, void *out)
{
    (void)in;
    add_range(s, a, a, len, (unsigned char *)out + a);
}

tpu_status_t tpu__shm_psum_run(tpu_shm_t *s, const tpu_call_sig_t *sig,
                               const tpu_coll_run_opts_t *opts, const void *in, void *out,
                               tpu_err_t *err)
{
    const unsigned char *src = in;
    unsigned char *dst = out;
    int64_t V = (int64_t)s->plan->desc.bytes, a;
    uint64_t stamp = (sig->call + 1) << 32, k = 0;
    tpu_status_t status;
    int g;

    if (s->one_round) {
        return tpu__shm_exchange(s, sig, opts, V, s->piece, fill_piece, add_piece, in, out, err);
    }
    status = tpu__shm_begin(s, sig, opts, err);
    if (status != TPU_OK) {
        return status;
    }
    for (a = 0; a < V; a += s->piece) {
        int64_t L = V - a < s->piece ? V - a : s->piece;
        int64_t q = ((L + s->n - 1) / s->n + s->esz - 1) / s->esz * s->esz;
        int64_t lo = (int64_t)s->mi * q < L ? (int64_t)s->mi * q : L;

        memcpy(s->in[s->mi], src + a, (size_t)L);
        tpu__shm_publish(s, stamp | ++k);
        status = tpu__shm_wait_all(s, sig, stamp | k, a == 0, opts, err);
        if (status != TPU_OK) {
            return status;
        }
        add_range(s, a, a + lo, (lo + q < L ? lo + q : L) - lo, s->res[s->mi]);
        tpu__shm_publish(s, stamp | ++k);
        status = tpu__shm_wait_all(s, sig, stamp | k, 0, opts, err);
        if (status != TPU_OK) {
            return status;
        }
        for (g = 0; g < s->n; g++) {
            int64_t glo = (int64_t)g * q < L ? (int64_t)g * q : L;
            int64_t ghi = glo + q < L ? glo + q : L;

            memcpy(dst + a + glo, s->res[g], (size_t)(ghi - glo));
        }
    }
    tpu__shm_publish(s, stamp | ++k);
    tpu__shm_end(s, stamp | k);
    return TPU_OK;
}
