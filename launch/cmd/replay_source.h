/* tpuemu replay --by-source N: where the time goes, by JAX op path.  Private to launch/. */
#ifndef APP_CMD_REPLAY_SOURCE_H
#define APP_CMD_REPLAY_SOURCE_H

#include "tpu/replay.h"

#include "json.h"

#include <stdio.h>

/*
 * Compute and communication time grouped by the first 'depth' parts of each
 * instruction's metadata op_name ("jit(step)/jit(main)/dot_general" at depth 2:
 * "jit(step)/jit(main)"), largest total first; rows without op_name are one
 * group "(no op_name)".
 */
void app_replay_print_by_source(FILE *out, const tpu_replay_report_t *r, int depth);
/* The same groups as the JSON array "by_source". */
void app_replay_by_source_json(app_json_t *j, const tpu_replay_report_t *r, int depth);

#endif /* APP_CMD_REPLAY_SOURCE_H */
