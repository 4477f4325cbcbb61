/*
 * A training run of the MLP on the pod (include/tpu/mlp.h), shared by 'tpuemu
 * train' (cmd/train.c) and the default run's step (cmd/run_train.c): the model,
 * the steps with their modeled and measured times, the trace of each step, the
 * check that the replicas stay identical, and the ranks' agreement on failures.
 * Private to launch/.
 */
#ifndef APP_TRAIN_RUN_H
#define APP_TRAIN_RUN_H

#include "tpu/mlp.h"

#include "job.h"
#include "report.h"

#include <stdio.h>

/* Where the chips are: one per rank (comm), or all in this process. */
typedef struct app_train_where {
    MPI_Comm comm;  /* MPI_COMM_NULL: this process holds every chip */
    int root;       /* prints */
    app_job_t *job; /* the MPI job (NULL without one) */
} app_train_where_t;

/* Everything a run needs and produces. */
typedef struct app_train_run {
    const tpu_pod_t *pod;
    tpu_mlp_spec_t spec;
    int steps;
    tpu_xport_t *x;
    app_train_where_t where;
    tpu_mlp_t *mlp;
    float *losses;
    double *wall_us;
    double (*modeled)[4]; /* per step: step, compute, comm, exposed comm (us) */
    tpu_mlp_report_t first, last;
    int replicas_ok;
    app_report_t *report;      /* --trace, --heatmap (root; NULL or inactive: none) */
    int measured;              /* --trace-measured */
    double t0;                 /* the job's start (wall clock), for the measured trace */
    float *w[TPU_MLP_NPARAMS]; /* the gathered weights (when asked) */
} app_train_run_t;


/* Free what a run holds (the model, the per-step arrays, the gathered weights). */
void app_train_run_fini(app_train_run_t *r);
/* Create the model (checks the spec: bad input fails here, before any output). */
tpu_status_t app_train_run_create(app_train_run_t *r, tpu_err_t *err);
/* Train, check the replicas after every step, gather the weights if 'gather'. */
tpu_status_t app_train_run_steps(app_train_run_t *r, int gather, FILE *txt, int print_steps,
                                 tpu_err_t *err);
/*
 * Under MPI, make a failure that some ranks saw (an unreadable file on one node)
 * a failure of all, before anyone enters a collective the others would never
 * join.  Returns the lowest failing rank (it prints its message), or -1.
 */
int app_train_agree(const app_train_where_t *w, tpu_status_t *status_p, int rank, int nranks);
/* The largest of every rank's 'v' under an MPI job (watched: launch/watch.c, naming 'what'
 * when a chip stalls it); else 'v'. */
double app_train_max_all(const app_train_where_t *w, double v, const char *what);

#endif /* APP_TRAIN_RUN_H */
