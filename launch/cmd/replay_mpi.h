/* tpuemu replay under mpirun (launch/cmd/replay_mpi.c).  Private to launch/. */
#ifndef TPU_REPLAY_MPI_H
#define TPU_REPLAY_MPI_H

#include "tpu/replay.h"

#include "job.h"

/* What the real run measured, per collective row of the report. */
typedef struct tpu_replay_measured {
    double *measured_us; /* wall time per execution, the slowest rank's */
    int64_t *runs;       /* executions run */
    long *wrong;         /* wrong elements over every chip and execution */
    int64_t executions;  /* runs in total */
    int64_t skipped;     /* executions not run (not timed, one chip, too large) */
    long total_wrong;
    int model_mismatches; /* runs whose modeled time differed from the replay's */
} tpu_replay_measured_t;

/* Run every execution of rep->seq over the job's transport, verified. */
tpu_status_t tpu__replay_run_mpi(tpu_job_t *job, const tpu_replay_report_t *rep,
                                 tpu_replay_measured_t *m, tpu_err_t *err);
void tpu__replay_measured_fini(tpu_replay_measured_t *m);

#endif
