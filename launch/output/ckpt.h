/*
 * A checkpoint folder written whole or not at all (ckpt.c): train --save's .npy
 * files, each under a temporary name beside its file, renamed into place together
 * once every one is complete, so that a failed or interrupted save leaves the old
 * checkpoint as it was and no partial file.
 */
#ifndef APP_CKPT_H
#define APP_CKPT_H

#include "tpu/npy.h"
#include "tpu/status.h"

#include <stdint.h>

typedef struct app_ckpt {
    const char *dir;
    int nfiles;
    char **paths; /* DIR/NAME.npy */
    char **tmps;  /* the temporary files written so far */
} app_ckpt_t;

/*
 * Create 'dir' if missing and name its 'nfiles' files (names[i] + ".npy"); a file
 * that is there and not a regular file is refused (TPU_ERR_IO) before any write,
 * a folder that cannot be made is TPU_ERR_INVALID.
 */
tpu_status_t app_ckpt_begin(app_ckpt_t *c, const char *dir, const char *const *names, int nfiles,
                            tpu_err_t *err);
/* Write file 'i' (an f32 array of 'nd' dimensions) under its temporary name;
 * the error names the file, not the temporary one (TPU_ERR_IO). */
tpu_status_t app_ckpt_write(app_ckpt_t *c, int i, int nd, const int64_t *shape, const float *data,
                            tpu_err_t *err);
/* 'ok': rename every file into place with SIGINT and SIGTERM blocked; else remove
 * the temporary files.  Frees what app_ckpt_begin() made; safe on a zeroed 'c'. */
tpu_status_t app_ckpt_finish(app_ckpt_t *c, int ok, tpu_err_t *err);

#endif
