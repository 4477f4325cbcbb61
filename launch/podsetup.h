/* The pod a command runs on: config file first, then flags.  Private to launch/. */
#ifndef APP_PODSETUP_H
#define APP_PODSETUP_H

#include "launch.h"

/* Build the pod from the config file and the flags (flags win); tpu_pod_destroy() it. */
tpu_status_t app_pod_setup(const app_opts_t *opts, tpu_pod_t **pod_p, tpu_err_t *err);

#endif /* APP_PODSETUP_H */
