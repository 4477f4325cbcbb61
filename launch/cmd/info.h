/* tpuemu info: chip constants, the topology's links, the algorithms.  Private to launch/. */
#ifndef APP_CMD_INFO_H
#define APP_CMD_INFO_H

#include "launch.h"

/* The runner of its row in commands.def. */
int app_cmd_info(app_ctx_t *ctx);

#endif /* APP_CMD_INFO_H */
