/* tpuemu model: a collective modeled in one process, through the sim path. */
#include "model.h"

#include "tpu/calibration.h"

#include "clock.h"
#include "csv.h"
#include "desc.h"
#include "faults.h"
#include "jobenv.h"
#include "json.h"
#include "report.h"
#include "sink.h"
#include "units.h"

#include <stdio.h>
#include <string.h>

/* Does the link model carry the calibrated constants (--calibrated)? */
static int is_calibrated(const tpu_link_model_t *link)
{
    return link->launch > 0 || (link->ici_efficiency > 0 && link->ici_efficiency != 1);
}

/* Where the chip's calibrated link constants come from: its own measurements, or
 * those of the nearest measured generation, named. */
static void calibration_note(const tpu_chip_spec_t *chip, char *buf, size_t len)
{
    const tpu_chip_calibration_t *cal = tpu_chip_calibration(chip->name);

    if (strcmp(cal->links_from, chip->name) == 0) {
        snprintf(buf, len, "%s (efficiency %.3g, launch %.3g us)", cal->links_source,
                 cal->ici_efficiency, cal->launch * 1e6);
    } else {
        snprintf(buf, len, "no %s measurement: %s's profile (efficiency %.3g, launch %.3g us)",
                 chip->name, cal->links_from, cal->ici_efficiency, cal->launch * 1e6);
    }
}

/*
 * The modeled time in the default mode (mode_us[0]) and the calibrated one
 * (mode_us[1]) of the plan's schedule: the pod's own mode is 'res', the other is
 * the same schedule (the algorithm and depth chosen in the pod's mode) timed with
 * the other mode's constants, one walk (tpu_coll_plan_model_link()).
 */
static tpu_status_t both_modes(const tpu_pod_t *pod, const tpu_coll_plan_t *plan,
                               const tpu_coll_result_t *res, double mode_us[2], tpu_err_t *err)
{
    tpu_link_model_t link = *tpu_pod_link(pod);
    int mine = is_calibrated(&link);
    tpu_coll_result_t r;
    tpu_status_t status;

    mode_us[mine] = res->modeled_us;
    if (mine) {
        link.ici_efficiency = 1;
        link.launch = 0;
    } else {
        tpu_chip_link_calibrate(tpu_pod_chip(pod), &link);
    }
    status = tpu_coll_plan_model_link(plan, &link, &r, err);
    mode_us[!mine] = status == TPU_OK ? r.modeled_us : 0;
    return status;
}

/* The JSON document of one modeled collective. */
static tpu_status_t write_json(const char *path, const tpu_pod_t *pod, const tpu_coll_desc_t *desc,
                               const char *axes, const tpu_coll_result_t *res, double ideal,
                               const double mode_us[2], double wall_s, tpu_err_t *err)
{
    app_sink_t sink;
    app_json_t j;
    tpu_status_t status;
    int a;

    status = app_sink_open(&sink, path, err);
    if (status != TPU_OK) {
        return status;
    }
    app_json_init(&j, sink.f);
    app_json_document(&j, "model");
    app_pod_json_header(&j, pod);
    app_json_kstr(&j, "collective", tpu_coll_name(desc->kind));
    app_json_kstr(&j, "axes", axes);
    app_json_kuint(&j, "bytes", (unsigned long long)desc->bytes);
    app_json_kstr(&j, "dtype", tpu_dtype_name(desc->dtype));
    app_json_kfixed(&j, "modeled_us", res->modeled_us, 6);
    app_json_kfixed(&j, "formula_us", ideal, 6);
    /* Both modes: the default (formula) model and --calibrated (collectives/ideal.c). */
    app_json_kfixed(&j, "default_us", mode_us[0], 6);
    app_json_kfixed(&j, "calibrated_us", mode_us[1], 6);
    app_json_kstr(&j, "mode", is_calibrated(tpu_pod_link(pod)) ? "calibrated" : "default");
    if (is_calibrated(tpu_pod_link(pod))) {
        char note[256];

        calibration_note(tpu_pod_chip(pod), note, sizeof(note));
        app_json_kstr(&j, "calibration_source", note);
    }
    app_json_kstr(&j, "algorithm", res->algorithm);
    app_json_kint(&j, "flows", (long long)res->flows);
    app_json_kint(&j, "steps", res->steps);
    app_json_kobject(&j, "link_utilisation");
    for (a = 0; a <= TPU_AXIS_DCN; a++) {
        app_json_kfixed(&j, tpu_topo_axis_name(a), res->axis[a].utilisation, 4);
    }
    app_json_object_end(&j);
    app_json_kobject(&j, "busiest_link_bytes");
    for (a = 0; a <= TPU_AXIS_DCN; a++) {
        app_json_kfixed(&j, tpu_topo_axis_name(a), res->axis[a].bytes, 0);
    }
    app_json_object_end(&j);
    app_json_kfixed(&j, "model_wall_s", wall_s, 4);
    app_json_object_end(&j);
    status = app_json_end(&j, err);
    if (app_sink_close(&sink, err) != TPU_OK && status == TPU_OK) {
        status = err->status;
    }
    return status;
}

/* The columns of 'model --csv' (README, "Output: JSON and CSV"). */
static const char *const csv_cols[] = {"collective", "axes",       "bytes", "dtype", "algorithm",
                                       "modeled_us", "formula_us", "flows", "steps"};

/* The CSV table of one modeled collective: a header line and its row. */
static tpu_status_t write_csv(const char *path, const tpu_pod_t *pod, const tpu_coll_desc_t *desc,
                              const char *axes, const tpu_coll_result_t *res, double ideal,
                              tpu_err_t *err)
{
    app_sink_t sink;
    app_csv_t csv;
    tpu_status_t status;

    status = app_sink_open(&sink, path, err);
    if (status != TPU_OK) {
        return status;
    }
    app_csv_init(&csv, sink.f);
    app_csv_pod_header(&csv, csv_cols, (int)(sizeof(csv_cols) / sizeof(csv_cols[0])));
    app_csv_pod(&csv, pod);
    app_csv_str(&csv, tpu_coll_name(desc->kind));
    app_csv_str(&csv, axes);
    app_csv_uint(&csv, (unsigned long long)desc->bytes);
    app_csv_str(&csv, tpu_dtype_name(desc->dtype));
    app_csv_str(&csv, res->algorithm);
    app_csv_fixed(&csv, res->modeled_us, 6);
    app_csv_fixed(&csv, ideal, 6);
    app_csv_int(&csv, (long long)res->flows);
    app_csv_int(&csv, res->steps);
    app_csv_end_row(&csv);
    return app_sink_close(&sink, err);
}

int app_cmd_model(app_ctx_t *ctx)
{
    const app_opts_t *o = ctx->o;
    const tpu_pod_t *pod = ctx->pod;
    tpu_err_t err = {0};
    tpu_coll_desc_t desc;
    tpu_coll_plan_t *plan = NULL;
    tpu_coll_result_t res;
    FILE *txt = app_sink_text(o->json, o->csv);
    char axes[32];
    double ideal, t0, wall_s, mode_us[2];
    int a, code = APP_EXIT_OK;

    if (app_sink_check(o->json, o->csv, &err) != TPU_OK ||
        app_desc_setup(o, pod, o->bytes ? o->bytes : "1M", &desc, &err) != TPU_OK) {
        app_die_msg(err.msg);
        code = APP_EXIT_USAGE;
        goto cleanup;
    }
    t0 = tpu__now_s();
    if (tpu_coll_plan_create(tpu_pod_topo(pod), tpu_pod_link(pod), &desc, &plan, &err) != TPU_OK) {
        app_die_msg(err.msg);
        code = err.status == TPU_ERR_NO_MEMORY ? APP_EXIT_FAIL : APP_EXIT_USAGE;
        goto cleanup;
    }
    if (tpu_coll_plan_model(plan, &res, &err) != TPU_OK) {
        app_die_msg(err.msg);
        code = APP_EXIT_FAIL;
        goto cleanup;
    }
    wall_s = tpu__now_s() - t0;
    if (o->trace != NULL || o->heatmap != NULL) {
        app_report_t rep;
        char title[256], size[32], name[96];

        app_report_size((unsigned long long)desc.bytes, size, sizeof(size));
        snprintf(name, sizeof(name), "%s %s", tpu_coll_name(desc.kind), size);
        /* The axes as resolved (the default is every torus axis, not dcn). */
        if (tpu_coll_plan_desc(plan)->kind == TPU_COLL_P2P) {
            snprintf(axes, sizeof(axes), "%s", o->axes ? o->axes : "its pairs");
        } else {
            tpu_topo_axes_str(tpu_coll_plan_desc(plan)->axes, axes, sizeof(axes));
        }
        snprintf(title, sizeof(title), "tpuemu model: %s over %s on %s %s (wrap %s)", name, axes,
                 tpu_pod_chip(pod)->name, tpu_pod_shape(pod), tpu_pod_wrap(pod));
        if (app_report_open(&rep, o, pod, title, &err) != TPU_OK) {
            app_die_msg(err.msg);
            code = err.status == TPU_ERR_INVALID ? APP_EXIT_USAGE : APP_EXIT_FAIL;
            goto cleanup;
        }
        if (app_report_model(&rep, plan, name, res.modeled_us, &err) != TPU_OK) {
            app_report_close(&rep, NULL);
            app_die_msg(err.msg);
            code = APP_EXIT_FAIL;
            goto cleanup;
        }
        if (app_report_close(&rep, &err) != TPU_OK) {
            app_die_msg(err.msg);
            code = APP_EXIT_FAIL;
            goto cleanup;
        }
    }
    desc = *tpu_coll_plan_desc(plan); /* as resolved: p2p chips filled in */
    desc.axes = desc.kind == TPU_COLL_P2P ? 0 : desc.axes;
    tpu_topo_axes_str(desc.axes, axes, sizeof(axes));
    ideal = tpu_coll_ideal_us(tpu_pod_topo(pod), tpu_pod_link(pod), &desc);
    if ((double)desc.bytes > tpu_pod_chip(pod)->hbm_bytes && !o->quiet) {
        fprintf(stderr, "tpuemu: note: %llu bytes exceed the %s's HBM (%.0f GB); modeled anyway\n",
                (unsigned long long)desc.bytes, tpu_pod_chip(pod)->name,
                tpu_pod_chip(pod)->hbm_bytes / 1e9);
    }
    if (o->csv != NULL && write_csv(o->csv, pod, &desc, axes, &res, ideal, &err) != TPU_OK) {
        app_die_msg(err.msg);
        /* A target refused at open is bad input; a failed write is not. */
        code = err.status == TPU_ERR_INVALID ? APP_EXIT_USAGE : APP_EXIT_FAIL;
        goto cleanup;
    }
    if (o->json != NULL) {
        if (both_modes(pod, plan, &res, mode_us, &err) != TPU_OK ||
            write_json(o->json, pod, &desc, axes, &res, ideal, mode_us, wall_s, &err) != TPU_OK) {
            app_die_msg(err.msg);
            code = err.status == TPU_ERR_INVALID ? APP_EXIT_USAGE : APP_EXIT_FAIL;
        }
        goto cleanup;
    }
    fprintf(txt, "pod        %s %s (wrap %s), %d slice%s, %d chips\n", tpu_pod_chip(pod)->name,
            tpu_pod_shape(pod), tpu_pod_wrap(pod), tpu_pod_topo(pod)->slices,
            tpu_pod_topo(pod)->slices > 1 ? "s" : "", tpu_pod_topo(pod)->nchips);
    app_faults_print(txt, pod, "fault      ");
    fprintf(txt, "collective %s over %s, %llu bytes %s\n", tpu_coll_name(desc.kind),
            desc.kind == TPU_COLL_P2P ? "-" : axes, (unsigned long long)desc.bytes,
            tpu_dtype_name(desc.dtype));
    fprintf(txt, "algorithm  %s (%lld flows in %d steps)\n", res.algorithm, (long long)res.flows,
            res.steps);
    fprintf(txt, "modeled    %.3f us%s\n", res.modeled_us,
            is_calibrated(tpu_pod_link(pod)) ? " (calibrated)" : "");
    fprintf(txt, "formula    %.3f us (published formula, fidelity.md)\n", ideal);
    if (is_calibrated(tpu_pod_link(pod))) {
        char note[256];

        calibration_note(tpu_pod_chip(pod), note, sizeof(note));
        fprintf(txt, "calibrated %s\n", note);
    }
    fprintf(txt, "links      busiest link busy:");
    for (a = 0; a <= TPU_AXIS_DCN; a++) {
        if (res.axis[a].busy_us > 0) {
            fprintf(txt, " %s %.0f%%", tpu_topo_axis_name(a), 100 * res.axis[a].utilisation);
        }
    }
    fprintf(txt, "\n");
cleanup:
    tpu_coll_plan_destroy(plan);
    return code;
}
