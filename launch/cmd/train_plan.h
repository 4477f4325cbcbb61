/*
 * The planner's side of train --model transformer --model-only (issue 25):
 * the workload flags into the model and plan (a preset first, the flags over
 * it), the compiled mode's constants, the HBM fit refused as XLA would, and
 * the input pipeline's share of the step.  Private to launch/.
 */
#ifndef APP_CMD_TRAIN_PLAN_H
#define APP_CMD_TRAIN_PLAN_H

#include "tpu/pod.h"
#include "tpu/transformer_cost.h"

#include "json.h"
#include "launch.h"

#include <stdio.h>

/* The input pipeline of a step (see train_plan.c). */
typedef struct app_xfmr_input {
    int hosts, chips_per_host, prefetch;
    double bytes_per_host; /* tokens and targets of the host's chips, one step */
    double pcie_us;        /* over the host's PCIe link */
    double produce_us;     /* the host's producer at --input-rate (0: unlimited) */
    double input_us;       /* the larger */
    double step_us;        /* the step with the pipeline */
    int hidden, input_bound;
} app_xfmr_input_t;

/* The first flag of the planner's workload given (--prefetch: other than its default), or
 * NULL; and whether one is (the real run honours none). */
const char *app_xfmr_plan_flag(const app_opts_t *o);
int app_xfmr_plan_given(const app_opts_t *o);
/* --preset, then the model flags over it, then the plan's flags; checked. */
tpu_status_t app_xfmr_plan_read(const app_opts_t *o, tpu_xfmr_config_t *m, tpu_xfmr_plan_t *p,
                                tpu_err_t *err);
/* The compiled mode (--calibrated with --model-only) and its constants for the pod's chip;
 * TPU_ERR_INVALID for an --mxu-fraction above the chip's peak. */
tpu_status_t app_xfmr_plan_pod(const app_opts_t *o, const tpu_pod_t *pod, tpu_xfmr_plan_t *p,
                               tpu_err_t *err);
/* TPU_ERR_RESOURCE_EXHAUSTED naming requested, capacity and the three largest items. */
tpu_status_t app_xfmr_fit_check(const tpu_xfmr_cost_t *c, uint64_t capacity, tpu_err_t *err);
/* The input pipeline of the step 'c' on 'pod'. */
void app_xfmr_input(const app_opts_t *o, const tpu_pod_t *pod, const tpu_xfmr_cost_t *c,
                    app_xfmr_input_t *in);
/* Its line, and its members ("plan", "input") into the object being written. */
void app_xfmr_input_print(FILE *txt, const app_xfmr_input_t *in);
void app_xfmr_plan_json(app_json_t *j, const tpu_xfmr_plan_t *p, const tpu_xfmr_cost_t *c,
                        const app_xfmr_input_t *in);
/* The modeled pipeline alone, the member "input" (the planner's and the real run's). */
void app_xfmr_input_json(app_json_t *j, const app_xfmr_input_t *in);

#endif /* APP_CMD_TRAIN_PLAN_H */
