/*
 * The monitor that names a rank of an MPI job that died, and the world rank from the
 * launcher's environment (watch_monitor.c).  Private to launch/.
 */
#ifndef APP_WATCH_MONITOR_H
#define APP_WATCH_MONITOR_H

#include "watch.h"

/* Tests only: 1 when the environment's TPUEMU_TEST_NOMEM is 'where', the name of an
 * allocation of launch/ that then fails as if the host were out of memory (a path
 * no test could reach otherwise). */
int app_job_test_nomem(const char *where);
/* The dead-rank monitor: fork it before MPI_Init (rank 0 and the first rank of each
 * node), start it once the pod is known, stop it before MPI_Finalize. */
void app_job_monitor_fork(app_job_t *job);
/* Collective over the world: -1 on every rank when the first rank of a node had no
 * memory for the monitor's tables (nothing printed), else 0. */
int app_job_monitor_start(app_job_t *job);
void app_job_monitor_stop(app_job_t *job);
/* After MPI_Finalize: SIGTERM ends this process again without leaving the file that
 * tells the monitor the runtime ended it (the monitor has gone). */
void app_job_monitor_forget_term(void);

#endif
