/*
 * The report of a transformer step (train --model transformer): the table of
 * its collectives, the step line, the HBM items, the JSON members, the CSV,
 * the trace and heatmap, from the step cost model (tpu/transformer_cost.h),
 * with a real run's collective times taken from its engine log.  Private to
 * launch/.
 */
#ifndef APP_TRAIN_XFMR_OUT_H
#define APP_TRAIN_XFMR_OUT_H

#include "tpu/transformer_cost.h"
#include "tpu/transformer_pod.h"

#include "json.h"
#include "report.h"
#include "train_plan.h"

#include <stdint.h>
#include <stdio.h>

/*
 * A real run's last step: each model row takes the modeled time and algorithm
 * of its calls in the run's log, and the schedule is walked again.  The log's
 * calls are checked against the model's rows (kind, mesh axes, bytes, count);
 * a difference is written into 'note' (len bytes; "" when they agree).
 */
void app_xfmr_from_log(tpu_xfmr_cost_t *c, const tpu_xfmr_pod_t *p, char *note, size_t len);
/* The collectives table, the step line and the HBM items. */
void app_xfmr_print(FILE *txt, const tpu_xfmr_cost_t *c, uint64_t capacity);
/* The step's members (step_us ... collectives) into the object being written. */
void app_xfmr_json(app_json_t *j, const tpu_xfmr_cost_t *c, uint64_t capacity);
/* Step 's' on the trace (its compute ops and collective calls) and the heatmap. */
tpu_status_t app_xfmr_trace(app_report_t *r, const tpu_xfmr_cost_t *c, int s, tpu_err_t *err);
/*
 * The CSV of the steps (the pod columns, step, loss, step_us, compute_us, comm_us, exposed_comm_us,
 * measured_us, input_us, input_wait_measured_us): 'losses', 'measured_us' and 'wait_us' NULL for
 * a model-only step; 'in' the modeled input pipeline.
 */
void app_xfmr_csv(FILE *f, const tpu_pod_t *pod, const tpu_xfmr_cost_t *c,
                  const app_xfmr_input_t *in, int steps, const double *losses,
                  const double *measured_us, const double *wait_us);
/*
 * A real run's input pipeline as measured ('wait_us' [steps], the loop's wait
 * for each batch) beside the model's 'in': the line, and the JSON members
 * "input" (the model's, with the planner's keys), step_input_wait_measured_us
 * and input_wait_measured_us (their mean).
 */
void app_xfmr_wait_print(FILE *txt, const app_xfmr_input_t *in, const double *wait_us, int steps,
                         double input_rate);
void app_xfmr_wait_json(app_json_t *j, const app_xfmr_input_t *in, const double *wait_us,
                        int steps);
/*
 * --trace-measured: step 's' of this process's chips waited for its batch and
 * ran as 'span' says (wait start, wait, step start, step; us on the run's
 * clock).  Under a job every rank's span is gathered to the root (every rank
 * calls); in one process every chip of the pod shows the process's.  'rep'
 * NULL off the root.
 */
void app_xfmr_trace_measured(app_report_t *rep, struct app_job *job, int nchips, int s,
                             const double span[4]);

#endif /* APP_TRAIN_XFMR_OUT_H */
