/* tpuemu train, and the training step of the default run.  Private to launch/. */
#ifndef TPU_LAUNCH_CMD_TRAIN_H
#define TPU_LAUNCH_CMD_TRAIN_H

#include "job.h"

#include <stdio.h>

/* tpuemu train (argv[1] is "train"): parses its own flags and the pod flags. */
int tpu_cmd_train(int argc, char **argv);

/*
 * The default run's last part: one training step of a small MLP on every chip of
 * the job (mesh data x model, model = the last torus axis), checked against the
 * same step on one chip computed by chip 0, with its cost split.  Prints on
 * 'txt' (chip 0) and, when 'json' is not NULL, writes the members
 * "train": {...} (preceded by a comma) into the run's JSON object.
 * Collective over the job.  Returns 0 when the check passed.
 */
int tpu__train_default_step(tpu_job_t *job, FILE *txt, FILE *json);

#endif
