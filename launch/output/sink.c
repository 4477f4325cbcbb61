/*
 * Output files: open, and close with the write errors found (a full disk shows
 * only at fflush/fclose, so every byte written is checked there).
 */
#include "sink.h"

#include <errno.h>
#include <string.h>

tpu_status_t tpu_sink_open(tpu_sink_t *sink, const char *path, tpu_err_t *err)
{
    sink->path = path;
    sink->f = NULL;
    if (strcmp(path, "-") == 0) {
        sink->f = stdout;
        return TPU_OK;
    }
    sink->f = fopen(path, "w");
    if (sink->f == NULL) {
        return tpu_err_set(err, TPU_ERR_INVALID, "cannot write '%s': %s", path, strerror(errno));
    }
    return TPU_OK;
}

tpu_status_t tpu_sink_close(tpu_sink_t *sink, tpu_err_t *err)
{
    int bad, saved;

    if (sink->f == NULL) {
        return TPU_OK;
    }
    errno = 0;
    bad = fflush(sink->f) != 0 || ferror(sink->f);
    saved = errno;
    if (sink->f != stdout && fclose(sink->f) != 0 && !bad) {
        bad = 1;
        saved = errno;
    }
    sink->f = NULL;
    if (bad) {
        return tpu_err_set(err, TPU_ERR_IO, "cannot write '%s': %s",
                           strcmp(sink->path, "-") == 0 ? "stdout" : sink->path,
                           saved ? strerror(saved) : "write error");
    }
    return TPU_OK;
}

FILE *tpu_sink_text(const char *json, const char *csv)
{
    return (json != NULL && strcmp(json, "-") == 0) || (csv != NULL && strcmp(csv, "-") == 0)
               ? stderr
               : stdout;
}

tpu_status_t tpu_sink_check(const char *json, const char *csv, tpu_err_t *err)
{
    if (json != NULL && csv != NULL && strcmp(json, "-") == 0 && strcmp(csv, "-") == 0) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "--json - and --csv - would both write to stdout; give one a file");
    }
    return TPU_OK;
}
