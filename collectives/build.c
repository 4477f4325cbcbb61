/* Building a plan's schedule from the registry: the algorithm, then the step index. */
#include "build.h"

#include "alloc.h"
#include "lines.h"
#include "timing_repeat.h"
#include "tree_bound.h"

#include <stdio.h>
#include <string.h>

void tpu__plan_label(const tpu_algo_t *algo, int chunks, char *buf, size_t len)
{
    if (algo->pipelined && chunks > 1) {
        snprintf(buf, len, "%s chunks=%d", algo->name, chunks);
    } else {
        snprintf(buf, len, "%s", algo->name);
    }
}

/*
 * The domain of the torus family's orbit timing (linkmodel.h): the all-gather,
 * reduce-scatter and psum torus schedules map onto themselves under a shift by
 * one along a wrapped axis of the collective or along an axis outside it (its
 * groups are alike and apart), and under the reflection i -> n-1-i of an open
 * axis (a line run from both ends alike).  A reflection is used on axes of even
 * size only, where it fixes no chip, and never for the snake ring
 * (allgather_snake.c; 'algo' NULL: the torus family as a whole), whose cycle is not its own mirror
 * image, so every flow of the pod is the image of exactly one flow of a domain chip.  Returns 1
 * when the domain is smaller than the pod.
 */
static int torus_domain(const tpu_coll_plan_t *p, const tpu_algo_t *algo, int *period,
                        unsigned *reflect_p)
{
    const tpu_topo_t *topo = &p->topo;
    int a, smaller = 0;

    *reflect_p = 0;
    /* Faults break the symmetry (tpu__plan_faulty(), the one check). */
    if (tpu__plan_faulty(p) || (algo != NULL && algo->groups) || p->desc.groups != NULL ||
        p->desc.pairs != NULL || (p->desc.axes & TPU_AXIS_MASK_DCN) ||
        !(p->desc.kind == TPU_COLL_ALL_GATHER || p->desc.kind == TPU_COLL_REDUCE_SCATTER ||
          p->desc.kind == TPU_COLL_PSUM)) {
        return 0;
    }
    for (a = 0; a < TPU_MAX_AXES; a++) {
        int n = topo->dims[a];

        period[a] = n;
        if (a >= topo->naxes || n < 2) {
            continue;
        }
        if (!(p->desc.axes & (1u << a)) || topo->wrap[a]) {
            period[a] = 1;
            smaller = 1;
        } else if (n % 2 == 0 && (algo == NULL || strcmp(algo->name, "snake") != 0)) {
            *reflect_p |= 1u << a;
            smaller = 1;
        }
    }
    return smaller;
}

int64_t tpu__plan_domain_chips(const tpu_coll_plan_t *p, const tpu_algo_t *algo)
{
    int period[TPU_MAX_AXES], a;
    unsigned reflect;
    int64_t n = p->topo.nchips;

    if (!torus_domain(p, algo, period, &reflect)) {
        return n;
    }
    for (a = 0; a < TPU_MAX_AXES; a++) {
        n = n / p->topo.dims[a] * ((reflect & (1u << a)) ? p->topo.dims[a] / 2 : period[a]);
    }
    return n;
}

tpu_status_t tpu__plan_build(const tpu_coll_plan_t *p, const tpu_algo_t *algo, int chunks, int rep,
                             int orbit, tpu_plan_sched_t *ps, tpu_err_t *err)
{
    return tpu__plan_build_local(p, algo, chunks, rep, orbit, NULL, ps, err);
}

tpu_status_t tpu__plan_build_local(const tpu_coll_plan_t *p, const tpu_algo_t *algo, int chunks,
                                   int rep, int orbit, const uint8_t *local, tpu_plan_sched_t *ps,
                                   tpu_err_t *err)
{
    tpu_algo_args_t args = p->args;
    tpu_status_t status;

    tpu__plan_sched_fini(ps);
    tpu__sched_init(&ps->s);
    ps->rep = rep;
    args.chunks = chunks;
    args.rep = rep;
    args.period = NULL;
    args.reflect = 0;
    args.local = local;
    ps->reflect = 0;
    /* The groups' symmetries may rotate the member order (tpu_groups_period()): the
     * ring, direct and all-to-all schedules are alike under a rotation, the tree
     * (psum_group_tree.c, rooted at member 0) is not, and is built for every chip
     * (two flows per chip: no cost worth a domain). */
    ps->orbit = orbit && p->orbit && algo->groups && strcmp(algo->name, "group_tree") != 0 &&
                !(rep < 0 && tpu__lines_applies(p, algo)); /* the lines are cheaper (lines.c) */
    if (ps->orbit) {
        int a;

        for (a = 0; a < TPU_MAX_AXES; a++) {
            ps->period[a] = p->period[a];
        }
    } else if (orbit && rep < 0 && torus_domain(p, algo, ps->period, &ps->reflect)) {
        ps->orbit = 1;
    }
    if (ps->orbit) {
        args.period = ps->period;
        args.reflect = ps->reflect;
    }
    ps->lines = 0;
    ps->bound = 0;
    /* A ring's model schedule: its first, second and last steps, the second
     * repeated (timing_repeat.c); every step when its steps do not line up. */
    args.compact = orbit && rep < 0 && local == NULL && tpu__repeat_ring_algo(algo->name) &&
                   tpu__repeat_ring_steps(p->group, 1) == 3;
    if (orbit && rep < 0 && !ps->orbit && tpu__lines_applies(p, algo)) {
        status = tpu__lines_build(p, algo, ps);
    } else if (orbit && rep < 0 && local == NULL && tpu__tree_bound_applies(p, algo, chunks)) {
        status = tpu__tree_bound_build(p, chunks, ps, err);
    } else {
        status = algo->build(&args, &ps->s, err);
    }
    if (status == TPU_OK && !ps->lines && !ps->bound) {
        status = tpu__plan_sched_index(ps);
    }
    if (status == TPU_OK && args.compact) {
        int noted = tpu__repeat_note(ps, p->group);

        if (noted == 0) {
            tpu__sched_fini(&ps->s);
            tpu__sched_init(&ps->s);
            args.compact = 0;
            status = algo->build(&args, &ps->s, err);
            status = status == TPU_OK ? tpu__plan_sched_index(ps) : status;
        }
        status = noted < 0 ? TPU_ERR_NO_MEMORY : status;
    }
    if (status == TPU_OK && orbit && !ps->lines && !ps->bound && rep < 0 && local == NULL) {
        /* The model schedule of every chip or of a domain: room for its chips' ends. */
        ps->ends = tpu__calloc(1, sizeof(*ps->ends) + (size_t)p->topo.nchips * sizeof(double));
        if (ps->ends == NULL) {
            status = TPU_ERR_NO_MEMORY;
        }
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

int64_t tpu__plan_sched_pod_flows(const tpu_topo_t *topo, const tpu_plan_sched_t *ps)
{
    int64_t n = tpu__repeat_flows(ps);
    int a;

    if (ps->lines) {
        return tpu__lines_pod_flows(topo, ps);
    }
    if (ps->bound) {
        return ps->bound_flows;
    }
    if (ps->rep >= 0) {
        return n * topo->nchips;
    }
    for (a = 0; ps->orbit && a < TPU_MAX_AXES; a++) {
        n *= (ps->reflect & (1u << a)) ? 2 : topo->dims[a] / ps->period[a];
    }
    return n;
}
