/*
 * The whole-job watchdog of an MPI job (watch.c): sync points, heartbeats, the chip
 * behind, and the waits and collectives of launch/ that go through it.  Private to
 * launch/.
 */
#ifndef APP_WATCH_H
#define APP_WATCH_H

#include "tpu/mpi.h"
#include "tpu/status.h"

#include <stddef.h>
#include <stdint.h>

/* The job (job.h). */
typedef struct app_job app_job_t;

/* Progress messages a rank may have in flight to rank 0. */
#define APP_JOB_RING 64

/* Whom a rank waits for, besides a chip number. */
#define APP_JOB_WAIT_NONE  (-1) /* not waiting: busy, or it has not said yet */
#define APP_JOB_WAIT_ALL   (-2) /* in a wait of the whole job (barrier, reduction) */
#define APP_JOB_WAIT_BLIND (-3) /* in a wait of the whole job it cannot heartbeat from (guard) */

/* Extra seconds a rank other than 0 waits before it blames rank 0.  Rank 0 may
 * spend a collective's --timeout and then FAIL_WAIT_S (watch.c) before it names the chip
 * behind, starting a little after this rank began to wait; 2 s of the grace are
 * slack for a heavily oversubscribed node (with 1 s, a loaded CI run blamed rank 0). */
#define APP_JOB_GRACE_S 3.0

/* Rank 0's view of one rank, from its progress messages. */
typedef struct app_job_peer {
    uint64_t seen;     /* the last sync point it entered */
    uint64_t waits_at; /* the point at which it said whom it waits for */
    int waits;         /* that world rank, or APP_JOB_WAIT_* */
    double heard;      /* when rank 0 last heard from it (tpu__now_s) */
} app_job_peer_t;

/*
 * The world rank the job waits for at sync point 'point': of the ranks that have
 * not reached it, follow whom each waits for (a silent rank, or one that waits
 * for nobody, ends a chain) and take the rank most chains end at; ties go to the
 * one silent longest, then the one furthest back.  '*waiters_p' gets how many
 * ranks behind lead to it (itself included).  -1 when every rank reached it.
 * Pure: 'now' is the clock, 'silent_s' how long a rank may be quiet while alive.
 */
int app_job_behind(const app_job_peer_t *peers, int n, uint64_t point, double now, double silent_s,
                   int *waiters_p);

/* A failure one rank found that the others may not see: print it, abort the job. */
void app_job_abort(app_job_t *job, const char *msg);
/* The same, with exit code 'code' (APP_EXIT_*): mpirun exits with it. */
void app_job_abort_code(app_job_t *job, int code, const char *msg);
/* A collective failed: abort with its message, or for a timeout find the chip behind. */
void app_job_fail(app_job_t *job, const tpu_err_t *err);
/* Enter the next sync point (tells rank 0). */
void app_job_progress(app_job_t *job);
/* A tpu_coll_run_opts_t on_wait hook ('arg' is the job): tells rank 0, at most
 * every heartbeat, which chip this rank waits for inside a collective. */
void app_job_on_wait(void *arg, int chip);
/* Wait for 'req' with the watchdog; 'what' names the wait in messages. */
void app_job_wait(app_job_t *job, MPI_Request *req, const char *what);
/* Barrier, allreduce, broadcast and gather (of bytes) over job->comm, with the watchdog. */
void app_job_barrier(app_job_t *job, const char *what);
void app_job_allreduce(app_job_t *job, const void *in, void *out, int count, MPI_Datatype type,
                       MPI_Op op, const char *what);
void app_job_bcast(app_job_t *job, void *buf, int count, MPI_Datatype type, int root,
                   const char *what);
void app_job_allgather(app_job_t *job, const void *in, int count, void *out, const char *what);
void app_job_gather(app_job_t *job, const void *in, int count, void *out, int root,
                    const char *what);
/* Sleep 'ns' nanoseconds (under a second). */
void app_watch_nap(long ns);
/* "chip 5 (1,1), MPI rank 5" into 'buf'. */
void app_watch_chip_name(const app_job_t *job, int rank, char *buf, size_t len);
/*
 * Mark the job as ending on purpose, so that the monitor stays quiet.  Returns
 * 1 for the first rank to do so (on this node), which alone prints.
 */
int app_watch_mark_abort(const app_job_t *job);
/* Enter the next point, waiting for 'waits' (a chip or APP_JOB_WAIT_*). */
void app_watch_enter(app_job_t *job, int waits);

#endif
