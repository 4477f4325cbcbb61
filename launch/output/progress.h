/*
 * A progress bar for long sweeps, training and replays:
 *     [########                ] 12/36  33%, 4.1 s elapsed, ETA 8.2 s, 2.9/s  psum 64 KiB
 * (done of total, the percentage, the time since the start, the time left at the
 * mean rate so far, the rate in items a second, the item running)
 * on the stream that carries the command's text (stderr; stdout when the text
 * goes there, so that under mpirun, which copies stdout and stderr through
 * separate pipes, the bar and the table lines cannot interleave), drawn only
 * when that stream reaches a terminal (under mpirun: the launcher's), --quiet is
 * not given, and the work has run for more than APP_PROGRESS_AFTER_S seconds
 * (the environment variable TPUEMU_PROGRESS_AFTER overrides it); the line is
 * cleared before any other text and when done.  Only rank 0 enables it.
 * Private to launch/.
 */
#ifndef APP_LAUNCH_OUTPUT_PROGRESS_H
#define APP_LAUNCH_OUTPUT_PROGRESS_H

#include <stdio.h>

#define APP_PROGRESS_AFTER_S 2.0

typedef struct app_progress {
    FILE *out;
    int enabled; /* stderr is a TTY and the caller wants it */
    int shown;   /* a line is on the screen */
    int width;   /* the longest line drawn (what clearing must blank) */
    long total;
    double t0, after_s;
} app_progress_t;

/* 'want': the caller's rank 0 and not --quiet; 'out' the stream of the text. */
void app_progress_init(app_progress_t *p, int want, long total, FILE *out);
/* 'done' of 'total' items finished; 'item' is the one running now (may be NULL). */
void app_progress_update(app_progress_t *p, long done, const char *item);
/* Clear the line. */
void app_progress_end(app_progress_t *p);

#endif /* APP_LAUNCH_OUTPUT_PROGRESS_H */
