/* The guard of a wait the watchdog cannot poll (watch_guard.c).  Private to launch/. */
#ifndef APP_WATCH_GUARD_H
#define APP_WATCH_GUARD_H

#include "watch.h"

/*
 * Guard a wait that cannot go through app_job_wait (the host MPI's own blocking
 * collective timed by bench --compare-mpi, the start-up agreements): if it has
 * not ended 'seconds' from now (plus the grace of a rank other than 0), a timer
 * thread names the chip behind when it can (rank 0: a stopped rank of its node),
 * else this chip and 'what', and ends the job.  Costs a syscall to arm and one
 * to disarm, nothing while the wait runs.
 */
void app_job_guard_arm(app_job_t *job, double seconds, const char *what);
void app_job_guard_disarm(app_job_t *job);

#endif
