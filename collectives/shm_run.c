/*
 * A call through shared memory: the collective's algorithm (shm_psum.c,
 * shm_all_gather.c, shm_reduce_scatter.c) for the plan's request.
 */
#include "shm_run.h"

#include "plan.h"
#include "shm_all_gather.h"
#include "shm_psum.h"
#include "shm_reduce_scatter.h"

tpu_status_t tpu__shm_run(tpu_shm_t *s, const tpu_call_sig_t *sig, const tpu_coll_run_opts_t *opts,
                          const void *in, void *out, tpu_err_t *err)
{
    switch (s->plan->desc.kind) {
    case TPU_COLL_ALL_GATHER:
        return tpu__shm_all_gather_run(s, sig, opts, in, out, err);
    case TPU_COLL_REDUCE_SCATTER:
        return tpu__shm_reduce_scatter_run(s, sig, opts, in, out, err);
    default:
        return tpu__shm_psum_run(s, sig, opts, in, out, err);
    }
}
