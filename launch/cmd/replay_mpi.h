/* tpuemu replay under mpirun (launch/cmd/replay_mpi.c).  Private to launch/. */
#ifndef APP_REPLAY_MPI_H
#define APP_REPLAY_MPI_H

#include "tpu/replay.h"

#include "job.h"

/* What the real run measured, per collective row of the report. */
typedef struct app_replay_measured {
    double *measured_us; /* wall time per execution, the slowest rank's */
    int64_t *runs;       /* executions run */
    long *wrong;         /* wrong elements over every chip and execution */
    int64_t executions;  /* runs in total */
    int64_t skipped;     /* executions not run (not timed, one chip, too large) */
    long total_wrong;
    int model_mismatches; /* runs whose modeled time differed from the replay's */
    /* This rank's wall clock of the first APP_REPLAY_SPANS executions of the
     * sequence: start (us since the run began) and duration; -1, -1 when not run. */
    double *spans;
    int64_t nspans;
} app_replay_measured_t;

#define APP_REPLAY_SPANS 4096

/*
 * Run every execution of rep->seq over the job's transport, verified; 'txt'
 * (rank 0, not NULL) shows a progress bar on a terminal.
 */
tpu_status_t app_replay_run_mpi(app_job_t *job, const tpu_replay_report_t *rep,
                                app_replay_measured_t *m, FILE *txt, tpu_err_t *err);
void app_replay_measured_fini(app_replay_measured_t *m);

#endif
