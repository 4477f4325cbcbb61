/*
 * all-gather through the memory the chips of one node share (shm.c: the
 * regions, the phase counters, the waits), instead of messages, when every
 * member of the chip's group is on its node.  My block (S bytes) goes through in
 * pieces of the input area (its region less the control block).  With n
 * members, tpu__shm_exchange per piece i:
 *
 *   copy my piece in -> publish 2i+1 -> wait for every member's 2i+1 (the first
 *   time: check its call) -> copy every member's piece into its block of my
 *   output -> publish 2i+2 [-> wait for every member's 2i+2, but after the last
 *   piece: the next call waits for it]
 *
 * Cost: per chip, S bytes copied in and n S copied out; two synchronisations per
 * piece, each a poll of n - 1 counters.  No message, no MPI call.  Copies only:
 * the same bytes as the message path.  Restrictions: those of shm.c.
 */
#include "shm_all_gather.h"

#include "plan.h"

#include <string.h>

static void fill_piece(tpu_shm_t *s, int64_t a, int64_t len, const void *in, void *out)
{
    (void)out;
    memcpy(s->in[s->mi], (const unsigned char *)in + a, (size_t)len);
}

static void copy_out(tpu_shm_t *s, int64_t a, int64_t len, const void *in, void *out)
{
    int g;

    (void)in;
    for (g = 0; g < s->n; g++) {
        memcpy((unsigned char *)out + (int64_t)g * s->plan->shard + a, s->in[g], (size_t)len);
    }
}

tpu_status_t tpu__shm_all_gather_run(tpu_shm_t *s, const tpu_call_sig_t *sig,
                                     const tpu_coll_run_opts_t *opts, const void *in, void *out,
                                     tpu_err_t *err)
{
    return tpu__shm_exchange(s, sig, opts, s->plan->shard, s->piece, fill_piece, copy_out, in, out,
                             err);
}
