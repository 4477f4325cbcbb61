/*
 * The SIGINT / SIGTERM handler of the program (see interrupt.h).  The line is
 * composed outside the handler (app_interrupt_at) into one of two buffers and
 * published by an index, so that the handler only calls write(), unlink() (in
 * app_sink_remove_temps), sigaction() and raise(), all async-signal-safe.  Under
 * mpirun no rank prints (the runtime's own SIGTERM follows any failure).
 */
#include "interrupt.h"

#include "sink.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char lines[2][256];
static volatile sig_atomic_t current = -1; /* the buffer to print; -1: nothing running yet */
static struct sigaction old_int, old_term;
static int printer = -1;

static void on_signal(int sig)
{
    const char *name = sig == SIGINT ? "SIGINT" : "SIGTERM";
    int k = current;

    if (printer) {
        (void)!write(2, "tpuemu: interrupted by ", 23);
        (void)!write(2, name, strlen(name));
        if (k >= 0) {
            (void)!write(2, lines[k], strlen(lines[k]));
        }
        (void)!write(2, "; no output file written (an earlier one is as it was)\n", 55);
    }
    app_sink_remove_temps();
    (void)sigaction(sig, sig == SIGINT ? &old_int : &old_term, NULL);
    (void)raise(sig);
}

static void install(int sig, struct sigaction *old)
{
    struct sigaction cur, sa;

    /* An ignored signal (a background job's SIGINT) stays ignored. */
    if (sigaction(sig, NULL, &cur) != 0 || cur.sa_handler == on_signal ||
        cur.sa_handler == SIG_IGN) {
        return;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
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
