/* tpuemu train: the MLP trained on the emulated pod.  Private to launch/. */
#ifndef APP_CMD_TRAIN_H
#define APP_CMD_TRAIN_H

#include "launch.h"

/* The checks of train's flags that need no pod (--data with --labels, --model-only alone). */
tpu_status_t app_train_check(const app_opts_t *o, tpu_err_t *err);
/* The runner of its row in commands.def. */
int app_cmd_train(app_ctx_t *ctx);

#endif /* APP_CMD_TRAIN_H */
