/*
 * Time reversal: the reduce-scatter of an all-gather algorithm, and the psum that
 * appends the all-gather after it (the reduce-scatter and psum rows of the
 * registry over every all-gather schedule).  Every flow of the all-gather runs
 * backwards, reducing, and depends on the flows that depended on it, the steps
 * in reverse order (tpu__sched_reverse); a psum then runs the all-gather itself
 * once the reduce-scatter has ended (a barrier).
 *
 * Cost: the all-gather's (the same flows, turned round); a psum twice that.
 */
#include "reversed.h"

tpu_status_t tpu__reversed(const tpu_algo_args_t *args, tpu_algo_fn_t ag_fn, int then_ag,
                           tpu_sched_t *sched, tpu_err_t *err)
{
    tpu_sched_t ag;
    tpu_status_t status;

    if (!then_ag) {
        /* Nothing follows: the all-gather is turned around where it lies. */
        status = ag_fn(args, sched, err);
        return status == TPU_OK ? tpu__sched_reverse_in_place(sched) : status;
    }
    tpu__sched_init(&ag);
    status = ag_fn(args, &ag, err);
    if (status == TPU_OK) {
        status = tpu__sched_reverse(&ag, sched, ag.nflows);
    }
    if (status == TPU_OK) {
        /* Two collectives: the all-gather starts once the reduce-scatter has ended. */
        sched->barrier = sched->nsteps;
        status = tpu__sched_concat(sched, &ag, args->local);
        if (status == TPU_OK) {
            status = tpu__sched_sort(sched);
        }
    }
    tpu__sched_fini(&ag);
    return status;
}
