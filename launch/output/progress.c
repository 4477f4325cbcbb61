/* The progress bar (see progress.h). */
#include "progress.h"

#include "clock.h"
#include "interrupt.h"
#include "jobenv.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BAR 24

/*
 * Does 'out' reach a terminal?  Under mpirun a rank's stdout and stderr go to
 * the launcher, which copies them to its own: then look at the launcher's (the
 * parent's) descriptor, through /proc on Linux.
 */
static int is_tty(FILE *out)
{
    char link[64], target[256];
    ssize_t n;

    if (!app_jobenv_launched()) {
        return isatty(fileno(out));
    }
    /* Open MPI gives a rank's stdout a pty of its own, whatever mpirun's is. */
    snprintf(link, sizeof(link), "/proc/%ld/fd/%d", (long)getppid(), fileno(out));
    n = readlink(link, target, sizeof(target) - 1);
    if (n <= 0) {
        return 0;
    }
    target[n] = '\0';
    return strncmp(target, "/dev/pts/", 9) == 0 || strncmp(target, "/dev/tty", 8) == 0;
}

void app_progress_init(app_progress_t *p, int want, long total, FILE *out)
{
    const char *env = getenv("TPUEMU_PROGRESS_AFTER");

    p->out = out;
    p->enabled = want && total > 0 && is_tty(out);
    p->shown = 0;
    p->width = 0;
    p->total = total;
    p->t0 = tpu__now_s();
    p->after_s = env != NULL ? atof(env) : APP_PROGRESS_AFTER_S;
}

/* Seconds as "4.2 s" below a minute, else "12:05" (minutes and seconds) or "3:12:05". */
static void duration(double s, char *buf, size_t len)
{
    long t = (long)(s + 0.5);

    if (s < 60) {
        snprintf(buf, len, "%.1f s", s);
    } else if (t < 3600) {
        snprintf(buf, len, "%ld:%02ld", t / 60, t % 60);
    } else {
        snprintf(buf, len, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    }
}

void app_progress_update(app_progress_t *p, long done, const char *item)
{
    double el = tpu__now_s() - p->t0, rate;
    char line[256], e[24], eta[24], r[24];
    int i, fill, n;

    app_interrupt_at(done, p->total, item); /* what an interrupt's line names */
    if (!p->enabled || el < p->after_s) {
        return;
    }
    done = done < 0 ? 0 : done > p->total ? p->total : done;
    fill = (int)(BAR * done / p->total);
    rate = el > 0 ? (double)done / el : 0;
    duration(el, e, sizeof(e));
    if (rate > 0) {
        duration((double)(p->total - done) / rate, eta, sizeof(eta));
    } else {
        snprintf(eta, sizeof(eta), "?");
    }
    /* Items per second, in plain digits ("730/s", "4.2/s", "0.35/s", "0/s"). */
    snprintf(r, sizeof(r), rate >= 100 || rate == 0 ? "%.0f" : rate >= 1 ? "%.1f" : "%.2f", rate);
    n = snprintf(line, sizeof(line), "\r[");
    for (i = 0; i < BAR; i++) {
        line[n++] = i < fill ? '#' : ' ';
    }
    n += snprintf(line + n, sizeof(line) - (size_t)n,
                  "] %ld/%ld %3.0f%%, %s elapsed, ETA %s, %s/s  %-40.40s", done, p->total,
                  100.0 * (double)done / (double)p->total, e, eta, r, item != NULL ? item : "");
    fputs(line, p->out);
    /* Blank what a longer line before left, then come back. */
    for (i = n; i < p->width; i++) {
        fputc(' ', p->out);
    }
    p->width = n > p->width ? n : p->width;
    fflush(p->out);
    p->shown = 1;
}

void app_progress_end(app_progress_t *p)
{
    if (p->shown) {
        fprintf(p->out, "\r%*s\r", p->width, "");
        fflush(p->out);
        p->shown = 0;
    }
}
