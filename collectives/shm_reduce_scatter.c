/*
 * reduce-scatter through the memory the chips of one node share (shm.c: the
 * regions, the phase counters, the waits), instead of messages, when every
 * member of the chip's group is on its node.  The n blocks of my input (S bytes
 * each) go through together, in pieces of L bytes of every block (n L fit the
 * input area).  With n members, tpu__shm_exchange per piece i:
 *
 *   copy piece i of each of my n blocks into slot j of my area (j L) ->
 *   publish 2i+1 -> wait for every member's 2i+1 (the first time: check its
 *   call) -> my block's piece = my slot of my area, then the others' my slot
 *   added in group order -> publish 2i+2 [-> wait for every member's 2i+2, but
 *   after the last piece: the next call waits for it]
 *
 *     member:      0        1        2
 *     area:     [b0 b1 b2][b0 b1 b2][b0 b1 b2]     chip 1 reads the b1 of all
 *
 * Cost: per chip, n S bytes copied in, n S read and added; two synchronisations
 * per piece, each a poll of n - 1 counters.  No message, no MPI call.
 *
 * The additions are in the message path's order (the host plan for
 * reduce-scatter, host/direct_rs.c: the owner's block, then the others' in group
 * order), so the results are the same bits (bf16: the same f32 accumulation, rounded
 * once).  Restrictions: those of shm.c.
 */
#include "shm_reduce_scatter.h"

#include "plan.h"

#include <string.h>

static void fill_blocks(tpu_shm_t *s, int64_t a, int64_t len, const void *in, void *out)
{
    int j;

    (void)out;
    for (j = 0; j < s->n; j++) {
        memcpy(s->in[s->mi] + (int64_t)j * len,
               (const unsigned char *)in + (int64_t)j * s->plan->shard + a, (size_t)len);
    }
}

static void add_mine(tpu_shm_t *s, int64_t a, int64_t len, const void *in, void *out)
{
    (void)in;
    tpu__shm_add(s, s->mi, (int64_t)s->mi * len, len, (unsigned char *)out + a);
}

tpu_status_t tpu__shm_reduce_scatter_run(tpu_shm_t *s, const tpu_call_sig_t *sig,
                                         const tpu_coll_run_opts_t *opts, const void *in, void *out,
                                         tpu_err_t *err)
{
    return tpu__shm_exchange(s, sig, opts, s->plan->shard, s->piece, fill_blocks, add_mine, in, out,
                             err);
}
