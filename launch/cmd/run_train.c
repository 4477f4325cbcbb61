/*
 * The default run's last part: one training step of a small MLP on every chip of
 * the job, checked against the same step on one chip (see run_train.h).
 */
#include "run_train.h"

#include "train_out.h"
#include "train_run.h"
#include "watch.h"

#include <math.h>
#include <string.h>

int app_train_default_step(app_job_t *job, FILE *txt, app_json_t *json)
{
    const tpu_topo_t *t = tpu_pod_topo(job->pod);
    tpu_err_t err = {0};
    app_train_run_t r, ref;
    tpu_pod_t *one = NULL;
    int model = t->naxes > 0 ? t->dims[t->naxes - 1] : 1, ok = 1, p;
    double loss_diff = 0, w_diff = 0, tol;
    tpu_status_t status;

    memset(&r, 0, sizeof(r));
    memset(&ref, 0, sizeof(ref));
    r.pod = job->pod;
    r.steps = 1;
    r.x = job->x;
    r.where.comm = job->comm;
    r.where.root = job->chip == 0;
    r.where.job = job;
    tpu_mlp_spec_init(&r.spec);
    r.spec.model = model;
    r.spec.data = t->nchips / model;
    r.spec.hidden = 64 * model;
    r.spec.batch = 16 * r.spec.data;
    r.spec.lr = 0.01;
    r.spec.on_wait = app_job_on_wait;
    r.spec.on_wait_arg = job;
    tol = r.spec.precision == TPU_MLP_BF16 ? 1e-2 : 1e-5;
    status = app_train_run_create(&r, &err);
    if (status == TPU_OK) {
        status = app_train_run_steps(&r, 1, txt, 0, &err);
    }
    if (status != TPU_OK) {
        app_job_abort(job, err.msg);
    }
    if (job->chip == 0) {
        /* The same step on one chip, in this process. */
        tpu_pod_spec_t spec;

        tpu_pod_spec_init(&spec);
        spec.chip_spec = tpu_pod_chip(job->pod);
        spec.shape = "1";
        spec.wrap = "none";
        status = tpu_pod_create(&spec, &one, &err);
        ref.pod = one;
        ref.steps = 1;
        ref.where.comm = MPI_COMM_NULL;
        ref.where.root = 1;
        ref.spec = r.spec;
        ref.spec.data = ref.spec.model = 1;
        ref.spec.strategy = TPU_MLP_AUTO;
        ref.spec.on_wait = NULL; /* one chip in this process: nobody to wait for */
        if (status == TPU_OK) {
            status = tpu_xport_loopback_create(1, &ref.x, &err);
        }
        if (status == TPU_OK) {
            status = app_train_run_create(&ref, &err);
        }
        if (status == TPU_OK) {
            status = app_train_run_steps(&ref, 1, txt, 0, &err);
        }
        if (status != TPU_OK) {
            app_job_abort(job, err.msg);
        }
        loss_diff = fabs((double)r.losses[0] - ref.losses[0]) / fabs((double)ref.losses[0]);
        for (p = 0; p < TPU_MLP_NPARAMS; p++) {
            double d =
                tpu_mlp_param_rel_diff(r.w[p], ref.w[p], tpu_mlp_param_count(r.spec.hidden, p));

            w_diff = d > w_diff ? d : w_diff;
        }
        ok = loss_diff <= tol && w_diff <= tol && r.replicas_ok;
        fprintf(txt,
                "\ntrain: one SGD step of the MLP 784-%lld-%lld-10 on %d chips, mesh "
                "data=%d,model=%d (%s, bf16 matmuls), global batch %lld\n"
                "  loss %.6f; the same step on 1 chip: %.6f (relative difference %.2g, weights "
                "%.2g, tolerance %g): %s\n",
                (long long)r.spec.hidden, (long long)r.spec.hidden, t->nchips, r.spec.data,
                r.spec.model, tpu_mlp_strategy_name(tpu_mlp_strategy(r.mlp)),
                (long long)r.spec.batch, r.losses[0], ref.losses[0], loss_diff, w_diff, tol,
                ok ? "ok" : "WRONG");
        app_train_print_colls(txt, &r.last);
        app_train_print_split(txt, &r.last, (uint64_t)tpu_pod_chip(job->pod)->hbm_bytes);
        fprintf(txt, "  measured %.1f us for the step on this host\n", r.wall_us[0]);
        if (json != NULL) {
            app_json_kobject(json, "train");
            app_json_kobject(json, "mesh");
            app_json_kint(json, "data", r.spec.data);
            app_json_kint(json, "model", r.spec.model);
            app_json_object_end(json);
            app_json_kstr(json, "strategy", tpu_mlp_strategy_name(tpu_mlp_strategy(r.mlp)));
            app_json_kint(json, "hidden", (long long)r.spec.hidden);
            app_json_kint(json, "batch", (long long)r.spec.batch);
            app_train_json_num(json, "loss", r.losses[0]);
            app_train_json_num(json, "loss_one_chip", ref.losses[0]);
            app_train_json_num(json, "rel_diff", loss_diff > w_diff ? loss_diff : w_diff);
            app_json_kbool(json, "ok", ok);
            app_train_json_report(json, &r.last);
            app_json_kfixed(json, "measured_us", r.wall_us[0], 1);
            app_json_object_end(json);
        }
        tpu_xport_destroy(ref.x);
        app_train_run_fini(&ref);
        tpu_pod_destroy(one);
    }
    app_train_run_fini(&r);
    app_job_bcast(job, &ok, 1, MPI_INT, 0, "the comparison with the one-chip run");
    return ok ? 0 : 1;
}
