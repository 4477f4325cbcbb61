/* The plan object and the executor's internals. */
#ifndef TPU_COLL_INTERNAL_H
#define TPU_COLL_INTERNAL_H

#include "tpu/coll.h"

#include "algo.h"
#include "schedule.h"

/* A schedule with its step index. */
typedef struct tpu_plan_sched {
    tpu_sched_t s;
    int64_t *step_start; /* flows of step s are [step_start[s], step_start[s+1]) */
    int rep;             /* representative chip (link-class timing), or -1: every chip */
    int built;
} tpu_plan_sched_t;

struct tpu_coll_plan {
    tpu_topo_t topo;
    tpu_link_model_t link;
    tpu_coll_desc_t desc;
    const tpu_algo_t *algo;
    tpu_algo_args_t args;
    tpu_plan_sched_t model; /* what tpu_coll_plan_model() times */
    tpu_plan_sched_t full;  /* every chip's flows, for runs with data; built on first use */
    tpu_plan_sched_t *run;  /* &full, or &model when that already holds every chip */
    unsigned char *scratch; /* receive scratch of reducing flows, kept across runs */
    unsigned char **work;   /* working buffers of the local chips, kept across runs */
    int nwork;
    int64_t scratch_bytes;
    int group;
    int64_t shard;      /* bytes of one block */
    uint64_t in_bytes;  /* per chip */
    uint64_t out_bytes; /* per chip */
    int64_t work_bytes; /* the buffer the schedule works on (padded psum) */
    int data_scale;     /* 2 when a bf16 reduction runs on f32 working buffers */
    char name[64];      /* "psum/rs_ag k=2" */
};

/* Time the model schedule with every chip local (the sim path). */
tpu_status_t tpu__plan_model(const tpu_coll_plan_t *plan, double *seconds_p,
                             tpu_coll_result_t *res);
/* Build the schedule of every chip for runs with data (once). */
tpu_status_t tpu__plan_full(tpu_coll_plan_t *plan, tpu_err_t *err);

#endif
