/*
 * The faults a pod carries (--fault, YAML faults:), as output: one text line
 * each, and the JSON 'faults' array.  Private to launch/.
 */
#ifndef TPU_LAUNCH_OUTPUT_FAULTS_H
#define TPU_LAUNCH_OUTPUT_FAULTS_H

#include "tpu/pod.h"

#include "json.h"

#include <stdio.h>

/* "LABEL link-down chip 1 (1) +x" for every fault of the pod; nothing without faults. */
void tpu_faults_print(FILE *out, const tpu_pod_t *pod, const char *label);

/*
 * "faults": [{"kind": "slow-link", "chip": 5, "coords": [1, 1], "dir": "+x",
 * "both": false, "factor": 0.5, "text": "..."}, ...]: every fault of the pod
 * (an empty array without faults); keys a kind does not take are left out.
 */
void tpu_faults_json(tpu_json_t *j, const tpu_pod_t *pod);

#endif /* TPU_LAUNCH_OUTPUT_FAULTS_H */
