/*
 * The registry of host plans (host_algorithms.def) and what every host plan
 * builder starts and ends with.
 */
#include "host/host.h"

#include "plan.h"

#include <stdio.h>
#include <string.h>

const tpu_host_algo_t tpu__host_algos[] = {
#define TPU_HOST_ALGO(kind, name, from_member0, summary) \
    {TPU_COLL_##kind, #name, tpu__host_##kind##_##name, from_member0, summary},
#include "host_algorithms.def"
#undef TPU_HOST_ALGO
};
const int tpu__nhost_algos = (int)(sizeof(tpu__host_algos) / sizeof(tpu__host_algos[0]));

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
