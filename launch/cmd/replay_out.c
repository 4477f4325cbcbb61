/*
 * What tpuemu replay prints and writes: the text report (step, split, the
 * collectives and the top ops), the real run's table under mpirun, the JSON
 * document, the CSV rows, and the step on the trace and the heatmap.
 */
#include "replay_out.h"

#include "alloc.h"
#include "csv.h"
#include "faults.h"
#include "progress.h"
#include "replay_source.h"
#include "units.h"

#include <stdlib.h>
#include <string.h>

/* Rows sorted by total time, descending. */
typedef struct by_total {
    double total;
    int index;
} by_total_t;

static int by_total_desc(const void *a, const void *b)
{
    double x = ((const by_total_t *)a)->total, y = ((const by_total_t *)b)->total;
    int i = ((const by_total_t *)a)->index, j = ((const by_total_t *)b)->index;

    return x != y ? (x < y) - (x > y) : (i > j) - (i < j);
}

/* 'order[k]' = the row of rank k, for 'n' rows whose totals are 'total[i]'. */
int *app_replay_rank_rows(int n, const double *total)
{
    by_total_t *t = tpu__malloc(sizeof(*t) * (size_t)(n + 1));
    int *order = tpu__malloc(sizeof(int) * (size_t)(n + 1)), i;

    if (t == NULL || order == NULL) {
        tpu__free(t);
        tpu__free(order);
        return NULL;
    }
    for (i = 0; i < n; i++) {
        t[i].total = total[i];
        t[i].index = i;
    }
    qsort(t, (size_t)n, sizeof(*t), by_total_desc);
    for (i = 0; i < n; i++) {
        order[i] = t[i].index;
    }
    tpu__free(t);
    return order;
}

/* The JSON document of the replay ('ms': the real run under mpirun, or NULL). */
void app_replay_write_json(app_json_t *j, const tpu_pod_t *pod, const char *path, int index,
                           const tpu_hlo_module_t *mod, const tpu_replay_report_t *r, const int *ci,
                           const int *oi, const app_replay_measured_t *ms, int by_source)
{
    int i;

    app_json_document(j, "replay");
    app_json_kstr(j, "file", path);
    app_json_kstr(j, "module", mod->name);
    app_json_kint(j, "module_index", index + 1);
    app_json_kint(j, "devices", r->devices);
    app_pod_json_header(j, pod);
    app_json_kfixed(j, "step_us", r->step_us, 6);
    app_json_kfixed(j, "compute_us", r->compute_us, 6);
    app_json_kfixed(j, "comm_us", r->comm_us, 6);
    app_json_kfixed(j, "exposed_comm_us", r->exposed_comm_us, 6);
    app_json_kfixed(j, "hbm_traffic_bytes", r->hbm_bytes, 0);
    app_json_kfixed(j, "flops", r->flops, 0);
    app_json_kint(j, "custom_calls", r->custom_calls);
    app_json_kint(j, "unknown_opcodes", r->unknown_opcodes);
    app_json_kint(j, "unsupported_collectives", r->unsupported);
    app_json_kint(j, "executions", (long long)r->nseq);
    app_json_kfixed(j, "scheduled_step_us", r->scheduled_step_us, 6);
    app_json_kfixed(j, "scheduled_exposed_comm_us", r->scheduled_exposed_comm_us, 6);
    app_json_kfixed(j, "hbm_peak_bytes", r->hbm_peak_bytes, 0);
    app_json_kfixed(j, "hbm_capacity_bytes", r->hbm_capacity_bytes, 0);
    app_json_kbool(j, "hbm_fits", !r->hbm_over);
    app_json_kstr(j, "hbm_peak_at", r->hbm_peak_at ? r->hbm_peak_at : "");
    app_json_karray(j, "hbm_peak_buffers");
    for (i = 0; i < r->nbuffers; i++) {
        app_json_object(j);
        app_json_kstr(j, "name", r->buffers[i].name);
        app_json_kstr(j, "shape", r->buffers[i].shape);
        app_json_kuint(j, "bytes", (unsigned long long)r->buffers[i].bytes);
        app_json_kstr(j, "op_name", r->buffers[i].source ? r->buffers[i].source : "");
        app_json_object_end(j);
    }
    app_json_array_end(j);
    app_json_kstr(j, "backend", r->backend ? r->backend : "unknown");
    app_json_kstr(j, "backend_evidence", r->backend_why);
    app_json_kfixed(j, "mfu", r->mfu, 6);
    app_json_karray(j, "loops");
    for (i = 0; i < r->nloops; i++) {
        app_json_object(j);
        app_json_kstr(j, "name", r->loops[i].name);
        app_json_kint(j, "line", r->loops[i].line);
        app_json_kint(j, "trip_count", (long long)r->loops[i].trips);
        app_json_kbool(j, "trip_count_known", r->loops[i].known);
        app_json_kstr(j, "how", r->loops[i].how);
        app_json_object_end(j);
    }
    app_json_array_end(j);
    if (by_source > 0) {
        app_replay_by_source_json(j, r, by_source);
    }
    app_json_karray(j, "collectives");
    for (i = 0; i < r->ncolls; i++) {
        const tpu_replay_coll_t *c = &r->colls[ci[i]];

        if (c->executions == 0) {
            continue;
        }
        app_json_object(j);
        app_json_kstr(j, "name", c->name);
        app_json_kstr(j, "opcode", c->opcode);
        app_json_kstr(j, "collective", tpu_coll_name(c->desc.kind));
        app_json_kstr(j, "groups", c->groups);
        app_json_kint(j, "group_count", c->ngroups);
        app_json_kint(j, "group_size", c->group_size);
        app_json_kuint(j, "bytes", (unsigned long long)c->bytes);
        app_json_kuint(j, "hlo_bytes", (unsigned long long)c->hlo_bytes);
        app_json_kint(j, "executions", (long long)c->executions);
        app_json_kbool(j, "async", c->async);
        app_json_kbool(j, "supported", c->supported);
        app_json_kfixed(j, "modeled_us", c->modeled_us, 6);
        app_json_kfixed(j, "total_us", c->modeled_us * (double)c->executions, 6);
        app_json_kfixed(j, "exposed_us", c->exposed_us, 6);
        app_json_kstr(j, "axes", c->axes);
        app_json_kstr(j, "algorithm", c->algorithm);
        app_json_kstr(j, "note", c->note);
        if (c->source != NULL) {
            app_json_kstr(j, "op_name", c->source);
        }
        if (ms != NULL) {
            app_json_kint(j, "runs", (long long)ms->runs[ci[i]]);
            app_json_kfixed(j, "measured_us", ms->measured_us[ci[i]], 3);
            app_json_kint(j, "wrong", ms->wrong[ci[i]]);
        }
        app_json_kint(j, "line", c->line);
        app_json_object_end(j);
    }
    app_json_array_end(j);
    app_json_karray(j, "compute");
    for (i = 0; i < r->nops; i++) {
        const tpu_replay_op_t *op = &r->ops[oi[i]];

        if (op->executions == 0) {
            continue;
        }
        app_json_object(j);
        app_json_kstr(j, "name", op->name);
        app_json_kstr(j, "opcode", op->opcode);
        app_json_kfixed(j, "flops", op->flops, 0);
        app_json_kfixed(j, "bytes", op->bytes, 0);
        app_json_kint(j, "executions", (long long)op->executions);
        app_json_kfixed(j, "modeled_us", op->modeled_us, 6);
        app_json_kfixed(j, "total_us", op->modeled_us * (double)op->executions, 6);
        app_json_kstr(j, "bound", op->custom ? "given" : op->compute_bound ? "compute" : "memory");
        app_json_kbool(j, "custom_call", op->custom);
        if (op->source != NULL) {
            app_json_kstr(j, "op_name", op->source);
        }
        app_json_kint(j, "line", op->line);
        app_json_object_end(j);
    }
    app_json_array_end(j);
    if (ms != NULL) {
        app_json_kobject(j, "mpi");
        app_json_kint(j, "executions", (long long)ms->executions);
        app_json_kint(j, "skipped", (long long)ms->skipped);
        app_json_kint(j, "wrong", ms->total_wrong);
        app_json_kint(j, "modeled_mismatches", ms->model_mismatches);
        app_json_object_end(j);
    }
    app_json_karray(j, "warnings");
    for (i = 0; i < r->nwarnings; i++) {
        app_json_str(j, r->warnings[i]);
    }
    app_json_array_end(j);
    app_json_object_end(j);
}

/*
 * --csv: one row per collective (slowest first), then one per op; the columns
 * that do not apply to a row are empty (measured_us, runs, wrong: under mpirun).
 */
void app_replay_write_csv(FILE *f, const tpu_pod_t *pod, const tpu_replay_report_t *r,
                          const int *ci, const int *oi, const app_replay_measured_t *ms)
{
    static const char *const cols[] = {
        "row",   "name",  "opcode",      "collective", "axes",     "groups",     "group_size",
        "bytes", "flops", "executions",  "modeled_us", "total_us", "exposed_us", "algorithm",
        "bound", "line",  "measured_us", "runs",       "wrong"};
    app_csv_t c;
    int i;

    app_csv_init(&c, f);
    app_csv_pod_header(&c, cols, (int)(sizeof(cols) / sizeof(cols[0])));
    for (i = 0; i < r->ncolls; i++) {
        const tpu_replay_coll_t *x = &r->colls[ci[i]];

        if (x->executions == 0) {
            continue;
        }
        app_csv_pod(&c, pod);
        app_csv_str(&c, "collective");
        app_csv_str(&c, x->name);
        app_csv_str(&c, x->opcode);
        app_csv_str(&c, tpu_coll_name(x->desc.kind));
        app_csv_str(&c, x->axes);
        app_csv_str(&c, x->groups);
        app_csv_int(&c, x->group_size);
        app_csv_uint(&c, (unsigned long long)x->bytes);
        app_csv_empty(&c);
        app_csv_int(&c, (long long)x->executions);
        app_csv_fixed(&c, x->modeled_us, 6);
        app_csv_fixed(&c, x->modeled_us * (double)x->executions, 6);
        app_csv_fixed(&c, x->exposed_us, 6);
        app_csv_str(&c, x->supported ? x->algorithm : "");
        app_csv_empty(&c);
        app_csv_int(&c, x->line);
        if (ms != NULL) {
            app_csv_fixed(&c, ms->measured_us[ci[i]], 3);
            app_csv_int(&c, (long long)ms->runs[ci[i]]);
            app_csv_int(&c, ms->wrong[ci[i]]);
        } else {
            app_csv_empty(&c);
            app_csv_empty(&c);
            app_csv_empty(&c);
        }
        app_csv_end_row(&c);
    }
    for (i = 0; i < r->nops; i++) {
        const tpu_replay_op_t *op = &r->ops[oi[i]];

        if (op->executions == 0) {
            continue;
        }
        app_csv_pod(&c, pod);
        app_csv_str(&c, "op");
        app_csv_str(&c, op->name);
        app_csv_str(&c, op->opcode);
        app_csv_empty(&c);
        app_csv_empty(&c);
        app_csv_empty(&c);
        app_csv_empty(&c);
        app_csv_fixed(&c, op->bytes, 0);
        app_csv_fixed(&c, op->flops, 0);
        app_csv_int(&c, (long long)op->executions);
        app_csv_fixed(&c, op->modeled_us, 6);
        app_csv_fixed(&c, op->modeled_us * (double)op->executions, 6);
        app_csv_empty(&c);
        app_csv_empty(&c);
        app_csv_str(&c, op->custom ? "given" : op->compute_bound ? "compute" : "memory");
        app_csv_int(&c, op->line);
        app_csv_empty(&c);
        app_csv_empty(&c);
        app_csv_empty(&c);
        app_csv_end_row(&c);
    }
}

/* Bytes up to TiB, one decimal. */
static const char *human_bytes(double b, char *buf, size_t size)
{
    static const int decimals[] = {0, 1, 1, 1, 1};

    app_units_bytes(b, 4, decimals, buf, size);
    return buf;
}

void app_replay_print_text(FILE *out, const tpu_pod_t *pod, const char *path, int index,
                           int nmodules, const tpu_hlo_module_t *mod, const tpu_replay_report_t *r,
                           const int *ci, const int *oi, int top)
{
    char b1[32], b2[32];
    int i, shown = 0;
    double hidden = r->comm_us > 0 ? 100 * (1 - r->exposed_comm_us / r->comm_us) : 0;

    hidden = hidden < 0.05 ? 0 : hidden;

    fprintf(out, "module     %s (%s, module %d of %d): %d device%s, %d computation%s%s\n",
            mod->name[0] ? mod->name : "(no header)", path, index + 1, nmodules, r->devices,
            r->devices == 1 ? "" : "s", mod->ncomps, mod->ncomps == 1 ? "" : "s",
            mod->is_scheduled ? ", scheduled" : "");
    fprintf(out, "pod        %s %s (wrap %s), %d slice%s, %d chips\n", tpu_pod_chip(pod)->name,
            tpu_pod_shape(pod), tpu_pod_wrap(pod), tpu_pod_topo(pod)->slices,
            tpu_pod_topo(pod)->slices > 1 ? "s" : "", tpu_pod_topo(pod)->nchips);
    app_faults_print(out, pod, "fault      ");
    fprintf(out, "step       %12.3f us   critical path of one step\n", r->step_us);
    fprintf(out, "compute    %12.3f us   %.3g GFLOP, HBM traffic %s\n", r->compute_us,
            r->flops / 1e9, human_bytes(r->hbm_bytes, b1, sizeof(b1)));
    fprintf(out, "comm       %12.3f us   %d collectives\n", r->comm_us, r->ncolls);
    fprintf(out, "exposed    %12.3f us   %.0f%% of the communication hidden behind compute\n",
            r->exposed_comm_us, hidden);
    fprintf(out,
            "scheduled  %12.3f us   latency-hiding estimate (collectives async, each from its "
            "operands to its first user): exposed %.3f us\n",
            r->scheduled_step_us, r->scheduled_exposed_comm_us);
    fprintf(out, "hbm peak   %12s      %s: of %s per chip (%.0f%%), at '%s'\n",
            human_bytes(r->hbm_peak_bytes, b1, sizeof(b1)),
            r->hbm_over ? "DOES NOT FIT (RESOURCE_EXHAUSTED)" : "fits",
            human_bytes(r->hbm_capacity_bytes, b2, sizeof(b2)),
            r->hbm_capacity_bytes > 0 ? 100 * r->hbm_peak_bytes / r->hbm_capacity_bytes : 0,
            r->hbm_peak_at ? r->hbm_peak_at : "-");
    fprintf(out, "mfu        %11.2f %%    model FLOPs / (step x chip peak)\n", 100 * r->mfu);
    fprintf(out, "backend    %s (%s)\n", r->backend ? r->backend : "unknown", r->backend_why);
    for (i = 0; i < r->nloops; i++) {
        fprintf(out, "%-10s while '%s' (line %d): %lld trip%s, %s%s\n", i == 0 ? "loops" : "",
                r->loops[i].name, r->loops[i].line, (long long)r->loops[i].trips,
                r->loops[i].trips == 1 ? "" : "s",
                r->loops[i].known ? "" : "UNKNOWN, counted once: ", r->loops[i].how);
    }
    if (r->ncolls > 0) {
        double kt[TPU_COLL_COUNT] = {0};
        int64_t kn[TPU_COLL_COUNT] = {0};
        int k, first = 1;

        for (i = 0; i < r->ncolls; i++) {
            kt[r->colls[i].desc.kind] += r->colls[i].modeled_us * (double)r->colls[i].executions;
            kn[r->colls[i].desc.kind] += r->colls[i].executions;
        }
        fprintf(out, "by kind   ");
        for (k = 0; k < TPU_COLL_COUNT; k++) {
            if (kn[k] > 0) {
                fprintf(out, "%s %s x%lld %.3f us", first ? "" : ";", tpu_coll_name(k),
                        (long long)kn[k], kt[k]);
                first = 0;
            }
        }
        fprintf(out, "\n");
        fprintf(out, "\ncollectives (slowest first)\n");
        fprintf(out, "  %-24s %-14s %-6s %5s %10s %6s %12s %12s %12s  %s\n", "name", "kind", "axes",
                "size", "bytes", "exec", "modeled_us", "total_us", "exposed_us",
                "algorithm / groups");
        for (i = 0; i < r->ncolls; i++) {
            const tpu_replay_coll_t *c = &r->colls[ci[i]];

            if (c->executions == 0) {
                continue;
            }
            if (shown == top) {
                fprintf(out, "  ... %d more (--top N, or --json for every row)\n", r->ncolls - i);
                break;
            }
            shown++;
            fprintf(out,
                    "  %-24.24s %-14s %-6s %5d %10s %6lld %12.3f %12.3f %12.3f  %s%s%s  %.60s\n",
                    c->name, tpu_coll_name(c->desc.kind), c->supported ? c->axes : "-",
                    c->group_size, human_bytes((double)c->bytes, b1, sizeof(b1)),
                    (long long)c->executions, c->modeled_us, c->modeled_us * (double)c->executions,
                    c->exposed_us, c->supported ? c->algorithm : "NOT TIMED",
                    c->note[0] ? ": " : "", c->note, c->groups);
        }
    }
    shown = 0;
    if (r->nops > 0 && top > 0) {
        fprintf(out, "\nops (top %d of %d by total time)\n", top < r->nops ? top : r->nops,
                r->nops);
        fprintf(out, "  %-28s %-14s %12s %10s %6s %12s %12s  %s\n", "name", "opcode", "flops",
                "bytes", "exec", "modeled_us", "total_us", "bound");
        for (i = 0; i < r->nops && shown < top; i++) {
            const tpu_replay_op_t *op = &r->ops[oi[i]];

            if (op->executions == 0) {
                continue;
            }
            fprintf(out, "  %-28.28s %-14.14s %12.4g %10s %6lld %12.3f %12.3f  %s\n", op->name,
                    op->opcode, op->flops, human_bytes(op->bytes, b1, sizeof(b1)),
                    (long long)op->executions, op->modeled_us,
                    op->modeled_us * (double)op->executions,
                    op->custom          ? "given"
                    : op->compute_bound ? "compute"
                                        : "memory");
            shown++;
        }
    }
    if (r->nbuffers > 0) {
        fprintf(out, "\nlargest buffers live at the HBM peak\n");
        fprintf(out, "  %-28s %-24s %10s  %s\n", "name", "shape", "bytes", "op_name");
        for (i = 0; i < r->nbuffers; i++) {
            fprintf(out, "  %-28.28s %-24.24s %10s  %.70s\n", r->buffers[i].name,
                    r->buffers[i].shape, human_bytes((double)r->buffers[i].bytes, b1, sizeof(b1)),
                    r->buffers[i].source ? r->buffers[i].source : "-");
        }
    }
}

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
                                     tpu_err_t *err)
{
    tpu_coll_plan_t **plans = tpu__calloc((size_t)r->ncolls + 1, sizeof(*plans));
    tpu_status_t status = TPU_OK;
    app_progress_t progress;
    char name[256];
    int64_t k;
    int i, c;

    if (plans == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for the trace");
    }
    for (i = 0; i < r->ncolls && status == TPU_OK; i++) {
        tpu_groups_t groups;
        tpu_coll_desc_t desc;

        if (!r->colls[i].supported || r->colls[i].executions == 0) {
            continue;
        }
        tpu_replay_coll_desc(&r->colls[i], &groups, &desc);
        status = tpu_coll_plan_create(tpu_pod_topo(pod), tpu_pod_link(pod), &desc, &plans[i], err);
        if (status == TPU_OK) {
            /* The heatmap: the row's links, once per execution. */
            status = app_report_model_at(report, plans[i], NULL, 0, r->colls[i].modeled_us,
                                         (double)r->colls[i].executions, err);
        }
    }
    if (status == TPU_OK && !app_report_trace_done(report)) {
        snprintf(name, sizeof(name), "module %s", mod->name[0] ? mod->name : "(no header)");
        app_report_step(report, name, 0, r->step_us);
    }
    app_progress_init(&progress, !quiet, (long)r->ntimeline, txt);
    for (k = 0; k < r->ntimeline && status == TPU_OK && !app_report_trace_done(report); k++) {
        const tpu_replay_event_t *e = &r->timeline[k];
        double end = e->start_us + e->dur_us;

        /* Inside the module's slice, whatever the rounding of the loop's copies. */
        end = end < r->step_us ? end : r->step_us;
        if (k % 64 == 0) {
            app_progress_update(&progress, (long)k, "writing the trace");
        }
        if (!e->coll) {
            const tpu_replay_op_t *op = &r->ops[e->row];

            snprintf(name, sizeof(name), "%s (%s)", op->name, op->opcode);
            app_report_compute_op(report, name, e->start_us, end - e->start_us, op->flops,
                                  op->bytes,
                                  op->custom          ? "given"
                                  : op->compute_bound ? "compute"
                                                      : "memory");
        } else if (plans[e->row] != NULL) {
            const tpu_replay_coll_t *cl = &r->colls[e->row];

            snprintf(name, sizeof(name), "%s %s", tpu_coll_name(cl->desc.kind), cl->name);
            status = app_report_model_at(report, plans[e->row], name, e->start_us,
                                         end - e->start_us, 0, err);
        }
    }
    app_progress_end(&progress);
    if (status == TPU_OK && r->timeline_truncated && !quiet) {
        fprintf(stderr, "tpuemu: warning: the trace shows the first %d events of the step\n",
                TPU_REPLAY_MAX_TIMELINE);
    }
    for (c = 0; spans != NULL && c < tpu_pod_topo(pod)->nchips; c++) {
        for (k = 0; k < nspans && k < r->nseq; k++) {
            const double *sp = &spans[2 * ((size_t)c * (size_t)nspans + (size_t)k)];

            if (sp[0] >= 0) {
                app_report_measured(report, c, r->colls[r->seq[k]].name, sp[0], sp[1]);
            }
        }
    }
    app_report_advance(report, r->step_us);
    for (i = 0; i < r->ncolls; i++) {
        tpu_coll_plan_destroy(plans[i]);
    }
    tpu__free(plans);
    return status;
}

void app_replay_print_measured(FILE *out, const tpu_replay_report_t *r,
                               const app_replay_measured_t *ms, const int *ci, int nranks)
{
    int i;

    fprintf(out,
            "\nreal run over MPI (%d ranks): %lld executions with real bytes, %ld wrong elements, "
            "%lld not run%s\n",
            nranks, (long long)ms->executions, ms->total_wrong, (long long)ms->skipped,
            ms->model_mismatches ? ", MODELED TIME DIFFERS FROM THE REPLAY" : "");
    fprintf(out, "  %-24s %-14s %6s %12s %12s %8s\n", "name", "kind", "runs", "modeled_us",
            "measured_us", "#wrong");
    for (i = 0; i < r->ncolls; i++) {
        const tpu_replay_coll_t *c = &r->colls[ci[i]];

        if (c->executions == 0) {
            continue;
        }
        fprintf(out, "  %-24.24s %-14s %6lld %12.3f %12.3f %8ld\n", c->name,
                tpu_coll_name(c->desc.kind), (long long)ms->runs[ci[i]], c->modeled_us,
                ms->measured_us[ci[i]], ms->wrong[ci[i]]);
    }
}
