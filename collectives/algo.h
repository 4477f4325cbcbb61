/*
 * The algorithm registry and the arguments every algorithm takes.
 */
#ifndef TPU_ALGO_H
#define TPU_ALGO_H

#include "tpu/coll.h"
#include "tpu/topo.h"

#include "schedule.h"

typedef struct tpu_algo_args {
    const tpu_topo_t *topo;
    const tpu_link_model_t *link;
    const tpu_coll_desc_t *desc;
    unsigned mask;              /* axes of the collective */
    int group;                  /* chips per group */
    int64_t shard;              /* bytes of one chip's block (all-gather, reduce-scatter, psum) */
    int64_t elem;               /* bytes of one element: blocks split only at element boundaries */
    int chunks;                 /* pipeline chunks per ordering (>= 1) */
    int rep;                    /* -1: flows of every chip; else only those chip rep sends (the
                                   representative of a translation-invariant pod, see linkmodel.c) */
    const tpu_groups_t *groups; /* groups that are not whole axes (group algorithms), or NULL */
    const int32_t *member;      /* with groups: chip -> member index */
    const int *period; /* group algorithms: non-NULL to build only the flows of the chips whose
                          coordinates are below period[] (orbit timing, linkmodel.h) */
} tpu_algo_args_t;

typedef tpu_status_t (*tpu_algo_fn_t)(const tpu_algo_args_t *args, tpu_sched_t *sched,
                                      tpu_err_t *err);

typedef struct tpu_algo {
    tpu_coll_kind_t kind;
    const char *name;
    tpu_algo_fn_t build;
    int pipelined; /* takes args->chunks */
    int groups;    /* 1: takes any groups (args->groups); the only kind a group plan picks */
    const char *summary;
} tpu_algo_t;

#define TPU_ALGO(kind, name, pipelined, groups, summary)                                    \
    tpu_status_t tpu__algo_##kind##_##name(const tpu_algo_args_t *args, tpu_sched_t *sched, \
                                           tpu_err_t *err);
#include "algorithms.def"
#undef TPU_ALGO

extern const tpu_algo_t tpu__algos[];
extern const int tpu__nalgos;

/*
 * The shared builder of the all-gather family (allgather_torus.c): a DCN phase
 * (direct exchange between slices) followed by one bidirectional ring (line on an
 * open axis) per ICI axis, for 'nord' axis orders with the data split between them
 * so that every axis carries the same load, each split into 'chunks' pipelined
 * chunks.  nord = 1 is the plain axis-by-axis schedule.
 */
tpu_status_t tpu__allgather_phases(const tpu_algo_args_t *args, int nord, tpu_sched_t *sched,
                                   tpu_err_t *err);

/*
 * Build the all-gather 'ag_fn' and write its time reversal, a reduce-scatter,
 * into 'sched'; with 'then_ag', append the all-gather after it (a psum).
 */
tpu_status_t tpu__reversed(const tpu_algo_args_t *args, tpu_algo_fn_t ag_fn, int then_ag,
                           tpu_sched_t *sched, tpu_err_t *err);

/*
 * The groups a group algorithm works on (group_common.c): args->groups, or for a
 * request over whole axes the groups of args->mask, built into 'own' (free it
 * with tpu_groups_fini()).  '*member_p' maps chip -> member index ('own_member'
 * is filled in the second case; nchips entries, caller storage or NULL to
 * allocate: then free it with tpu__free()).
 */
/* Is 'chip' in the domain of args->period (always, without a period)? */
int tpu__algo_in_domain(const tpu_algo_args_t *args, int chip);
/* The chip of the domain that stands for 'chip' (itself without a period). */
int tpu__algo_canon(const tpu_algo_args_t *args, int chip);

tpu_status_t tpu__algo_groups(const tpu_algo_args_t *args, tpu_groups_t *own,
                              const tpu_groups_t **groups_p, const int32_t **member_p,
                              int32_t **own_member_p);

#endif /* TPU_ALGO_H */
