/*
 * A training step in words and in JSON: the table of its collectives, the cost
 * split, and the JSON members of a step report (train, and the default run's step).
 */
#include "train_out.h"

#include "faults.h"
#include "jobenv.h"
#include "launch.h"
#include "units.h"

#include <math.h>
#include <string.h>

/* A number, or null when it is not finite (a diverged loss). */
void app_train_json_num(app_json_t *j, const char *key, double v)
{
    if (key != NULL) {
        app_json_key(j, key);
    }
    if (isfinite(v)) {
        app_json_sig(j, v, 9);
    } else {
        app_json_null(j);
    }
}

void app_train_fmt_bytes(double b, char *buf, size_t len)
{
    static const int decimals[] = {0, 1, 2, 2};

    app_units_bytes(b, 3, decimals, buf, len);
}

/* The collectives of a step, as a table. */
void app_train_print_colls(FILE *txt, const tpu_mlp_report_t *r)
{
    int k;

    if (r->ncoll == 0) {
        fprintf(txt, "  no collectives (every mesh axis has size 1)\n");
        return;
    }
    fprintf(txt, "  %-20s %-15s %-6s %-13s %5s %11s %11s %-8s %s\n", "collective", "kind", "axis",
            "torus", "group", "bytes", "modeled_us", "overlap", "algorithm");
    for (k = 0; k < r->ncoll; k++) {
        const tpu_mlp_coll_t *c = &r->coll[k];
        char b[32];

        app_train_fmt_bytes((double)c->bytes, b, sizeof(b));
        fprintf(txt, "  %-20s %-15s %-6s %-13s %5d %11s %11.3f %-8s %s\n", c->what,
                tpu_coll_name(c->kind), c->axis, c->layout, c->group, b, c->modeled_us,
                c->overlapped ? "async" : "exposed", c->algorithm);
    }
    for (k = 0; k < 2; k++) {
        const char *axis = k == 0 ? "data" : "model";
        int j;

        for (j = 0; j < r->ncoll; j++) {
            if (strcmp(r->coll[j].axis, axis) == 0) {
                fprintf(txt, "  groups over '%s' (chip ids): %s\n", axis, r->coll[j].groups);
                break;
            }
        }
    }
}

/* The cost split of a step, in words. */
void app_train_print_split(FILE *txt, const tpu_mlp_report_t *r, uint64_t capacity)
{
    char peak[32], cap[32];

    app_train_fmt_bytes((double)r->hbm_peak, peak, sizeof(peak));
    app_train_fmt_bytes((double)capacity, cap, sizeof(cap));
    fprintf(txt,
            "  modeled step %.3f us = compute %.3f us + exposed communication %.3f us\n"
            "  communication %.3f us in %d collectives (%.1f%% of the step if none overlapped); "
            "%.3f us hidden behind compute\n"
            "  HBM peak %s per chip of %s; MFU %.2f%% (%.4g model FLOPs per step)\n",
            r->step_us, r->compute_us, r->exposed_us, r->comm_us, r->ncoll,
            r->compute_us + r->comm_us > 0 ? 100.0 * r->comm_us / (r->compute_us + r->comm_us)
                                           : 0.0,
            r->comm_us - r->exposed_us, peak, cap, 100.0 * r->mfu, r->model_flops);
}

void app_train_json_coll(app_json_t *j, const app_train_coll_row_t *c, app_train_row_form_t form)
{
    int calls = form == APP_TRAIN_ROW_XFMR;

    app_json_object(j);
    app_json_kstr(j, "name", c->name);
    app_json_kstr(j, "collective", c->collective);
    app_json_kstr(j, "mesh_axis", c->mesh_axis);
    app_json_kstr(j, "axes", c->axes);
    if (!calls) {
        app_json_kstr(j, "groups", c->groups);
    }
    app_json_kint(j, "group_size", c->group_size);
    if (calls) {
        app_json_kstr(j, "groups", c->groups);
        app_json_kint(j, "group_count", c->group_count);
    }
    app_json_kuint(j, "bytes", (unsigned long long)c->bytes);
    if (calls) {
        app_json_kint(j, "count", c->count);
    }
    app_train_json_num(j, "modeled_us", c->modeled_us);
    if (calls) {
        app_train_json_num(j, "total_us", c->modeled_us * c->count);
        app_json_kbool(j, "exposed", !c->overlapped);
    } else {
        app_json_kbool(j, "overlapped", c->overlapped);
    }
    app_json_kstr(j, "algorithm", c->algorithm);
    app_json_object_end(j);
}

/* The cost members of a step report, into the object being written. */
void app_train_json_report(app_json_t *j, const tpu_mlp_report_t *r)
{
    int k;

    app_train_json_num(j, "step_us", r->step_us);
    app_train_json_num(j, "compute_us", r->compute_us);
    app_train_json_num(j, "comm_us", r->comm_us);
    app_train_json_num(j, "exposed_comm_us", r->exposed_us);
    app_train_json_num(j, "overlapped_comm_us", r->comm_us - r->exposed_us);
    app_json_kuint(j, "hbm_peak_bytes", (unsigned long long)r->hbm_peak);
    app_train_json_num(j, "mfu", r->mfu);
    app_train_json_num(j, "model_flops", r->model_flops);
    app_json_karray(j, "collectives");
    for (k = 0; k < r->ncoll; k++) {
        const tpu_mlp_coll_t *c = &r->coll[k];
        const app_train_coll_row_t row = {.name = c->what,
                                          .collective = tpu_coll_name(c->kind),
                                          .mesh_axis = c->axis,
                                          .axes = c->layout,
                                          .groups = c->groups,
                                          .algorithm = c->algorithm,
                                          .group_size = c->group,
                                          .bytes = c->bytes,
                                          .modeled_us = c->modeled_us,
                                          .overlapped = c->overlapped};

        app_train_json_coll(j, &row, APP_TRAIN_ROW_MLP);
    }
    app_json_array_end(j);
}

/* The transport line and the pod's faults (train's header, the MLP's and the transformer's). */
void app_train_print_transport(FILE *txt, const tpu_pod_t *pod, int model_only, int mpi)
{
    fprintf(txt, "transport: %s\n",
            model_only ? "none (--model-only: one step modeled, nothing computed)"
            : mpi      ? "mpi (one chip per rank, real bytes)"
                       : "loopback (every chip in this process, real bytes)");
    app_faults_print(txt, pod, "fault: ");
    fflush(txt);
}

int app_train_close_sinks(app_sink_t *json, app_sink_t *csv, int failed, int code)
{
    tpu_err_t err = {0};

    if (failed) {
        app_sink_discard(csv);
        app_sink_discard(json);
        return code;
    }
    if (app_sink_close(csv, &err) != TPU_OK || app_sink_close(json, &err) != TPU_OK) {
        app_sink_discard(json);
        app_die_msg(err.msg);
        return code == APP_EXIT_OK || code == APP_EXIT_FAIL ? APP_EXIT_OUTPUT : code;
    }
    return code;
}
