/*
 * The timing walk: modeled time of a schedule from the link model.
 *
 * Steps run in order.  In each step the loads of every flow are counted first
 * (every chip computes them from the schedule, which it knows), then each flow is
 * timed from the arrivals of the flows it depends on and the loads of its
 * links, and only then are the links marked busy.  tpu__time_schedule() walks a
 * whole schedule at once (the sim path of 'tpuemu model' and the selector); the
 * executor (exec.c) calls the same step functions as its sends become ready, so
 * both give the same modeled time, bit for bit.
 */
#include "tpu/alloc.h"

#include "timing.h"

#include <string.h>

tpu_status_t tpu__timing_init(tpu_timing_t *t, const tpu_topo_t *topo, const tpu_link_model_t *link,
                              const tpu_plan_sched_t *ps)
{
    int64_t maxstep = 1;
    int s;

    memset(t, 0, sizeof(*t));
    for (s = 0; s < ps->s.nsteps; s++) {
        int64_t n = ps->step_start[s + 1] - ps->step_start[s];

        if (n > maxstep) {
            maxstep = n;
        }
    }
    if (tpu__linkmodel_init(&t->lm, topo, link, ps->rep >= 0) != TPU_OK) {
        return TPU_ERR_NO_MEMORY;
    }
    if (ps->orbit && tpu__linkmodel_set_orbits(&t->lm, ps->period) != TPU_OK) {
        tpu__linkmodel_fini(&t->lm);
        return TPU_ERR_NO_MEMORY;
    }
    t->arrival = tpu__calloc((size_t)ps->s.nflows + 1, sizeof(double));
    t->start = tpu__calloc((size_t)maxstep, sizeof(double));
    if (t->arrival == NULL || t->start == NULL) {
        tpu__timing_fini(t);
        return TPU_ERR_NO_MEMORY;
    }
    return TPU_OK;
}

void tpu__timing_fini(tpu_timing_t *t)
{
    tpu__free(t->arrival);
    tpu__free(t->start);
    t->arrival = t->start = NULL;
    tpu__linkmodel_fini(&t->lm);
}

void tpu__timing_load(tpu_timing_t *t, const tpu_plan_sched_t *ps, int s)
{
    tpu__linkmodel_load_step(&t->lm, &ps->s, ps->step_start[s], ps->step_start[s + 1]);
}

double tpu__timing_ready(const tpu_timing_t *t, const tpu_sched_t *sc, const tpu_flow_t *f)
{
    double ready = 0;
    int32_t k;

    for (k = 0; k < f->ndeps; k++) {
        double a = t->arrival[sc->deps[f->dep_first + k]];

        if (a > ready) {
            ready = a;
        }
    }
    return ready;
}

void tpu__timing_flow(tpu_timing_t *t, const tpu_sched_t *sc, int64_t i, int64_t first,
                      double ready)
{
    tpu__linkmodel_time_flow(&t->lm, &sc->flows[i], ready, &t->start[i - first], &t->arrival[i]);
}

void tpu__timing_commit(tpu_timing_t *t, const tpu_sched_t *sc, int64_t i, int64_t first)
{
    tpu__linkmodel_commit_flow(&t->lm, &sc->flows[i], t->start[i - first]);
}

void tpu__timing_end_step(tpu_timing_t *t)
{
    tpu__linkmodel_end_step(&t->lm);
}

double tpu__timing_local_end(const tpu_timing_t *t, const tpu_sched_t *sc, const uint8_t *local)
{
    double end = 0;
    int64_t i;

    for (i = 0; i < sc->nflows; i++) {
        const tpu_flow_t *f = &sc->flows[i];

        if ((local == NULL || local[f->dst] || local[f->src]) && t->arrival[i] > end) {
            end = t->arrival[i];
        }
    }
    return end;
}

tpu_status_t tpu__time_schedule(const tpu_topo_t *topo, const tpu_link_model_t *link,
                                const tpu_plan_sched_t *ps, double *seconds_p,
                                tpu_coll_result_t *res)
{
    const tpu_sched_t *sc = &ps->s;
    tpu_timing_t t;
    double end;
    int s;

    if (tpu__timing_init(&t, topo, link, ps) != TPU_OK) {
        return TPU_ERR_NO_MEMORY;
    }
    for (s = 0; s < sc->nsteps; s++) {
        int64_t first = ps->step_start[s], last = ps->step_start[s + 1], i;

        tpu__timing_load(&t, ps, s);
        for (i = first; i < last; i++) {
            tpu__timing_flow(&t, sc, i, first, tpu__timing_ready(&t, sc, &sc->flows[i]));
        }
        for (i = first; i < last; i++) {
            tpu__timing_commit(&t, sc, i, first);
        }
        tpu__timing_end_step(&t);
    }
    end = tpu__timing_local_end(&t, sc, NULL);
    if (res != NULL) {
        tpu__linkmodel_stats(&t.lm, end, res);
    }
    tpu__timing_fini(&t);
    *seconds_p = end;
    return TPU_OK;
}
