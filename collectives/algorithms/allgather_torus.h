/*
 * The shared builder of the all-gather family (allgather_torus.c).
 */
#ifndef TPU_ALLGATHER_TORUS_H
#define TPU_ALLGATHER_TORUS_H

#include "algo.h"

/*
 * A DCN phase (direct exchange between slices) followed by one bidirectional
 * ring (line on an open axis) per ICI axis, for 'nord' axis orders with the data
 * split between them so that every axis carries the same load, each split into
 * 'chunks' pipelined chunks.  nord = 1 is the plain axis-by-axis schedule.
 */
tpu_status_t tpu__allgather_phases(const tpu_algo_args_t *args, int nord, tpu_sched_t *sched,
                                   tpu_err_t *err);

#endif /* TPU_ALLGATHER_TORUS_H */
