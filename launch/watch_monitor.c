/*
 * The monitor that names a rank of an MPI job that died (the watchdog is
 * watch.c's).
 *
 * Monitor.  When one rank is killed (kill -9), Open MPI's runtime kills the
 * others within a second, before they can see anything.  So the first rank of
 * each node (rank 0 and every node's local rank 0) forks, before MPI_Init, a
 * small process in a session of its own that learns the pid, world rank and chip
 * of every rank of its node through a pipe and polls them every 50 ms: when one
 * disappears and no rank announced an abort (a marker file), it prints which chip
 * was lost, and on which node; the runtime forwards the line to mpirun as it does
 * the rank's own.  It exits when its rank closes the pipe after a clean end, or
 * when that rank itself is gone.  Every rank leaves a file when it gets SIGTERM,
 * with which Open MPI's daemon ends the ranks of a node after a rank elsewhere
 * died (or mpirun was interrupted): a rank gone with its file is not the lost one,
 * and a monitor names only a rank gone without.  The marker and the files are in
 * the node's /tmp (nodes that share one, as the namespaces of tests/cluster do,
 * share them: the names hold world ranks, and a monitor removes the marker only
 * when a rank of its node wrote it).
 */
#include "watch_monitor.h"

#include "alloc.h"
#include "interrupt.h"
#include "job.h"
#include "jobenv.h"
#include "watch.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int app_job_test_nomem(const char *where)
{
    const char *v = getenv("TPUEMU_TEST_NOMEM");

    return v != NULL && strcmp(v, where) == 0;
}

/* One rank of the monitor's node; the first is the rank that forked it. */
typedef struct mon_rank {
    int pid, rank;
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
 * The file a rank leaves when it gets SIGTERM: Open MPI's daemon
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

/* The rank of this node that is gone without the runtime's SIGTERM (index in
 * 'ranks'); -1 none.  Every rank is looked at: the runtime ends the others within
 * milliseconds of a death, so several may be gone at one poll. */
static int lost_rank(const char *marker, const mon_rank_t *ranks, int n)
{
    int i;

    for (i = 0; i < n; i++) {
        if (ranks[i].pid > 0 && pid_gone(ranks[i].pid) && !termed(marker, ranks[i].rank)) {
            return i;
        }
    }
    return -1;
}

/* Wait (10 s at most) until every rank of this node is gone. */
static void node_gone(const mon_rank_t *ranks, int n)
{
    int k, alive = 1, waits;

    for (waits = 0; alive && waits < 200; waits++) {
        alive = 0;
        for (k = 0; k < n && !alive; k++) {
            alive = ranks[k].pid > 0 && !pid_gone(ranks[k].pid);
        }
        if (alive) {
            app_watch_nap(50000000);
        }
    }
}

/* The monitor's files: the SIGTERM files of the ranks of its node, and the marker
 * when one of them wrote it (app_watch_mark_abort writes the world rank; an empty
 * one is removed by rank 0's monitor). */
static void mon_cleanup(const char *marker, const mon_rank_t *ranks, int n)
{
    char path[300];
    int i, writer = -1, ours = 0;
    FILE *f = fopen(marker, "r");

    if (f != NULL) {
        if (fscanf(f, "%d", &writer) != 1) {
            writer = -1;
        }
        fclose(f);
    }
    for (i = 0; i < n; i++) {
        term_file(marker, ranks[i].rank, path, sizeof(path));
        unlink(path);
        ours |= ranks[i].rank == writer || (writer < 0 && ranks[i].rank == 0);
    }
    if (ours) {
        unlink(marker);
    }
}

/* The line that names the lost rank 'i' of this node; first the job's marker, so that
 * the ranks the runtime ends then say nothing (interrupt.c; on a /tmp that nodes
 * share, those of the other nodes too). */
static void say_lost(const char *marker, const mon_rank_t *ranks, int i, const char *how)
{
    char host[256] = "", line[16];
    int fd = open(marker, O_WRONLY | O_CREAT | O_EXCL, 0600), n;

    if (fd >= 0) {
        /* this node's first rank wrote it: this monitor removes it (mon_cleanup) */
        n = snprintf(line, sizeof(line), "%d\n", ranks[0].rank);
        if (write(fd, line, (size_t)n) != n) {
            /* an empty marker still marks the end */
        }
        close(fd);
    }

    gethostname(host, sizeof(host) - 1);
    fprintf(stderr, "tpuemu: lost %s (pid %d on node %s): the process died%s; the job ends\n",
            ranks[i].name, ranks[i].pid, host, how);
}

/*
 * The start-up, before the rank that forked the monitor sends the table of its
 * node's ranks: each rank of the node wrote its pid into its start-up file
 * before MPI_Init (jobenv.h), and a rank the runtime ends leaves a second file.
 * A rank gone without it was lost during the start-up: name it by world rank
 * (its chip is not known yet).
 */
static void start_lost(const char *prefix, int lsize)
{
    char path[300], host[256] = "";
    int l, pid, rank;
    FILE *f;

    for (l = 0; l < lsize; l++) {
        snprintf(path, sizeof(path), "%s.%d", prefix, l);
        f = fopen(path, "r");
        if (f == NULL) {
            continue;
        }
        if (fscanf(f, "%d %d", &pid, &rank) != 2) {
            pid = 0;
        }
        fclose(f);
        snprintf(path, sizeof(path), "%s.%d.term", prefix, l);
        if (pid > 0 && pid_gone(pid) && access(path, F_OK) != 0) {
            gethostname(host, sizeof(host) - 1);
            fprintf(stderr,
                    "tpuemu: lost MPI rank %d (pid %d on node %s) during start-up (before the "
                    "ranks' agreement on the job, so before it had a chip): the process died; "
                    "the job ends\n",
                    rank, pid, host);
            return;
        }
    }
}

/* Remove this node's start-up files, once their ranks are gone. */
static void start_cleanup(void)
{
    char prefix[200], path[300];
    int l, lsize = app_jobenv_local_size();

    if (app_jobenv_start_prefix(prefix, sizeof(prefix)) != 0) {
        return;
    }
    for (l = 0; l < lsize; l++) {
        int pid = 0, rank, waits;
        FILE *f;

        snprintf(path, sizeof(path), "%s.%d", prefix, l);
        if ((f = fopen(path, "r")) != NULL) {
            if (fscanf(f, "%d %d", &pid, &rank) != 2) {
                pid = 0;
            }
            fclose(f);
        }
        /* (its file may still come: wait 10 s at most for the rank to be gone) */
        for (waits = 0; pid > 0 && waits < 200 && !pid_gone(pid); waits++) {
            app_watch_nap(50000000);
        }
        unlink(path);
        snprintf(path, sizeof(path), "%s.%d.term", prefix, l);
        unlink(path);
    }
}

/* Wait for the table's first word ('*n_p'), watching the start-up; -1 when the
 * rank ended first (cleanly, 'q', or not). */
static int start_phase(int fd, int *n_p)
{
    char prefix[200];
    int lsize = app_jobenv_local_size(),
        have = app_jobenv_start_prefix(prefix, sizeof(prefix)) == 0;
    unsigned char first[sizeof(int)];
    struct pollfd pfd;

    for (;;) {
        ssize_t got;

        pfd.fd = fd;
        pfd.events = POLLIN;
        pfd.revents = 0;
        if (poll(&pfd, 1, 50) == 0) {
            if (have) {
                /* A rank of the node gone while the others still start: it was lost.
                 * Only the first such line (the others are ended by the runtime). */
                char path[300];
                int l, gone = 0;

                for (l = 0; l < lsize && !gone; l++) {
                    int pid = 0, rank;
                    FILE *f;

                    snprintf(path, sizeof(path), "%s.%d", prefix, l);
                    if ((f = fopen(path, "r")) != NULL) {
                        gone = fscanf(f, "%d %d", &pid, &rank) == 2 && pid > 0 && pid_gone(pid);
                        fclose(f);
                    }
                }
                if (gone) {
                    app_watch_nap(30000000); /* a rank ended by the runtime leaves its file */
                    start_lost(prefix, lsize);
                    return -1;
                }
            }
            continue;
        }
        got = read(fd, first, 1);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got <= 0) {
            /* The forking rank closed the pipe without a word: it died in start-up, or
             * a rank of its node did and the runtime ended it. */
            if (have) {
                app_watch_nap(30000000);
                start_lost(prefix, lsize);
            }
            return -1;
        }
        if (first[0] == 'q' || read_all(fd, first + 1, sizeof(first) - 1) != 0) {
            return -1;
        }
        memcpy(n_p, first, sizeof(int));
        return 0;
    }
}

/* The monitor process: never returns.  'parent' is the rank that forked it (ranks[0]). */
static void monitor(int fd, int parent)
{
    mon_rank_t *ranks = NULL;
    char marker[256];
    int n = 0, i, flags;
    unsigned char byte;

    setsid();
    signal(SIGPIPE, SIG_IGN);
    if (start_phase(fd, &n) != 0 || n <= 0 || n > TPU_MAX_CHIPS ||
        read_all(fd, marker, sizeof(marker)) != 0) {
        start_cleanup();
        _exit(0);
    }
    ranks = tpu__calloc((size_t)n, sizeof(*ranks));
    if (ranks == NULL || read_all(fd, ranks, (size_t)n * sizeof(*ranks)) != 0) {
        _exit(0);
    }
    marker[sizeof(marker) - 1] = '\0';
    ranks[0].pid = parent;
    flags = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    for (;;) {
        ssize_t got = read(fd, &byte, 1);

        if (got == 0 || (got == 1 && byte == 'q')) {
            /* Rank 0 ended: cleanly ('q'), or it died (EOF alone). */
            if (got == 0 && access(marker, F_OK) != 0 && pid_gone(parent)) {
                app_watch_nap(20000000);
                i = access(marker, F_OK) != 0 ? lost_rank(marker, ranks, n) : -1;
                if (i >= 0) {
                    say_lost(marker, ranks, i, "");
                }
            }
            /* Even after a clean 'q' the runtime may still end ranks of this node (mpirun
             * ends the job when a rank exits non-zero): their SIGTERM files come before
             * they are gone. */
            node_gone(ranks, n);
            mon_cleanup(marker, ranks, n);
            start_cleanup();
            _exit(0);
        }
        for (i = 1; i < n; i++) {
            if (ranks[i].pid > 0 && pid_gone(ranks[i].pid)) {
                /* Let an abort in progress leave its marker, or a clean end its 'q'. */
                app_watch_nap(30000000);
                if (read(fd, &byte, 1) == 1 && byte == 'q') {
                    node_gone(ranks, n);
                    mon_cleanup(marker, ranks, n);
                    start_cleanup();
                    _exit(0);
                }
                i = access(marker, F_OK) != 0 ? lost_rank(marker, ranks, n) : -1;
                if (i >= 0) {
                    say_lost(marker, ranks, i, " (killed or crashed)");
                }
                /* An abort in progress (or the runtime ending this node's ranks after a
                 * loss, which mpirun names too): keep the marker until the ranks of this
                 * node are gone, or one still aborting would print again; then remove
                 * it and the SIGTERM files they left. */
                node_gone(ranks, n);
                mon_cleanup(marker, ranks, n);
                start_cleanup();
                _exit(0);
            }
        }
        app_watch_nap(50000000);
    }
}

void app_job_monitor_fork(app_job_t *job)
{
    int fds[2], pid, parent = (int)getpid();

    job->monitor_fd = -1;
    if ((app_job_env_rank() != 0 && app_jobenv_local_rank() != 0) || pipe(fds) != 0) {
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

int app_job_monitor_start(app_job_t *job)
{
    char marker[256], me[96];
    int pid = (int)getpid(), *pids = NULL, *wranks = NULL, i, nn, nr, ok;
    mon_rank_t *ranks = NULL;
    MPI_Comm node;

    /* The ranks of this node: its first (the lowest world rank) forked the monitor. */
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, job->world_rank, MPI_INFO_NULL,
                        &node);
    MPI_Comm_rank(node, &nr);
    MPI_Comm_size(node, &nn);
    /* Every rank learns the pids of its node (its SIGTERM handler looks for a lost one,
     * interrupt.c); the first rank also the world ranks, for the monitor. */
    if (!app_job_test_nomem("monitor")) {
        pids = tpu__malloc((size_t)nn * sizeof(int));
        if (nr == 0) {
            wranks = tpu__malloc((size_t)nn * sizeof(int));
            ranks = tpu__calloc((size_t)nn, sizeof(*ranks));
        }
    }
    /* The buffers receive the gathers: every rank learns first whether they exist (a
     * gather into NULL crashed rank 0 and left the others in the gather). */
    ok = pids != NULL && (nr != 0 || (wranks != NULL && ranks != NULL));
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!ok) {
        goto out;
    }
    MPI_Allgather(&pid, 1, MPI_INT, pids, 1, MPI_INT, node);
    MPI_Gather(&job->world_rank, 1, MPI_INT, wranks, 1, MPI_INT, 0, node);
    if (job->world_rank == 0) {
        snprintf(marker, sizeof(marker), "/tmp/tpuemu-%d.abort", pid);
    }
    MPI_Bcast(marker, (int)sizeof(marker), MPI_CHAR, 0, MPI_COMM_WORLD);
    snprintf(job->marker, sizeof(job->marker), "%s", marker);
    /* Every rank says when the runtime ends it. */
    term_file(marker, job->world_rank, term_path, sizeof(term_path));
    signal(SIGTERM, on_term);
    /* The interrupt's line goes in front of it (under mpirun one rank prints it). */
    app_watch_chip_name(job, job->world_rank, me, sizeof(me));
    app_interrupt_job(marker, me, job->world_rank, pids, nn);
    if (nr == 0 && job->monitor_fd >= 0) {
        struct sigaction ign, old;

        memset(&ign, 0, sizeof(ign));
        ign.sa_handler = SIG_IGN;
        sigaction(SIGPIPE, &ign, &old); /* (a killed monitor: restored below) */
        if (job->world_rank == 0) {
            job->local_pids = tpu__calloc((size_t)job->nranks, sizeof(int));
        }
        for (i = 0; i < nn; i++) {
            ranks[i].pid = pids[i];
            ranks[i].rank = wranks[i];
            app_watch_chip_name(job, wranks[i], ranks[i].name, sizeof(ranks[i].name));
            if (job->local_pids != NULL) {
                job->local_pids[wranks[i]] = pids[i];
            }
        }
        if (write(job->monitor_fd, &nn, sizeof(nn)) != (ssize_t)sizeof(nn) ||
            write(job->monitor_fd, marker, sizeof(marker)) != (ssize_t)sizeof(marker) ||
            write(job->monitor_fd, ranks, (size_t)nn * sizeof(*ranks)) !=
                (ssize_t)((size_t)nn * sizeof(*ranks))) {
            close(job->monitor_fd);
            job->monitor_fd = -1;
        }
        sigaction(SIGPIPE, &old, NULL);
    }
out:
    MPI_Comm_free(&node);
    tpu__free(pids);
    tpu__free(wranks);
    tpu__free(ranks);
    return ok ? 0 : -1;
}

void app_job_monitor_forget_term(void)
{
    signal(SIGTERM, SIG_DFL);
}

void app_job_monitor_stop(app_job_t *job)
{
    if (job->monitor_fd >= 0) {
        unsigned char q = 'q';
        struct sigaction ign, old;

        /* A monitor that was killed must not end a finished run with SIGPIPE (141). */
        memset(&ign, 0, sizeof(ign));
        ign.sa_handler = SIG_IGN;
        sigaction(SIGPIPE, &ign, &old);
        if (write(job->monitor_fd, &q, 1) != 1) {
            /* the monitor is gone already */
        }
        sigaction(SIGPIPE, &old, NULL);
        close(job->monitor_fd);
        job->monitor_fd = -1;
    }
}
