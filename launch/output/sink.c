/*
 * Output files: check a target before the work, open, and close with the write
 * errors found (a full disk shows only at fflush/fclose, so every byte written is
 * checked there).  A FIFO is opened without blocking: one that no process reads
 * is an error, not a hang.
 */
#include "sink.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

tpu_status_t app_sink_open(app_sink_t *sink, const char *path, tpu_err_t *err)
{
    int fd, flags;

    sink->path = path;
    sink->f = NULL;
    if (strcmp(path, "-") == 0) {
        sink->f = stdout;
        return TPU_OK;
    }
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK, 0666);
    if (fd < 0) {
        return tpu_err_set(err, TPU_ERR_INVALID, "cannot write '%s': %s", path,
                           errno == ENXIO ? "a FIFO that no process reads" : strerror(errno));
    }
    flags = fcntl(fd, F_GETFL);
    if (flags != -1) {
        fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    }
    sink->f = fdopen(fd, "w");
    if (sink->f == NULL) {
        close(fd);
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "cannot write '%s': %s", path, strerror(errno));
    }
    return TPU_OK;
}

tpu_status_t app_sink_check_target(const char *flag, const char *path, tpu_err_t *err)
{
    struct stat st;
    char dir[4096];
    const char *slash;

    if (path == NULL || strcmp(path, "-") == 0) {
        return TPU_OK;
    }
    if (path[0] == '\0') {
        return tpu_err_set(err, TPU_ERR_INVALID, "--%s got an empty value; give a file name or -",
                           flag);
    }
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            return tpu_err_set(
                err, TPU_ERR_INVALID,
                "cannot write '%s' (--%s): it is a directory; give a file name in it", path, flag);
        }
        if (S_ISREG(st.st_mode) && access(path, W_OK) != 0) {
            return tpu_err_set(err, TPU_ERR_INVALID, "cannot write '%s' (--%s): %s", path, flag,
                               strerror(errno));
        }
        return TPU_OK; /* a file, or a device or FIFO (opened without blocking) */
    }
    if (errno != ENOENT) {
        return tpu_err_set(err, TPU_ERR_INVALID, "cannot write '%s' (--%s): %s", path, flag,
                           strerror(errno));
    }
    slash = strrchr(path, '/');
    if (slash == NULL) {
        snprintf(dir, sizeof(dir), ".");
    } else {
        snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
    }
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        return tpu_err_set(
            err, TPU_ERR_INVALID,
            "cannot write '%s' (--%s): the folder '%s' does not exist; create it first", path, flag,
            dir);
    }
    if (access(dir, W_OK) != 0) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "cannot write '%s' (--%s): not in the folder '%s': %s", path, flag, dir,
                           strerror(errno));
    }
    return TPU_OK;
}

void app_sink_discard(app_sink_t *sink)
{
    struct stat st;
    int regular;

    if (sink->f == NULL) {
        return;
    }
    regular = sink->f != stdout && fstat(fileno(sink->f), &st) == 0 && S_ISREG(st.st_mode);
    app_sink_close(sink, NULL);
    if (regular) {
        unlink(sink->path);
    }
}

tpu_status_t app_sink_close(app_sink_t *sink, tpu_err_t *err)
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

FILE *app_sink_text(const char *json, const char *csv)
{
    return (json != NULL && strcmp(json, "-") == 0) || (csv != NULL && strcmp(csv, "-") == 0)
               ? stderr
               : stdout;
}

tpu_status_t app_sink_check(const char *json, const char *csv, tpu_err_t *err)
{
    if (json != NULL && csv != NULL && strcmp(json, "-") == 0 && strcmp(csv, "-") == 0) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "--json - and --csv - would both write to stdout; give one a file");
    }
    return TPU_OK;
}
