/* What tpuemu replay prints and writes.  Private to launch/. */
#ifndef APP_CMD_REPLAY_OUT_H
#define APP_CMD_REPLAY_OUT_H

#include "tpu/hlo.h"
#include "tpu/replay.h"

#include "json.h"
#include "replay_mpi.h"
#include "report.h"

#include <stdint.h>
#include <stdio.h>

/* 'order[k]' = the row of rank k, for 'n' rows whose totals are 'total[i]'. */
int *app_replay_rank_rows(int n, const double *total);

/* The JSON document of the replay ('ms': the real run under mpirun, or NULL). */
void app_replay_write_json(app_json_t *j, const tpu_pod_t *pod, const char *path, int index,
                           const tpu_hlo_module_t *mod, const tpu_replay_report_t *r, const int *ci,
                           const int *oi, const app_replay_measured_t *ms, int by_source);

/*
 * --csv: one row per collective (slowest first), then one per op; the columns
 * that do not apply to a row are empty (measured_us, runs, wrong: under mpirun).
 */
void app_replay_write_csv(FILE *f, const tpu_pod_t *pod, const tpu_replay_report_t *r,
                          const int *ci, const int *oi, const app_replay_measured_t *ms);

/* The text report: the module, the pod, the step and its split, the collectives and the top
 * 'top' ops ('ci', 'oi': their rows slowest first). */
void app_replay_print_text(FILE *out, const tpu_pod_t *pod, const char *path, int index,
                           int nmodules, const tpu_hlo_module_t *mod, const tpu_replay_report_t *r,
                           const int *ci, const int *oi, int top);

/*
 * --trace and --heatmap: the step's timeline (compute ops on every chip's
 * compute track under "module NAME", each collective execution at its start
 * with its steps), and every collective row's links counted once per execution.
 * 'spans' (--trace-measured under mpirun): nranks x nspans (start, duration) of
 * each rank's executions of the sequence.  Plans are made once per row.
 */
tpu_status_t app_replay_write_report(app_report_t *report, const tpu_pod_t *pod,
                                     const tpu_hlo_module_t *mod, const tpu_replay_report_t *r,
                                     const double *spans, int64_t nspans, FILE *txt, int quiet,
                                     tpu_err_t *err);

/* Under mpirun: the real run's executions, measured beside modeled. */
void app_replay_print_measured(FILE *out, const tpu_replay_report_t *r,
                               const app_replay_measured_t *ms, const int *ci, int nranks);

#endif /* APP_CMD_REPLAY_OUT_H */
