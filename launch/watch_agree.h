/* The start-up agreements of an MPI job (watch_agree.c).  Private to launch/. */
#ifndef APP_WATCH_AGREE_H
#define APP_WATCH_AGREE_H

#include "tpu/mpi.h"

#include "launch.h"

#include <stddef.h>

/* Options compared across ranks at start. */
#define APP_JOB_NOPTS 160

/* The lowest rank of 'comm' with 'failed' set, or -1.  Collective. */
int app_job_agree(MPI_Comm comm, int failed);
/*
 * Compare the options that change the sequence of calls across MPI_COMM_WORLD.
 * Returns 0 when they agree; else writes the message naming the option and both
 * values and returns 1 on the rank that prints it, 2 on the others.
 */
int app_job_agree_opts(const app_opts_t *o, char *msg, size_t len);
/* The same for 'n' named values (NULL: not given) of a command's own flags. */
int app_job_agree_values(int n, const char *const *names, const char *const *vals, char *msg,
                         size_t len);

#endif
