/* tpuemu run: the default run: wiring, every collective verified, one training step (under mpirun).
 * Private to launch/. */
#ifndef APP_CMD_RUN_H
#define APP_CMD_RUN_H

#include "launch.h"

/* The runner of its row in commands.def. */
int app_cmd_run(app_ctx_t *ctx);

#endif /* APP_CMD_RUN_H */
