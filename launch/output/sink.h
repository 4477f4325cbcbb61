/*
 * Where a command's output goes: '--json FILE|-', '--csv FILE|-' ("-" is stdout),
 * and the stream for the human-readable text (stderr whenever stdout carries a
 * JSON or CSV document, so that the document stands alone).  Private to launch/.
 */
#ifndef APP_LAUNCH_OUTPUT_SINK_H
#define APP_LAUNCH_OUTPUT_SINK_H

#include "tpu/status.h"

#include <stdio.h>

typedef struct app_sink {
    FILE *f;          /* NULL: not open */
    const char *path; /* as given; "-" for stdout */
} app_sink_t;

/* A path given to a flag, for app_sink_check_paths(). */
typedef struct app_sink_path {
    const char *flag; /* "json"; for an input, as messages name it: "the module file" */
    const char *path; /* NULL: not given */
} app_sink_path_t;

/*
 * Open 'path' for writing ("-": stdout).  A regular file is written under a
 * temporary name beside it until app_sink_close() renames it into place.
 * Error: "cannot write 'PATH': REASON".
 */
tpu_status_t app_sink_open(app_sink_t *sink, const char *path, tpu_err_t *err);
/*
 * Flush and close (stdout is flushed, not closed); a write that failed at any
 * point (full disk, closed pipe) is reported here, once.  Closing a sink that
 * is not open does nothing.
 */
tpu_status_t app_sink_close(app_sink_t *sink, tpu_err_t *err);
/*
 * For a file that a function writes by name (a .npy of train --save): create an
 * empty temporary file beside 'path' and return its name in '*tmp_p' (owned by
 * the sink module until app_sink_temp_finish(); SIGINT and SIGTERM remove it).
 */
tpu_status_t app_sink_temp_create(const char *path, char **tmp_p, tpu_err_t *err);
/* Rename 'tmp' onto 'path' ('keep'), or remove it; frees 'tmp'.  Error: "cannot
 * write 'PATH': REASON" (the temporary file is removed). */
tpu_status_t app_sink_temp_finish(const char *path, char *tmp, int keep, tpu_err_t *err);
/* The command failed: close, and remove the temporary file (the old file, a
 * device, a FIFO or stdout stays), so that no partial document is left behind. */
void app_sink_discard(app_sink_t *sink);
/* The stream for text: stderr when 'json' or 'csv' is "-", else stdout. */
FILE *app_sink_text(const char *json, const char *csv);
/*
 * Refuse, before any work, an output target given to --'flag' that cannot be
 * written: a directory, a read-only file, a missing folder.  NULL and "-" pass;
 * a device or FIFO passes (app_sink_open opens it without blocking).
 */
tpu_status_t app_sink_check_target(const char *flag, const char *path, tpu_err_t *err);
/*
 * Refuse, before any work, an output that is the same file as an input or as
 * another output (device and inode of an existing file; folder and name of a new
 * one; devices and FIFOs may be shared).
 */
tpu_status_t app_sink_check_paths(const app_sink_path_t *outs, int nouts,
                                  const app_sink_path_t *ins, int nins, tpu_err_t *err);
/* Remove every temporary file still open (async-signal-safe: the SIGINT/SIGTERM handler's). */
void app_sink_remove_temps(void);
/* At exit: flush and close stdout; a write error (a full disk, a closed pipe) is an error. */
tpu_status_t app_sink_close_stdout(tpu_err_t *err);
/* 1 once an output (a file or stdout) could not be written: the run exits with
 * APP_EXIT_OUTPUT, whichever command's path found it. */
int app_sink_output_failed(void);
/* Both on stdout would mix two documents: refuse it. */
tpu_status_t app_sink_check(const char *json, const char *csv, tpu_err_t *err);

#endif /* APP_LAUNCH_OUTPUT_SINK_H */
