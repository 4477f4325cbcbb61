/*
 * Warnings for values that are valid but extreme: a figure of the chip (its HBM,
 * FLOP/s, link bandwidths and latencies, from the flags or the config file) far
 * from every real chip's, and pods far larger than any real one.  Private to
 * launch/.
 */
#ifndef APP_LAUNCH_EXTREMES_H
#define APP_LAUNCH_EXTREMES_H

#include "tpu/pod.h"

#include <stdio.h>

/* A figure this many times above the largest real chip's (or below the smallest
 * real chip's divided by it) is extreme. */
#define APP_EXTREME_FACTOR 100.0

/*
 * Print one "tpuemu: warning: ..." line on 'out' for each extreme value of 'pod'
 * (the process that prints before MPI_Init only: rank 0 or a process alone; once
 * per process).  Returns the number of lines.
 */
int app_extremes_warn(const tpu_pod_t *pod, FILE *out);

#endif /* APP_LAUNCH_EXTREMES_H */
