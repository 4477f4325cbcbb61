/* tpuemu replay MODULE.hlo: a compiled XLA module's cost on the pod.  Private to launch/. */
#ifndef APP_CMD_REPLAY_H
#define APP_CMD_REPLAY_H

#include "launch.h"

/* The checks of replay's flags that need no pod: --list alone, the module file given,
 * the outputs, --trace-measured and --inject under mpirun only. */
tpu_status_t app_replay_check(const app_opts_t *o, tpu_err_t *err);
/* The runner of its row in commands.def. */
int app_cmd_replay(app_ctx_t *ctx);

#endif /* APP_CMD_REPLAY_H */
