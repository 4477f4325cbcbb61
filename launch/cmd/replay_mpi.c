/*
 * tpuemu replay under mpirun: every collective execution of the replayed module
 * (loops unrolled, in the order the module runs them) with real bytes over MPI.
 *
 * Each rank is one chip.  A collective's buffers hold the synthetic data of
 * 'tpuemu bench' (small integers, exact in every type, so results compare bit
 * for bit with the reference computed from every chip's input); every
 * execution is verified.  The modeled time of each run must equal the replay's
 * (the same plan, run instead of modeled); the measured time is this host's
 * wall time per execution, the slowest rank's.
 *
 *   seq:  ag.w1 ag.w2 ar.y | ag.w1 ag.w2 ar.y | ... | loss     (8 iterations + 1)
 *          run   run   run    run   run   run          run     -> verify, time
 *
 * Restrictions: collectives the replay could not time are skipped (counted), as
 * are rows whose buffers would exceed MAX_RUN_BYTES per rank.
 */
#include "replay_mpi.h"

#include "alloc.h"
#include "clock.h"
#include "job.h"
#include "progress.h"
#include "watch.h"

#include <stdlib.h>
#include <string.h>

#define MAX_RUN_BYTES ((uint64_t)1 << 30)

/* One execution: the collective's modeled time (the slowest chip's, as the replay's). */
static tpu_status_t run_once(app_case_t *c, app_job_t *job, uint64_t call, double *modeled_us_p,
                             double *wall_s_p, tpu_err_t *err)
{
    tpu_coll_run_opts_t opts;
    void *in[1], *out[1];
    tpu_status_t status;
    double t0;

    memset(&opts, 0, sizeof(opts));
    opts.call = call;
    opts.timeout_s = job->timeout; /* --timeout, 60 s by default (app_job_start) */
    opts.on_wait = app_job_on_wait;
    opts.on_wait_arg = job;
    in[0] = c->in;
    out[0] = c->out;
    memset(c->out, 0, c->out_bytes);
    /* The transport is the case's, from app_case_init(). */
    t0 = tpu__now_s();
    status = tpu_coll_exec_run(c->exec, &opts, in, out, modeled_us_p, err);
    *wall_s_p = tpu__now_s() - t0;
    return status;
}

tpu_status_t app_replay_run_mpi(app_job_t *job, const tpu_replay_report_t *rep,
                                app_replay_measured_t *m, FILE *txt, tpu_err_t *err)
{
    app_progress_t progress;
    double t_run;
    app_case_t *cases = NULL;
    char *ready = NULL;
    double *wall = NULL;
    long *wrong = NULL;
    int64_t *runs = NULL, k;
    int n = rep->ncolls, i, bad_model = 0;
    tpu_status_t status = TPU_OK;

    memset(m, 0, sizeof(*m));
    m->measured_us = tpu__calloc((size_t)n + 1, sizeof(double));
    m->runs = tpu__calloc((size_t)n + 1, sizeof(int64_t));
    m->wrong = tpu__calloc((size_t)n + 1, sizeof(long));
    cases = tpu__calloc((size_t)n + 1, sizeof(*cases));
    ready = tpu__calloc((size_t)n + 1, 1);
    wall = tpu__calloc((size_t)n + 1, sizeof(double));
    wrong = tpu__calloc((size_t)n + 1, sizeof(long));
    runs = tpu__calloc((size_t)n + 1, sizeof(int64_t));
    m->nspans = rep->nseq < APP_REPLAY_SPANS ? rep->nseq : APP_REPLAY_SPANS;
    m->spans = tpu__malloc(2 * sizeof(double) * (size_t)(m->nspans + 1));
    if (m->measured_us == NULL || m->runs == NULL || m->wrong == NULL || cases == NULL ||
        ready == NULL || wall == NULL || wrong == NULL || runs == NULL || m->spans == NULL) {
        status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of host memory");
        goto out;
    }
    for (k = 0; k < 2 * m->nspans; k++) {
        m->spans[k] = -1;
    }
    /* A bar with the collective running, on a terminal, once the run takes over 2 s. */
    app_progress_init(&progress, job->chip == 0 && txt != NULL, (long)rep->nseq, txt);
    t_run = tpu__now_s();
    for (k = 0; k < rep->nseq && status == TPU_OK; k++) {
        const tpu_replay_coll_t *c = &rep->colls[rep->seq[k]];
        int r = rep->seq[k];
        double modeled = 0, wall_s = 0, t0;

        app_progress_update(&progress, (long)k, c->name);
        /* A sync point per execution of the sequence (every rank walks the same one),
         * and --inject's call N is execution N, counted from 0. */
        app_job_progress(job);
        app_job_inject(job, (long)k);
        if (!c->supported || c->group_size < 2 || c->bytes == 0 || c->bytes * 2 > MAX_RUN_BYTES) {
            if (ready[r] == 0) {
                ready[r] = 2; /* skipped */
            }
            m->skipped++;
            continue;
        }
        if (ready[r] == 0) {
            /* Plan, buffers, reference, and one warm-up run (the first run builds the
             * schedule of every chip), verified but not timed. */
            tpu_groups_t groups;
            tpu_coll_desc_t desc;

            tpu_replay_coll_desc(c, &groups, &desc);
            status = app_case_init(&cases[r], job, &desc, err);
            if (status == TPU_OK) {
                status = run_once(&cases[r], job, (uint64_t)rep->nseq + (uint64_t)r, &modeled,
                                  &wall_s, err);
            }
            if (status != TPU_OK) {
                break;
            }
            wrong[r] += app_case_wrong(&cases[r], job->chip);
            ready[r] = 1;
        }
        t0 = tpu__now_s();
        status = run_once(&cases[r], job, (uint64_t)k, &modeled, &wall_s, err);
        if (status != TPU_OK) {
            break;
        }
        if (k < m->nspans) {
            m->spans[2 * k] = (t0 - t_run) * 1e6;
            m->spans[2 * k + 1] = wall_s * 1e6;
        }
        wall[r] += wall_s;
        runs[r]++;
        wrong[r] += app_case_wrong(&cases[r], job->chip);
        if (modeled != c->modeled_us) {
            bad_model++;
        }
    }
    app_progress_end(&progress);
    /* Every rank ran the same sequence; a failure on one rank ends the job.  A
     * collective that timed out waited for a chip behind: the live chips meet and
     * rank 0 names it (app_job_fail), not the first chip to give up. */
    if (status != TPU_OK) {
        app_job_fail(job, err);
    }
    /* Watched: a chip that stalled in the replay is named within the timeout. */
    app_job_allreduce(job, wall, m->measured_us, n, MPI_DOUBLE, MPI_MAX, "the measured times");
    app_job_allreduce(job, wrong, m->wrong, n, MPI_LONG, MPI_SUM, "the data checks");
    app_job_allreduce(job, &bad_model, &m->model_mismatches, 1, MPI_INT, MPI_SUM,
                      "the model checks");
    for (i = 0; i < n; i++) {
        m->runs[i] = runs[i];
        m->measured_us[i] = runs[i] > 0 ? m->measured_us[i] * 1e6 / (double)runs[i] : 0;
        m->total_wrong += m->wrong[i];
        m->executions += runs[i];
    }
out:
    for (i = 0; cases != NULL && i < n; i++) {
        if (ready[i] == 1) {
            app_case_fini(&cases[i]);
        }
    }
    tpu__free(cases);
    tpu__free(ready);
    tpu__free(wall);
    tpu__free(wrong);
    tpu__free(runs);
    return status;
}

void app_replay_measured_fini(app_replay_measured_t *m)
{
    tpu__free(m->measured_us);
    tpu__free(m->runs);
    tpu__free(m->wrong);
    tpu__free(m->spans);
    memset(m, 0, sizeof(*m));
}
