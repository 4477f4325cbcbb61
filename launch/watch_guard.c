/*
 * The guard of a wait the watchdog cannot poll (the watchdog is watch.c's).
 *
 * Guard.  A few waits cannot be polled: the host MPI's own blocking collectives
 * that bench --compare-mpi times, and the start-up agreements before the
 * watchdog exists.  app_job_guard_arm() sets a timer (one syscall, none while
 * the wait runs); if it fires, its thread (not a signal handler: it may format)
 * names the chip behind when it can - rank 0 looks for a stopped rank of its
 * node in /proc - or else this chip and the wait, and ends the process; mpirun
 * ends the others.  An atomic state decides a race between the timer and the
 * disarm: the side that moves it from armed wins.
 */
#include "watch_guard.h"

#include "job.h"
#include "watch.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum {
    GUARD_IDLE,
    GUARD_ARMED,
    GUARD_FIRED
};

/* Is 'pid' stopped (SIGSTOP, or traced)? */
static int pid_stopped(int pid)
{
    char path[64], buf[256], *p;
    FILE *f;
    int stopped = 0;

    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    f = fopen(path, "r");
    if (f == NULL) {
        return 0;
    }
    if (fgets(buf, sizeof(buf), f) != NULL && (p = strrchr(buf, ')')) != NULL) {
        stopped = p[1] == ' ' && (p[2] == 'T' || p[2] == 't');
    }
    fclose(f);
    return stopped;
}

/* The timer's thread: the guarded wait lasted too long. */
static void guard_fire(union sigval v)
{
    app_job_t *job = v.sival_ptr;
    char msg[512], me[96], name[96];
    int expect = GUARD_ARMED, r;

    if (!atomic_compare_exchange_strong(&job->guard_state, &expect, GUARD_FIRED)) {
        return; /* disarmed in the meantime */
    }
    if (job->pod != NULL) {
        app_watch_chip_name(job, job->world_rank, me, sizeof(me));
    } else {
        snprintf(me, sizeof(me), "MPI rank %d", job->world_rank);
    }
    snprintf(msg, sizeof(msg),
             "%s waited %.1f s in %s, which the watchdog cannot poll; a chip is stopped, "
             "stuck or too slow; ending the job",
             me, job->guard_s, job->guard_what);
    for (r = 1; job->local_pids != NULL && job->pod != NULL && r < job->nranks; r++) {
        if (job->local_pids[r] > 0 && pid_stopped(job->local_pids[r])) {
            app_watch_chip_name(job, r, name, sizeof(name));
            snprintf(msg, sizeof(msg),
                     "%s is behind: it is stopped, and %s waited %.1f s for it in %s, which the "
                     "watchdog cannot poll; ending the job",
                     name, me, job->guard_s, job->guard_what);
            break;
        }
    }
    if (app_watch_mark_abort(job)) {
        fprintf(stderr, "tpuemu: %s\n", msg);
        fflush(stderr);
    }
    _exit(APP_EXIT_TIMEOUT);
}

void app_job_guard_arm(app_job_t *job, double seconds, const char *what)
{
    struct itimerspec its;

    if (seconds <= 0) {
        return;
    }
    /* A sync point: rank 0 hears this rank now, before it falls silent in the wait.
     * Else one that left a barrier for the host's collective looked older than the
     * chip stopped inside that barrier, and rank 0 named it as the silent one. */
    if (job->watch != MPI_COMM_NULL) {
        app_watch_enter(job, APP_JOB_WAIT_BLIND);
    }
    if (!job->guard_made) {
        struct sigevent sev;

        memset(&sev, 0, sizeof(sev));
        sev.sigev_notify = SIGEV_THREAD;
        sev.sigev_notify_function = guard_fire;
        sev.sigev_value.sival_ptr = job;
        if (timer_create(CLOCK_MONOTONIC, &sev, &job->guard) != 0) {
            return; /* no guard: the wait is as unwatched as before */
        }
        job->guard_made = 1;
    }
    if (job->world_rank != 0) {
        seconds += APP_JOB_GRACE_S + 0.1 * (job->world_rank < 20 ? job->world_rank : 20);
    }
    job->guard_s = seconds;
    snprintf(job->guard_what, sizeof(job->guard_what), "%s", what);
    memset(&its, 0, sizeof(its));
    its.it_value.tv_sec = (time_t)seconds;
    its.it_value.tv_nsec = (long)((seconds - (double)(time_t)seconds) * 1e9);
    atomic_store(&job->guard_state, GUARD_ARMED);
    timer_settime(job->guard, 0, &its, NULL);
}

void app_job_guard_disarm(app_job_t *job)
{
    struct itimerspec off;
    int expect = GUARD_ARMED;

    if (!job->guard_made) {
        return;
    }
    if (!atomic_compare_exchange_strong(&job->guard_state, &expect, GUARD_IDLE)) {
        while (expect == GUARD_FIRED) {
            pause(); /* the guard fired: its thread ends the process */
        }
        return;
    }
    memset(&off, 0, sizeof(off));
    timer_settime(job->guard, 0, &off, NULL);
}
