/*
 * The plan object: everything tpu_coll_plan_create() resolved, immutable after it
 * returns (every function after it takes a const plan).  Per-run state (the
 * schedule of every chip when the model used one chip's, buffers, call numbers)
 * lives in the run object of exec.c.
 */
#ifndef TPU_PLAN_H
#define TPU_PLAN_H

#include "tpu/coll.h"

#include "algo.h"
#include "schedule.h"

struct tpu_coll_plan {
    tpu_topo_t topo;
    tpu_link_model_t link;
    tpu_coll_desc_t desc;        /* as resolved: p2p chips filled in */
    const tpu_algo_t *algo;      /* the algorithm chosen */
    tpu_algo_args_t args;        /* its arguments (chunks chosen; rep of the model schedule) */
    tpu_plan_sched_t model;      /* what tpu_coll_plan_model() times */
    int model_cached;            /* 1: the selector's walk of 'model' gave: */
    double model_s;              /* its modeled time, */
    tpu_coll_result_t model_res; /* and its per-axis statistics */
    int group;
    int64_t shard;      /* bytes of one block */
    uint64_t in_bytes;  /* per chip */
    uint64_t out_bytes; /* per chip */
    int64_t work_bytes; /* the buffer the schedule works on (padded psum) */
    int data_scale;     /* 2 when a bf16 reduction runs on f32 working buffers */
    char name[64];      /* "torus chunks=4" */
    /* Groups that are not whole torus axes (desc.groups points here), or none. */
    tpu_groups_t groups;
    int32_t *member;   /* chip -> member index in its group (groups only) */
    int32_t *group_of; /* chip -> its group (groups only) */
    int32_t *pairs;    /* ppermute pairs (desc.pairs points here), or NULL */
    int orbit;         /* 1: the groups are symmetric under translations by 'period' */
    int period[TPU_MAX_AXES];
};

/* The member index of 'chip' in its group (its position in the collective's order). */
static inline int tpu__plan_member_index(const tpu_coll_plan_t *p, int chip)
{
    if (p->member != NULL) {
        return p->member[chip];
    }
    return tpu_topo_group_index(&p->topo, p->desc.axes, chip);
}

/* Member 'j' of the group of 'chip'. */
static inline int tpu__plan_member(const tpu_coll_plan_t *p, int chip, int j)
{
    if (p->member != NULL) {
        return p->groups.chips[(int64_t)p->group_of[chip] * p->groups.size + j];
    }
    return tpu_topo_group_member(&p->topo, p->desc.axes, chip, j);
}

/* Does the plan's link model carry faults?  Then no chip stands for another. */
static inline int tpu__plan_faulty(const tpu_coll_plan_t *p)
{
    return tpu_faults_count(p->link.faults) > 0;
}

/*
 * Is the collective the same from every chip?  Then the model times one chip's
 * flows (linkmodel.c, representative mode): every selected axis wraps, nothing
 * crosses DCN, the algorithm treats every chip alike (all but p2p), and no fault
 * makes one chip or link differ from the others.
 */
static inline int tpu__plan_translation_invariant(const tpu_coll_plan_t *p)
{
    int a;

    /* Slow or failed links, chips or NICs break the symmetry (the one check). */
    if (tpu__plan_faulty(p)) {
        return 0;
    }
    if (p->desc.kind == TPU_COLL_P2P || (p->desc.axes & TPU_AXIS_MASK_DCN) ||
        p->desc.groups != NULL || p->desc.pairs != NULL) {
        return 0;
    }
    for (a = 0; a < p->topo.naxes; a++) {
        if ((p->desc.axes & (1u << a)) && p->topo.dims[a] > 1 && !p->topo.wrap[a]) {
            return 0;
        }
    }
    return 1;
}

#endif /* TPU_PLAN_H */
