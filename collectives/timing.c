/*
 * The timing walk: modeled time of a schedule from the link model.
 *
 * Steps run in order; linkmodel.c times the flows of a step from the flows they
 * depend on and the overlap in time of the flows on every resource.  Because
 * the overlap couples the flows of every chip, the walk is done in full, from
 * the schedule (which every chip knows): tpu__time_schedule() (the sim path of
 * 'tpuemu model' and the selector) and the executor (exec.c) therefore give the
 * same modeled time, bit for bit.
 *
 * Bandwidth and latency add, as in the published formulas.  Each flow has two
 * clocks: 'links', when its bytes are through (it starts once the bytes of the
 * flows it depends on are through), and 'chain', the latency of its chain of
 * dependencies: its own hops (and DCN latency, and what its message start
 * waited) plus the longest chain of the flows it depends on.  The collective
 * takes the latest bytes plus the longest chain (tpu__timing_local_end()), a
 * flow is shown at its bytes' time plus its own chain, and a calibrated link
 * model adds its launch cost once.  So a pipeline of chunks keeps links busy
 * but never hides a hop: the hops of the deepest chain are paid in full.  A
 * schedule of two collectives (a psum: reduce-scatter, then all-gather; its
 * 'barrier' step) starts the second when the first is through: its bytes after
 * the first's latest bytes, its chains after the first's longest.
 *
 * An observer (tpu__timing_observe()) is told of every flow as it is timed and,
 * at the end, of every resource's bytes and busy time; it only reads what the
 * walk computed, so modeled times do not depend on it, and without one the walk
 * does not look at it beyond a NULL test per flow and per step.
 */
#include "timing.h"

#include "alloc.h"
#include "lines.h"
#include "timing_repeat.h"
#include "tree_bound.h"

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
    if (ps->orbit && tpu__linkmodel_set_orbits(&t->lm, ps->period, ps->reflect) != TPU_OK) {
        tpu__linkmodel_fini(&t->lm);
        return TPU_ERR_NO_MEMORY;
    }
    t->launch = link->launch > 0 ? link->launch : 0;
    t->links = tpu__calloc((size_t)ps->s.nflows + 1, sizeof(double));
    t->chain = tpu__calloc((size_t)ps->s.nflows + 1, sizeof(double));
    t->start = tpu__calloc((size_t)maxstep, sizeof(double));
    t->lat = tpu__calloc((size_t)maxstep, sizeof(double));
    t->off = tpu__calloc((size_t)maxstep, sizeof(double));
    if (t->start == NULL || t->links == NULL || t->chain == NULL || t->lat == NULL ||
        t->off == NULL) {
        tpu__timing_fini(t);
        return TPU_ERR_NO_MEMORY;
    }
    return TPU_OK;
}

void tpu__timing_fini(tpu_timing_t *t)
{
    tpu__free(t->links);
    tpu__free(t->chain);
    tpu__free(t->lat);
    tpu__free(t->off);
    tpu__free(t->start);
    tpu__free(t->obs_links);
    t->start = t->links = t->chain = t->lat = t->off = NULL;
    t->obs_links = NULL;
    t->obs = NULL;
    tpu__linkmodel_fini(&t->lm);
}

tpu_status_t tpu__timing_observe(tpu_timing_t *t, const tpu_coll_observer_t *obs)
{
    const tpu_topo_t *topo = t->lm.topo;
    int a;

    if (obs == NULL) {
        return TPU_OK;
    }
    t->obs_cap = 1;
    for (a = 0; a < topo->naxes; a++) {
        t->obs_cap += topo->dims[a];
    }
    t->obs_links = tpu__malloc((size_t)t->obs_cap * sizeof(int32_t));
    if (t->obs_links == NULL) {
        return TPU_ERR_NO_MEMORY;
    }
    t->obs = obs;
    return TPU_OK;
}

static void observe_flow(tpu_timing_t *t, const tpu_sched_t *sc, int64_t i, int64_t first)
{
    const tpu_flow_t *f = &sc->flows[i];
    tpu_coll_flow_event_t ev;

    ev.bytes = (uint64_t)tpu__span_bytes(&f->span);
    if (t->obs->on_flow == NULL || ev.bytes == 0) {
        return;
    }
    ev.flow = i;
    ev.src = f->src;
    ev.dst = f->dst;
    ev.step = f->step;
    ev.stream = f->stream;
    ev.start_s = t->start[i - first];
    ev.end_s = t->links[i] + t->chain[i]; /* its arrival: bytes, then its chain */
    ev.dcn = f->kind == TPU_ROUTE_DCN;
    ev.nlinks =
        tpu__linkmodel_flow_links(&t->lm, f, t->obs_links, t->obs_cap, &ev.src_host, &ev.dst_host);
    ev.links = t->obs_links;
    ev.representative = t->lm.classes || t->lm.orbit != NULL;
    t->obs->on_flow(t->obs->user, &ev);
}

void tpu__timing_report(const tpu_timing_t *t)
{
    const tpu_linkmodel_t *lm = &t->lm;
    int nl = lm->topo->nlinks, l, r;

    if (t->obs == NULL || t->obs->on_link == NULL) {
        return;
    }
    for (l = 0; l < nl; l++) {
        tpu_coll_link_event_t ev;

        /* Orbit mode: a link's load is counted on the link standing for its orbit. */
        r = lm->orbit != NULL ? lm->orbit[l] : l;
        if (lm->classes) {
            int src, axis, dir, dst;

            /* Every link of a class (axis, direction) carries the class's load. */
            tpu_topo_link_ends(lm->topo, l, &src, &axis, &dir, &dst);
            r = 2 * axis + (dir < 0);
        }
        ev.link = l;
        ev.host = -1;
        ev.egress = 0;
        ev.bytes = lm->bytes[r];
        ev.busy_s = lm->busy[r];
        t->obs->on_link(t->obs->user, &ev);
    }
    for (r = lm->classes ? lm->vpu0 : lm->nic0; r < lm->vpu0; r++) {
        tpu_coll_link_event_t ev;

        ev.link = -1;
        ev.host = (r - lm->nic0) / 2;
        ev.egress = (r - lm->nic0) % 2 == 0;
        ev.bytes = lm->bytes[r];
        ev.busy_s = lm->busy[r];
        t->obs->on_link(t->obs->user, &ev);
    }
}

/*
 * When flow f may start, from the flows it depends on: the latest of their bytes
 * (or the barrier's floor), returned, and the longest of their chains into
 * '*chain_p' (at least the barrier's floor).
 */
static double ready_of(const tpu_timing_t *t, const tpu_sched_t *sc, const tpu_flow_t *f,
                       double *chain_p)
{
    double ready = t->floor_links, chain = t->floor_chain;
    int32_t k;

    for (k = 0; k < f->ndeps; k++) {
        int32_t d = sc->deps[f->dep_first + k];

        ready = t->links[d] > ready ? t->links[d] : ready;
        chain = t->chain[d] > chain ? t->chain[d] : chain;
    }
    *chain_p = chain;
    return ready;
}

double tpu__timing_local_end(const tpu_timing_t *t, const tpu_sched_t *sc, const uint8_t *local)
{
    double end = 0;
    int64_t i;

    for (i = 0; i < sc->nflows; i++) {
        const tpu_flow_t *f = &sc->flows[i];

        if ((local == NULL || local[f->dst] || local[f->src]) && t->links[i] > end) {
            end = t->links[i];
        }
    }
    return end + t->chain_max + t->launch;
}

double tpu__timing_step_bytes(const tpu_topo_t *topo, const tpu_plan_sched_t *ps, double limit)
{
    double most = 0, reach = 4;
    int s, a;

    /* The longest route, for a bound that spares counting most schedules. */
    for (a = 0; a < topo->naxes; a++) {
        reach += topo->wrap[a] ? topo->dims[a] / 2 : topo->dims[a] - 1;
    }
    for (s = 0; !ps->lines && !ps->bound && s < ps->s.nsteps; s++) {
        int64_t n = 0, i, first = ps->step_start[s];
        int mixed = 0;

        if ((double)(ps->step_start[s + 1] - first) * reach * 92 <= limit) {
            continue; /* within the limit even if every route were the longest */
        }

        for (i = first; i < ps->step_start[s + 1]; i++) {
            const tpu_flow_t *f = &ps->s.flows[i];

            n += f->kind == TPU_ROUTE_DCN ? 4 : tpu_topo_hops(topo, f->src, f->dst);
            mixed |= f->ndeps > 0 ||
                     tpu__span_bytes(&f->span) != tpu__span_bytes(&ps->s.flows[first].span);
        }
        if ((double)n * (mixed ? 92 : 12) > most) {
            most = (double)n * (mixed ? 92 : 12);
        }
    }
    return most;
}

tpu_status_t tpu__time_schedule(const tpu_topo_t *topo, const tpu_link_model_t *link,
                                const tpu_plan_sched_t *ps, double *seconds_p,
                                tpu_coll_result_t *res)
{
    return tpu__time_schedule_observed(topo, link, ps, NULL, seconds_p, res);
}

tpu_status_t tpu__time_schedule_observed(const tpu_topo_t *topo, const tpu_link_model_t *link,
                                         const tpu_plan_sched_t *ps, const tpu_coll_observer_t *obs,
                                         double *seconds_p, tpu_coll_result_t *res)
{
    const tpu_sched_t *sc = &ps->s;
    tpu_timing_t t;
    double end;

    if (ps->lines) {
        /* One flow per class combination to observe (callers that want every flow
         * walk every chip's schedule instead). */
        return tpu__lines_time_observed(topo, link, ps, obs, seconds_p, res);
    }
    if (ps->bound) {
        tpu__tree_bound_time(topo, link, ps, seconds_p, res);
        return TPU_OK;
    }
    if (tpu__timing_init(&t, topo, link, ps) != TPU_OK) {
        return TPU_ERR_NO_MEMORY;
    }
    if (tpu__timing_observe(&t, obs) != TPU_OK) {
        tpu__timing_fini(&t);
        return TPU_ERR_NO_MEMORY;
    }
    if (tpu__timing_walk(&t, ps) != TPU_OK) {
        tpu__timing_fini(&t);
        return TPU_ERR_NO_MEMORY;
    }
    end = tpu__timing_local_end(&t, sc, NULL);
    if (res != NULL) {
        tpu__linkmodel_stats(&t.lm, end, res);
    }
    if (ps->ends != NULL && !ps->ends->filled && obs == NULL) {
        /* The first walk (the selector's, with the plan's own constants): keep
         * every chip's end for the run objects (schedule.h). */
        tpu_chip_ends_t *ce = ps->ends;
        int64_t i;

        for (i = 0; i < sc->nflows; i++) {
            const tpu_flow_t *f = &sc->flows[i];

            if (t.links[i] > ce->end[f->src]) {
                ce->end[f->src] = t.links[i];
            }
            if (t.links[i] > ce->end[f->dst]) {
                ce->end[f->dst] = t.links[i];
            }
        }
        ce->chain = t.chain_max;
        ce->launch = t.launch;
        ce->filled = 1;
    }
    tpu__timing_report(&t);
    tpu__timing_fini(&t);
    *seconds_p = end;
    return TPU_OK;
}

tpu_status_t tpu__timing_walk(tpu_timing_t *t, const tpu_plan_sched_t *ps)
{
    const tpu_sched_t *sc = &ps->s;
    int s;

    for (s = 0; s < sc->nsteps; s++) {
        int64_t first = ps->step_start[s], last = ps->step_start[s + 1], i;

        if (s > 0 && s == sc->barrier) {
            /* Everything before is through: its bytes, and its longest chain. */
            t->floor_links = t->links_max;
            t->floor_chain = t->chain_max;
        }
        for (i = first; i < last; i++) {
            const tpu_flow_t *f = &sc->flows[i];

            if (i > first && f->ndeps > 0 && f->dep_first == f[-1].dep_first &&
                f->ndeps == f[-1].ndeps) {
                /* The list of the flow before (a shared list): the same maxima. */
                t->start[i - first] = t->start[i - first - 1];
                t->off[i - first] = t->off[i - first - 1];
                continue;
            }
            t->start[i - first] = ready_of(t, sc, f, &t->off[i - first]);
        }
        if (tpu__linkmodel_step(&t->lm, &sc->flows[first], last - first, t->start, &t->links[first],
                                t->lat, t->off) != TPU_OK) {
            return TPU_ERR_NO_MEMORY;
        }
        for (i = first; i < last; i++) {
            t->chain[i] = t->off[i - first] + t->lat[i - first];
            t->start[i - first] += t->off[i - first];
            if (t->chain[i] > t->chain_max) {
                t->chain_max = t->chain[i];
            }
            if (t->links[i] > t->links_max) {
                t->links_max = t->links[i];
            }
        }
        for (i = first; i < last && t->obs != NULL; i++) {
            observe_flow(t, sc, i, first);
        }
        /* A step that runs again (a ring's compact form): its other runs. */
        if (ps->repeat != NULL && ps->repeat[s] > 1 && tpu__timing_repeat(t, ps, s) != TPU_OK) {
            return TPU_ERR_NO_MEMORY;
        }
    }
    return TPU_OK;
}
