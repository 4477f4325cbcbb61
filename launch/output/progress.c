/* The progress bar (see progress.h). */
#include "progress.h"

#include "clock.h"

#include <stdlib.h>
#include <unistd.h>

#define BAR 24

void tpu_progress_init(tpu_progress_t *p, int want, long total)
{
    const char *env = getenv("TPUEMU_PROGRESS_AFTER");

    p->out = stderr;
    p->enabled = want && total > 0 && isatty(fileno(stderr));
    p->shown = 0;
    p->total = total;
    p->t0 = tpu__now_s();
    p->after_s = env != NULL ? atof(env) : TPU_PROGRESS_AFTER_S;
}

void tpu_progress_update(tpu_progress_t *p, long done, const char *item)
{
    int i, fill;

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

void tpu_progress_end(tpu_progress_t *p)
{
    if (p->shown) {
        fprintf(p->out, "\r%*s\r", BAR + 60, "");
        fflush(p->out);
        p->shown = 0;
    }
}
