/* tpuemu model --op: one chip op modeled without data.  Private to launch/. */
#ifndef APP_CMD_OP_H
#define APP_CMD_OP_H

#include "launch.h"

/* The runner of its row in commands.def. */
int app_cmd_op(app_ctx_t *ctx);

#endif /* APP_CMD_OP_H */
