/*
 * The run object of a plan over a transport (exec.c): what runs of one plan
 * share, which exec_layout.c, exec_times.c and exec_engine.c work on.
 */
#ifndef TPU_EXEC_H
#define TPU_EXEC_H

#include "tpu/coll.h"
#include "tpu/dtype.h"
#include "tpu/xport.h"

#include "host/host.h"
#include "plan.h"
#include "shm.h"

struct tpu_coll_exec {
    const tpu_coll_plan_t *plan;
    const tpu_plan_sched_t *ps; /* the data schedule: &data or &plan->model */
    tpu_plan_sched_t data;      /* built here when the model's is one chip's or pipelined */
    tpu_xport_t *x;
    int *local_index; /* chip -> index among local chips, or -1 */
    uint8_t *is_local;
    unsigned char **send;   /* per local chip: the buffer flows read */
    unsigned char **recv;   /* per local chip: the buffer flows write */
    unsigned char **work;   /* per local chip: the working buffer, or NULL */
    int nwork;              /* entries of 'work' (the transport's local chips) */
    unsigned char *scratch; /* receive scratch of reducing flows */
    tpu_call_sig_t sig;     /* the current run's call */
    tpu_dtype_t work_dtype;
    double end_s;       /* modeled time of the collective (the plan's walk) */
    double local_end_s; /* the latest arrival at or from a local chip */
    int flow_bits;      /* tag = epoch << (flow_bits + 1) | flow << 1 */
    int send_from_recv; /* the host plan works in the output buffer (direct2) */
    int scale;          /* working bytes per user byte of the data schedule's flows */
    /* A bf16 reduction on a host plan (wide): messages carry the bf16 words, each
     * local chip accumulates the range its reducing receives cover in f32
     * ('acc', from byte acc_off of the user's buffer, acc_len user bytes) and
     * rounds it into the output once, after the last of its acc_nred receives
     * (acc_from_input: the accumulator starts from the chip's own input). */
    int wide, acc_from_input;
    float **acc;
    int64_t *acc_off, *acc_len;
    int *acc_nred, *acc_seen;
    int epochs;
    /* With chips elsewhere (MPI): the flows' message ids, each flow's number among
     * the flows between its two chips in schedule order, which both chips count
     * alike from their own part of the schedule; NULL: the flow index. */
    int32_t *msg_id;
    /* The collective through the node's shared memory (shm.c), or NULL; whether
     * the last run went through it. */
    tpu_shm_t *shm;
    int last_shm;
    /* The row of the host plans whose plan is 'data' (host_algorithms.def), or NULL. */
    const tpu_host_algo_t *host;
    /* In-place runs (exec_inplace.c): the copies of overlapping inputs, and the
     * inputs a run reads; NULL until a run needs them. */
    unsigned char *stage;
    void **stage_in;
};

/* A run object's modeled times (for tests): the collective's end and the
 * latest arrival at or from its local chips, seconds. */
void tpu__exec_times(const tpu_coll_exec_t *e, double *end_s_p, double *local_end_s_p);

/* The host plan the run object moves its bytes with (host_algorithms.def), or NULL
 * when it runs the algorithm's own schedule (for tests). */
const tpu_host_algo_t *tpu__exec_host_algo(const tpu_coll_exec_t *e);

#endif /* TPU_EXEC_H */
