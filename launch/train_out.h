/*
 * A training step in words and in JSON (train, and the default run's step).
 * Private to launch/.
 */
#ifndef APP_TRAIN_OUT_H
#define APP_TRAIN_OUT_H

#include "tpu/mlp.h"
#include "tpu/pod.h"

#include "json.h"
#include "sink.h"

#include <stdint.h>
#include <stdio.h>

/* A number, or null when it is not finite (a diverged loss); 'key' NULL: an array item. */
void app_train_json_num(app_json_t *j, const char *key, double v);
/* The collectives of a step, as a table. */
void app_train_print_colls(FILE *txt, const tpu_mlp_report_t *r);
/* The cost split of a step, in words ('capacity': the chip's HBM bytes). */
void app_train_print_split(FILE *txt, const tpu_mlp_report_t *r, uint64_t capacity);
/* The cost members of a step report, into the object being written. */
void app_train_json_report(app_json_t *j, const tpu_mlp_report_t *r);

/* The transport line and the pod's faults (train's header). */
void app_train_print_transport(FILE *txt, const tpu_pod_t *pod, int model_only, int mpi);

/*
 * The end of a train run's output files (the MLP's and the transformer's): after
 * a failure ('failed') both are discarded, so the files that were there stay as
 * they were; otherwise each is closed (renamed into place) and a failed close
 * is one line and APP_EXIT_OUTPUT.  Returns the exit code ('code' unless a close
 * failed).
 */
int app_train_close_sinks(app_sink_t *json, app_sink_t *csv, int failed, int code);

#endif /* APP_TRAIN_OUT_H */
