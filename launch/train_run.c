/*
 * A training run of the MLP on the pod, shared by 'tpuemu train' and the default
 * run's step (see train_run.h).
 */
#include "train_run.h"

#include "alloc.h"
#include "clock.h"
#include "progress.h"
#include "watch.h"

#include <string.h>

/*
 * One double or int reduced in place over the chips' ranks: watched under the job
 * (a stalled chip is named within --timeout, launch/watch.c), else plain MPI.
 */
static void reduce_one(const app_train_where_t *w, void *v, MPI_Datatype type, MPI_Op op,
                       const char *what)
{
    union {
        double d;
        int i;
    } mine;

    memcpy(&mine, v, type == MPI_DOUBLE ? sizeof(double) : sizeof(int));
    if (w->job != NULL) {
        app_job_allreduce(w->job, &mine, v, 1, type, op, what);
    }
}

double app_train_max_all(const app_train_where_t *w, double v, const char *what)
{
    reduce_one(w, &v, MPI_DOUBLE, MPI_MAX, what);
    return v;
}

/*
 * Under MPI, make a failure that some ranks saw (an unreadable file on one node)
 * a failure of all, before anyone enters a collective the others would never
 * join.  Returns the lowest failing rank (it prints its message), or -1.
 */
int app_train_agree(const app_train_where_t *w, tpu_status_t *status_p, int rank, int nranks)
{
    int first = *status_p != TPU_OK ? rank : nranks;

    if (w->comm == MPI_COMM_NULL) {
        return *status_p != TPU_OK ? rank : -1;
    }
    if (*status_p == TPU_ERR_TIMEOUT && w->job != NULL) {
        /* A collective of the step spent --timeout already: a second full wait here
         * ended a stopped rank's job after twice the --timeout given. */
        tpu_err_t e = {0};

        tpu_err_set(&e, TPU_ERR_TIMEOUT, "a collective of the training step timed out");
        app_job_fail(w->job, &e);
    }
    reduce_one(w, &first, MPI_INT, MPI_MIN, "the check for errors");
    if (first == nranks) {
        return -1;
    }
    if (*status_p == TPU_OK) {
        *status_p = TPU_ERR_INVALID; /* another rank's bad input */
    }
    return first;
}

/* Do the chips that share a model index hold the same parameter bytes? */
typedef struct replica {
    uint64_t hash; /* of the chip's parameter bytes */
    uint64_t midx; /* its model index (64 bits: no padding to gather) */
} replica_t;

static int replicas_identical(const app_train_where_t *w, const tpu_mlp_t *mlp, int nlocal,
                              int nchips)
{
    replica_t *rep = tpu__calloc((size_t)nchips, sizeof(*rep));
    int i, j, ok = 1;

    if (rep == NULL) {
        if (w->job != NULL) {
            /* The others are in the gather below: end the job with one line. */
            app_job_abort(w->job, "out of host memory for the check of the replicas");
        }
        return 0;
    }
    for (i = 0; i < nlocal; i++) {
        int m = 0;

        rep[i].hash = tpu_mlp_param_hash(mlp, i, NULL, &m);
        rep[i].midx = (uint64_t)m;
    }
    if (w->job != NULL) {
        replica_t mine = rep[0];

        app_job_allgather(w->job, &mine, (int)sizeof(mine), rep, "the check of the replicas");
    }
    for (i = 0; i < nchips; i++) {
        for (j = 0; j < i; j++) {
            if (rep[i].midx == rep[j].midx && rep[i].hash != rep[j].hash) {
                ok = 0;
            }
        }
    }
    tpu__free(rep);
    return ok;
}

void app_train_run_fini(app_train_run_t *r)
{
    int p;

    tpu_mlp_destroy(r->mlp);
    tpu__free(r->losses);
    tpu__free(r->wall_us);
    tpu__free(r->modeled);
    for (p = 0; p < TPU_MLP_NPARAMS; p++) {
        tpu__free(r->w[p]);
    }
}

/* Create the model (checks the spec: bad input fails here, before any output). */
tpu_status_t app_train_run_create(app_train_run_t *r, tpu_err_t *err)
{
    r->replicas_ok = 1;
    r->losses = tpu__calloc((size_t)r->steps, sizeof(*r->losses));
    r->wall_us = tpu__calloc((size_t)r->steps, sizeof(*r->wall_us));
    r->modeled = tpu__calloc((size_t)r->steps, sizeof(*r->modeled));
    if (r->losses == NULL || r->wall_us == NULL || r->modeled == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "no memory for %d steps", r->steps);
    }
    return tpu_mlp_create(&r->spec, tpu_pod_topo(r->pod), tpu_pod_link(r->pod),
                          tpu_pod_chip(r->pod), r->x, &r->mlp, err);
}

/*
 * Step 's' on the trace (root): "step s" over the compute ops on every chip's
 * compute track, each collective at its start with its steps (it may overlap
 * the compute after it), then the timeline moves on by the step's time.  The
 * heatmap counts every collective of every step.
 */
static tpu_status_t trace_step(app_train_run_t *r, int s, const tpu_mlp_report_t *rep,
                               tpu_err_t *err)
{
    char name[96];
    int k;

    if (!app_report_active(r->report)) {
        return TPU_OK;
    }
    snprintf(name, sizeof(name), "step %d", s);
    app_report_step(r->report, name, 0, rep->step_us);
    for (k = 0; k < rep->nops; k++) {
        const tpu_mlp_op_t *op = &rep->ops[k];

        app_report_compute_op(r->report, op->what, op->start_us, op->dur_us, op->flops, op->bytes,
                              op->compute_bound ? "compute" : "memory");
    }
    for (k = 0; k < rep->ncoll; k++) {
        const tpu_mlp_coll_t *c = &rep->coll[k];
        tpu_status_t status;

        if (c->plan == NULL) {
            continue;
        }
        snprintf(name, sizeof(name), "%s %s (step %d)", tpu_coll_name(c->kind), c->what, s);
        status = app_report_model_at(r->report, c->plan, name, c->start_us, c->modeled_us, 1, err);
        if (status != TPU_OK) {
            return status;
        }
    }
    app_report_advance(r->report, rep->step_us);
    return TPU_OK;
}

/*
 * --trace-measured: step 's' ran from 't0' to 't1' (wall clock) on each chip:
 * under MPI every rank's, gathered to rank 0 with the watchdog; in one process
 * the same span for every chip.
 */
static void trace_measured(app_train_run_t *r, int s, double t0, double t1)
{
    const tpu_topo_t *t = tpu_pod_topo(r->pod);
    double mine[2] = {(t0 - r->t0) * 1e6, (t1 - t0) * 1e6}, *all = NULL;
    char name[32];
    int c;

    if (r->where.job != NULL) {
        if (r->where.root) {
            all = tpu__calloc(2 * (size_t)t->nchips, sizeof(double));
            if (all == NULL) {
                app_job_abort(r->where.job, "out of host memory for the measured trace");
            }
        }
        app_job_gather(r->where.job, mine, (int)sizeof(mine), all, 0,
                       "the gather of the measured steps");
    }
    if (r->where.root && r->report != NULL) {
        snprintf(name, sizeof(name), "step %d", s);
        for (c = 0; c < t->nchips; c++) {
            app_report_measured_step(r->report, c, name, all ? all[2 * c] : mine[0],
                                     all ? all[2 * c + 1] : mine[1]);
        }
    }
    tpu__free(all);
}

/* Train, check the replicas after every step, gather the weights if asked. */
tpu_status_t app_train_run_steps(app_train_run_t *r, int gather, FILE *txt, int print_steps,
                                 tpu_err_t *err)
{
    tpu_status_t status;
    app_progress_t progress;
    int s, p;

    /* A bar with the step running, on a terminal, once training takes over 2 s. */
    app_progress_init(&progress, r->where.root && print_steps, r->steps, txt);
    for (s = 0; s < r->steps; s++) {
        tpu_mlp_report_t rep;
        double t0 = tpu__now_s();
        char item[32];

        snprintf(item, sizeof(item), "step %d", s);
        app_progress_update(&progress, s, item);

        status = tpu_mlp_step(r->mlp, s, &rep, err);
        if (status == TPU_ERR_TIMEOUT && r->where.job != NULL) {
            app_progress_end(&progress);
            app_job_fail(r->where.job, err); /* names the chip behind, ends the job */
        }
        if (status != TPU_OK) {
            app_progress_end(&progress);
            return status;
        }
        if (r->measured) {
            trace_measured(r, s, t0, tpu__now_s());
        }
        if (r->report != NULL && r->where.root) {
            status = trace_step(r, s, &rep, err);
            if (status != TPU_OK) {
                app_progress_end(&progress);
                return status;
            }
        }
        r->wall_us[s] = app_train_max_all(&r->where, (tpu__now_s() - t0) * 1e6, "the step times");
        r->losses[s] = (float)rep.loss;
        r->modeled[s][0] = rep.step_us;
        r->modeled[s][1] = rep.compute_us;
        r->modeled[s][2] = rep.comm_us;
        r->modeled[s][3] = rep.exposed_us;
        if (s == 0) {
            r->first = rep;
        }
        r->last = rep;
        if (!r->spec.model_only && tpu_mlp_strategy(r->mlp) != TPU_MLP_FSDP &&
            !replicas_identical(&r->where, r->mlp, r->x->nlocal, tpu_pod_topo(r->pod)->nchips)) {
            r->replicas_ok = 0;
        }
        if (print_steps && r->where.root) {
            app_progress_end(&progress);
            if (r->spec.model_only) {
                fprintf(txt, "step %4d  modeled %12.3f us (compute %.3f, exposed comm %.3f)\n", s,
                        rep.step_us, rep.compute_us, rep.exposed_us);
            } else {
                fprintf(txt,
                        "step %4d  loss %-12.6g modeled %12.3f us (compute %.3f, exposed comm "
                        "%.3f)  measured %10.1f us\n",
                        s, rep.loss, rep.step_us, rep.compute_us, rep.exposed_us, r->wall_us[s]);
            }
            fflush(txt);
        }
    }
    app_progress_end(&progress);
    if (!gather) {
        return TPU_OK;
    }
    for (p = 0; p < TPU_MLP_NPARAMS; p++) {
        r->w[p] =
            tpu__malloc((size_t)tpu_mlp_param_count(tpu_mlp_hidden(r->mlp), p) * sizeof(float));
        if (r->w[p] == NULL) {
            return tpu_err_set(err, TPU_ERR_NO_MEMORY, "no memory to gather the weights");
        }
    }
    return tpu_mlp_gather(r->mlp, r->w, err);
}
