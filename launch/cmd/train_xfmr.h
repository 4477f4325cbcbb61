/* tpuemu train --model transformer: the transformer trained on the emulated pod.  Private to
 * launch/. */
#ifndef APP_CMD_TRAIN_XFMR_H
#define APP_CMD_TRAIN_XFMR_H

#include "launch.h"

/* The checks of train's flags with --model transformer that need no pod (the MLP's flags
 * refused, what is not there yet). */
tpu_status_t app_train_xfmr_check(const app_opts_t *o, tpu_err_t *err);
/* The runner of train with --model transformer (called by app_cmd_train). */
int app_cmd_train_xfmr(app_ctx_t *ctx);

#endif /* APP_CMD_TRAIN_XFMR_H */
