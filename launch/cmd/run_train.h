/* The training step of the default run.  Private to launch/. */
#ifndef APP_CMD_RUN_TRAIN_H
#define APP_CMD_RUN_TRAIN_H

#include "job.h"
#include "json.h"

#include <stdio.h>

/*
 * The default run's last part: one training step of a small MLP on every chip of
 * the job (mesh data x model, model = the last torus axis), checked against the
 * same step on one chip computed by chip 0, with its cost split.  Prints on
 * 'txt' (chip 0) and, when 'json' is not NULL (chip 0), writes the member
 * "train": {...} into the run's JSON object.
 * Collective over the job.  Returns 0 when the check passed.
 */
int app_train_default_step(app_job_t *job, FILE *txt, app_json_t *json);

#endif /* APP_CMD_RUN_TRAIN_H */
