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
    p->total = total;
    p->t0 = tpu__now_s();
    p->after_s = env != NULL ? atof(env) : APP_PROGRESS_AFTER_S;
}

void app_progress_update(app_progress_t *p, long done, const char *item)
{
    int i, fill;

    app_interrupt_at(done, p->total, item); /* what an interrupt's line names */
    if (!p->enabled || tpu__now_s() - p->t0 < p->after_s) {
        return;
    }
    done = done < 0 ? 0 : done > p->total ? p->total : done;
    fill = (int)(BAR * done / p->total);
    fputs("\r[", p->out);
    for (i = 0; i < BAR; i++) {
        fputc(i < fill ? '#' : ' ', p->out);
    }
    fprintf(p->out, "] %ld/%ld  %-40.40s", done, p->total, item != NULL ? item : "");
    fflush(p->out);
    p->shown = 1;
}

void app_progress_end(app_progress_t *p)
{
    if (p->shown) {
        fprintf(p->out, "\r%*s\r", BAR + 60, "");
        fflush(p->out);
        p->shown = 0;
    }
}
