/*
 * tpuemu train: the seed's MLP (784-H-H-10) trained on the emulated pod,
 * sharded by a mesh data x model (include/tpu/mlp.h), with the modeled cost of
 * every step beside the measured wall time.
 *
 *   mpirun -n 16 tpuemu train --topology 4x4 --mesh data=4,model=4 --steps 10
 *   tpuemu train --topology 1x1 --steps 10             (one process, one chip)
 *   tpuemu train --topology 4x4 --mesh data=16         (no mpirun: every chip in
 *                                                        this process, loopback)
 *   tpuemu train --model-only --chip v5p --topology 16x20x28 \
 *                --mesh data=64,model=140 --hidden 16384 --batch 65536
 *
 * Under mpirun each rank is one chip and the collectives move real bytes over
 * MPI; without mpirun every chip runs in this process over the loopback
 * transport (real bytes too); --model-only computes nothing and models one
 * step through the collective plans and the chip's roofline (the numbers a
 * real run gives, bit for bit).
 *
 * Bad input (flags, mesh, divisibility, .npy files, HBM): one line on stderr
 * (from rank 0 only) and exit 2 on every rank.
 */
#include "train.h"

#include "tpu/hbm.h"
#include "tpu/mesh.h"
#include "tpu/mlp.h"
#include "tpu/npy.h"
#include "tpu/pod.h"

#include "alloc.h"
#include "ckpt.h"
#include "clock.h"
#include "csv.h"
#include "faults.h"
#include "jobenv.h"
#include "json.h"
#include "report.h"
#include "sink.h"
#include "train_out.h"
#include "train_plan.h"
#include "train_run.h"
#include "train_xfmr.h"
#include "watch.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NIN  TPU_MLP_IN
#define NOUT TPU_MLP_OUT

tpu_status_t app_train_check(const app_opts_t *o, tpu_err_t *err)
{
    int xfmr = o->model != NULL && strcmp(o->model, "transformer") == 0;

    if (o->model != NULL && !xfmr && strcmp(o->model, "mlp") != 0) {
        return tpu_err_set(err, TPU_ERR_INVALID, "--model must be mlp or transformer, got '%s'",
                           o->model);
    }
    if (xfmr) {
        return app_train_xfmr_check(o, err);
    }
    if (o->layers || o->d_model || o->heads || o->d_ff || o->vocab || o->seq) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "--%s is a flag of --model transformer, not of the MLP",
                           o->layers    ? "layers"
                           : o->d_model ? "d-model"
                           : o->heads   ? "heads"
                           : o->d_ff    ? "d-ff"
                           : o->vocab   ? "vocab"
                                        : "seq");
    }
    if (app_xfmr_plan_flag(o) != NULL) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "--%s applies to --model transformer only (the MLP has no planner "
                           "workload and no input pipeline)",
                           app_xfmr_plan_flag(o));
    }
    if (o->model_only && (o->data || o->labels || o->init || o->save)) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "--model-only runs without data: drop --data, --labels, --init and "
                           "--save");
    }
    if ((o->data == NULL) != (o->labels == NULL)) {
        return tpu_err_set(err, TPU_ERR_INVALID, "--data and --labels go together");
    }
    return TPU_OK;
}

/*
 * "data=4,tensor=4", "data=16", "fsdp=8", "dcn=2,data=8": the sizes of the
 * MLP's two axes, in the library's mesh grammar (tpu_mesh_parse).  The names
 * are the transformer's: 'tensor' (or its alias 'model') is the model axis;
 * 'fsdp' is the data axis with the parameters sharded over it (strategy fsdp,
 * '*fsdp_p' set); 'dcn' is the data axis's outer factor, across slices (it
 * must equal --slices).  The MLP shards parameters over the whole data axis,
 * so 'data' and 'fsdp' do not mix.
 */
static tpu_status_t parse_mesh(const char *text, int nchips, int nslices, int *data_p, int *model_p,
                               int *fsdp_p, tpu_err_t *err)
{
    char names[TPU_MESH_MAX_AXES][TPU_MESH_NAME_LEN];
    int sizes[TPU_MESH_MAX_AXES], naxes = 0, data = 0, fsdp = 0, model = 0, dcn = 0, i;
    tpu_err_t e = {0};

    *fsdp_p = 0;
    if (text == NULL) {
        *data_p = nchips;
        *model_p = 1;
        return TPU_OK;
    }
    if (tpu_mesh_parse(text, names, sizes, &naxes, &e) != TPU_OK) {
        return tpu_err_set(err, TPU_ERR_INVALID, "--mesh '%s': %s", text, e.msg);
    }
    for (i = 0; i < naxes; i++) {
        int *slot = strcmp(names[i], "data") == 0     ? &data
                    : strcmp(names[i], "fsdp") == 0   ? &fsdp
                    : strcmp(names[i], "dcn") == 0    ? &dcn
                    : strcmp(names[i], "tensor") == 0 ? &model
                    : strcmp(names[i], "model") == 0  ? &model
                                                      : NULL;

        if (slot == NULL || *slot != 0) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "--mesh '%s': axis '%s' is unknown or repeated (the MLP shards "
                               "over data or fsdp, tensor (alias model) and dcn)",
                               text, names[i]);
        }
        *slot = sizes[i];
    }
    if (data > 1 && fsdp > 1) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "--mesh '%s': the MLP shards its parameters over the whole data axis: "
                           "give data=%d or fsdp=%d, not both",
                           text, data * fsdp, data * fsdp);
    }
    if (dcn != 0 && dcn != nslices) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "--mesh '%s': dcn=%d must equal the slices (--slices %d)", text, dcn,
                           nslices);
    }
    *fsdp_p = fsdp > 0;
    *data_p = (data ? data : 1) * (fsdp ? fsdp : 1) * (dcn ? dcn : 1);
    *model_p = model ? model : 1;
    if ((int64_t)*data_p * *model_p != nchips) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "mesh %s has %lld positions, but the pod has %d chips: the sizes must "
                           "multiply to %d",
                           text, (long long)*data_p * *model_p, nchips, nchips);
    }
    return TPU_OK;
}

/* Read --data and --labels (every rank reads the files). */
/* The data is mapped, not read: each rank touches only the rows of its shard. */
static tpu_status_t load_data(const app_opts_t *a, tpu_npy_t *x, int32_t **y_p, int64_t *n_p,
                              tpu_err_t *err)
{
    int64_t shape[2] = {-1, NIN}, i;
    tpu_npy_t lab;
    tpu_status_t status;
    int32_t *y;

    status = tpu_npy_map(a->data, x, err);
    if (status == TPU_OK) {
        status = tpu_npy_check_f32(x, a->data, "the data", 2, shape, err);
    }
    if (status != TPU_OK) {
        goto err_x;
    }
    status = tpu_npy_read(a->labels, &lab, err);
    if (status != TPU_OK) {
        goto err_x;
    }
    if (lab.type == TPU_NPY_F32 || lab.ndim != 1 || lab.shape[0] != shape[0]) {
        status = tpu_err_set(err, TPU_ERR_INVALID,
                             "%s: the labels must be int32 or int64 of shape [%lld] (the rows of "
                             "%s), got %s of %d dimensions%s",
                             a->labels, (long long)shape[0], a->data, tpu_npy_type_name(lab.type),
                             lab.ndim, lab.ndim == 1 ? " with another length" : "");
        goto err_lab;
    }
    y = tpu__malloc((size_t)(lab.count > 0 ? lab.count : 1) * sizeof(int32_t));
    if (y == NULL) {
        status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "no memory for the labels");
        goto err_lab;
    }
    for (i = 0; i < lab.count; i++) {
        int64_t v = lab.type == TPU_NPY_I64 ? ((int64_t *)lab.data)[i] : ((int32_t *)lab.data)[i];

        if (v < 0 || v >= NOUT) {
            tpu__free(y);
            status = tpu_err_set(err, TPU_ERR_INVALID,
                                 "%s: label %lld at row %lld is outside the classes 0..%d",
                                 a->labels, (long long)v, (long long)i, NOUT - 1);
            goto err_lab;
        }
        y[i] = (int32_t)v;
    }
    tpu_npy_fini(&lab);
    *y_p = y;
    *n_p = shape[0];
    return TPU_OK;
err_lab:
    tpu_npy_fini(&lab);
err_x:
    tpu_npy_fini(x);
    return status;
}

static tpu_status_t load_init(const char *dir, int64_t H, float *init[TPU_MLP_NPARAMS],
                              tpu_err_t *err)
{
    char path[1024];
    int p;

    for (p = 0; p < TPU_MLP_NPARAMS; p++) {
        int64_t shape[2];
        int nd = tpu_mlp_param_shape(H, p, shape);
        tpu_status_t status;

        snprintf(path, sizeof(path), "%s/%s.npy", dir, tpu_mlp_param_name(p));
        status = tpu_npy_read_f32(path, tpu_mlp_param_name(p), nd, shape, &init[p], err);
        if (status != TPU_OK) {
            return status;
        }
    }
    return TPU_OK;
}

/* --save DIR: every parameter and losses.npy, whole or not at all (ckpt.h). */
static tpu_status_t save_all(const char *dir, int64_t H, float *const w[TPU_MLP_NPARAMS],
                             const float *losses, int steps, tpu_err_t *err)
{
    const char *names[TPU_MLP_NPARAMS + 1];
    app_ckpt_t ck;
    int64_t n = steps;
    tpu_status_t status;
    int p;

    for (p = 0; p < TPU_MLP_NPARAMS; p++) {
        names[p] = tpu_mlp_param_name(p);
    }
    names[TPU_MLP_NPARAMS] = "losses";
    status = app_ckpt_begin(&ck, dir, names, TPU_MLP_NPARAMS + 1, err);
    for (p = 0; p < TPU_MLP_NPARAMS && status == TPU_OK; p++) {
        int64_t shape[2];
        int nd = tpu_mlp_param_shape(H, p, shape);

        status = app_ckpt_write(&ck, p, nd, shape, w[p], err);
    }
    if (status == TPU_OK) {
        status = app_ckpt_write(&ck, TPU_MLP_NPARAMS, 1, &n, losses, err);
    }
    if (app_ckpt_finish(&ck, status == TPU_OK, err) != TPU_OK) {
        status = TPU_ERR_IO;
    }
    return status;
}

static int exit_code(tpu_status_t status)
{
    if (status == TPU_ERR_IO) {
        return APP_EXIT_OUTPUT; /* --save's files */
    }
    return status == TPU_ERR_INVALID || status == TPU_ERR_RESOURCE_EXHAUSTED ? APP_EXIT_USAGE
                                                                             : APP_EXIT_FAIL;
}


int app_cmd_train(app_ctx_t *ctx)
{
    app_opts_t *o = ctx->o;
    tpu_err_t err = {0};
    app_job_t *job = ctx->job;
    const tpu_pod_t *pod = ctx->pod;
    const tpu_topo_t *topo;
    const tpu_chip_spec_t *chip;
    app_sink_t sink = {NULL, NULL}, csv_sink = {NULL, NULL};
    app_json_t json_w, *json = NULL;
    app_report_t report;
    app_train_run_t r;
    float *init[TPU_MLP_NPARAMS] = {0};
    tpu_npy_t x = {0}; /* --data, mapped */
    int32_t *y = NULL;
    int64_t nrows = 0;
    int mpi = job != NULL, code = APP_EXIT_OK, p, data = 1, model = 1, fsdp = 0;
    FILE *txt;
    tpu_status_t status;
    double wall0 = tpu__now_s(), wall_sum = 0;
    int printer = -1; /* the rank that prints a failure all ranks agreed on */

    if (o->model != NULL && strcmp(o->model, "transformer") == 0) {
        return app_cmd_train_xfmr(ctx);
    }
    /* The MLP's defaults (the rows store none: the transformer's differ). */
    o->batch = o->batch > 0 ? o->batch : 256;
    o->hidden = o->hidden > 0 ? o->hidden : 1024;
    o->lr = o->lr >= 0 ? o->lr : 0.005;
    memset(&r, 0, sizeof(r));
    memset(&report, 0, sizeof(report));
    /* The pod: an MPI job (one chip per rank) or this process (the start-up built it). */
    r.where.comm = MPI_COMM_NULL;
    r.where.root = 1;
    if (mpi) {
        r.x = job->x;
        r.where.comm = job->comm;
        r.where.root = job->chip == 0;
        r.where.job = job;
    } else {
        r.where.root = app_jobenv_root(); /* --model-only under mpirun: rank 0 prints */
    }
    r.pod = pod;
    topo = tpu_pod_topo(pod);
    chip = tpu_pod_chip(pod);
    txt = app_sink_text(o->json, o->csv);
    r.steps = o->model_only ? 1 : o->steps;
    tpu_mlp_spec_init(&r.spec);
    r.spec.batch = o->batch;
    r.spec.hidden = o->hidden;
    r.spec.lr = o->lr;
    r.spec.seed = o->seed;
    r.spec.model_only = o->model_only;
    r.spec.pad_hidden = o->model_only;
    r.spec.timeout_s = o->timeout;
    if (mpi) {
        /* Heartbeats while a collective waits: the watchdog tells a chip that
         * waits on a stopped one from the stopped one. */
        r.spec.on_wait = app_job_on_wait;
        r.spec.on_wait_arg = job;
    }
    if (o->mesh == NULL && o->config != NULL) {
        /* The config file's mesh, when the flags give none (the file loaded fine
         * in the pod setup). */
        static app_config_t cfg;

        app_config_init(&cfg);
        if (app_config_load(o->config, &cfg, &err) == TPU_OK && cfg.mesh[0] != '\0') {
            o->mesh = cfg.mesh;
        }
    }
    status = parse_mesh(o->mesh, topo->nchips, topo->slices, &data, &model, &fsdp, &err);
    if (status == TPU_OK && o->precision != NULL) {
        if (strcmp(o->precision, "bf16") == 0 || strcmp(o->precision, "bfloat16") == 0) {
            r.spec.precision = TPU_MLP_BF16;
        } else if (strcmp(o->precision, "f32") == 0 || strcmp(o->precision, "float32") == 0) {
            r.spec.precision = TPU_MLP_F32;
        } else {
            status = tpu_err_set(&err, TPU_ERR_INVALID, "--dtype must be bf16 or f32, got '%s'",
                                 o->precision);
        }
    }
    if (status == TPU_OK && o->strategy != NULL) {
        status = tpu_mlp_strategy_parse(o->strategy, &r.spec.strategy, &err);
    }
    if (status == TPU_OK && fsdp) {
        if (r.spec.strategy != TPU_MLP_AUTO && r.spec.strategy != TPU_MLP_FSDP) {
            status =
                tpu_err_set(&err, TPU_ERR_INVALID, "--mesh '%s' names fsdp, but --strategy is %s",
                            o->mesh, o->strategy);
        }
        r.spec.strategy = TPU_MLP_FSDP;
    }
    r.spec.data = data;
    r.spec.model = model;
    if (status == TPU_OK && o->data != NULL) {
        status = load_data(o, &x, &y, &nrows, &err);
        r.spec.x = x.data;
        r.spec.y = y;
        r.spec.nrows = nrows;
    }
    if (status == TPU_OK && o->init != NULL) {
        status = load_init(o->init, o->hidden, init, &err);
        for (p = 0; p < TPU_MLP_NPARAMS; p++) {
            r.spec.init[p] = init[p];
        }
    }
    if (status == TPU_OK && !mpi && !o->model_only) {
        status = tpu_xport_loopback_create(topo->nchips, &r.x, &err);
    }
    if (status == TPU_OK) {
        status = app_sink_check(o->json, o->csv, &err);
    }
    if (status == TPU_OK && o->csv != NULL && r.where.root) {
        status = app_sink_open(&csv_sink, o->csv, &err);
    }
    if (status == TPU_OK && o->json != NULL && r.where.root) {
        status = app_sink_open(&sink, o->json, &err);
        if (status == TPU_OK) {
            app_json_init(&json_w, sink.f);
            json = &json_w;
        }
    }
    if (status == TPU_OK && o->model_only && o->trace_measured) {
        status = tpu_err_set(&err, TPU_ERR_INVALID,
                             "--trace-measured needs measured steps: drop it with --model-only");
    }
    if (status == TPU_OK && (o->trace != NULL || o->heatmap != NULL || o->trace_measured)) {
        /* Rank 0 writes them; the others only check what every rank can. */
        if (r.where.root) {
            char title[256];

            snprintf(title, sizeof(title),
                     "tpuemu train: MLP 784-%lld-%lld-10, mesh data=%d,model=%d, %d steps, on %d "
                     "chips of %s as %s (wrap %s)",
                     (long long)o->hidden, (long long)o->hidden, data, model, r.steps, topo->nchips,
                     chip->name, tpu_pod_shape(pod), tpu_pod_wrap(pod));
            status = app_report_open(&report, o, pod, title, &err);
            r.report = &report;
        } else if (o->trace_measured && o->trace == NULL) {
            status = tpu_err_set(&err, TPU_ERR_INVALID, "--trace-measured needs --trace FILE");
        }
        r.measured = o->trace_measured;
        r.t0 = wall0;
    }
    if (status == TPU_OK) {
        status = app_train_run_create(&r, &err);
    }
    printer = app_train_agree(&r.where, &status, mpi ? job->chip : 0, mpi ? job->nranks : 1);
    if (status != TPU_OK) {
        code = exit_code(status);
        goto out;
    }
    if (r.where.root) {
        fprintf(txt,
                "train: MLP 784-%lld-%lld-10 on %d chips of %s as %s, mesh data=%d,model=%d, "
                "global batch %lld, %s, lr %g, %s%s\n",
                (long long)o->hidden, (long long)o->hidden, topo->nchips, chip->name,
                tpu_pod_shape(pod), data, model, (long long)o->batch,
                r.spec.precision == TPU_MLP_BF16 ? "bf16 matmuls (f32 accumulation)" : "f32", o->lr,
                o->data ? "data " : "synthetic data", o->data ? o->data : "");
        app_train_print_transport(txt, pod, o->model_only, mpi);
    }
    status = app_train_run_steps(&r, o->save != NULL, txt, !o->quiet, &err);
    printer = app_train_agree(&r.where, &status, mpi ? job->chip : 0, mpi ? job->nranks : 1);
    if (status != TPU_OK) {
        code = exit_code(status);
        goto out;
    }
    if (r.where.root) {
        int s;
        tpu_mlp_report_t *L = &r.last;

        for (s = 0; s < r.steps; s++) {
            wall_sum += r.wall_us[s];
        }
        if (tpu_mlp_hidden(r.mlp) != o->hidden) {
            fprintf(txt,
                    "note: hidden %lld padded to %lld, a multiple of model=%d (as XLA pads "
                    "an uneven sharding)\n",
                    (long long)o->hidden, (long long)tpu_mlp_hidden(r.mlp), model);
        }
        fprintf(txt, "\nstrategy %s; every step costs the same on the model; step %d:\n",
                tpu_mlp_strategy_name(tpu_mlp_strategy(r.mlp)), r.steps - 1);
        app_train_print_colls(txt, L);
        app_train_print_split(txt, L, (uint64_t)chip->hbm_bytes);
        if (!o->model_only) {
            fprintf(txt,
                    "  loss %.6g -> %.6g over %d steps; measured %.1f us per step on this host "
                    "(modeled %.3f us on the pod)\n",
                    r.losses[0], r.losses[r.steps - 1], r.steps, wall_sum / r.steps, L->step_us);
            if (tpu_mlp_strategy(r.mlp) != TPU_MLP_FSDP) {
                fprintf(txt, "  replicas over 'data' bit-identical after every step: %s\n",
                        r.replicas_ok ? "yes" : "NO");
            }
        }
        fprintf(txt,
                "  (compute: roofline time of each matmul on the MXU and each elementwise pass "
                "on the VPU; communication: the link model; overlapped: the gradient collectives "
                "with the backward pass, fsdp's all-gathers one layer ahead)\n");
    }
    if (o->save != NULL && r.where.root) {
        status = save_all(o->save, o->hidden, r.w, r.losses, r.steps, &err);
        if (status != TPU_OK) {
            code = exit_code(status);
            goto out;
        }
        fprintf(txt, "saved the final weights and losses.npy in %s\n", o->save);
    }
    if (json != NULL) {
        int s;

        app_json_document(json, "train");
        app_pod_json_header(json, pod);
        app_json_kobject(json, "mesh");
        app_json_kint(json, "data", data);
        app_json_kint(json, "model", model);
        app_json_object_end(json);
        app_json_kstr(json, "strategy", tpu_mlp_strategy_name(tpu_mlp_strategy(r.mlp)));
        app_json_kstr(json, "dtype", r.spec.precision == TPU_MLP_BF16 ? "bf16" : "f32");
        app_json_kint(json, "batch", (long long)o->batch);
        app_json_kint(json, "hidden", (long long)o->hidden);
        app_json_kint(json, "hidden_used", (long long)tpu_mlp_hidden(r.mlp));
        app_train_json_num(json, "lr", o->lr);
        app_json_kint(json, "steps", r.steps);
        app_json_kbool(json, "model_only", o->model_only);
        app_json_kstr(json, "transport", o->model_only ? "none" : mpi ? "mpi" : "loopback");
        app_json_karray(json, "losses");
        for (s = 0; !o->model_only && s < r.steps; s++) {
            app_train_json_num(json, NULL, r.losses[s]);
        }
        app_json_array_end(json);
        app_json_karray(json, "step_measured_us");
        for (s = 0; s < r.steps; s++) {
            app_json_fixed(json, r.wall_us[s], 1);
        }
        app_json_array_end(json);
        app_json_kuint(json, "hbm_capacity_bytes", (unsigned long long)chip->hbm_bytes);
        app_train_json_num(json, "peak_bf16_flops", chip->bf16_flops);
        if (!o->model_only && tpu_mlp_strategy(r.mlp) != TPU_MLP_FSDP) {
            app_json_kbool(json, "replicas_identical", r.replicas_ok);
        }
        app_train_json_report(json, &r.last);
        app_json_kfixed(json, "wall_s", tpu__now_s() - wall0, 3);
        app_json_object_end(json);
        if (app_json_end(json, &err) != TPU_OK) {
            code = APP_EXIT_FAIL;
            app_die_msg(err.msg);
        }
        json = NULL;
    }
    if (csv_sink.f != NULL) {
        static const char *const cols[] = {
            "step", "loss", "step_us", "compute_us", "comm_us", "exposed_comm_us", "measured_us"};
        app_csv_t csv;
        int s;

        app_csv_init(&csv, csv_sink.f);
        app_csv_pod_header(&csv, cols, (int)(sizeof(cols) / sizeof(cols[0])));
        for (s = 0; s < r.steps; s++) {
            int k;

            app_csv_pod(&csv, pod);
            app_csv_int(&csv, s);
            if (o->model_only) {
                app_csv_empty(&csv);
            } else {
                app_csv_fixed(&csv, r.losses[s], 9); /* empty when not finite */
            }
            for (k = 0; k < 4; k++) {
                app_csv_fixed(&csv, r.modeled[s][k], 6);
            }
            app_csv_fixed(&csv, r.wall_us[s], 1);
            app_csv_end_row(&csv);
        }
        if (app_sink_close(&csv_sink, &err) != TPU_OK) {
            code = APP_EXIT_FAIL;
            app_die_msg(err.msg);
        }
    }
    if (!r.replicas_ok) {
        code = APP_EXIT_FAIL;
    }
    if (r.report != NULL) {
        r.report = NULL;
        if (app_report_close(&report, &err) != TPU_OK) {
            code = APP_EXIT_FAIL;
            app_die_msg(err.msg);
        }
    }
out:
    if (r.report != NULL) {
        app_report_close(&report, NULL);
    }
    if (status != TPU_OK && (printer < 0 ? r.where.root : printer == (mpi ? job->chip : 0))) {
        app_die_msg(err.msg);
    }
    code = app_train_close_sinks(&sink, &csv_sink, status != TPU_OK, code);
    fflush(stdout);
    app_train_run_fini(&r);
    tpu_npy_fini(&x);
    tpu__free(y);
    for (p = 0; p < TPU_MLP_NPARAMS; p++) {
        tpu__free(init[p]);
    }
    if (code == APP_EXIT_FAIL && app_sink_output_failed()) {
        code = APP_EXIT_OUTPUT; /* rank 0's outputs: every rank exits with it (below) */
    }
    if (mpi) {
        /* A failure every rank saw the same way (bad input) ends the job cleanly. */
        int worst = code;

        app_job_allreduce(job, &code, &worst, 1, MPI_INT, MPI_MAX, "the exit codes");
        return app_job_end(job, worst);
    }
    tpu_xport_destroy(r.x);
    return code;
}
