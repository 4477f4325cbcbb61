/*
 * The algorithm registry (algorithms.def, the table in algo.c) and the
 * arguments every algorithm takes.  The helpers algorithms share have their own
 * headers: group_args.h, and in algorithms/ allgather_torus.h,
 * allgather_orders.h, reversed.h, allgather_group_ring.h.
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
    double split;               /* in (0, 1): the data fraction of axis order 0 of a torus
                                   all-gather over two axes (select.c times a few); 0: the
                                   estimate's choice among the rotations of the axis order
                                   (allgather_orders.c, choose_split); TPU_SPLIT_ALL_ORDERS:
                                   over three axes, the shares of all six orders that
                                   balance the axes' loads (allgather_orders.c) */
    int rep;                    /* -1: flows of every chip; else only those chip rep sends (the
                                   representative of a translation-invariant pod, see linkmodel.c) */
    const tpu_groups_t *groups; /* groups that are not whole axes (group algorithms), or NULL */
    const int32_t *member;      /* with groups: chip -> member index */
    const int *period;          /* non-NULL to build only the flows of the chips of a domain (orbit
                                   timing, linkmodel.h): coordinates below period[] on every axis, and
                                   below dims/2 on the axes of 'reflect' */
    unsigned reflect;     /* with period: axes (even, open) folded at their middle, i -> n-1-i */
    const uint8_t *local; /* non-NULL: only the flows that start or end on a chip marked here
                             (a rank's own part of the data schedule; torus family, direct
                             all-to-all and ppermute; the others build every flow) */
    int compact;          /* 1: a ring (allgather_group_ring.c) builds its steps 1, 2 and the
                             last only; step 2 stands for the middle ones (timing_repeat.c) */
} tpu_algo_args_t;

/* args.split: the torus all-gather over three axes splits between all six axis orders. */
#define TPU_SPLIT_ALL_ORDERS 2.0

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

/* The registry entry 'd' names (its kind and d->algo), or NULL (none named, or unknown). */
const tpu_algo_t *tpu__algo_named(const tpu_coll_desc_t *d);

#endif /* TPU_ALGO_H */
