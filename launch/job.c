/* MPI jobs: start-up checks, the rank-to-chip order, and verified collectives. */
#include "job.h"

#include "alloc.h"
#include "clock.h"
#include "interrupt.h"
#include "jobenv.h"
#include "podsetup.h"
#include "watch.h"
#include "watch_agree.h"
#include "watch_guard.h"
#include "watch_monitor.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The least bound of the guard of the start and the end of a job (app_job_guard_arm):
 * MPI start-up and hwloc take seconds on a loaded node, whatever --timeout says. */
#define START_S 30.0

/* --inject crash|stop:chip=C,call=N (checked by tpu_opts_parse). */
static void parse_inject(const char *text, app_job_t *job)
{
    char kind[8] = "";

    job->crash_chip = -1;
    job->crash_call = -1;
    if (text != NULL) {
        sscanf(text, "%5[a-z]:chip=%d,call=%ld", kind, &job->crash_chip, &job->crash_call);
        job->crash_stop = strcmp(kind, "stop") == 0;
    }
}

/*
 * Before MPI_Init, this rank's start-up file (its pid and world rank, read by the
 * monitor, which names a rank lost during start-up: watch_monitor.c), and the
 * file its signal handler leaves when the runtime ends it then.
 */
static void start_file(void)
{
    char prefix[200], path[300];
    int local = app_jobenv_local_rank();
    FILE *f;

    if (app_jobenv_start_prefix(prefix, sizeof(prefix)) != 0 || local < 0) {
        return;
    }
    snprintf(path, sizeof(path), "%s.%d", prefix, local);
    f = fopen(path, "w");
    if (f != NULL) {
        fprintf(f, "%d %d\n", (int)getpid(), app_job_env_rank());
        fclose(f);
    }
    snprintf(path, sizeof(path), "%s.%d.term", prefix, local);
    app_interrupt_start(path);
}

/* The job is ready (the monitor has the table of the node's ranks): the start-up
 * file is not needed any more. */
static void start_file_remove(void)
{
    char prefix[200], path[300];
    int local = app_jobenv_local_rank();

    app_interrupt_start("");
    if (app_jobenv_start_prefix(prefix, sizeof(prefix)) == 0 && local >= 0) {
        snprintf(path, sizeof(path), "%s.%d", prefix, local);
        unlink(path);
    }
}

/*
 * For tests: TPUEMU_TEST_LOSE_AT_START=R:WHEN kills world rank R (SIGKILL) during
 * the start-up, WHEN 'before' (before MPI_Init) or 'init' (right after it, before
 * the ranks' agreements).
 */
static void lose_at_start(const char *when)
{
    const char *v = getenv("TPUEMU_TEST_LOSE_AT_START");
    char at[16] = "";
    int rank = -1;

    if (v != NULL && sscanf(v, "%d:%15s", &rank, at) == 2 && rank == app_job_env_rank() &&
        strcmp(at, when) == 0) {
        raise(SIGKILL);
    }
}

int app_job_refuse(const char *msg, int *argc, char ***argv)
{
    int me, who;

    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    who = app_job_agree(MPI_COMM_WORLD, msg != NULL);
    if (who == me) {
        app_die_msg(msg);
    }
    MPI_Finalize();
    return APP_EXIT_USAGE;
}

int app_job_start(const app_opts_t *o, int *argc, char ***argv, app_job_t *job)
{
    tpu_err_t err = {0};
    tpu_status_t status;
    char msg[TPU_ERR_MSG_LEN];
    int who, r;

    memset(job, 0, sizeof(*job));
    job->comm = MPI_COMM_NULL;
    job->watch = MPI_COMM_NULL;
    job->timeout = o->timeout > 0 ? o->timeout : 60;
    job->timeout_given = job->timeout;
    for (r = 0; r < APP_JOB_RING; r++) {
        job->ring[r] = MPI_REQUEST_NULL;
    }
    parse_inject(o->inject, job);
    start_file();
    app_job_monitor_fork(job);
    lose_at_start("before");
    MPI_Init(argc, argv);
    lose_at_start("init");
    MPI_Comm_rank(MPI_COMM_WORLD, &job->world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &job->nranks);
    /* The agreements below are blocking collectives: a rank stopped now would leave
     * the others in them forever.  The watchdog does not exist yet; the guard does. */
    app_job_guard_arm(job, job->timeout > START_S ? job->timeout : START_S,
                      "the start of the job (the ranks' agreements)");
    /* First, as app_job_refuse() does: did any rank fail to parse its command line
     * (halves of a job with different flags)?  It printed; every rank ends. */
    if (app_job_agree(MPI_COMM_WORLD, 0) >= 0) {
        return app_job_end(job, APP_EXIT_USAGE);
    }
    /* Halves of a job with different options would call different collectives. */
    who = app_job_agree_opts(o, msg, sizeof(msg));
    if (who != 0) {
        if (who == 1) {
            app_die_msg(msg);
        }
        return app_job_end(job, APP_EXIT_USAGE);
    }
    status = app_pod_setup(o, &job->pod, &err);
    if (status == TPU_OK && job->nranks != tpu_pod_topo(job->pod)->nchips) {
        const tpu_topo_t *t = tpu_pod_topo(job->pod);

        char sl[32] = "";

        if (t->slices > 1) {
            snprintf(sl, sizeof(sl), " x %d slices", t->slices);
        }
        status = tpu_err_set(
            &err, TPU_ERR_INVALID,
            "topology %s%s has %d chips and needs %d ranks (mpirun -n %d), but this job has %d",
            tpu_pod_shape(job->pod), sl, t->nchips, t->nchips, t->nchips, job->nranks);
    }
    if (status == TPU_OK && job->crash_chip >= tpu_pod_topo(job->pod)->nchips) {
        status =
            tpu_err_set(&err, TPU_ERR_INVALID, "--inject %s:chip=%d: the pod has chips 0 to %d",
                        job->crash_stop ? "stop" : "crash", job->crash_chip,
                        tpu_pod_topo(job->pod)->nchips - 1);
    }
    if (status == TPU_OK) {
        status = app_sink_check(o->json, o->csv, &err);
    }
    /* One rank may fail where the others do not (a file missing on one node). */
    who = app_job_agree(MPI_COMM_WORLD, status != TPU_OK);
    if (who >= 0) {
        if (job->world_rank == who) {
            app_die_msg(err.msg);
        }
        return app_job_end(job, APP_EXIT_USAGE);
    }
    job->chip = app_place_chip_of_rank(tpu_pod_topo(job->pod), tpu_pod_chip(job->pod)->host_dims,
                                       job->world_rank);
    if (app_job_monitor_start(job) != 0) {
        if (job->world_rank == 0) {
            snprintf(msg, sizeof(msg),
                     "out of host memory for the table of the job's %d ranks (the monitor of "
                     "lost chips)",
                     job->nranks);
            app_die_msg(msg);
        }
        return app_job_end(job, APP_EXIT_FAIL);
    }
    MPI_Comm_split(MPI_COMM_WORLD, 0, job->chip, &job->comm);
    MPI_Comm_dup(MPI_COMM_WORLD, &job->watch);
    job->waits = APP_JOB_WAIT_NONE;
    if (job->world_rank == 0) {
        job->peers = tpu__calloc((size_t)job->nranks, sizeof(*job->peers));
        job->rank_of_chip = tpu__calloc((size_t)job->nranks, sizeof(*job->rank_of_chip));
        if (job->peers == NULL || job->rank_of_chip == NULL) {
            app_job_abort(job, "out of host memory for the watchdog");
        }
        for (r = 0; r < job->nranks; r++) {
            job->peers[r].heard = tpu__now_s();
            job->peers[r].waits = APP_JOB_WAIT_NONE;
            job->rank_of_chip[app_place_chip_of_rank(tpu_pod_topo(job->pod),
                                                     tpu_pod_chip(job->pod)->host_dims, r)] = r;
        }
    }
    status = tpu_xport_mpi_create(job->comm, &job->x, &err);
    if (status == TPU_OK) {
        status = app_place_local(job->comm, &job->place, &err);
    }
    job->place.rank = job->world_rank;
    if (status != TPU_OK) {
        app_job_abort(job, err.msg);
    }
    start_file_remove();
    app_job_guard_disarm(job);
    return -1;
}

int app_job_end(app_job_t *job, int code)
{
    int r;

    app_job_guard_disarm(job); /* (still armed when the start refused its input) */
    tpu_xport_destroy(job->x);
    job->x = NULL;
    for (r = 0; r < APP_JOB_RING; r++) {
        if (job->ring[r] != MPI_REQUEST_NULL) {
            MPI_Wait(&job->ring[r], MPI_STATUS_IGNORE);
        }
    }
    if (job->watch != MPI_COMM_NULL) {
        MPI_Comm_free(&job->watch);
    }
    tpu__free(job->peers);
    tpu__free(job->rank_of_chip);
    job->peers = NULL;
    job->rank_of_chip = NULL;
    if (job->comm != MPI_COMM_NULL) {
        MPI_Comm_free(&job->comm);
    }
    tpu_pod_destroy(job->pod);
    job->pod = NULL;
    tpu__free(job->local_pids);
    job->local_pids = NULL;
    app_job_monitor_stop(job);
    app_interrupt_job_end();
    /* MPI_Finalize waits for every rank too. */
    app_job_guard_arm(job, job->timeout > START_S ? job->timeout : START_S,
                      "the end of the job (MPI_Finalize)");
    MPI_Finalize();
    app_job_monitor_forget_term();
    app_job_guard_disarm(job);
    if (job->guard_made) {
        timer_delete(job->guard);
        job->guard_made = 0;
    }
    return code;
}

int app_job_open(app_job_t *job, const char *json, app_sink_t *json_sink, const char *csv,
                 app_sink_t *csv_sink)
{
    tpu_err_t err = {0};
    int status;

    json_sink->f = NULL;
    if (csv_sink != NULL) {
        csv_sink->f = NULL;
    }
    if (job->chip == 0) {
        if (json != NULL) {
            app_sink_open(json_sink, json, &err);
        }
        if (csv != NULL && err.status == TPU_OK) {
            app_sink_open(csv_sink, csv, &err);
        }
    }
    status = err.status;
    app_job_bcast(job, &status, 1, MPI_INT, 0, "opening the output files");
    if (status != TPU_OK) {
        if (job->chip == 0) {
            app_sink_close(json_sink, NULL);
            app_die_msg(err.msg);
        }
        return app_job_end(job, APP_EXIT_USAGE);
    }
    return -1;
}

int app_job_report_open(app_job_t *job, const app_opts_t *o, const char *cmd, app_report_t *rep)
{
    tpu_err_t err = {0};
    int status = TPU_OK;

    memset(rep, 0, sizeof(*rep));
    if (job->chip == 0) {
        char title[256];

        snprintf(title, sizeof(title), "tpuemu %s: %d chips of %s as %s (wrap %s)%s", cmd,
                 tpu_pod_topo(job->pod)->nchips, tpu_pod_chip(job->pod)->name,
                 tpu_pod_shape(job->pod), tpu_pod_wrap(job->pod),
                 tpu_pod_topo(job->pod)->slices > 1 ? " in slices" : "");
        status = app_report_open(rep, o, job->pod, title, &err);
    } else if (o->trace_measured && o->trace == NULL) {
        status = TPU_ERR_INVALID;
    }
    app_job_bcast(job, &status, 1, MPI_INT, 0, "opening the trace and heatmap files");
    if (status != TPU_OK) {
        if (job->chip == 0) {
            app_die_msg(err.msg);
        }
        return app_job_end(job, status == TPU_ERR_INVALID ? APP_EXIT_USAGE : APP_EXIT_FAIL);
    }
    return -1;
}

int app_job_report_close(app_job_t *job, app_report_t *rep)
{
    tpu_err_t err = {0};
    int status = TPU_OK;

    if (job->chip == 0) {
        status = app_report_close(rep, &err);
        if (status != TPU_OK) {
            app_die_msg(err.msg);
        }
    }
    app_job_bcast(job, &status, 1, MPI_INT, 0, "writing the trace and heatmap files");
    return status == TPU_ERR_IO ? APP_EXIT_OUTPUT : status != TPU_OK ? APP_EXIT_FAIL : -1;
}

int app_job_close(app_job_t *job, app_json_t *json, app_sink_t *json_sink, app_sink_t *csv_sink)
{
    tpu_err_t err = {0};
    int status = TPU_OK;

    if (job->chip == 0) {
        if (json != NULL) {
            app_json_end(json, &err);
        }
        app_sink_close(json_sink, &err);
        if (csv_sink != NULL) {
            app_sink_close(csv_sink, &err);
        }
        if (err.status != TPU_OK) {
            app_die_msg(err.msg);
        }
        status = err.status;
    }
    app_job_bcast(job, &status, 1, MPI_INT, 0, "closing the output files");
    return status == TPU_ERR_IO ? APP_EXIT_OUTPUT : status != TPU_OK ? APP_EXIT_FAIL : -1;
}

int app_job_outputs_open(app_job_t *job, const app_opts_t *o, const char *cmd, app_report_t *rep,
                         app_sink_t *json_sink, app_sink_t *csv_sink)
{
    int code = app_job_report_open(job, o, cmd, rep);

    if (code >= 0) {
        return code;
    }
    return app_job_open(job, o->json, json_sink, o->csv, csv_sink);
}

int app_job_outputs_close(app_job_t *job, app_json_t *json, app_sink_t *json_sink,
                          app_sink_t *csv_sink, app_report_t *rep)
{
    int code = app_job_close(job, json, json_sink, csv_sink);

    if (code < 0) {
        return app_job_report_close(job, rep);
    }
    app_job_report_close(job, rep);
    return code;
}

void app_job_inject(const app_job_t *job, long call)
{
    if (job->crash_chip == job->chip && call == job->crash_call) {
        /* --inject crash: die as a killed process does, with no word; stop: stop
         * as a stopped one does, at the same sync point as the others. */
        fflush(stdout);
        fflush(stderr);
        raise(job->crash_stop ? SIGSTOP : SIGKILL);
    }
}

tpu_status_t app_case_init(app_case_t *c, const app_job_t *job, const tpu_coll_desc_t *desc,
                           tpu_err_t *err)
{
    tpu_status_t status;

    memset(c, 0, sizeof(*c));
    c->desc = *desc;
    status =
        tpu_coll_plan_create(tpu_pod_topo(job->pod), tpu_pod_link(job->pod), desc, &c->plan, err);
    if (status != TPU_OK) {
        return status;
    }
    status = tpu_coll_exec_create(c->plan, job->x, &c->exec, err);
    if (status != TPU_OK) {
        app_case_fini(c);
        return status;
    }
    c->desc = *tpu_coll_plan_desc(c->plan);
    tpu_coll_plan_sizes(c->plan, &c->in_bytes, &c->out_bytes);
    c->in = tpu__malloc(c->in_bytes);
    c->out = tpu__calloc(1, c->out_bytes);
    c->ref = tpu__calloc(1, c->out_bytes);
    if (c->in == NULL || c->out == NULL || c->ref == NULL) {
        app_case_fini(c);
        return tpu_err_set(err, TPU_ERR_NO_MEMORY,
                           "out of host memory for the buffers of %s (%llu bytes in, %llu out, "
                           "twice)",
                           tpu_coll_name(c->desc.kind), (unsigned long long)c->in_bytes,
                           (unsigned long long)c->out_bytes);
    }
    tpu_coll_fill_exact(job->chip, c->in, c->in_bytes, &c->desc.dtype);
    status =
        tpu_coll_reference(c->plan, job->chip, tpu_coll_fill_exact, &c->desc.dtype, c->ref, err);
    if (status != TPU_OK) {
        app_case_fini(c);
    }
    return status;
}

void app_case_fini(app_case_t *c)
{
    tpu_coll_exec_destroy(c->exec);
    tpu_coll_plan_destroy(c->plan);
    tpu__free(c->in);
    tpu__free(c->out);
    tpu__free(c->ref);
    memset(c, 0, sizeof(*c));
}

tpu_status_t app_case_run(app_case_t *c, app_job_t *job, uint64_t call, int check_peers,
                          double timeout, double *modeled_us_p, double *wall_s_p, tpu_err_t *err)
{
    tpu_coll_run_opts_t opts;
    void *in[1], *out[1];
    double t0;
    tpu_status_t status;

    memset(&opts, 0, sizeof(opts));
    app_job_progress(job);
    app_job_inject(job, (long)call);
    opts.call = call;
    opts.timeout_s = timeout;
    opts.check_peers = check_peers;
    opts.local_time = 1;
    opts.on_wait = app_job_on_wait;
    opts.on_wait_arg = job;
    in[0] = c->in;
    out[0] = c->out;
    t0 = tpu__now_s();
    status = tpu_coll_exec_run(c->exec, &opts, in, out, modeled_us_p, err);
    *wall_s_p = tpu__now_s() - t0;
    return status;
}

long app_case_wrong(const app_case_t *c, int chip)
{
    if (c->desc.kind == TPU_COLL_P2P && chip != c->desc.dst) {
        return 0;
    }
    return (long)tpu_coll_count_wrong(c->out, c->ref, c->out_bytes, c->desc.dtype);
}
