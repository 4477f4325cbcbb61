/*
 * The SIGINT / SIGTERM handler of the program (see interrupt.h).  The line is
 * composed outside the handler (app_interrupt_at) into one of two buffers and
 * published by an index, so that the handler only calls write(), open(),
 * read(), access(), nanosleep(), kill(), getppid(), unlink() (in
 * app_sink_remove_temps), sigaction() and raise(), all async-signal-safe.
 *
 * Under mpirun one rank prints.  Open MPI's runtime ends the ranks with SIGTERM
 * (and SIGKILL a second or so later) in three cases: mpirun was interrupted, a
 * rank exited non-zero, or a rank was lost.  After a failure that printed, the
 * job's abort marker exists (app_watch_mark_abort); after a lost rank, that rank
 * is gone from the node and the monitor names it (watch_monitor.c).  So a rank
 * prints only when no rank of its node is gone and it is the first to create the
 * marker (which also keeps the monitor and the other ranks quiet).  The sender
 * tells the two kinds apart: mpirun (the parent) ended the job, or the signal was
 * sent to this rank alone.
 */
#include "interrupt.h"

#include "sink.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char lines[2][256];
static volatile sig_atomic_t current = -1; /* the buffer to print; -1: nothing running yet */
static struct sigaction old_int, old_term;
static int printer = -1;
/* Under mpirun (app_interrupt_job): the job's abort marker, this rank's name and
 * world rank, and the pids of the ranks of its node. */
static char job_marker[256];
static char job_me[128];
static char job_rank[16];
static int job_pids[APP_INTERRUPT_MAX_PIDS];
static int job_npids;
/* During an MPI job's start-up: the file a rank ended by the runtime leaves (jobenv.h). */
static char start_term[300];

static void say(const char *s)
{
    (void)!write(2, s, strlen(s));
}

/* Is 'pid' gone (reaped, or a zombie)?  Only async-signal-safe calls. */
static int pid_gone(int pid)
{
    char path[48] = "/proc/", digits[16], buf[512];
    int n = 0, fd, i;
    ssize_t got;

    if (kill(pid, 0) != 0 && errno == ESRCH) {
        return 1;
    }
    do {
        digits[n++] = (char)('0' + pid % 10);
        pid /= 10;
    } while (pid > 0 && n < (int)sizeof(digits));
    for (i = 0; i < n; i++) {
        path[6 + i] = digits[n - 1 - i];
    }
    memcpy(path + 6 + n, "/stat", 6);
    fd = open(path, O_RDONLY);
    if (fd < 0) {
        return 0;
    }
    got = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    for (i = (int)got - 2; i > 0; i--) {
        if (buf[i] == ')') {
            return buf[i + 1] == ' ' && (buf[i + 2] == 'Z' || buf[i + 2] == 'X');
        }
    }
    return 0;
}

/* Under mpirun: is this the rank that says the job was interrupted? */
static int job_printer(int from_runtime)
{
    int me = (int)getpid(), i, fd;

    if (job_marker[0] == '\0') {
        return 0;
    }
    for (i = 0; i < job_npids; i++) {
        if (job_pids[i] != me && job_pids[i] > 0 && pid_gone(job_pids[i])) {
            return 0; /* a rank of this node is lost: the monitor names it */
        }
    }
    if (from_runtime) {
        /* The runtime's SIGTERM may follow a loss on another node whose monitor, on a
         * shared /tmp, marks the job: wait 0.3 s for it (the SIGKILL comes 1 s after
         * the SIGTERM by default: odls_base_sigkill_timeout). */
        struct timespec ts = {0, 50000000};

        for (i = 0; i < 6; i++) {
            if (access(job_marker, F_OK) == 0) {
                return 0;
            }
            nanosleep(&ts, NULL);
        }
    }
    fd = open(job_marker, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        return 0; /* a failure printed, or another rank prints */
    }
    (void)!write(fd, job_rank, strlen(job_rank));
    close(fd);
    return 1;
}

static void on_signal(int sig, siginfo_t *si, void *ctx)
{
    int k = current, from_runtime = si != NULL && si->si_pid == getppid();

    (void)ctx;
    /* First the temporary files: under mpirun a SIGKILL follows within a second. */
    app_sink_remove_temps();
    if (printer || job_printer(from_runtime)) {
        say("tpuemu: interrupted by ");
        say(sig == SIGINT ? "SIGINT" : "SIGTERM");
        if (!printer) {
            say(from_runtime ? " (mpirun ended the job)" : job_me);
        }
        if (k >= 0) {
            say(lines[k]);
        }
        say("; no output file written (an earlier one is as it was)\n");
    }
    if (start_term[0] != '\0') {
        int fd = open(start_term, O_WRONLY | O_CREAT, 0600);

        if (fd >= 0) {
            close(fd);
        }
    }
    (void)sigaction(sig, sig == SIGINT ? &old_int : &old_term, NULL);
    (void)raise(sig);
}

static void install(int sig, struct sigaction *old)
{
    struct sigaction cur, sa;

    /* An ignored signal (a background job's SIGINT) stays ignored. */
    if (sigaction(sig, NULL, &cur) != 0 ||
        ((cur.sa_flags & SA_SIGINFO) != 0 && cur.sa_sigaction == on_signal) ||
        ((cur.sa_flags & SA_SIGINFO) == 0 && cur.sa_handler == SIG_IGN)) {
        return;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, &sa, old) != 0) {
        *old = cur;
    }
}

void app_interrupt_install(void)
{
    if (printer < 0) {
        const char *r = getenv("OMPI_COMM_WORLD_RANK");

        if (r == NULL) {
            r = getenv("PMI_RANK");
        }
        /* Under mpirun the runtime ends the ranks with SIGTERM after a failure elsewhere
         * (whose rank has printed): the ranks say nothing, they only remove their files. */
        printer = r == NULL;
    }
    install(SIGINT, &old_int);
    install(SIGTERM, &old_term);
}

void app_interrupt_at(long done, long total, const char *item)
{
    int k = current == 0 ? 1 : 0;

    snprintf(lines[k], sizeof(lines[k]), " with %ld of %ld done%s%.160s%s", done, total,
             item != NULL && item[0] != '\0' ? " (running: " : "", item != NULL ? item : "",
             item != NULL && item[0] != '\0' ? ")" : "");
    current = k;
    app_interrupt_install();
}

void app_interrupt_job(const char *marker, const char *me, int world_rank, const int *pids,
                       int npids)
{
    int i;

    snprintf(job_me, sizeof(job_me), " (sent to %s)", me);
    snprintf(job_rank, sizeof(job_rank), "%d\n", world_rank);
    job_npids = 0;
    for (i = 0; pids != NULL && i < npids && i < APP_INTERRUPT_MAX_PIDS; i++) {
        job_pids[job_npids++] = pids[i];
    }
    snprintf(job_marker, sizeof(job_marker), "%s", marker);
    app_interrupt_install();
}

void app_interrupt_start(const char *term_path)
{
    snprintf(start_term, sizeof(start_term), "%s", term_path);
    app_interrupt_install();
}

void app_interrupt_job_end(void)
{
    job_marker[0] = '\0';
}
