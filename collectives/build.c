/* Building a plan's schedule from the registry: the algorithm, then the step index. */
#include "plan.h"

#include <stdio.h>

void tpu__plan_label(const tpu_algo_t *algo, int chunks, char *buf, size_t len)
{
    if (algo->pipelined && chunks > 1) {
        snprintf(buf, len, "%s chunks=%d", algo->name, chunks);
    } else {
        snprintf(buf, len, "%s", algo->name);
    }
}

tpu_status_t tpu__plan_build(const tpu_coll_plan_t *p, const tpu_algo_t *algo, int chunks, int rep,
                             int orbit, tpu_plan_sched_t *ps, tpu_err_t *err)
{
    tpu_algo_args_t args = p->args;
    tpu_status_t status;

    tpu__plan_sched_fini(ps);
    tpu__sched_init(&ps->s);
    ps->rep = rep;
    args.chunks = chunks;
    args.rep = rep;
    args.period = NULL;
    ps->orbit = orbit && p->orbit && algo->groups;
    if (ps->orbit) {
        int a;

        args.period = p->period;
        for (a = 0; a < TPU_MAX_AXES; a++) {
            ps->period[a] = p->period[a];
        }
    }
    status = algo->build(&args, &ps->s, err);
    if (status == TPU_OK) {
        status = tpu__plan_sched_index(ps);
    }
    if (status == TPU_OK) {
        tpu__plan_label(algo, chunks, ps->s.algo, sizeof(ps->s.algo));
        return TPU_OK;
    }
    tpu__plan_sched_fini(ps);
    if (status == TPU_ERR_NO_MEMORY) {
        tpu_err_set(err, status, "out of memory building the %s schedule (%s)",
                    tpu_coll_name(p->desc.kind), algo->name);
    }
    return status;
}
