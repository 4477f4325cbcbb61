/* The plan object and the executor's internals. */
#ifndef TPU_COLL_INTERNAL_H
#define TPU_COLL_INTERNAL_H

#include "tpu/coll.h"

#include "algo.h"
#include "sched.h"

struct tpu_coll_plan {
    tpu_topo_t topo;
    tpu_link_model_t link;
    tpu_coll_desc_t desc;
    const tpu_algo_t *algo;
    tpu_algo_args_t args;
    tpu_sched_t sched;
    int64_t *step_start; /* flows of step s are [step_start[s], step_start[s+1]) */
    int group;
    int64_t shard;      /* bytes of one block */
    uint64_t in_bytes;  /* per chip */
    uint64_t out_bytes; /* per chip */
    int64_t work_bytes; /* the buffer the schedule works on (padded psum) */
    int data_scale;     /* 2 when a bf16 reduction runs on f32 working buffers */
    char name[64];      /* "psum/rs_ag k=2" */
};

/* Time the whole schedule with every chip local (the sim path). */
tpu_status_t tpu__plan_model(const tpu_coll_plan_t *plan, double *seconds_p,
                             tpu_coll_result_t *res);

#endif
