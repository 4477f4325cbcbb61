/*
 * The modeled times of a run object: the collective's end and the latest end of
 * a local chip, from the plan's own schedule walked through the link model
 * (timing.c), from the per-chip ends the selector kept, or from line timing; once
 * per run object, the same on every chip and every transport, bit for bit.
 */
#include "exec_times.h"

#include "alloc.h"
#include "build.h"
#include "group_args.h"
#include "lines.h"
#include "timing.h"
#include "tree_bound.h"

#include <string.h>

/*
 * The modeled times from the per-chip ends of the selector's walk (schedule.h):
 * the same maxima of the same arrivals as tpu__exec_model_times()'s walk, in O(chips).
 */
static tpu_status_t ends_times(tpu_coll_exec_t *e, const tpu_plan_sched_t *ps)
{
    const tpu_coll_plan_t *plan = e->plan;
    const tpu_chip_ends_t *ce = ps->ends;
    int n = plan->topo.nchips, c, i;
    double end = 0, local = 0;

    for (c = 0; c < n; c++) {
        if (ce->end[c] > end) {
            end = ce->end[c];
        }
    }
    if (ps->orbit) {
        tpu_algo_args_t args;
        uint8_t *mark = tpu__calloc((size_t)n, 1);

        /* The chips whose stand-in is the stand-in of a local chip (model_times). */
        if (mark == NULL) {
            return TPU_ERR_NO_MEMORY;
        }
        memset(&args, 0, sizeof(args));
        args.topo = &plan->topo;
        args.period = ps->period;
        args.reflect = ps->reflect;
        for (i = 0; i < e->x->nlocal; i++) {
            mark[tpu__algo_canon(&args, e->x->local_chips[i])] = 1;
        }
        for (c = 0; c < n; c++) {
            if (mark[tpu__algo_canon(&args, c)] && ce->end[c] > local) {
                local = ce->end[c];
            }
        }
        tpu__free(mark);
    } else {
        for (i = 0; i < e->x->nlocal; i++) {
            if (ce->end[e->x->local_chips[i]] > local) {
                local = ce->end[e->x->local_chips[i]];
            }
        }
    }
    e->end_s = end + ce->chain + ce->launch;
    e->local_end_s = local + ce->chain + ce->launch;
    return TPU_OK;
}

/*
 * The modeled times from line timing (lines.c): the chip's own flows of the
 * schedule the lines stand for, timed on the pod's loads: those of the data
 * schedule, unless a host plan moves the bytes (then the model's own flows of the
 * local chips are built); every chip local, the pod's end.
 */
static tpu_status_t lines_times(tpu_coll_exec_t *e, const tpu_plan_sched_t *ps)
{
    const tpu_coll_plan_t *plan = e->plan;
    const tpu_sched_t *own = e->x->nlocal < plan->topo.nchips ? &e->ps->s : NULL;
    tpu_plan_sched_t mine;
    tpu_err_t err = {0};
    tpu_status_t status;

    memset(&mine, 0, sizeof(mine));
    if (own != NULL && e->host != NULL) {
        status = tpu__plan_build_local(plan, plan->algo, 1, -1, 0, e->is_local, &mine, &err);
        if (status != TPU_OK) {
            return TPU_ERR_NO_MEMORY;
        }
        own = &mine.s;
    }
    status = tpu__lines_time_own(&plan->topo, &plan->link, ps, own, e->is_local, &e->local_end_s,
                                 &e->end_s, NULL);
    tpu__plan_sched_fini(&mine);
    return status;
}

/*
 * The modeled times, once: the plan's own schedule walked through the link model
 * (timing.c), as tpu_coll_plan_model() does; the local end is the latest arrival at
 * or from a local chip.  In representative mode every chip ends with the pod.  In
 * orbit mode a chip ends with the chip of the domain that stands for it (the
 * symmetry maps its flows onto that chip's, times and all).  Line timing times
 * the chip's own flows (the data schedule) on the pod's loads.  Nothing here
 * grows beyond O(chips) tables and the local chips' flows, unless an observer
 * wants every flow of the pod.
 */
tpu_status_t tpu__exec_model_times(tpu_coll_exec_t *e, const tpu_coll_observer_t *obs)
{
    const tpu_coll_plan_t *plan = e->plan;
    const tpu_plan_sched_t *ps = &plan->model;
    const tpu_sched_t *sc;
    tpu_plan_sched_t full;
    tpu_timing_t t;
    tpu_err_t err = {0};
    uint8_t *mark = NULL;

    memset(&full, 0, sizeof(full));
    if (obs == NULL && ps->lines) {
        return lines_times(e, ps);
    }
    if (obs == NULL && ps->bound) {
        /* Every chip ends with the pod (the bound is the pod's). */
        tpu__tree_bound_time(&plan->topo, &plan->link, ps, &e->end_s, NULL);
        e->local_end_s = e->end_s;
        return TPU_OK;
    }
    if (obs == NULL && ps->ends != NULL && ps->ends->filled) {
        return ends_times(e, ps);
    }
    if (obs != NULL && (ps->orbit || ps->lines || ps->bound || ps->repeat != NULL)) {
        /* The observer is told of every flow of the pod: walk every chip's schedule
         * (the same modeled time). */
        if (tpu__plan_build(plan, plan->algo, plan->args.chunks, -1, 0, &full, &err) != TPU_OK) {
            return TPU_ERR_NO_MEMORY;
        }
        ps = &full;
    }
    sc = &ps->s;
    if (ps->orbit) {
        tpu_algo_args_t args;
        int c, i;

        /* The chips whose stand-in is the stand-in of a local chip. */
        memset(&args, 0, sizeof(args));
        args.topo = &plan->topo;
        args.period = ps->period;
        args.reflect = ps->reflect;
        mark = tpu__calloc((size_t)plan->topo.nchips, 1);
        if (mark == NULL) {
            return TPU_ERR_NO_MEMORY;
        }
        for (i = 0; i < e->x->nlocal; i++) {
            mark[tpu__algo_canon(&args, e->x->local_chips[i])] = 2;
        }
        for (c = 0; c < plan->topo.nchips; c++) {
            mark[c] = mark[c] || mark[tpu__algo_canon(&args, c)] == 2;
        }
    }
    if (tpu__timing_init(&t, &plan->topo, &plan->link, ps) != TPU_OK) {
        tpu__free(mark);
        tpu__plan_sched_fini(&full);
        return TPU_ERR_NO_MEMORY;
    }
    if (tpu__timing_observe(&t, obs) != TPU_OK) {
        tpu__timing_fini(&t);
        tpu__free(mark);
        tpu__plan_sched_fini(&full);
        return TPU_ERR_NO_MEMORY;
    }
    if (tpu__timing_walk(&t, ps) != TPU_OK) {
        tpu__timing_fini(&t);
        tpu__plan_sched_fini(&full);
        return TPU_ERR_NO_MEMORY;
    }
    e->end_s = tpu__timing_local_end(&t, sc, NULL);
    e->local_end_s =
        ps->rep >= 0 ? e->end_s : tpu__timing_local_end(&t, sc, mark != NULL ? mark : e->is_local);
    tpu__timing_report(&t);
    tpu__timing_fini(&t);
    tpu__free(mark);
    tpu__plan_sched_fini(&full);
    return TPU_OK;
}
