/*
 * SIGINT and SIGTERM: one line naming the signal and the row or step that was
 * running, the temporary output files removed (no partial file; the old files
 * stay), then the signal's own end (exit status 128 + the signal).  Private to
 * launch/.
 */
#ifndef APP_LAUNCH_INTERRUPT_H
#define APP_LAUNCH_INTERRUPT_H

/*
 * Put the handler in front of whatever handles the two signals now (the
 * default, or the job's monitor hook, which still runs after it).  Cheap:
 * called at the start and again whenever an output file is opened.
 */
void app_interrupt_install(void);
/* The ranks of one node whose pids app_interrupt_job() keeps. */
#define APP_INTERRUPT_MAX_PIDS 1024

/*
 * Under mpirun: the job's abort marker (the first rank to create it prints the
 * line), this rank's name ("chip 2 (1,0), MPI rank 2") and world rank, and the
 * pids of the ranks of its node (one gone: a lost rank, which the monitor names,
 * and no rank prints).  Installs the handler again, in front of the monitor's.
 */
void app_interrupt_job(const char *marker, const char *me, int world_rank, const int *pids,
                       int npids);
/* The job ends (MPI_Finalize): a SIGTERM from here on is the runtime's after a
 * rank's exit, and no rank prints. */
void app_interrupt_job_end(void);
/* During an MPI job's start-up: the signal leaves the file 'term_path' (the
 * runtime ended this rank: it is not the one lost; jobenv.h, watch_monitor.c). */
void app_interrupt_start(const char *term_path);
/* 'done' of 'total' items finished, 'item' running (may be NULL): for the line. */
void app_interrupt_at(long done, long total, const char *item);

#endif /* APP_LAUNCH_INTERRUPT_H */
