/*
 * Output files: check a target before the work, open, and close with the write
 * errors found (a full disk shows only at fflush/fclose, so every byte written is
 * checked there).  A regular file is written to a temporary name beside it
 * (DIR/.NAME.tmpXXXXXX) and renamed into place when complete, so that a failed or
 * interrupted run leaves the old file as it was and no partial one.  Where the
 * file system has them (Linux O_TMPFILE), a stream is written to a file with no
 * name, which even SIGKILL leaves nothing of, linked to the temporary name only to
 * be renamed at once; else SIGINT and SIGTERM remove the named temporary files
 * before the process ends (interrupt.c).  A FIFO or device
 * is opened in place, without blocking: one that no process reads is an error,
 * not a hang.  Two outputs on one file, or an output on an input, are refused.
 */
#define _GNU_SOURCE /* O_TMPFILE (Linux); without it the named temporary file */
#include "sink.h"

#include "alloc.h"
#include "interrupt.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Temporary files still open, by stream, also read in a signal handler: room for
 * every file of a transformer checkpoint (train --save writes one a parameter). */
#define MAX_TEMPS 4096
static struct {
    FILE *f;
    char *volatile tmp; /* the temporary name (anon: its pattern until the link) */
    int anon;           /* an O_TMPFILE file: no name on disk until finish() */
} temps[MAX_TEMPS];

/* An output could not be written (app_sink_output_failed). */
static int output_failed;

void app_sink_remove_temps(void)
{
    int i;

    for (i = 0; i < MAX_TEMPS; i++) {
        if (temps[i].tmp != NULL && !temps[i].anon) {
            (void)unlink(temps[i].tmp);
        }
    }
}

/* "DIR/.NAME.tmpXXXXXX" beside 'path'; NULL when out of memory. */
static char *temp_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    size_t dlen = slash != NULL ? (size_t)(slash - path) + 1 : 0;
    size_t len = strlen(path) + 16;
    char *name = tpu__malloc(len);

    if (name != NULL) {
        snprintf(name, len, "%.*s.%s.tmpXXXXXX", (int)dlen, path, path + dlen);
    }
    return name;
}

/* An unnamed file in the folder of 'path' (O_TMPFILE); -1 where there is none. */
static int open_anon(const char *path)
{
#ifdef O_TMPFILE
    const char *slash = strrchr(path, '/');
    char dir[4096];

    if (slash == NULL) {
        snprintf(dir, sizeof(dir), ".");
    } else {
        snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
    }
    return open(dir, O_TMPFILE | O_WRONLY, 0600);
#else
    (void)path;
    return -1;
#endif
}

/*
 * Give the unnamed file 'fd' the temporary name 'tmp' (its XXXXXX filled in, as
 * mkstemp would), so that it can be renamed into place.  0, or -1 with errno.
 */
static int link_anon(int fd, char *tmp)
{
    static const char digits[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    char proc[64], *x = tmp + strlen(tmp) - 6;
    unsigned long v = (unsigned long)getpid() * 2654435761UL ^ (unsigned long)time(NULL);
    int tries, i;

    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
    for (tries = 0; tries < 100; tries++) {
        unsigned long r = v + (unsigned long)tries * 40503UL;

        for (i = 0; i < 6; i++) {
            x[i] = digits[r % 36];
            r /= 36;
        }
        if (linkat(AT_FDCWD, proc, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) == 0) {
            return 0;
        }
        if (errno != EEXIST) {
            return -1;
        }
    }
    return -1;
}

/* Open a regular (or not yet existing) file through a temporary name. */
static tpu_status_t open_temp(app_sink_t *sink, const char *path, const struct stat *old, int anon,
                              tpu_err_t *err)
{
    int fd, slot;
    mode_t mask;
    char *tmp;
    sigset_t block, saved;

    for (slot = 0; slot < MAX_TEMPS && temps[slot].tmp != NULL; slot++) {
    }
    if (slot == MAX_TEMPS) {
        return tpu_err_set(err, TPU_ERR_INVALID, "cannot write '%s': more than %d output files",
                           path, MAX_TEMPS);
    }
    tmp = temp_name(path);
    if (tmp == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory");
    }
    app_interrupt_install();
    /* No signal between the file's creation and its registration. */
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigprocmask(SIG_BLOCK, &block, &saved);
    fd = anon ? open_anon(path) : -1;
    temps[slot].anon = fd >= 0;
    if (fd < 0) {
        fd = mkstemp(tmp);
    }
    if (fd >= 0) {
        temps[slot].tmp = tmp;
    }
    sigprocmask(SIG_SETMASK, &saved, NULL);
    if (fd < 0) {
        tpu_err_set(err, TPU_ERR_INVALID, "cannot write '%s': %s", path, strerror(errno));
        tpu__free(tmp);
        return TPU_ERR_INVALID;
    }
    /* The mode an ordinary open() would give: the old file's, or 0666 less the umask. */
    mask = umask(0);
    umask(mask);
    (void)fchmod(fd, old != NULL ? old->st_mode & 07777 : 0666 & ~mask);
    sink->f = fdopen(fd, "w");
    if (sink->f == NULL) {
        close(fd);
        if (!temps[slot].anon) {
            unlink(tmp);
        }
        temps[slot].tmp = NULL;
        tpu__free(tmp);
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "cannot write '%s': %s", path, strerror(errno));
    }
    temps[slot].f = sink->f;
    return TPU_OK;
}

/* A file that a library function writes by name (temps[].f is this sentinel). */
static FILE *const by_name = (FILE *)&temps;

tpu_status_t app_sink_temp_create(const char *path, char **tmp_p, tpu_err_t *err)
{
    app_sink_t sink = {NULL, path};
    struct stat st;
    int exists = stat(path, &st) == 0, slot;
    tpu_status_t status = open_temp(&sink, path, exists ? &st : NULL, 0, err);

    if (status != TPU_OK) {
        return status;
    }
    for (slot = 0; slot < MAX_TEMPS && temps[slot].f != sink.f; slot++) {
    }
    temps[slot].f = by_name;
    *tmp_p = temps[slot].tmp;
    if (fclose(sink.f) != 0) {
        return app_sink_temp_finish(path, *tmp_p, 0, err) == TPU_OK
                   ? tpu_err_set(err, TPU_ERR_IO, "cannot write '%s': %s", path, strerror(errno))
                   : TPU_ERR_IO;
    }
    return TPU_OK;
}

tpu_status_t app_sink_temp_finish(const char *path, char *tmp, int keep, tpu_err_t *err)
{
    int slot, saved = 0;

    for (slot = 0; slot < MAX_TEMPS && temps[slot].tmp != tmp; slot++) {
    }
    if (slot == MAX_TEMPS || tmp == NULL) {
        return TPU_OK;
    }
    if (keep && rename(tmp, path) != 0) {
        saved = errno;
        keep = 0;
    }
    if (!keep) {
        (void)unlink(tmp);
    }
    temps[slot].tmp = NULL;
    temps[slot].f = NULL;
    tpu__free(tmp);
    if (saved != 0) {
        output_failed = 1;
        return tpu_err_set(err, TPU_ERR_IO, "cannot write '%s': %s", path, strerror(saved));
    }
    return TPU_OK;
}

tpu_status_t app_sink_open(app_sink_t *sink, const char *path, tpu_err_t *err)
{
    struct stat st;
    int fd, flags, exists;

    sink->path = path;
    sink->f = NULL;
    if (strcmp(path, "-") == 0) {
        sink->f = stdout;
        return TPU_OK;
    }
    exists = stat(path, &st) == 0;
    if (!exists || S_ISREG(st.st_mode)) {
        return open_temp(sink, path, exists ? &st : NULL, 1, err);
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

/* What a path names: an existing file's device and inode, or a new file's folder and name. */
typedef struct ident {
    dev_t dev;
    ino_t ino;
    const char *name; /* NULL: an existing file */
    int special;      /* a device or FIFO: several outputs may share one (/dev/null) */
} ident_t;

static int identify(const char *path, ident_t *id)
{
    struct stat st;
    char dir[4096];
    const char *slash = strrchr(path, '/');

    memset(id, 0, sizeof(*id));
    if (stat(path, &st) == 0) {
        id->dev = st.st_dev;
        id->ino = st.st_ino;
        id->special = !S_ISREG(st.st_mode);
        return 1;
    }
    if (slash == NULL) {
        snprintf(dir, sizeof(dir), ".");
    } else {
        snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
    }
    if (stat(dir, &st) != 0) {
        return 0;
    }
    id->dev = st.st_dev;
    id->ino = st.st_ino;
    id->name = slash != NULL ? slash + 1 : path;
    return 1;
}

static int same(const ident_t *a, const ident_t *b)
{
    return a->dev == b->dev && a->ino == b->ino && !a->special && !b->special &&
           (a->name == NULL) == (b->name == NULL) &&
           (a->name == NULL || strcmp(a->name, b->name) == 0);
}

tpu_status_t app_sink_check_paths(const app_sink_path_t *outs, int nouts,
                                  const app_sink_path_t *ins, int nins, tpu_err_t *err)
{
    ident_t a, b;
    int i, j;

    for (i = 0; i < nouts; i++) {
        if (outs[i].path == NULL || strcmp(outs[i].path, "-") == 0 || !identify(outs[i].path, &a)) {
            continue;
        }
        for (j = 0; j < nins; j++) {
            if (ins[j].path != NULL && identify(ins[j].path, &b) && b.name == NULL &&
                same(&a, &b)) {
                return tpu_err_set(err, TPU_ERR_INVALID,
                                   "--%s '%s' is the same file as %s '%s', an input of this run: "
                                   "writing it would destroy it; give another file",
                                   outs[i].flag, outs[i].path, ins[j].flag, ins[j].path);
            }
        }
        for (j = 0; j < i; j++) {
            if (outs[j].path != NULL && strcmp(outs[j].path, "-") != 0 &&
                identify(outs[j].path, &b) && same(&a, &b)) {
                return tpu_err_set(err, TPU_ERR_INVALID,
                                   "--%s '%s' and --%s '%s' are the same file: one would "
                                   "overwrite the other; give each its own file",
                                   outs[j].flag, outs[j].path, outs[i].flag, outs[i].path);
            }
        }
    }
    return TPU_OK;
}

/* Close the stream; its temporary file, if any, is renamed into place when 'keep'. */
int app_sink_output_failed(void)
{
    return output_failed;
}

static tpu_status_t finish(app_sink_t *sink, int keep, tpu_err_t *err)
{
    int bad, saved, slot;
    FILE *f = sink->f;

    errno = 0;
    bad = fflush(f) != 0 || ferror(f);
    saved = errno;
    for (slot = 0; slot < MAX_TEMPS && (temps[slot].tmp == NULL || temps[slot].f != f); slot++) {
    }
    if (slot < MAX_TEMPS && temps[slot].anon) {
        sigset_t block, old;

        /* Kept: the unnamed file takes its temporary name now (renamed below);
         * no signal between the name and its registration as one to remove. */
        sigemptyset(&block);
        sigaddset(&block, SIGINT);
        sigaddset(&block, SIGTERM);
        sigprocmask(SIG_BLOCK, &block, &old);
        if (keep && !bad && link_anon(fileno(f), temps[slot].tmp) != 0) {
            bad = 1;
            saved = errno;
        }
        temps[slot].anon = !keep || bad; /* no name on disk: nothing to remove */
        sigprocmask(SIG_SETMASK, &old, NULL);
    }
    if (f != stdout && fclose(f) != 0 && !bad) {
        bad = 1;
        saved = errno;
    }
    sink->f = NULL;
    if (slot < MAX_TEMPS) {
        char *tmp = temps[slot].tmp;

        if (keep && !bad && rename(tmp, sink->path) != 0) {
            bad = 1;
            saved = errno;
        }
        if ((!keep || bad) && !temps[slot].anon) {
            (void)unlink(tmp);
        }
        temps[slot].tmp = NULL;
        temps[slot].f = NULL;
        temps[slot].anon = 0;
        tpu__free(tmp);
    }
    if (bad && keep) {
        output_failed = 1;
        return tpu_err_set(err, TPU_ERR_IO, "cannot write '%s': %s",
                           strcmp(sink->path, "-") == 0 ? "stdout" : sink->path,
                           saved ? strerror(saved) : "write error");
    }
    return TPU_OK;
}

void app_sink_discard(app_sink_t *sink)
{
    if (sink->f != NULL) {
        (void)finish(sink, 0, NULL);
    }
}

tpu_status_t app_sink_close(app_sink_t *sink, tpu_err_t *err)
{
    if (sink->f == NULL) {
        return TPU_OK;
    }
    return finish(sink, 1, err);
}

tpu_status_t app_sink_close_stdout(tpu_err_t *err)
{
    int bad;

    errno = 0;
    bad = fflush(stdout) != 0 || ferror(stdout);
    if (!bad && fclose(stdout) != 0) {
        bad = 1;
    }
    if (bad) {
        output_failed = 1;
        return tpu_err_set(err, TPU_ERR_IO, "cannot write stdout: %s",
                           errno ? strerror(errno) : "write error");
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
