/*
 * The reports a command can write besides its table and JSON: '--trace FILE'
 * (output/trace.c) and '--heatmap FILE.svg' (output/svg.c), both fed by the
 * library's timing walk through one observer.  A command calls
 * app_report_model() once for every collective it runs (the modeled walk of its
 * plan, which gives the same times as the run, bit for bit), and
 * app_report_measured() for the wall-clock slices.  Private to launch/.
 */
#ifndef APP_LAUNCH_REPORT_H
#define APP_LAUNCH_REPORT_H

#include "launch.h"
#include "sink.h"
#include "trace.h"

typedef struct app_report {
    const tpu_topo_t *topo;
    const tpu_faults_t *faults; /* the pod's, marked on the heatmap; NULL: none */
    app_trace_t *trace;         /* NULL: no --trace */
    const char *heatmap;        /* NULL: no --heatmap */
    app_sink_t heat_sink;       /* --heatmap, opened at app_report_open() */
    double *link_bytes;         /* per link, summed over the collectives */
    double *link_busy_s;        /* per link, its modeled busy seconds, summed likewise */
    double heat_s;              /* the modeled seconds of those collectives */
    double *nic_bytes;          /* per host: egress, ingress */
    int nhosts, cap_hosts;      /* hosts seen */
    int oom;
    double heat_times; /* the current collective counts this many times in the heatmap */
    int tracing;       /* the current collective goes to the trace */
    char title[256];
    tpu_coll_observer_t trace_obs; /* the trace's observer of the current collective */
} app_report_t;

/*
 * Open what the options ask for ('--trace', '--trace-measured', '--heatmap');
 * 'title' heads the trace and the picture.  A file that cannot be written is an
 * error here, before the work.  With nothing asked, does nothing.
 */
tpu_status_t app_report_open(app_report_t *r, const app_opts_t *o, const tpu_pod_t *pod,
                             const char *title, tpu_err_t *err);
/* 1 when a trace or a heatmap is being written. */
int app_report_active(const app_report_t *r);
/* Record the collective of 'plan' (named 'name', of 'modeled_us') on the timeline. */
tpu_status_t app_report_model(app_report_t *r, const tpu_coll_plan_t *plan, const char *name,
                              double modeled_us, tpu_err_t *err);
/*
 * The same for a collective that starts 'at_us' after the trace's position and
 * may overlap compute (train, replay): the position does not move
 * (app_report_advance() after the step).  The heatmap counts its links' bytes
 * 'heat_times' times (0: not at all; replay counts a row once, times its
 * executions).  Once the trace is truncated, only the heatmap is fed; 'name'
 * NULL: the heatmap only.
 */
tpu_status_t app_report_model_at(app_report_t *r, const tpu_coll_plan_t *plan, const char *name,
                                 double at_us, double modeled_us, double heat_times,
                                 tpu_err_t *err);
/*
 * A compute slice on every chip's compute track, 'at_us' after the trace's position, with
 * what the op does: its FLOPs, HBM bytes and bound ("compute", "memory", "given").
 */
void app_report_compute_op(app_report_t *r, const char *name, double at_us, double dur_us,
                           double flops, double bytes, const char *bound);
/* A step (train's step, replay's module) on every chip's compute track, around its ops. */
void app_report_step(app_report_t *r, const char *name, double at_us, double dur_us);
/* Move the trace's position on by 'us'. */
void app_report_advance(app_report_t *r, double us);
/* 1 when there is no trace or it is full (no more events will be written). */
int app_report_trace_done(const app_report_t *r);
/* A wall-clock slice of a chip (microseconds since the job's start), for --trace-measured. */
void app_report_measured(app_report_t *r, int chip, const char *name, double start_us,
                         double dur_us);
/* The same for a measured step (train). */
void app_report_measured_step(app_report_t *r, int chip, const char *name, double start_us,
                              double dur_us);
/* The same for a step's wait for its input batch (train --model transformer). */
void app_report_measured_input(app_report_t *r, int chip, const char *name, double start_us,
                               double dur_us);
/* Finish the trace and write the heatmap; the first write error.  'err' NULL: the
 * command failed; nothing more is written and the files are removed
 * (app_sink_discard), so no partial trace or empty heatmap is left behind. */
tpu_status_t app_report_close(app_report_t *r, tpu_err_t *err);

#endif /* APP_LAUNCH_REPORT_H */
