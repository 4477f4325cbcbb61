/*
 * The whole-job watchdog of an MPI job: sync points, heartbeats, the chip behind,
 * and the waits and collectives of launch/ that go through it.  The start-up
 * agreements are watch_agree.c's, the guard of a wait it cannot poll
 * watch_guard.c's, the monitor that names a rank that died watch_monitor.c's.
 *
 * Watchdog.  Every wait of launch/ (barriers, reductions, broadcasts, the
 * wiring's point-to-point) goes through app_job_wait(): a nonblocking MPI call
 * polled until it completes or --timeout passes.  Before each wait and each
 * collective a rank enters a numbered sync point and tells rank 0 with one
 * 16-byte message on a communicator of its own (so no tag meets the transport's):
 * the point and whom it waits for (a chip, everyone, or nobody yet):
 *
 *     rank r:  point p, waits w  --Isend-->  rank 0: peers[r] = {p, w, now}
 *
 * While it waits (in app_job_wait, or inside a collective through the run's
 * on_wait hook, which names the source of its oldest open receive) a rank says
 * so again every 0.25 s: a heartbeat.  When rank 0 has waited --timeout at point
 * p, the ranks behind are those with seen < p.  It follows who waits on whom
 * among them (app_job_behind): a chain ends at a rank that waits for nobody (it
 * is busy or stuck) or has been silent over a second (it is stopped); the rank
 * most chains end at is the chip behind, and rank 0 names it and aborts the job;
 * when several chips have been silent over a second (a node lost or cut off: its
 * chips stop talking whatever point they reached), rank 0 names them all instead.
 * Counting sync points alone named, in a race, a chip that waited on a stopped
 * chip at the same point.  Any other rank that waits --timeout + 3 s (plus 0.1 s
 * per rank, so the lowest speaks first) concludes that rank 0 itself is behind
 * or stopped, names it, and aborts.  Cost: one eager 16-byte message per sync
 * point per rank and one per 0.25 s of waiting, drained by rank 0 while it
 * waits; 50 us sleeps between polls after the first 200; the clock is read at
 * every poll (a poll may take milliseconds on a loaded node).
 */
#include "watch.h"

#include "alloc.h"
#include "clock.h"
#include "job.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TAG_PROGRESS 7
/* The wait for every live chip after a collective timed out: well under APP_JOB_GRACE_S,
 * since rank 0 spends it on top of the collective's own --timeout while a chip
 * that finished the collective may already wait in the next barrier. */
#define FAIL_WAIT_S 1.0
/* A rank that waits tells rank 0 it is alive this often. */
#define HEARTBEAT_S 0.25
/* A rank silent this long is taken as stopped when chains of waits are followed. */
#define SILENT_S 1.0

void app_watch_nap(long ns)
{
    struct timespec ts = {0, ns};

    nanosleep(&ts, NULL);
}

/* "chip 5 (1,1), MPI rank 5" into 'buf'. */
void app_watch_chip_name(const app_job_t *job, int rank, char *buf, size_t len)
{
    const tpu_topo_t *t = tpu_pod_topo(job->pod);
    int chip = app_place_chip_of_rank(t, tpu_pod_chip(job->pod)->host_dims, rank);
    int c[TPU_MAX_AXES], slice, a, n;

    slice = tpu_topo_slice_of(t, chip);
    tpu_topo_coords(t, chip, c);
    n = snprintf(buf, len, "chip %d (", chip);
    if (t->slices > 1) {
        n += snprintf(buf + n, len - (size_t)n, "slice %d: ", slice);
    }
    for (a = 0; a < t->naxes; a++) {
        n += snprintf(buf + n, len - (size_t)n, "%s%d", a ? "," : "", c[a]);
    }
    snprintf(buf + n, len - (size_t)n, "), MPI rank %d", rank);
}

/*
 * Mark the job as ending on purpose, so that the monitor stays quiet.  Returns
 * 1 for the first rank to do so (on this node), which alone prints.
 */
int app_watch_mark_abort(const app_job_t *job)
{
    char line[16];
    int fd, n;

    if (job->marker[0] == '\0') {
        return 1;
    }
    fd = open(job->marker, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        return errno != EEXIST;
    }
    /* Who wrote it: the monitor of that rank's node removes it (watch_monitor.c). */
    n = snprintf(line, sizeof(line), "%d\n", job->world_rank);
    if (write(fd, line, (size_t)n) != n) {
        /* an empty marker still marks the abort */
    }
    close(fd);
    return 1;
}

void app_job_abort_code(app_job_t *job, int code, const char *msg)
{
    if (app_watch_mark_abort(job)) {
        fprintf(stderr, "tpuemu: %s\n", msg);
        fflush(stderr);
    }
    MPI_Abort(MPI_COMM_WORLD, code);
}

void app_job_abort(app_job_t *job, const char *msg)
{
    app_job_abort_code(job, APP_EXIT_FAIL, msg);
}

/* Rank 0: record that world rank 'r' is at point 'p' and waits for 'waits'. */
static void note(app_job_t *job, int r, uint64_t p, int waits)
{
    app_job_peer_t *q = &job->peers[r];

    if (p < q->seen) {
        return; /* an older message overtaken by a newer one */
    }
    q->seen = p;
    q->waits = waits;
    q->waits_at = p;
    q->heard = tpu__now_s();
}

/* A chip number (or APP_JOB_WAIT_*) as the world rank rank 0 stores. */
static int waits_rank(const app_job_t *job, int waits)
{
    return waits >= 0 && waits < job->nranks ? job->rank_of_chip[waits] : waits;
}

/* Rank 0: take every progress message that has arrived. */
static void drain(app_job_t *job)
{
    int flag = 1;
    MPI_Status st;
    uint64_t m[2];

    while (job->peers != NULL && job->watch != MPI_COMM_NULL) {
        MPI_Iprobe(MPI_ANY_SOURCE, TAG_PROGRESS, job->watch, &flag, &st);
        if (!flag) {
            break;
        }
        MPI_Recv(m, 2, MPI_UINT64_T, st.MPI_SOURCE, TAG_PROGRESS, job->watch, MPI_STATUS_IGNORE);
        note(job, st.MPI_SOURCE, m[0], waits_rank(job, (int)m[1] - 3));
    }
}

/* Tell rank 0 the point this rank is at and whom it waits for (again, as a
 * heartbeat, while it waits). */
static void tell(app_job_t *job)
{
    int slot = (int)(++job->sent % APP_JOB_RING), done = 0;

    job->beat = tpu__now_s();
    if (job->watch == MPI_COMM_NULL) {
        return;
    }
    if (job->world_rank == 0) {
        note(job, 0, job->point, waits_rank(job, job->waits));
        drain(job);
        return;
    }
    if (job->ring[slot] != MPI_REQUEST_NULL) {
        MPI_Test(&job->ring[slot], &done, MPI_STATUS_IGNORE);
        if (!done) {
            return; /* rank 0 is not taking them: it will hear at the next point */
        }
    }
    job->ringbuf[slot][0] = job->point;
    job->ringbuf[slot][1] = (uint64_t)(job->waits + 3);
    MPI_Isend(job->ringbuf[slot], 2, MPI_UINT64_T, 0, TAG_PROGRESS, job->watch, &job->ring[slot]);
}

/* Enter the next point, waiting for 'waits' (a chip or APP_JOB_WAIT_*). */
void app_watch_enter(app_job_t *job, int waits)
{
    job->point++;
    job->waits = waits;
    tell(job);
}

void app_job_progress(app_job_t *job)
{
    app_watch_enter(job, APP_JOB_WAIT_NONE);
}

void app_job_on_wait(void *arg, int chip)
{
    app_job_t *job = arg;
    int waits = chip >= 0 ? chip : APP_JOB_WAIT_ALL;

    if (waits != job->waits || tpu__now_s() - job->beat > HEARTBEAT_S) {
        if (waits != job->waits && tpu__now_s() - job->beat < 0.05) {
            return; /* short waits come and go: say only those that last */
        }
        job->waits = waits;
        tell(job);
    } else if (job->world_rank == 0) {
        drain(job);
    }
}

/* One end of a chain of waits starting at 'r' (see app_job_behind); -1 none. */
static int next_in_chain(const app_job_peer_t *p, int n, uint64_t point, double now,
                         double silent_s, int r)
{
    int w = p[r].waits_at == p[r].seen ? p[r].waits : APP_JOB_WAIT_NONE, q, best = -1;

    if (now - p[r].heard > silent_s || w == APP_JOB_WAIT_NONE) {
        return r; /* stopped, or busy: the chain ends here */
    }
    if (w >= 0 && w < n && w != r) {
        return p[w].seen < point ? w : -1; /* -1: waits for one that gave up */
    }
    /* A wait of everyone: for the one furthest back, if any is behind this one. */
    for (q = 0; q < n; q++) {
        if (p[q].seen < p[r].seen && (best < 0 || p[q].seen < p[best].seen)) {
            best = q;
        }
    }
    return best;
}

int app_job_behind(const app_job_peer_t *peers, int n, uint64_t point, double now, double silent_s,
                   int *waiters_p)
{
    int r, best = -1;
    int *count = tpu__calloc((size_t)n, sizeof(int));

    *waiters_p = 0;
    for (r = 0; r < n; r++) {
        int cur = r, steps, nx, end = -1;

        if (peers[r].seen >= point) {
            continue;
        }
        for (steps = 0; steps <= n && end < 0; steps++) {
            nx = next_in_chain(peers, n, point, now, silent_s, cur);
            if (nx < 0) {
                break; /* a live wait for one that is not behind */
            }
            if (nx == cur) {
                end = cur;
            }
            cur = nx;
        }
        if (end >= 0 && count != NULL) {
            count[end]++;
        }
        if (best < 0) {
            best = r; /* with no end at all (a cycle of live waits), a fallback */
        }
    }
    if (best < 0) {
        tpu__free(count);
        return -1;
    }
    for (r = 0; r < n; r++) {
        if (peers[r].seen >= point) {
            continue;
        }
        if (count != NULL && count[r] != count[best]) {
            if (count[r] > count[best]) {
                best = r;
            }
            continue;
        }
        if (peers[r].heard != peers[best].heard) {
            if (peers[r].heard < peers[best].heard) {
                best = r;
            }
            continue;
        }
        if (peers[r].seen < peers[best].seen) {
            best = r;
        }
    }
    *waiters_p = count != NULL ? count[best] : 1;
    tpu__free(count);
    return best;
}

/*
 * Rank 0: the other chips silent over SILENT_S, as "2 (1,0), MPI rank 2 and 3 (1,1),
 * MPI rank 3" into 'buf' (the first 8, then how many more); returns how many.  A
 * chip that waits says so every HEARTBEAT_S, so a silent one is stopped, busy or
 * cut off, whether or not it reached the current point (a node whose network went
 * down leaves some of each); but for one whose last word was a wait it cannot
 * heartbeat from (the host MPI's own collectives, app_job_guard_arm).
 */
static int silent_chips(const app_job_t *job, double now, char *buf, size_t len)
{
    char name[96];
    int r, n = 0;
    size_t used = 0;

    buf[0] = '\0';
    for (r = 1; r < job->nranks; r++) {
        if (now - job->peers[r].heard <= SILENT_S || job->peers[r].waits == APP_JOB_WAIT_BLIND) {
            continue;
        }
        if (n < 8 && used < len) {
            app_watch_chip_name(job, r, name, sizeof(name));
            used += (size_t)snprintf(buf + used, len - used, "%s%s", n ? " and " : "",
                                     name + 5); /* without "chip " */
        }
        n++;
    }
    if (n > 8 && used < len) {
        snprintf(buf + used, len - used, " and %d more", n - 8);
    }
    return n;
}

/* The wait of 'what' lasted too long: say who is behind and end the job. */
static void blame(app_job_t *job, const char *what, double waited)
{
    char name[96], msg[1024], list[512];
    int r, worst, waiters = 0;
    double now;

    /* The collective's own watchdog waited its --timeout before this wait (app_job_fail). */
    waited += job->waited_before;
    if (job->world_rank != 0) {
        app_watch_chip_name(job, 0, name, sizeof(name));
        snprintf(msg, sizeof(msg),
                 "%s is behind or stopped: chip %d waited %.1f s (--timeout %g) at %s and %s, "
                 "which watches the job, did not end it; ending the job",
                 name, job->chip, waited, job->timeout_given, what, name);
        app_job_abort_code(job, APP_EXIT_TIMEOUT, msg);
        return;
    }
    drain(job);
    now = tpu__now_s();
    worst = app_job_behind(job->peers, job->nranks, job->point, now, SILENT_S, &waiters);
    if (silent_chips(job, now, list, sizeof(list)) > 1) {
        /* Several chips silent at once: a node lost, or its network down. */
        snprintf(msg, sizeof(msg),
                 "chips %s are silent: chip %d waited %.1f s (--timeout %g) at %s and they have "
                 "said nothing for over %.0f s; they are lost, stopped or unreachable (a node or "
                 "its network down?); ending the job",
                 list, job->chip, waited, job->timeout_given, what, SILENT_S);
        app_job_abort_code(job, APP_EXIT_TIMEOUT, msg);
    }
    /* Everyone reached the point, but one stopped inside the wait: the silent one. */
    for (r = 1; r < job->nranks && worst < 0; r++) {
        int q;

        for (q = 1; q < job->nranks; q++) {
            if (job->peers[q].heard < job->peers[r].heard) {
                break;
            }
        }
        if (q == job->nranks && now - job->peers[r].heard > 2 * HEARTBEAT_S) {
            app_watch_chip_name(job, r, name, sizeof(name));
            snprintf(msg, sizeof(msg),
                     "%s is behind: it reached %s but has been silent for %.1f s (--timeout %g); "
                     "it is stopped or stuck; ending the job",
                     name, what, now - job->peers[r].heard, job->timeout_given);
            app_job_abort_code(job, APP_EXIT_TIMEOUT, msg);
        }
    }
    if (worst < 0) {
        snprintf(msg, sizeof(msg),
                 "every chip reached %s, but it did not complete within %.1f s (--timeout %g); "
                 "ending the job",
                 what, waited, job->timeout_given);
    } else {
        char others[64] = "";

        if (waiters > 1) {
            snprintf(others, sizeof(others), "; %d other chip(s) behind wait for it", waiters - 1);
        }
        app_watch_chip_name(job, worst, name, sizeof(name));
        snprintf(msg, sizeof(msg),
                 "%s is behind: it has not reached %s after %.1f s (--timeout %g; it is %llu "
                 "sync point(s) back, silent for %.1f s%s); it is stopped, stuck or too slow; "
                 "ending the job",
                 name, what, waited, job->timeout_given,
                 (unsigned long long)(job->point - job->peers[worst].seen),
                 now - job->peers[worst].heard, others);
    }
    app_job_abort_code(job, APP_EXIT_TIMEOUT, msg);
}

void app_job_wait(app_job_t *job, MPI_Request *req, const char *what)
{
    double t0 = tpu__now_s(), limit = job->timeout, now;
    int flag = 0;
    long polls = 0;

    if (job->world_rank != 0) {
        limit += APP_JOB_GRACE_S + 0.1 * (job->world_rank < 20 ? job->world_rank : 20);
    }
    for (;;) {
        MPI_Test(req, &flag, MPI_STATUS_IGNORE);
        if (flag) {
            return;
        }
        if (job->world_rank == 0) {
            drain(job);
        }
        /* The clock is read at every poll: with mpi_yield_when_idle each MPI_Test
         * yields, and on a loaded node 200 polls took 4 s - rank 0 blamed nobody in
         * time and was blamed itself, and a waiting rank looked silent. */
        now = tpu__now_s();
        if (job->timeout > 0 && now - t0 > limit) {
            blame(job, what, now - t0);
        }
        if (job->world_rank != 0 && now - job->beat > HEARTBEAT_S) {
            tell(job);
        }
        if (++polls > 200) {
            app_watch_nap(50000);
        }
    }
}

void app_job_barrier(app_job_t *job, const char *what)
{
    MPI_Request req;

    app_watch_enter(job, APP_JOB_WAIT_ALL);
    MPI_Ibarrier(job->comm, &req);
    app_job_wait(job, &req, what);
}

void app_job_allreduce(app_job_t *job, const void *in, void *out, int count, MPI_Datatype type,
                       MPI_Op op, const char *what)
{
    MPI_Request req;

    app_watch_enter(job, APP_JOB_WAIT_ALL);
    MPI_Iallreduce(in, out, count, type, op, job->comm, &req);
    app_job_wait(job, &req, what);
}

void app_job_bcast(app_job_t *job, void *buf, int count, MPI_Datatype type, int root,
                   const char *what)
{
    MPI_Request req;

    app_watch_enter(job, job->chip == root ? APP_JOB_WAIT_ALL : root);
    MPI_Ibcast(buf, count, type, root, job->comm, &req);
    app_job_wait(job, &req, what);
}

void app_job_allgather(app_job_t *job, const void *in, int count, void *out, const char *what)
{
    MPI_Request req;

    app_watch_enter(job, APP_JOB_WAIT_ALL);
    MPI_Iallgather(in, count, MPI_BYTE, out, count, MPI_BYTE, job->comm, &req);
    app_job_wait(job, &req, what);
}

void app_job_gather(app_job_t *job, const void *in, int count, void *out, int root,
                    const char *what)
{
    MPI_Request req;

    app_watch_enter(job, APP_JOB_WAIT_ALL);
    MPI_Igather(in, count, MPI_BYTE, out, count, MPI_BYTE, root, job->comm, &req);
    app_job_wait(job, &req, what);
}

void app_job_fail(app_job_t *job, const tpu_err_t *err)
{
    char what[TPU_ERR_MSG_LEN + 64];
    MPI_Request req;

    if (err->status != TPU_ERR_TIMEOUT) {
        app_job_abort(job, err->msg);
        return;
    }
    /*
     * A collective's own watchdog fired: this chip waited for a peer, which may
     * itself wait for another.  Every live chip meets here within seconds; the
     * chip that never comes is the one behind, and rank 0 names it.
     */
    job->waited_before = job->timeout_given;
    job->timeout = job->timeout < FAIL_WAIT_S ? job->timeout : FAIL_WAIT_S;
    snprintf(what, sizeof(what), "the end of a collective that timed out (%s)", err->msg);
    /* On the watchdog's communicator, not job->comm: a chip whose part of the
     * collective completed is already in the next collective on job->comm, and a
     * barrier there met it (MPI_ERR_TRUNCATE in a loaded train, a false "lost chip"). */
    app_watch_enter(job, APP_JOB_WAIT_ALL);
    MPI_Ibarrier(job->watch != MPI_COMM_NULL ? job->watch : job->comm, &req);
    app_job_wait(job, &req, what);
    /* every chip came: a deadlock among live chips */
    app_job_abort_code(job, APP_EXIT_TIMEOUT, err->msg);
}
