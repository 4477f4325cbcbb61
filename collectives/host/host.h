/*
 * Host plans (host_algorithms.def): schedules that move the host's bytes of a
 * run with fewer dependency rounds than the algorithm's one-chunk schedule.  The
 * modeled time is always the plan's own schedule; a host plan only changes how
 * the emulator's messages carry the bytes.  The run object (exec.c) tries the
 * rows in table order and takes the first that applies.
 */
#ifndef TPU_HOST_H
#define TPU_HOST_H

#include "tpu/coll.h"

#include "schedule.h"

#include <stdint.h>

/*
 * Build the host plan of 'p' into 'ps'; with 'local' (non-NULL), only the flows
 * that start or end on a chip marked there (a rank's own part), in the full
 * plan's order.  TPU_ERR_UNSUPPORTED (nothing built, 'err' untouched) when the
 * plan does not apply; TPU_ERR_NO_MEMORY named in 'err'.
 */
typedef tpu_status_t (*tpu_host_fn_t)(const tpu_coll_plan_t *p, const uint8_t *local,
                                      tpu_plan_sched_t *ps, tpu_err_t *err);

typedef struct tpu_host_algo {
    tpu_coll_kind_t kind;
    const char *name;
    tpu_host_fn_t build;
    int from_member0; /* 1: every element's sum starts from member 0's value (shm.c) */
    const char *summary;
} tpu_host_algo_t;

#define TPU_HOST_ALGO(kind, name, from_member0, summary)                                   \
    tpu_status_t tpu__host_##kind##_##name(const tpu_coll_plan_t *p, const uint8_t *local, \
                                           tpu_plan_sched_t *ps, tpu_err_t *err);
#include "host_algorithms.def"
#undef TPU_HOST_ALGO

extern const tpu_host_algo_t tpu__host_algos[];
extern const int tpu__nhost_algos;

#endif /* TPU_HOST_H */
