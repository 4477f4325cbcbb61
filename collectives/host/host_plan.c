/*
 * What every host plan builder (host_algorithms.def) starts and ends with: an
 * empty schedule and its first flow, then the sort and the step index.
 */
#include "host/host_plan.h"

#include <stdio.h>
#include <string.h>

/* Empty 'ps' for a host plan and set 'f' up as its first flow: one span, no offsets. */
void tpu__host_plan_start(tpu_plan_sched_t *ps, tpu_flow_t *f)
{
    tpu__plan_sched_fini(ps);
    tpu__sched_init(&ps->s);
    ps->rep = -1;
    memset(f, 0, sizeof(*f));
    f->span.count[0] = f->span.count[1] = f->span.count[2] = 1;
}

/* Sort and index a host plan of one stream in 'nsteps' steps, named 'algo'. */
tpu_status_t tpu__host_plan_finish(tpu_plan_sched_t *ps, int nsteps, const char *algo,
                                   tpu_err_t *err)
{
    ps->s.nsteps = nsteps;
    ps->s.nstreams = 1;
    if (tpu__sched_sort(&ps->s) != TPU_OK || tpu__plan_sched_index(ps) != TPU_OK) {
        tpu__plan_sched_fini(ps);
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for the host plan");
    }
    snprintf(ps->s.algo, sizeof(ps->s.algo), "%s", algo);
    return TPU_OK;
}
