/*
 * An MPI job: the pod, the chip this rank emulates, the transport (job.c).  The
 * watchdog's calls on a job are declared by watch.h, watch_agree.h, watch_guard.h
 * and watch_monitor.h, included by the files that make them.  Private to launch/.
 */
#ifndef APP_JOB_H
#define APP_JOB_H

#include "tpu/mpi.h"

#include "json.h"
#include "launch.h"
#include "placement.h"
#include "report.h"
#include "sink.h"
#include "watch.h" /* the watchdog state the job holds: app_job_peer_t, APP_JOB_RING */

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

typedef struct app_job {
    tpu_pod_t *pod;
    MPI_Comm comm; /* ranks ordered by chip id */
    int chip;      /* the chip this rank emulates */
    int world_rank;
    int nranks;
    tpu_xport_t *x; /* the mpi transport (one chip per rank) */
    app_place_t place;
    /* The whole-job watchdog (watch.c). */
    double timeout;        /* seconds any wait may last; 0: none */
    double timeout_given;  /* --timeout as the user gave it (60 by default): the lines quote it */
    double waited_before;  /* seconds a collective's own watchdog waited before app_job_fail */
    MPI_Comm watch;        /* progress messages to rank 0 */
    uint64_t point;        /* sync points this rank has entered */
    uint64_t sent;         /* progress messages sent */
    int waits;             /* whom this rank waits for now: a chip or APP_JOB_WAIT_* */
    double beat;           /* when this rank last told rank 0 */
    app_job_peer_t *peers; /* rank 0: what it knows of each world rank */
    int *rank_of_chip;     /* rank 0: the world rank of each chip */
    MPI_Request ring[APP_JOB_RING];
    uint64_t ringbuf[APP_JOB_RING][2];
    int monitor_fd;  /* a node's first rank: the pipe to its monitor process; -1 none */
    int *local_pids; /* rank 0: the pid of each world rank on its node (0: elsewhere) */
    /* The guard of a wait MPI cannot watch (app_job_guard_arm). */
    timer_t guard;
    int guard_made;
    atomic_int guard_state;
    double guard_s; /* the bound armed, grace included */
    char guard_what[160];
    char marker[256]; /* the file that says the job ends on purpose */
    /* --inject crash|stop:chip=C,call=N: chip C dies (or stops) at collective call N. */
    int crash_chip;
    int crash_stop;
    long crash_call;
} app_job_t;

/*
 * MPI_Init, the pod, the rank check, the chip of this rank, the transport.  On
 * bad input prints one line (rank 0), finalizes MPI and returns the exit code
 * (every rank returns it); returns -1 when the job is ready.
 */
int app_job_start(const app_opts_t *o, int *argc, char ***argv, app_job_t *job);
/*
 * Rank 0 opens '--json' and '--csv' (NULL: not asked for; 'csv_sink' may be NULL);
 * every rank learns whether that worked.  On failure prints one line, ends the
 * job and returns APP_EXIT_USAGE; else -1.
 */
int app_job_open(app_job_t *job, const char *json, app_sink_t *json_sink, const char *csv,
                 app_sink_t *csv_sink);
/*
 * Rank 0 ends the JSON document ('json' may be NULL) and closes the sinks; a
 * refused value or a write error is one line and APP_EXIT_FAIL on every rank;
 * else -1.
 */
int app_job_close(app_job_t *job, app_json_t *json, app_sink_t *json_sink, app_sink_t *csv_sink);
/*
 * Rank 0 opens '--trace' and '--heatmap' into 'rep' (the others get an inactive
 * one); every rank learns whether that worked.  On failure prints one line,
 * ends the job and returns APP_EXIT_USAGE (or APP_EXIT_FAIL); else -1.
 */
int app_job_report_open(app_job_t *job, const app_opts_t *o, const char *cmd, app_report_t *rep);
/* Rank 0 finishes them; a write error is one line and APP_EXIT_FAIL on every rank; else -1. */
int app_job_report_close(app_job_t *job, app_report_t *rep);
/*
 * The outputs of a command that runs as a job (run, bench): app_job_report_open()
 * ('--trace', '--heatmap'), then app_job_open() ('--json', '--csv'); the exit code
 * on failure (the job has ended), else -1.
 */
int app_job_outputs_open(app_job_t *job, const app_opts_t *o, const char *cmd, app_report_t *rep,
                         app_sink_t *json_sink, app_sink_t *csv_sink);
/* Close them: app_job_close() (the JSON document, the sinks), then
 * app_job_report_close(); the first failure's exit code, else -1. */
int app_job_outputs_close(app_job_t *job, app_json_t *json, app_sink_t *json_sink,
                          app_sink_t *csv_sink, app_report_t *rep);
/* Destroy the transport, MPI_Finalize, and return 'code'. */
int app_job_end(app_job_t *job, int code);

/* Refuse a bad command line in an MPI job: the lowest failing rank prints 'msg'
 * ('msg' NULL on ranks that parsed it); returns APP_EXIT_USAGE. */
int app_job_refuse(const char *msg, int *argc, char ***argv);

/* --inject crash|stop:chip=C,call=N: on chip C at call N, die (SIGKILL) or stop
 * (SIGSTOP); call it right after the sync point of the call (app_job_progress). */
void app_job_inject(const app_job_t *job, long call);

/* A collective with its buffers and reference result on this chip. */
typedef struct app_case {
    tpu_coll_desc_t desc;
    tpu_coll_plan_t *plan;
    tpu_coll_exec_t *exec; /* runs of the plan over the job's transport */
    unsigned char *in, *out, *ref;
    uint64_t in_bytes, out_bytes;
} app_case_t;

/* Plan the collective, allocate and fill the buffers, compute the reference. */
tpu_status_t app_case_init(app_case_t *c, const app_job_t *job, const tpu_coll_desc_t *desc,
                           tpu_err_t *err);
void app_case_fini(app_case_t *c);
/* Run once; '*modeled_us_p' is the modeled time, '*wall_s_p' the measured. */
tpu_status_t app_case_run(app_case_t *c, app_job_t *job, uint64_t call, int check_peers,
                          double timeout, double *modeled_us_p, double *wall_s_p, tpu_err_t *err);
/* Elements of the result that differ from the reference. */
long app_case_wrong(const app_case_t *c, int chip);

#endif
