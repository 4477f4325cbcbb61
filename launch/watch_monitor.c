/*
 * The monitor that names a rank of an MPI job that died (the watchdog is
 * watch.c's).
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
#include "watch_monitor.h"

#include "alloc.h"
#include "job.h"
#include "jobenv.h"
#include "watch.h"

#include <errno.h>
#include <fcntl.h>
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
            app_watch_nap(50000000);
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
                app_watch_nap(20000000);
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
                app_watch_nap(30000000);
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
        app_watch_nap(50000000);
    }
}

void app_job_monitor_fork(app_job_t *job)
{
    int fds[2], pid, parent = (int)getpid();

    job->monitor_fd = -1;
    if (app_job_env_rank() != 0 || pipe(fds) != 0) {
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
    char host[MPI_MAX_PROCESSOR_NAME], host0[MPI_MAX_PROCESSOR_NAME], *hosts = NULL, marker[256];
    int len, pid = (int)getpid(), *pids = NULL, r, n = job->nranks, ok = 1;
    mon_rank_t *ranks = NULL;

    memset(host, 0, sizeof(host));
    MPI_Get_processor_name(host, &len);
    if (job->world_rank == 0 && !app_job_test_nomem("monitor")) {
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
            app_watch_chip_name(job, r, ranks[r].name, sizeof(ranks[r].name));
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

void app_job_monitor_forget_term(void)
{
    signal(SIGTERM, SIG_DFL);
}

void app_job_monitor_stop(app_job_t *job)
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
