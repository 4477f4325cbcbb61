/*
 * The pod as output: the faults it carries (--fault, YAML faults:), one text
 * line each and the JSON 'faults' array, and the pod keys that open every
 * command's JSON document and every CSV row.  Private to launch/.
 */
#ifndef APP_LAUNCH_OUTPUT_FAULTS_H
#define APP_LAUNCH_OUTPUT_FAULTS_H

#include "tpu/pod.h"

#include "csv.h"
#include "json.h"

#include <stdio.h>

/* "LABEL link-down chip 1 (1) +x" for every fault of the pod; nothing without faults. */
void app_faults_print(FILE *out, const tpu_pod_t *pod, const char *label);

/*
 * "faults": [{"kind": "slow-link", "chip": 5, "coords": [1, 1], "dir": "+x",
 * "both": false, "factor": 0.5, "text": "..."}, ...]: every fault of the pod
 * (an empty array without faults); keys a kind does not take are left out.
 */
void app_faults_json(app_json_t *j, const tpu_pod_t *pod);

/*
 * The pod keys every JSON document carries, in this order, into the object 'j'
 * has open: "chip", "topology", "wrap", "slices", "chips", then "faults"
 * (app_faults_json).  One writer, so that run, bench, model, train and replay
 * describe the pod alike.
 */
void app_pod_json_header(app_json_t *j, const tpu_pod_t *pod);
/* A chip's "chip", "slice" and "coords" members, into the object being written. */
void app_chip_json_where(app_json_t *j, const tpu_pod_t *pod, int chip);

/* A CSV header: the pod columns "chip, topology, wrap, slices", then 'names'. */
void app_csv_pod_header(app_csv_t *c, const char *const *names, int n);

/* The pod cells that open every CSV row (as app_csv_pod_header names them). */
void app_csv_pod(app_csv_t *c, const tpu_pod_t *pod);

#endif /* APP_LAUNCH_OUTPUT_FAULTS_H */
