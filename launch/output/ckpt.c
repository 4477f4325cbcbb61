/* train --save's checkpoint folder, written whole or not at all (see ckpt.h). */
#include "ckpt.h"

#include "alloc.h"
#include "sink.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

tpu_status_t app_ckpt_begin(app_ckpt_t *c, const char *dir, const char *const *names, int nfiles,
                            tpu_err_t *err)
{
    tpu_status_t status = TPU_OK;
    int i;

    memset(c, 0, sizeof(*c));
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        return tpu_err_set(err, TPU_ERR_INVALID, "--save %s: cannot create it: %s", dir,
                           strerror(errno));
    }
    c->dir = dir;
    c->paths = tpu__calloc((size_t)nfiles, sizeof(char *));
    c->tmps = tpu__calloc((size_t)nfiles, sizeof(char *));
    if (c->paths == NULL || c->tmps == NULL) {
        status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "no memory for --save's file names");
        goto fail;
    }
    c->nfiles = nfiles;
    for (i = 0; i < nfiles; i++) {
        size_t len = strlen(dir) + strlen(names[i]) + 6;
        struct stat st;

        c->paths[i] = tpu__malloc(len);
        if (c->paths[i] == NULL) {
            status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "no memory for --save's file names");
            goto fail;
        }
        snprintf(c->paths[i], len, "%s/%s.npy", dir, names[i]);
        if (stat(c->paths[i], &st) == 0 && !S_ISREG(st.st_mode)) {
            status = tpu_err_set(err, TPU_ERR_IO, "--save: cannot write '%s': not a regular file",
                                 c->paths[i]);
            goto fail;
        }
    }
    return TPU_OK;
fail:
    app_ckpt_finish(c, 0, NULL);
    return status;
}

tpu_status_t app_ckpt_write(app_ckpt_t *c, int i, int nd, const int64_t *shape, const float *data,
                            tpu_err_t *err)
{
    tpu_status_t status = app_sink_temp_create(c->paths[i], &c->tmps[i], err);

    if (status == TPU_OK) {
        status = tpu_npy_write(c->tmps[i], TPU_NPY_F32, nd, shape, data, err);
    }
    if (status != TPU_OK && c->tmps[i] != NULL) {
        /* The library's message names the temporary file: name the file instead. */
        char why[TPU_ERR_MSG_LEN];
        const char *at = strstr(err->msg, ": ");

        snprintf(why, sizeof(why), "%s", at != NULL ? at + 2 : err->msg);
        tpu_err_clear(err);
        status = tpu_err_set(err, TPU_ERR_IO, "--save: cannot write '%s': %s", c->paths[i], why);
    }
    return status;
}

tpu_status_t app_ckpt_finish(app_ckpt_t *c, int ok, tpu_err_t *err)
{
    tpu_status_t status = TPU_OK;
    sigset_t block, saved;
    int i;

    for (i = 0; ok && i < c->nfiles; i++) {
        ok = c->tmps[i] != NULL;
    }
    /* Every file is complete: rename them all, with no signal in between. */
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigprocmask(SIG_BLOCK, &block, &saved);
    for (i = 0; i < c->nfiles; i++) {
        if (c->tmps[i] != NULL &&
            app_sink_temp_finish(c->paths[i], c->tmps[i], ok, err) != TPU_OK) {
            status = TPU_ERR_IO;
        }
        c->tmps[i] = NULL;
    }
    sigprocmask(SIG_SETMASK, &saved, NULL);
    for (i = 0; c->paths != NULL && i < c->nfiles; i++) {
        tpu__free(c->paths[i]);
    }
    tpu__free(c->paths);
    tpu__free(c->tmps);
    memset(c, 0, sizeof(*c));
    return status;
}
