/*
 * train --model transformer --model-only --search: the layouts of the pod
 * ranked by modeled step time (see train_search.c).  Private to launch/.
 */
#ifndef APP_CMD_TRAIN_SEARCH_H
#define APP_CMD_TRAIN_SEARCH_H

#include "tpu/pod.h"
#include "tpu/transformer_cost.h"

#include "launch.h"

/* Search, print the top 10 (and --json's 'layouts'); the exit code. */
int app_train_search(const app_opts_t *o, const tpu_pod_t *pod, const tpu_xfmr_config_t *m,
                     const tpu_xfmr_plan_t *p, int root);

#endif /* APP_CMD_TRAIN_SEARCH_H */
