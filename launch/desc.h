/*
 * The collective the flags describe (model, bench): checked without the pod, then
 * built on it.  Private to launch/.
 */
#ifndef APP_DESC_H
#define APP_DESC_H

#include "launch.h"

/* The collective's flags that need no pod: dtype, redop, sizes, the flags that apply
 * (model: to the collective named, else psum; bench: also its sweep's size count). */
tpu_status_t app_desc_check_model(const app_opts_t *opts, tpu_err_t *err);
tpu_status_t app_desc_check_bench(const app_opts_t *opts, tpu_err_t *err);
/* Build a collective description from the flags ('bytes': the size, NULL: the default). */
tpu_status_t app_desc_setup(const app_opts_t *opts, const tpu_pod_t *pod, const char *bytes,
                            tpu_coll_desc_t *desc, tpu_err_t *err);
/* Parse a chip given as coordinates "1,2" (slice first when slices > 1) or an id. */
tpu_status_t app_parse_chip(const tpu_pod_t *pod, const char *text, const char *what, int *chip_p,
                            tpu_err_t *err);

#endif /* APP_DESC_H */
