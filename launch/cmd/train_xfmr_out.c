/*
 * The report of a transformer step (see train_xfmr_out.h): the model's rows
 * with a real run's times, the table, the step line, the HBM items, the JSON,
 * the CSV and the trace.
 */
#include "train_xfmr_out.h"

#include "alloc.h"
#include "csv.h"
#include "faults.h"
#include "train_out.h"
#include "watch.h"

#include <string.h>

/* "psum", "pmax", "all-gather", "reduce-scatter". */
static const char *coll_name(const tpu_xfmr_cost_coll_t *r)
{
    return r->kind == TPU_COLL_PSUM && r->op == TPU_REDOP_MAX ? "pmax" : tpu_coll_name(r->kind);
}

/* The log's kind and reduction back to the engine's names. */
static void log_kind(const tpu_xfmr_coll_t *l, tpu_coll_kind_t *kind, tpu_redop_t *op)
{
    static const tpu_coll_kind_t kinds[] = {TPU_COLL_PSUM, TPU_COLL_ALL_GATHER,
                                            TPU_COLL_REDUCE_SCATTER};
    size_t i;

    *kind = TPU_COLL_COUNT;
    for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        if (strcmp(l->kind, tpu_coll_name(kinds[i])) == 0) {
            *kind = kinds[i];
        }
    }
    *op = strcmp(l->op, tpu_redop_name(TPU_REDOP_MAX)) == 0 ? TPU_REDOP_MAX : TPU_REDOP_SUM;
}

void app_xfmr_from_log(tpu_xfmr_cost_t *c, const tpu_xfmr_pod_t *p, char *note, size_t len)
{
    int64_t n = tpu_xfmr_pod_colls(p), k;
    int *seen = tpu__calloc((size_t)(2 * c->ncolls + 1), sizeof(int)), *want;
    int extra = 0, i;
    size_t at = 0;

    note[0] = '\0';
    if (seen == NULL) {
        snprintf(note, len, "no memory to compare the run's collectives with the model's");
        return;
    }
    want = seen + c->ncolls;
    for (k = 0; k < n; k++) {
        tpu_xfmr_coll_t l;
        tpu_coll_kind_t kind;
        tpu_redop_t op;
        int j;

        tpu_xfmr_pod_coll(p, k, &l);
        log_kind(&l, &kind, &op);
        j = tpu_xfmr_cost_find(c, l.hook, kind, op, l.axes, l.bytes);
        if (j < 0) {
            if (extra++ == 0) {
                at += (size_t)snprintf(note + at, len - at,
                                       "the run made %s %s over %s of %llu bytes, which the model "
                                       "has not; ",
                                       l.hook, l.kind, l.axes, (unsigned long long)l.bytes);
            }
            continue;
        }
        if (seen[j]++ == 0) {
            c->colls[j].modeled_us = l.modeled_us;
            snprintf(c->colls[j].algorithm, sizeof(c->colls[j].algorithm), "%s", l.algorithm);
        }
    }
    /* Rows told apart by the schedule alone (fsdp's first gathers) are one key of the log. */
    for (i = 0; i < c->ncolls; i++) {
        tpu_xfmr_cost_coll_t *r = &c->colls[i];
        int f = tpu_xfmr_cost_find(c, r->what, r->kind, r->op, r->mesh_axis, r->bytes);

        want[f] += r->count;
        if (f != i) {
            r->modeled_us = c->colls[f].modeled_us;
            memcpy(r->algorithm, c->colls[f].algorithm, sizeof(r->algorithm));
        }
    }
    for (i = 0; i < c->ncolls && at < len; i++) {
        const tpu_xfmr_cost_coll_t *r = &c->colls[i];

        if (want[i] != seen[i] &&
            tpu_xfmr_cost_find(c, r->what, r->kind, r->op, r->mesh_axis, r->bytes) == i) {
            at += (size_t)snprintf(note + at, len - at,
                                   "%s %s over %s: the run made %d calls, the model %d; ", r->what,
                                   coll_name(r), r->mesh_axis, seen[i], want[i]);
        }
    }
    if (extra > 1 && at < len) {
        snprintf(note + at, len - at, "%d calls in all that the model has not", extra);
    }
    tpu__free(seen);
    tpu_xfmr_cost_schedule(c);
}

void app_xfmr_print(FILE *txt, const tpu_xfmr_cost_t *c, uint64_t capacity)
{
    char peak[32], cap[32], b[32];
    int k;

    fprintf(txt, "\ncollectives of one step (every step the same):\n");
    if (c->ncolls == 0) {
        fprintf(txt, "  none (every mesh axis has size 1)\n");
    } else {
        fprintf(txt, "  %-10s %-14s %-16s %-16s %5s %6s %11s %5s %11s %11s %-10s %s\n", "what",
                "collective", "mesh axis", "torus", "group", "groups", "bytes", "count",
                "modeled_us", "total_us", "overlap", "algorithm");
    }
    for (k = 0; k < c->ncolls; k++) {
        const tpu_xfmr_cost_coll_t *r = &c->colls[k];

        app_train_fmt_bytes((double)r->bytes, b, sizeof(b));
        fprintf(txt, "  %-10s %-14s %-16s %-16s %5d %6d %11s %5d %11.3f %11.3f %-10s %s\n", r->what,
                coll_name(r), r->mesh_axis, r->axes, r->group_size, r->groups, b, r->count,
                r->modeled_us, r->modeled_us * r->count, r->exposed ? "exposed" : "overlapped",
                r->algorithm);
    }
    for (k = 0; k < c->ncolls; k++) { /* each mesh axis' groups once */
        int i;

        for (i = 0; i < k && strcmp(c->colls[i].mesh_axis, c->colls[k].mesh_axis) != 0; i++) {
        }
        if (i == k) {
            fprintf(txt, "  groups over '%s' (chip ids): %s\n", c->colls[k].mesh_axis,
                    c->colls[k].group_ids);
        }
    }
    app_train_fmt_bytes((double)c->hbm_peak_bytes, peak, sizeof(peak));
    app_train_fmt_bytes((double)capacity, cap, sizeof(cap));
    fprintf(txt,
            "step (modeled): %.3f us = compute %.3f us (MXU %.3f, VPU %.3f) + exposed "
            "communication %.3f us\n"
            "  communication %.3f us in %lld calls; %.3f us of it hidden behind compute\n"
            "  HBM peak %s per chip of %s%s; MFU %.2f%% (%.4g model FLOPs per step)\n",
            c->step_us, c->compute_us, c->mxu_us, c->vpu_us, c->exposed_comm_us, c->comm_us,
            (long long)c->ncalls,
            c->comm_us - c->exposed_comm_us > 0 ? c->comm_us - c->exposed_comm_us : 0, peak, cap,
            c->hbm_peak_bytes > capacity ? " (does NOT fit)" : "", 100.0 * c->mfu, c->model_flops);
    fprintf(txt, "  HBM per chip:");
    for (k = 0; k < c->nitems; k++) {
        if (c->items[k].bytes == 0) {
            continue;
        }
        app_train_fmt_bytes((double)c->items[k].bytes, b, sizeof(b));
        fprintf(txt, "%s %s %s", k > 0 ? ";" : "", c->items[k].what, b);
    }
    fprintf(txt, "\n");
}

void app_xfmr_json(app_json_t *j, const tpu_xfmr_cost_t *c, uint64_t capacity)
{
    int k;

    app_train_json_num(j, "step_us", c->step_us);
    app_train_json_num(j, "compute_us", c->compute_us);
    app_train_json_num(j, "mxu_us", c->mxu_us);
    app_train_json_num(j, "vpu_us", c->vpu_us);
    app_train_json_num(j, "comm_us", c->comm_us);
    app_train_json_num(j, "exposed_comm_us", c->exposed_comm_us);
    app_json_kuint(j, "hbm_peak_bytes", (unsigned long long)c->hbm_peak_bytes);
    app_json_kuint(j, "hbm_capacity_bytes", (unsigned long long)capacity);
    app_json_karray(j, "hbm_items");
    for (k = 0; k < c->nitems; k++) {
        app_json_object(j);
        app_json_kstr(j, "name", c->items[k].what);
        app_json_kuint(j, "bytes", (unsigned long long)c->items[k].bytes);
        app_json_object_end(j);
    }
    app_json_array_end(j);
    app_train_json_num(j, "model_flops", c->model_flops);
    app_train_json_num(j, "chip_flops", c->chip_flops);
    app_train_json_num(j, "mfu", c->mfu);
    app_json_karray(j, "collectives");
    for (k = 0; k < c->ncolls; k++) {
        const tpu_xfmr_cost_coll_t *r = &c->colls[k];
        const app_train_coll_row_t row = {.name = r->what,
                                          .collective = coll_name(r),
                                          .mesh_axis = r->mesh_axis,
                                          .axes = r->axes,
                                          .groups = r->group_ids,
                                          .algorithm = r->algorithm,
                                          .group_size = r->group_size,
                                          .group_count = r->groups,
                                          .count = r->count,
                                          .bytes = r->bytes,
                                          .modeled_us = r->modeled_us,
                                          .overlapped = !r->exposed};

        app_train_json_coll(j, &row, APP_TRAIN_ROW_XFMR);
    }
    app_json_array_end(j);
}

tpu_status_t app_xfmr_trace(app_report_t *r, const tpu_xfmr_cost_t *c, int s, tpu_err_t *err)
{
    tpu_status_t status = TPU_OK;
    char name[96];
    int64_t k;

    if (!app_report_active(r)) {
        return TPU_OK;
    }
    snprintf(name, sizeof(name), "step %d", s);
    app_report_step(r, name, 0, c->step_us);
    for (k = 0; k < c->nops && !app_report_trace_done(r); k++) {
        const tpu_xfmr_cost_op_t *op = &c->ops[k];

        app_report_compute_op(r, op->what, op->start_us, op->us, op->flops, op->hbm_bytes,
                              tpu_roofline_bound_name(op->bound));
    }
    /* The heatmap: each row's links once, times its calls. */
    for (k = 0; k < c->ncolls && status == TPU_OK; k++) {
        const tpu_xfmr_cost_coll_t *row = &c->colls[k];

        if (row->plan != NULL) {
            status = app_report_model_at(r, row->plan, NULL, 0, row->modeled_us, row->count, err);
        }
    }
    for (k = 0; k < c->ncalls && status == TPU_OK && !app_report_trace_done(r); k++) {
        const tpu_xfmr_cost_call_t *call = &c->calls[k];
        const tpu_xfmr_cost_coll_t *row = &c->colls[call->coll];

        if (row->plan == NULL) {
            continue;
        }
        snprintf(name, sizeof(name), "%s %s %d (step %d)", coll_name(row), row->what, call->index,
                 s);
        status = app_report_model_at(r, row->plan, name, call->start_us, row->modeled_us, 0, err);
    }
    app_report_advance(r, c->step_us);
    return status;
}

/* v[s] with one decimal, or an empty cell when v is NULL. */
static void cell(app_csv_t *csv, const double *v, int s)
{
    if (v != NULL) {
        app_csv_fixed(csv, v[s], 1);
    } else {
        app_csv_empty(csv);
    }
}

void app_xfmr_csv(FILE *f, const tpu_pod_t *pod, const tpu_xfmr_cost_t *c,
                  const app_xfmr_input_t *in, int steps, const double *losses,
                  const double *measured_us, const double *wait_us)
{
    static const char *const cols[] = {"step",        "loss",     "step_us",
                                       "compute_us",  "comm_us",  "exposed_comm_us",
                                       "measured_us", "input_us", "input_wait_measured_us"};
    app_csv_t csv;
    int s;

    app_csv_init(&csv, f);
    app_csv_pod_header(&csv, cols, (int)(sizeof(cols) / sizeof(cols[0])));
    for (s = 0; s < steps; s++) {
        app_csv_pod(&csv, pod);
        app_csv_int(&csv, s);
        if (losses != NULL) {
            app_csv_fixed(&csv, losses[s], 9);
        } else {
            app_csv_empty(&csv);
        }
        app_csv_fixed(&csv, c->step_us, 6);
        app_csv_fixed(&csv, c->compute_us, 6);
        app_csv_fixed(&csv, c->comm_us, 6);
        app_csv_fixed(&csv, c->exposed_comm_us, 6);
        cell(&csv, measured_us, s);
        app_csv_fixed(&csv, in->input_us, 6);
        cell(&csv, wait_us, s);
        app_csv_end_row(&csv);
    }
}

void app_xfmr_wait_print(FILE *txt, const app_xfmr_input_t *in, const double *wait_us, int steps,
                         double input_rate)
{
    double sum = 0, top = 0;
    char rate[64] = "unlimited";
    int s;

    for (s = 0; s < steps; s++) {
        sum += wait_us[s];
        top = wait_us[s] > top ? wait_us[s] : top;
    }
    if (input_rate > 0) {
        snprintf(rate, sizeof(rate), "%g tokens/s per host", input_rate);
    }
    fprintf(txt,
            "  input (measured): %s, producer %s: the step waited %.1f us for its batch "
            "(mean of %d steps; the longest %.1f us), the model's input %.3f us%s\n",
            in->prefetch > 0 ? "a reader thread" : "read by the step (--prefetch 0)", rate,
            sum / steps, steps, top, in->input_us, in->input_bound ? " (input-bound)" : "");
}

void app_xfmr_wait_json(app_json_t *j, const app_xfmr_input_t *in, const double *wait_us, int steps)
{
    double sum = 0;
    int s;

    app_xfmr_input_json(j, in);
    app_json_karray(j, "step_input_wait_measured_us");
    for (s = 0; s < steps; s++) {
        app_json_fixed(j, wait_us[s], 1);
        sum += wait_us[s];
    }
    app_json_array_end(j);
    app_json_kfixed(j, "input_wait_measured_us", sum / steps, 1);
}

void app_xfmr_trace_measured(app_report_t *rep, struct app_job *job, int nchips, int s,
                             const double span[4])
{
    double *all = NULL;
    char name[48];
    int c;

    if (job != NULL) {
        all = rep != NULL ? tpu__calloc(4 * (size_t)nchips, sizeof(double)) : NULL;
        if (rep != NULL && all == NULL) {
            app_job_abort(job, "out of host memory for the measured trace");
        }
        app_job_gather(job, span, 4 * (int)sizeof(double), all, 0,
                       "the gather of the measured steps");
    }
    for (c = 0; rep != NULL && c < nchips; c++) {
        const double *v = all != NULL ? all + 4 * c : span;

        snprintf(name, sizeof(name), "input of step %d", s);
        app_report_measured_input(rep, c, name, v[0], v[1]);
        snprintf(name, sizeof(name), "step %d", s);
        app_report_measured_step(rep, c, name, v[2], v[3]);
    }
    tpu__free(all);
}
