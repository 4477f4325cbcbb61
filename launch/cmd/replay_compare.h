/* tpuemu replay --compare A.hlo B.hlo: two modules side by side.  Private to launch/. */
#ifndef APP_CMD_REPLAY_COMPARE_H
#define APP_CMD_REPLAY_COMPARE_H

#include "tpu/hlo.h"
#include "tpu/pod.h"
#include "tpu/replay.h"

#include "json.h"

#include <stdio.h>

/* One side of the comparison: the module file, its pod, module and replay. */
typedef struct app_replay_side {
    const char *path;
    const tpu_pod_t *pod;
    const tpu_hlo_module_t *mod;
    const tpu_replay_report_t *rep;
} app_replay_side_t;

/*
 * The two replays' step (as written and scheduled), compute, communication,
 * exposed communication and HBM peak in two columns and their difference, then
 * the collectives that differ: by kind, axes and bytes, the executions and
 * total time each module spends on them.
 */
void app_replay_print_compare(FILE *out, const app_replay_side_t *a, const app_replay_side_t *b);
/* The same as one JSON object {"a": {...}, "b": {...}, "collectives": [...]}. */
void app_replay_compare_json(app_json_t *j, const app_replay_side_t *a, const app_replay_side_t *b);

#endif /* APP_CMD_REPLAY_COMPARE_H */
