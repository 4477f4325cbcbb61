/*
 * Liveness of an MPI job: the whole-job watchdog, the start-up agreements, and
 * the monitor that names a rank that died.
 *
 * Watchdog.  Every wait of launch/ (barriers, reductions, broadcasts, the
 * wiring's point-to-point) goes through tpu_job_wait(): a nonblocking MPI call
 * polled until it completes or --timeout passes.  Before each wait and each
 * collective a rank enters a numbered sync point and tells rank 0 with one
 * 16-byte message on a communicator of its own (so no tag meets the transport's):
 * the point and whom it waits for (a chip, everyone, or nobody yet):
 *
 *     rank r:  point p, waits w  --Isend-->  rank 0: peers[r] = {p, w, now}
 *
 * While it waits (in tpu_job_wait, or inside a collective through the run's
 * on_wait hook, which names the source of its oldest open receive) a rank says
 * so again every 0.25 s: a heartbeat.  When rank 0 has waited --timeout at point
 * p, the ranks behind are those with seen < p.  It follows who waits on whom
 * among them (tpu__job_behind): a chain ends at a rank that waits for nobody (it
 * is busy or stuck) or has been silent over a second (it is stopped); the rank
 * most chains end at is the chip behind, and rank 0 names it and aborts the job.
 * Counting sync points alone named, in a race, a chip that waited on a stopped
 * chip at the same point.  Any other rank that waits --timeout + 3 s (plus 0.1 s
 * per rank, so the lowest speaks first) concludes that rank 0 itself is behind
 * or stopped, names it, and aborts.  Cost: one eager 16-byte message per sync
 * point per rank and one per 0.25 s of waiting, drained by rank 0 while it
 * waits; 50 us sleeps between polls after the first 200; the clock is read at
 * every poll (a poll may take milliseconds on a loaded node).
 *
 * Agreements.  A bad input found by some ranks only (a config file missing on
 * one node, halves of a job with different flags) would leave the others in the
 * next collective forever.  tpu_job_agree() reduces the lowest failing rank,
 * which alone prints; tpu_job_agree_opts() compares a hash of every option that
 * changes the sequence of calls and names the first that differs with both values.
 *
 * Guard.  A few waits cannot be polled: the host MPI's own blocking collectives
 * that bench --compare-mpi times, and the start-up agreements before the
 * watchdog exists.  tpu_job_guard_arm() sets a timer (one syscall, none while
 * the wait runs); if it fires, its thread (not a signal handler: it may format)
 * names the chip behind when it can - rank 0 looks for a stopped rank of its
 * node in /proc - or else this chip and the wait, and ends the process; mpirun
 * ends the others.  An atomic state decides a race between the timer and the
 * disarm: the side that moves it from armed wins.
 *
 * Monitor.  When one rank is killed (kill -9), Open MPI's runtime kills the
 * others within a second, before they can see anything.  So rank 0 forks, before
 * MPI_Init, a small process in a session of its own that learns the pid and chip
 * of every rank on its node through a pipe and polls them every 50 ms: when one
 * disappears and no rank announced an abort (a marker file), it prints which chip
 * was lost.  It exits when rank 0 closes the pipe after a clean end, or when rank
 * 0 itself is gone.  The ranks of its node leave a file when they get SIGTERM,
 * with which Open MPI's daemon ends them after a rank elsewhere died (or mpirun
 * was interrupted): a rank gone with its file is not the lost one, and the
 * monitor names only a rank gone without.  Restriction: it sees the ranks of
 * rank 0's node only; a rank lost on another node is named by mpirun's message.
 */
#include "tpu/alloc.h"

#include "clock.h"
#include "job.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TAG_PROGRESS 7
/* Extra seconds a rank other than 0 waits before it blames rank 0.  Rank 0 may
 * spend a collective's --timeout and then FAIL_WAIT_S before it names the chip
 * behind, starting a little after this rank began to wait; 2 s of the grace are
 * slack for a heavily oversubscribed node (with 1 s, a loaded CI run blamed rank 0). */
#define GRACE_S 3.0
/* The wait for every live chip after a collective timed out: well under GRACE_S,
 * since rank 0 spends it on top of the collective's own --timeout while a chip
 * that finished the collective may already wait in the next barrier. */
#define FAIL_WAIT_S 1.0
/* A rank that waits tells rank 0 it is alive this often. */
#define HEARTBEAT_S 0.25
/* A rank silent this long is taken as stopped when chains of waits are followed. */
#define SILENT_S 1.0

int tpu_job_test_nomem(const char *where)
{
    const char *v = getenv("TPUEMU_TEST_NOMEM");

    return v != NULL && strcmp(v, where) == 0;
}

static void nap(long ns)
{
    struct timespec ts = {0, ns};

    nanosleep(&ts, NULL);
}

/* "chip 5 (1,1), MPI rank 5" into 'buf'. */
static void chip_name(const tpu_job_t *job, int rank, char *buf, size_t len)
{
    const tpu_topo_t *t = tpu_pod_topo(job->pod);
    int chip = tpu_place_chip_of_rank(t, tpu_pod_chip(job->pod)->host_dims, rank);
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
static int mark_abort(const tpu_job_t *job)
{
    int fd;

    if (job->marker[0] == '\0') {
        return 1;
    }
    fd = open(job->marker, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        return errno != EEXIST;
    }
    close(fd);
    return 1;
}

void tpu_job_abort(tpu_job_t *job, const char *msg)
{
    if (mark_abort(job)) {
        fprintf(stderr, "tpuemu: %s\n", msg);
        fflush(stderr);
    }
    MPI_Abort(MPI_COMM_WORLD, TPU_EXIT_FAIL);
}

/* Rank 0: record that world rank 'r' is at point 'p' and waits for 'waits'. */
static void note(tpu_job_t *job, int r, uint64_t p, int waits)
{
    tpu_job_peer_t *q = &job->peers[r];

    if (p < q->seen) {
        return; /* an older message overtaken by a newer one */
    }
    q->seen = p;
    q->waits = waits;
    q->waits_at = p;
    q->heard = tpu__now_s();
}

/* A chip number (or TPU_JOB_WAIT_*) as the world rank rank 0 stores. */
static int waits_rank(const tpu_job_t *job, int waits)
{
    return waits >= 0 && waits < job->nranks ? job->rank_of_chip[waits] : waits;
}

/* Rank 0: take every progress message that has arrived. */
static void drain(tpu_job_t *job)
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
        note(job, st.MPI_SOURCE, m[0], waits_rank(job, (int)m[1] - 2));
    }
}

/* Tell rank 0 the point this rank is at and whom it waits for (again, as a
 * heartbeat, while it waits). */
static void tell(tpu_job_t *job)
{
    int slot = (int)(++job->sent % TPU_JOB_RING), done = 0;

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
    job->ringbuf[slot][1] = (uint64_t)(job->waits + 2);
    MPI_Isend(job->ringbuf[slot], 2, MPI_UINT64_T, 0, TAG_PROGRESS, job->watch, &job->ring[slot]);
}

/* Enter the next point, waiting for 'waits' (a chip or TPU_JOB_WAIT_*). */
static void enter(tpu_job_t *job, int waits)
{
    job->point++;
    job->waits = waits;
    tell(job);
}

void tpu_job_progress(tpu_job_t *job)
{
    enter(job, TPU_JOB_WAIT_NONE);
}

void tpu_job_on_wait(void *arg, int chip)
{
    tpu_job_t *job = arg;
    int waits = chip >= 0 ? chip : TPU_JOB_WAIT_ALL;

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

/* One end of a chain of waits starting at 'r' (see tpu__job_behind); -1 none. */
static int next_in_chain(const tpu_job_peer_t *p, int n, uint64_t point, double now,
                         double silent_s, int r)
{
    int w = p[r].waits_at == p[r].seen ? p[r].waits : TPU_JOB_WAIT_NONE, q, best = -1;

    if (now - p[r].heard > silent_s || w == TPU_JOB_WAIT_NONE) {
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

int tpu__job_behind(const tpu_job_peer_t *peers, int n, uint64_t point, double now, double silent_s,
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

/* The wait of 'what' lasted too long: say who is behind and end the job. */
static void blame(tpu_job_t *job, const char *what, double waited)
{
    char name[96], msg[512];
    int r, worst, waiters = 0;
    double now;

    if (job->world_rank != 0) {
        chip_name(job, 0, name, sizeof(name));
        snprintf(msg, sizeof(msg),
                 "%s is behind or stopped: chip %d waited %.1f s (--timeout %g) at %s and %s, "
                 "which watches the job, did not end it; ending the job",
                 name, job->chip, waited, job->timeout, what, name);
        tpu_job_abort(job, msg);
        return;
    }
    drain(job);
    now = tpu__now_s();
    worst = tpu__job_behind(job->peers, job->nranks, job->point, now, SILENT_S, &waiters);
    /* Everyone reached the point, but one stopped inside the wait: the silent one. */
    for (r = 1; r < job->nranks && worst < 0; r++) {
        int q;

        for (q = 1; q < job->nranks; q++) {
            if (job->peers[q].heard < job->peers[r].heard) {
                break;
            }
        }
        if (q == job->nranks && now - job->peers[r].heard > 2 * HEARTBEAT_S) {
            chip_name(job, r, name, sizeof(name));
            snprintf(msg, sizeof(msg),
                     "%s is behind: it reached %s but has been silent for %.1f s (--timeout %g); "
                     "it is stopped or stuck; ending the job",
                     name, what, now - job->peers[r].heard, job->timeout);
            tpu_job_abort(job, msg);
        }
    }
    if (worst < 0) {
        snprintf(msg, sizeof(msg),
                 "every chip reached %s, but it did not complete within %.1f s (--timeout %g); "
                 "ending the job",
                 what, waited, job->timeout);
    } else {
        char others[64] = "";

        if (waiters > 1) {
            snprintf(others, sizeof(others), "; %d other chip(s) behind wait for it", waiters - 1);
        }
        chip_name(job, worst, name, sizeof(name));
        snprintf(msg, sizeof(msg),
                 "%s is behind: it has not reached %s after %.1f s (--timeout %g; it is %llu "
                 "sync point(s) back, silent for %.1f s%s); it is stopped, stuck or too slow; "
                 "ending the job",
                 name, what, waited, job->timeout,
                 (unsigned long long)(job->point - job->peers[worst].seen),
                 now - job->peers[worst].heard, others);
    }
    tpu_job_abort(job, msg);
}

void tpu_job_wait(tpu_job_t *job, MPI_Request *req, const char *what)
{
    double t0 = tpu__now_s(), limit = job->timeout, now;
    int flag = 0;
    long polls = 0;

    if (job->world_rank != 0) {
        limit += GRACE_S + 0.1 * (job->world_rank < 20 ? job->world_rank : 20);
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
            nap(50000);
        }
    }
}

void tpu_job_barrier(tpu_job_t *job, const char *what)
{
    MPI_Request req;

    enter(job, TPU_JOB_WAIT_ALL);
    MPI_Ibarrier(job->comm, &req);
    tpu_job_wait(job, &req, what);
}

void tpu_job_allreduce(tpu_job_t *job, const void *in, void *out, int count, MPI_Datatype type,
                       MPI_Op op, const char *what)
{
    MPI_Request req;

    enter(job, TPU_JOB_WAIT_ALL);
    MPI_Iallreduce(in, out, count, type, op, job->comm, &req);
    tpu_job_wait(job, &req, what);
}

void tpu_job_bcast(tpu_job_t *job, void *buf, int count, MPI_Datatype type, int root,
                   const char *what)
{
    MPI_Request req;

    enter(job, job->chip == root ? TPU_JOB_WAIT_ALL : root);
    MPI_Ibcast(buf, count, type, root, job->comm, &req);
    tpu_job_wait(job, &req, what);
}

void tpu_job_allgather(tpu_job_t *job, const void *in, int count, void *out, const char *what)
{
    MPI_Request req;

    enter(job, TPU_JOB_WAIT_ALL);
    MPI_Iallgather(in, count, MPI_BYTE, out, count, MPI_BYTE, job->comm, &req);
    tpu_job_wait(job, &req, what);
}

void tpu_job_gather(tpu_job_t *job, const void *in, int count, void *out, int root,
                    const char *what)
{
    MPI_Request req;

    enter(job, TPU_JOB_WAIT_ALL);
    MPI_Igather(in, count, MPI_BYTE, out, count, MPI_BYTE, root, job->comm, &req);
    tpu_job_wait(job, &req, what);
}

void tpu_job_fail(tpu_job_t *job, const tpu_err_t *err)
{
    char what[TPU_ERR_MSG_LEN + 64];
    MPI_Request req;

    if (err->status != TPU_ERR_TIMEOUT) {
        tpu_job_abort(job, err->msg);
        return;
    }
    /*
     * A collective's own watchdog fired: this chip waited for a peer, which may
     * itself wait for another.  Every live chip meets here within seconds; the
     * chip that never comes is the one behind, and rank 0 names it.
     */
    job->timeout = job->timeout < FAIL_WAIT_S ? job->timeout : FAIL_WAIT_S;
    snprintf(what, sizeof(what), "the end of a collective that timed out (%s)", err->msg);
    /* On the watchdog's communicator, not job->comm: a chip whose part of the
     * collective completed is already in the next collective on job->comm, and a
     * barrier there met it (MPI_ERR_TRUNCATE in a loaded train, a false "lost chip"). */
    enter(job, TPU_JOB_WAIT_ALL);
    MPI_Ibarrier(job->watch != MPI_COMM_NULL ? job->watch : job->comm, &req);
    tpu_job_wait(job, &req, what);
    tpu_job_abort(job, err->msg); /* every chip came: a deadlock among live chips */
}

int tpu_job_agree(MPI_Comm comm, int failed)
{
    int me, lowest;

    MPI_Comm_rank(comm, &me);
    lowest = failed ? me : INT32_MAX;
    MPI_Allreduce(MPI_IN_PLACE, &lowest, 1, MPI_INT, MPI_MIN, comm);
    return lowest == INT32_MAX ? -1 : lowest;
}

/* FNV-1a of a string (NULL hashes as unset). */
static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;

    if (s == NULL) {
        return 7;
    }
    for (; *s != '\0'; s++) {
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    }
    return h;
}

int tpu_job_agree_values(int n, const char *const *names, const char *const *vals, char *msg,
                         size_t len)
{
    uint64_t *mine = tpu__calloc((size_t)n + 1, sizeof(uint64_t)), *first;
    int i, me, diff = -1, who;
    char theirs[64];

    first = tpu__calloc((size_t)n + 1, sizeof(uint64_t));
    if (mine == NULL || first == NULL) {
        tpu__free(mine);
        tpu__free(first);
        snprintf(msg, len, "out of host memory comparing the options of the ranks");
        return 1;
    }
    for (i = 0; i < n; i++) {
        mine[i] = hash_str(vals[i]);
        first[i] = mine[i];
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Bcast(first, n, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    for (i = 0; i < n && diff < 0; i++) {
        if (first[i] != mine[i]) {
            diff = i;
        }
    }
    tpu__free(mine);
    tpu__free(first);
    who = tpu_job_agree(MPI_COMM_WORLD, diff >= 0);
    if (who < 0) {
        return 0;
    }
    MPI_Bcast(&diff, 1, MPI_INT, who, MPI_COMM_WORLD);
    snprintf(theirs, sizeof(theirs), "%s", vals[diff] != NULL ? vals[diff] : "(not given)");
    MPI_Bcast(theirs, (int)sizeof(theirs), MPI_CHAR, 0, MPI_COMM_WORLD);
    snprintf(msg, len,
             "the ranks of this job were started with different options: %s is '%s' on rank 0 "
             "but '%.63s' on rank %d (every rank needs the same command line)",
             names[diff], theirs, vals[diff] != NULL ? vals[diff] : "(not given)", who);
    return who == me ? 1 : 2;
}

int tpu_job_agree_opts(const tpu_opts_t *o, char *msg, size_t len)
{
    /* Every option that changes the sequence of MPI calls or their sizes. */
    char vals[TPU_JOB_NOPTS][64];
    const char *names[TPU_JOB_NOPTS], *pv[TPU_JOB_NOPTS];
    int n = 0, i;

#define OPT_S(name, v) (names[n] = name, snprintf(vals[n++], 64, "%s", (v) ? (v) : "(not given)"))
#define OPT_I(name, v) (names[n] = name, snprintf(vals[n++], 64, "%d", (int)(v)))
#define OPT_D(name, v) (names[n] = name, snprintf(vals[n++], 64, "%.17g", (double)(v)))
    OPT_S("command", o->cmd);
    OPT_I("--iters", o->iters);
    OPT_I("--warmup", o->warmup);
    OPT_I("--compare-mpi", o->compare_mpi);
    OPT_S("--collective", o->collective);
    OPT_S("--axes", o->axes);
    OPT_S("--dtype", o->dtype);
    OPT_S("--min-bytes", o->min_bytes);
    OPT_S("--max-bytes", o->max_bytes);
    OPT_D("--factor", o->factor);
    OPT_S("--chip", o->chip);
    OPT_S("--topology", o->topology);
    OPT_S("--wrap", o->wrap);
    OPT_I("--slices", o->slices);
    OPT_S("--config", o->config);
    OPT_S("--json", o->json);
    OPT_S("--csv", o->csv);
    OPT_D("--timeout", o->timeout);
    OPT_S("--inject", o->inject);
    OPT_S("--mesh", o->mesh);
    OPT_S("--trace", o->trace);
    OPT_S("--heatmap", o->heatmap);
    OPT_I("--trace-measured", o->trace_measured);
    {
        /* Every --fault, in order, as one value (a count and a hash of the texts). */
        uint64_t h = 1469598103934665603ull;
        int k;

        for (k = 0; k < o->nfault; k++) {
            h = h * 31 + hash_str(o->fault[k]);
        }
        names[n] = "--fault";
        snprintf(vals[n++], 64, "%d given (hash %016llx)", o->nfault, (unsigned long long)h);
    }
#undef OPT_S
#undef OPT_I
#undef OPT_D
    for (i = 0; i < n; i++) {
        pv[i] = vals[i];
    }
    return tpu_job_agree_values(n, names, pv, msg, len);
}

/* ---- the guard ---- */

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
    tpu_job_t *job = v.sival_ptr;
    char msg[512], me[96], name[96];
    int expect = GUARD_ARMED, r;

    if (!atomic_compare_exchange_strong(&job->guard_state, &expect, GUARD_FIRED)) {
        return; /* disarmed in the meantime */
    }
    if (job->pod != NULL) {
        chip_name(job, job->world_rank, me, sizeof(me));
    } else {
        snprintf(me, sizeof(me), "MPI rank %d", job->world_rank);
    }
    snprintf(msg, sizeof(msg),
             "%s waited %.1f s in %s, which the watchdog cannot poll; a chip is stopped, "
             "stuck or too slow; ending the job",
             me, job->guard_s, job->guard_what);
    for (r = 1; job->local_pids != NULL && job->pod != NULL && r < job->nranks; r++) {
        if (job->local_pids[r] > 0 && pid_stopped(job->local_pids[r])) {
            chip_name(job, r, name, sizeof(name));
            snprintf(msg, sizeof(msg),
                     "%s is behind: it is stopped, and %s waited %.1f s for it in %s, which the "
                     "watchdog cannot poll; ending the job",
                     name, me, job->guard_s, job->guard_what);
            break;
        }
    }
    if (mark_abort(job)) {
        fprintf(stderr, "tpuemu: %s\n", msg);
        fflush(stderr);
    }
    _exit(TPU_EXIT_FAIL);
}

void tpu_job_guard_arm(tpu_job_t *job, double seconds, const char *what)
{
    struct itimerspec its;

    if (seconds <= 0) {
        return;
    }
    /* A sync point: rank 0 hears this rank now, before it falls silent in the wait.
     * Else one that left a barrier for the host's collective looked older than the
     * chip stopped inside that barrier, and rank 0 named it as the silent one. */
    if (job->watch != MPI_COMM_NULL) {
        enter(job, TPU_JOB_WAIT_ALL);
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
        seconds += GRACE_S + 0.1 * (job->world_rank < 20 ? job->world_rank : 20);
    }
    job->guard_s = seconds;
    snprintf(job->guard_what, sizeof(job->guard_what), "%s", what);
    memset(&its, 0, sizeof(its));
    its.it_value.tv_sec = (time_t)seconds;
    its.it_value.tv_nsec = (long)((seconds - (double)(time_t)seconds) * 1e9);
    atomic_store(&job->guard_state, GUARD_ARMED);
    timer_settime(job->guard, 0, &its, NULL);
}

void tpu_job_guard_disarm(tpu_job_t *job)
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

/* ---- the monitor ---- */

typedef struct mon_rank {
    int pid, chip, local;
    char name[96];
} mon_rank_t;

/* Is 'pid' gone or a zombie? */
static int pid_gone(int pid)
{
    char path[64], buf[256], *p;
    FILE *f;
    int gone = 0;

    if (kill(pid, 0) != 0 && errno == ESRCH) {
        return 1;
    }
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    f = fopen(path, "r");
    if (f == NULL) {
        return 0;
    }
    if (fgets(buf, sizeof(buf), f) != NULL && (p = strrchr(buf, ')')) != NULL) {
        gone = p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
    }
    fclose(f);
    return gone;
}

static int read_all(int fd, void *buf, size_t len)
{
    size_t got = 0;

    while (got < len) {
        ssize_t n = read(fd, (char *)buf + got, len - got);

        if (n <= 0) {
            if (n < 0 && errno == EINTR) {
                continue;
            }
            return -1;
        }
        got += (size_t)n;
    }
    return 0;
}

/*
 * The file a rank of rank 0's node leaves when it gets SIGTERM: Open MPI's daemon
 * ends the ranks of a node with SIGTERM (SIGKILL a little later) when a rank
 * elsewhere died, mpirun was interrupted or the job aborts.  A rank gone with its
 * file was ended by the runtime and the monitor does not report it as lost; one
 * gone without (killed, crashed) is the rank that was lost.  The path is the one
 * piece of state of the program a signal handler needs: written once, before the
 * handler is set.
 */
static char term_path[300];

static void term_file(const char *marker, int rank, char *buf, size_t len)
{
    snprintf(buf, len, "%s.term.%d", marker, rank);
}

static void on_term(int sig)
{
    int fd = open(term_path, O_WRONLY | O_CREAT, 0600);

    if (fd >= 0) {
        close(fd);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Ended by the runtime (its SIGTERM), not lost? */
static int termed(const char *marker, int rank)
{
    char path[300];

    term_file(marker, rank, path, sizeof(path));
    return access(path, F_OK) == 0;
}

/* The rank of this node that is gone without the runtime's SIGTERM (rank 0's pid is
 * 'parent'); -1 none.  Every rank is looked at: the runtime ends the others within
 * milliseconds of a death, so several may be gone at one poll. */
static int lost_rank(const char *marker, const mon_rank_t *ranks, int n, int parent)
{
    int i;

    for (i = 0; i < n; i++) {
        int pid = i == 0 ? parent : ranks[i].pid;

        if ((i == 0 || ranks[i].local) && pid > 0 && pid_gone(pid) && !termed(marker, i)) {
            return i;
        }
    }
    return -1;
}

/* Wait (10 s at most) until every rank of this node is gone. */
static void node_gone(const mon_rank_t *ranks, int n, int parent)
{
    int k, alive = 1, waits;

    for (waits = 0; alive && waits < 200; waits++) {
        alive = !pid_gone(parent);
        for (k = 1; k < n && !alive; k++) {
            alive = ranks[k].local && ranks[k].pid > 0 && !pid_gone(ranks[k].pid);
        }
        if (alive) {
            nap(50000000);
        }
    }
}

/* The monitor's files: the marker and the SIGTERM files of the ranks of its node. */
static void mon_cleanup(const char *marker, const mon_rank_t *ranks, int n)
{
    char path[300];
    int i;

    for (i = 0; i < n; i++) {
        if (ranks[i].local) {
            term_file(marker, i, path, sizeof(path));
            unlink(path);
        }
    }
    unlink(marker);
}

/* The monitor process: never returns. */
static void monitor(int fd, int parent)
{
    mon_rank_t *ranks = NULL;
    char marker[256];
    int n = 0, i, flags;
    unsigned char byte;

    setsid();
    signal(SIGPIPE, SIG_IGN);
    if (read_all(fd, &n, sizeof(n)) != 0 || n <= 0 || n > TPU_MAX_CHIPS ||
        read_all(fd, marker, sizeof(marker)) != 0) {
        _exit(0);
    }
    ranks = tpu__calloc((size_t)n, sizeof(*ranks));
    if (ranks == NULL || read_all(fd, ranks, (size_t)n * sizeof(*ranks)) != 0) {
        _exit(0);
    }
    marker[sizeof(marker) - 1] = '\0';
    flags = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    for (;;) {
        ssize_t got = read(fd, &byte, 1);

        if (got == 0 || (got == 1 && byte == 'q')) {
            /* Rank 0 ended: cleanly ('q'), or it died (EOF alone). */
            if (got == 0 && access(marker, F_OK) != 0 && pid_gone(parent)) {
                nap(20000000);
                i = access(marker, F_OK) != 0 ? lost_rank(marker, ranks, n, parent) : -1;
                if (i >= 0) {
                    fprintf(stderr, "tpuemu: lost %s (pid %d): the process died; the job ends\n",
                            ranks[i].name, i == 0 ? parent : ranks[i].pid);
                }
            }
            /* Even after a clean 'q' the runtime may still end ranks of this node (mpirun
             * ends the job when a rank exits non-zero): their SIGTERM files come before
             * they are gone. */
            node_gone(ranks, n, parent);
            mon_cleanup(marker, ranks, n);
            _exit(0);
        }
        for (i = 1; i < n; i++) {
            if (ranks[i].local && ranks[i].pid > 0 && pid_gone(ranks[i].pid)) {
                /* Let an abort in progress leave its marker, or a clean end its 'q'. */
                nap(30000000);
                if (read(fd, &byte, 1) == 1 && byte == 'q') {
                    node_gone(ranks, n, parent);
                    mon_cleanup(marker, ranks, n);
                    _exit(0);
                }
                i = access(marker, F_OK) != 0 ? lost_rank(marker, ranks, n, parent) : -1;
                if (i >= 0) {
                    fprintf(stderr,
                            "tpuemu: lost %s (pid %d): the process died (killed or crashed); the "
                            "job ends\n",
                            ranks[i].name, i == 0 ? parent : ranks[i].pid);
                }
                /* An abort in progress (or the runtime ending this node's ranks after a
                 * loss, which mpirun names too): keep the marker until the ranks of this
                 * node are gone, or one still aborting would print again; then remove
                 * it and the SIGTERM files they left. */
                node_gone(ranks, n, parent);
                mon_cleanup(marker, ranks, n);
                _exit(0);
            }
        }
        nap(50000000);
    }
}

void tpu_job_monitor_fork(tpu_job_t *job)
{
    int fds[2], pid, parent = (int)getpid();

    job->monitor_fd = -1;
    if (tpu_job_env_rank() != 0 || pipe(fds) != 0) {
        return;
    }
    fflush(stdout);
    fflush(stderr);
    pid = (int)fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return;
    }
    if (pid == 0) {
        close(fds[1]);
        monitor(fds[0], parent);
    }
    close(fds[0]);
    job->monitor_fd = fds[1];
}

int tpu_job_monitor_start(tpu_job_t *job)
{
    char host[MPI_MAX_PROCESSOR_NAME], host0[MPI_MAX_PROCESSOR_NAME], *hosts = NULL, marker[256];
    int len, pid = (int)getpid(), *pids = NULL, r, n = job->nranks, ok = 1;
    mon_rank_t *ranks = NULL;

    memset(host, 0, sizeof(host));
    MPI_Get_processor_name(host, &len);
    if (job->world_rank == 0 && !tpu_job_test_nomem("monitor")) {
        pids = tpu__malloc((size_t)n * sizeof(int));
        hosts = tpu__malloc((size_t)n * MPI_MAX_PROCESSOR_NAME);
        ranks = tpu__calloc((size_t)n, sizeof(*ranks));
    }
    /* Rank 0's buffers receive the gathers: every rank learns first whether it has them
     * (a gather into NULL crashed rank 0 and left the others in the gather). */
    ok = job->world_rank != 0 || (pids != NULL && hosts != NULL && ranks != NULL);
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!ok) {
        goto out;
    }
    MPI_Gather(&pid, 1, MPI_INT, pids, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Gather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0,
               MPI_COMM_WORLD);
    if (job->world_rank == 0) {
        snprintf(marker, sizeof(marker), "/tmp/tpuemu-%d.abort", pid);
    }
    MPI_Bcast(marker, (int)sizeof(marker), MPI_CHAR, 0, MPI_COMM_WORLD);
    snprintf(job->marker, sizeof(job->marker), "%s", marker);
    /* The ranks of rank 0's node (the monitor's) say when the runtime ends them. */
    memcpy(host0, host, sizeof(host0));
    MPI_Bcast(host0, (int)sizeof(host0), MPI_CHAR, 0, MPI_COMM_WORLD);
    if (strncmp(host0, host, sizeof(host0)) == 0) {
        term_file(marker, job->world_rank, term_path, sizeof(term_path));
        signal(SIGTERM, on_term);
    }
    if (job->world_rank == 0 && job->monitor_fd >= 0 && pids && hosts && ranks) {
        job->local_pids = tpu__calloc((size_t)n, sizeof(int));
        for (r = 0; r < n; r++) {
            ranks[r].pid = pids[r];
            ranks[r].local = strncmp(hosts + (size_t)r * MPI_MAX_PROCESSOR_NAME, host,
                                     MPI_MAX_PROCESSOR_NAME) == 0;
            chip_name(job, r, ranks[r].name, sizeof(ranks[r].name));
            if (job->local_pids != NULL && ranks[r].local) {
                job->local_pids[r] = pids[r];
            }
        }
        if (write(job->monitor_fd, &n, sizeof(n)) != (ssize_t)sizeof(n) ||
            write(job->monitor_fd, marker, sizeof(marker)) != (ssize_t)sizeof(marker) ||
            write(job->monitor_fd, ranks, (size_t)n * sizeof(*ranks)) !=
                (ssize_t)((size_t)n * sizeof(*ranks))) {
            close(job->monitor_fd);
            job->monitor_fd = -1;
        }
    }
out:
    tpu__free(pids);
    tpu__free(hosts);
    tpu__free(ranks);
    return ok ? 0 : -1;
}

void tpu_job_monitor_forget_term(void)
{
    signal(SIGTERM, SIG_DFL);
}

void tpu_job_monitor_stop(tpu_job_t *job)
{
    if (job->monitor_fd >= 0) {
        unsigned char q = 'q';

        if (write(job->monitor_fd, &q, 1) != 1) {
            /* the monitor is gone already */
        }
        close(job->monitor_fd);
        job->monitor_fd = -1;
    }
}
