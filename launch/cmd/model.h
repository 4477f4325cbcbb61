/* tpuemu model: a collective modeled in one process.  Private to launch/. */
#ifndef APP_CMD_MODEL_H
#define APP_CMD_MODEL_H

#include "launch.h"

/* The runner of its row in commands.def. */
int app_cmd_model(app_ctx_t *ctx);

#endif /* APP_CMD_MODEL_H */
