/*
 * tpuemu replay MODULE.hlo: what a compiled XLA module would cost on the pod.
 *
 *   tpuemu replay MODULE.hlo [pod options] [--module N] [--list] [--device-order LIST]
 *                 [--trip-count NAME=K,...] [--custom-call-us NAME=US,...] [--top N]
 *                 [--by-source N] [--compare A.hlo]
 *                 [--json FILE|-] [--trace FILE [--trace-measured]] [--heatmap FILE.svg]
 *                 [--timeout S] [--inject crash|stop:chip=C,call=N]
 *
 * Reads the HLO text (the library's parser, include/tpu/hlo.h), picks one module
 * (--module N counts from 1; by default the first whose device count equals the
 * pod's chips; without --topology a module of another count runs on the chip's
 * default slice for it), replays it (include/tpu/replay.h) and prints the step
 * time, the compute / communication split, the exposed communication, the
 * schedule estimate, the HBM peak, the backend, the loops, every collective,
 * the top ops and the largest buffers at the peak (--by-source: the time by
 * JAX op path; --compare: two modules side by side).  Bad input: one line
 * "tpuemu: ..." and exit 2.
 */
#include "replay.h"

#include "tpu/hlo.h"
#include "tpu/replay.h"

#include "alloc.h"
#include "csv.h"
#include "faults.h"
#include "file.h"
#include "jobenv.h"
#include "podsetup.h"
#include "replay_compare.h"
#include "replay_mpi.h"
#include "replay_out.h"
#include "replay_source.h"
#include "report.h"
#include "sink.h"
#include "watch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_HLO_BYTES ((long)1 << 31)

tpu_status_t app_replay_check(const app_opts_t *o, tpu_err_t *err)
{
    if (o->list && (o->module || o->device_order || o->trips.n || o->customs.n || o->top != 20 ||
                    o->json || o->entry || o->by_source || o->compare)) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "--list only lists the modules of the file: drop --%s",
                           o->module         ? "module"
                           : o->device_order ? "device-order"
                           : o->trips.n      ? "trip-count"
                           : o->customs.n    ? "custom-call-us"
                           : o->json         ? "json"
                           : o->entry        ? "entry"
                           : o->by_source    ? "by-source"
                           : o->compare      ? "compare"
                                             : "top");
    }
    if (o->module_path == NULL) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "replay needs a module file: tpuemu replay MODULE.hlo (see --help)");
    }
    if (app_sink_check(o->json, o->csv, err) != TPU_OK) {
        return TPU_ERR_INVALID;
    }
    if (o->trace_measured && !app_jobenv_launched()) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "--trace-measured needs a run under mpirun (without it replay "
                           "measures nothing)");
    }
    if (o->compare != NULL && app_jobenv_launched()) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "--compare replays two modules without running them: run it without "
                           "mpirun");
    }
    if (o->compare != NULL && (o->csv || o->trace || o->heatmap || o->by_source)) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "--compare prints the two modules side by side (text, or --json): "
                           "drop --%s",
                           o->csv       ? "csv"
                           : o->trace   ? "trace"
                           : o->heatmap ? "heatmap"
                                        : "by-source");
    }
    if (o->inject != NULL && !app_jobenv_launched()) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "--inject needs a run under mpirun (without it replay runs no "
                           "collective)");
    }
    return TPU_OK;
}

static tpu_status_t read_file(const char *path, char **buf_p, size_t *len_p, tpu_err_t *err)
{
    char why[96], *buf = NULL;
    FILE *f = tpu__fopen_regular(path, why, sizeof(why));
    size_t len = 0, cap = 0, n;

    if (f == NULL) {
        return tpu_err_set(err, TPU_ERR_INVALID, "cannot read '%s': %s", path, why);
    }
    for (;;) {
        if (cap - len < 65536) {
            char *nb;

            cap = cap ? cap * 2 : 1 << 20;
            if (cap > (size_t)MAX_HLO_BYTES) {
                tpu__free(buf);
                fclose(f);
                return tpu_err_set(err, TPU_ERR_INVALID, "'%s' is larger than %ld bytes", path,
                                   MAX_HLO_BYTES);
            }
            nb = tpu__realloc(buf, cap);
            if (nb == NULL) {
                tpu__free(buf);
                fclose(f);
                return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory reading '%s'", path);
            }
            buf = nb;
        }
        n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0) {
            break;
        }
    }
    if (ferror(f)) {
        tpu__free(buf);
        fclose(f);
        return tpu_err_set(err, TPU_ERR_INVALID, "cannot read '%s'", path);
    }
    fclose(f);
    *buf_p = buf;
    *len_p = len;
    return TPU_OK;
}

static tpu_status_t parse_order(const char *text, int32_t **order_p, int *n_p, tpu_err_t *err)
{
    int32_t *v = NULL;
    int n = 0, cap = 0;
    const char *p = text;

    while (*p != '\0') {
        char *end;
        long x;

        errno = 0;
        x = strtol(p, &end, 10);
        if (*p == ',' || (*end == ',' && end[1] == '\0')) {
            tpu__free(v);
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "--device-order '%s': item %d is empty (%s); expected chip ids "
                               "separated by commas",
                               text, n + 1 + (*p != ','),
                               *p == ',' ? "two commas, or one at the start" : "a trailing comma");
        }
        if (end == p || errno != 0 || x < 0 || x >= TPU_MAX_CHIPS || (*end != ',' && *end != 0)) {
            tpu__free(v);
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "--device-order '%s': expected chip ids separated by commas", text);
        }
        if (n == cap) {
            int32_t *nv;

            cap = cap ? cap * 2 : 64;
            nv = tpu__realloc(v, (size_t)cap * sizeof(int32_t));
            if (nv == NULL) {
                tpu__free(v);
                return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory");
            }
            v = nv;
        }
        v[n++] = (int32_t)x;
        p = *end == ',' ? end + 1 : end;
    }
    *order_p = v;
    *n_p = n;
    return TPU_OK;
}

/*
 * More collective executions per step than a replay unrolls (TPU_REPLAY_MAX_SEQ):
 * refused alike in one process and under mpirun, where each is run with real bytes.
 */
static tpu_status_t too_much_work(const tpu_hlo_module_t *mod, const tpu_replay_report_t *rep,
                                  tpu_err_t *err)
{
    const tpu_replay_coll_t *big = NULL;
    int i;

    for (i = 0; i < rep->ncolls; i++) {
        if (big == NULL || rep->colls[i].executions > big->executions) {
            big = &rep->colls[i];
        }
    }
    return tpu_err_set(err, TPU_ERR_INVALID,
                       "%s:%d:1: the module runs more than %d collective executions per step once "
                       "its loops are unrolled ('%s' alone %lld times); lower its loops' counts "
                       "with --trip-count NAME=K",
                       mod->file, big != NULL ? big->line : mod->line, TPU_REPLAY_MAX_SEQ,
                       big != NULL ? big->name : "?",
                       big != NULL ? (long long)big->executions : 0LL);
}

/*
 * The chip's default slice for 'n' chips over its 2 or 3 ICI axes: powers of two
 * doubled on the smallest axis (the last of equals: v5e 8 -> 2x4, 16 -> 4x4; v5p
 * 16 -> 2x2x4, 64 -> 4x4x4); other counts the most even factors, smallest first
 * (v5e 20 -> 4x5, 30 -> 5x6).
 */
static void default_slice(const tpu_chip_spec_t *chip, int n, char *buf, size_t size)
{
    int dims[3] = {1, 1, 1}, naxes = chip->ici_axes == 3 ? 3 : 2, prod = 1, a, best, rest = n;

    if (n >= 1 && (n & (n - 1)) == 0) {
        while (prod < n) {
            for (best = naxes - 1, a = naxes - 1; a >= 0; a--) {
                best = dims[a] < dims[best] ? a : best;
            }
            dims[best] *= 2;
            prod *= 2;
        }
    } else {
        /* Each axis in turn: the largest divisor of what is left that is at most
         * its even share (the cube root, then the square root). */
        for (a = 0; a < naxes - 1; a++) {
            int d, share = 1;

            while ((naxes - a == 3 ? share * share * share : share * share) <= rest) {
                share++;
            }
            for (d = share - 1; d > 1 && rest % d != 0; d--) {
            }
            dims[a] = d > 1 ? d : 1;
            rest /= dims[a];
        }
        dims[naxes - 1] = rest;
    }
    if (naxes == 3) {
        snprintf(buf, size, "%dx%dx%d", dims[0], dims[1], dims[2]);
    } else {
        snprintf(buf, size, "%dx%d", dims[0], dims[1]);
    }
}

/* One module file, parsed and replayed on its pod. */
typedef struct loaded {
    char *text;
    tpu_hlo_file_t *hf;
    int m; /* the module replayed, from 0 */
    const tpu_hlo_module_t *mod;
    tpu_replay_report_t *rep;
    tpu_pod_t *pod_local;
    const tpu_pod_t *pod;
    char slice[32]; /* the default slice taken without --topology; "" otherwise */
} loaded_t;

static void loaded_fini(loaded_t *L)
{
    tpu_replay_report_destroy(L->rep);
    tpu_hlo_file_destroy(L->hf);
    tpu__free(L->text);
    tpu_pod_destroy(L->pod_local);
    memset(L, 0, sizeof(*L));
}

/* Every --trip-count names a while loop and every --custom-call-us a custom-call of 'mod'. */
static tpu_status_t check_names(const app_opts_t *o, const tpu_hlo_module_t *mod, tpu_err_t *err)
{
    int i;

    for (i = 0; i < o->trips.n; i++) {
        int found = 0, c, k;

        for (c = 0; c < mod->ncomps && !found; c++) {
            for (k = 0; k < mod->comps[c].ninstrs; k++) {
                if (mod->comps[c].instrs[k].op == TPU_HLO_OP_WHILE &&
                    strcmp(mod->comps[c].instrs[k].name, o->trips.names[i]) == 0) {
                    found = 1;
                }
            }
        }
        if (!found) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "--trip-count %s: the module has no while loop named '%s'",
                               o->trips.names[i], o->trips.names[i]);
        }
    }
    /* A --custom-call-us that names no custom-call (by name or target) would be
     * dropped without a word. */
    for (i = 0; i < o->customs.n; i++) {
        int found = 0, c, k;

        for (c = 0; c < mod->ncomps && !found; c++) {
            for (k = 0; k < mod->comps[c].ninstrs && !found; k++) {
                const tpu_hlo_instr_t *in = &mod->comps[c].instrs[k];

                found = in->op == TPU_HLO_OP_CUSTOM_CALL &&
                        (strcmp(in->name, o->customs.names[i]) == 0 ||
                         (in->custom_call_target != NULL &&
                          strcmp(in->custom_call_target, o->customs.names[i]) == 0));
            }
        }
        if (!found) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "--custom-call-us %s: the module has no custom-call named or "
                               "targeting '%s'",
                               o->customs.names[i], o->customs.names[i]);
        }
    }
    return TPU_OK;
}

/*
 * Read, parse and replay 'path': on 'job_pod' under mpirun, else on the pod of
 * the flags; without --topology (nor a config file) a module whose device count
 * is not the default pod's runs on the chip's default slice for its count.
 */
static tpu_status_t load_replay(const app_opts_t *o, const char *path, const tpu_pod_t *job_pod,
                                const int32_t *order, int norder, int timeline, loaded_t *L,
                                tpu_err_t *err)
{
    tpu_replay_opts_t ropts;
    size_t len = 0;
    tpu_status_t status;
    int m;

    memset(L, 0, sizeof(*L));
    status = read_file(path, &L->text, &len, err);
    if (status == TPU_OK) {
        status = tpu_hlo_parse(L->text, len, path, &L->hf, err);
    }
    for (m = 0; status == TPU_OK && m < L->hf->nmodules; m++) {
        status = tpu_hlo_verify(&L->hf->modules[m], err);
    }
    if (status != TPU_OK) {
        return status;
    }
    L->pod = job_pod;
    if (job_pod == NULL) {
        status = app_pod_setup(o, &L->pod_local, err);
        if (status != TPU_OK) {
            return status;
        }
        L->pod = L->pod_local;
    }
    if (o->module > L->hf->nmodules) {
        return tpu_err_set(err, TPU_ERR_INVALID, "--module %d: '%s' holds %d module%s", o->module,
                           path, L->hf->nmodules, L->hf->nmodules > 1 ? "s" : "");
    }
    L->m = o->module - 1;
    if (L->m < 0) {
        for (L->m = 0; L->m < L->hf->nmodules; L->m++) {
            if (tpu_replay_device_count(&L->hf->modules[L->m]) == tpu_pod_topo(L->pod)->nchips) {
                break;
            }
        }
        if (L->m == L->hf->nmodules) {
            L->m = 0;
        }
    }
    L->mod = &L->hf->modules[L->m];
    if (job_pod == NULL && o->topology == NULL && o->config == NULL &&
        tpu_replay_device_count(L->mod) != tpu_pod_topo(L->pod)->nchips) {
        app_opts_t o2 = *o;
        tpu_pod_t *dflt = NULL;
        tpu_err_t e2 = {0};

        default_slice(tpu_pod_chip(L->pod), tpu_replay_device_count(L->mod), L->slice,
                      sizeof(L->slice));
        o2.topology = L->slice;
        if (app_pod_setup(&o2, &dflt, &e2) == TPU_OK) {
            tpu_pod_destroy(L->pod_local);
            L->pod = L->pod_local = dflt;
        } else {
            L->slice[0] = '\0'; /* no such slice: the replay names the device count */
        }
    }
    memset(&ropts, 0, sizeof(ropts));
    ropts.device_order = order;
    ropts.ndevice_order = norder;
    ropts.ntrips = o->trips.n;
    ropts.trip_names = (const char *const *)o->trips.names;
    ropts.trip_counts = o->trips.ivalues;
    ropts.ncustom = o->customs.n;
    ropts.custom_names = (const char *const *)o->customs.names;
    ropts.custom_us = o->customs.values;
    ropts.timeline = timeline;
    ropts.entry = o->entry;
    status = tpu_replay_run(L->mod, tpu_pod_topo(L->pod), tpu_pod_link(L->pod),
                            tpu_pod_chip(L->pod), &ropts, &L->rep, err);
    if (status == TPU_OK && L->rep->seq_truncated) {
        status = too_much_work(L->mod, L->rep, err);
    }
    if (status != TPU_OK) {
        return status;
    }
    return check_names(o, L->mod, err);
}

int app_cmd_replay(app_ctx_t *ctx)
{
    const app_opts_t *o = ctx->o;
    app_job_t *job = ctx->job;
    app_replay_measured_t ms;
    int mpi = job != NULL, rank0 = 1;
    tpu_err_t err = {0};
    FILE *txt;
    app_sink_t sink = {NULL, NULL}, csv_sink = {NULL, NULL};
    loaded_t L, A;
    app_replay_side_t sa, sb;
    tpu_replay_report_t *rep;
    app_report_t report;
    double *spans = NULL;
    int32_t *order = NULL;
    int norder = 0, m, i, rc = APP_EXIT_USAGE, *ci = NULL, *oi = NULL;
    const tpu_hlo_module_t *mod;
    const tpu_pod_t *pod;
    tpu_status_t status;

    memset(&ms, 0, sizeof(ms));
    memset(&report, 0, sizeof(report));
    memset(&L, 0, sizeof(L));
    memset(&A, 0, sizeof(A));
    if (mpi) {
        rank0 = job->world_rank == 0;
        if (!o->list) {
            /* Every rank learns whether rank 0 could open the files. */
            rc = app_job_report_open(job, o, "replay", &report);
            if (rc >= 0) {
                return rc;
            }
            rc = APP_EXIT_USAGE;
        }
    }
    if (o->device_order != NULL && parse_order(o->device_order, &order, &norder, &err) != TPU_OK) {
        goto fail;
    }
    if (o->list) {
        size_t len = 0;

        if (read_file(o->module_path, &L.text, &len, &err) != TPU_OK ||
            tpu_hlo_parse(L.text, len, o->module_path, &L.hf, &err) != TPU_OK) {
            goto fail;
        }
        for (m = 0; m < L.hf->nmodules; m++) {
            if (tpu_hlo_verify(&L.hf->modules[m], &err) != TPU_OK) {
                goto fail;
            }
        }
        for (m = 0; m < L.hf->nmodules && rank0; m++) {
            const tpu_hlo_module_t *x = &L.hf->modules[m];

            int nd = tpu_replay_device_count(x);

            printf("%d  %-40s line %-6d %5d device%s %d computation%s\n", m + 1,
                   x->name[0] ? x->name : "(no header)", x->line, nd, nd == 1 ? " " : "s",
                   x->ncomps, x->ncomps == 1 ? "" : "s");
        }
        rc = APP_EXIT_OK;
        goto out;
    }
    if (o->compare != NULL) {
        /* Two modules side by side: A (--compare) and the operand. */
        if (load_replay(o, o->compare, NULL, order, norder, 0, &A, &err) != TPU_OK ||
            load_replay(o, o->module_path, NULL, order, norder, 0, &L, &err) != TPU_OK) {
            goto fail;
        }
        if (!o->quiet) {
            for (i = 0; i < A.rep->nwarnings; i++) {
                fprintf(stderr, "tpuemu: warning: A: %s\n", A.rep->warnings[i]);
            }
            for (i = 0; i < L.rep->nwarnings; i++) {
                fprintf(stderr, "tpuemu: warning: B: %s\n", L.rep->warnings[i]);
            }
        }
        if (o->json != NULL && app_sink_open(&sink, o->json, &err) != TPU_OK) {
            goto fail;
        }
        txt = app_sink_text(o->json, o->csv);
        sa.path = o->compare;
        sa.pod = A.pod;
        sa.mod = A.mod;
        sa.rep = A.rep;
        sb.path = o->module_path;
        sb.pod = L.pod;
        sb.mod = L.mod;
        sb.rep = L.rep;
        app_replay_print_compare(txt, &sa, &sb);
        if (o->json != NULL) {
            app_json_t j;

            app_json_init(&j, sink.f);
            app_replay_compare_json(&j, &sa, &sb);
            if (app_json_end(&j, &err) != TPU_OK || app_sink_close(&sink, &err) != TPU_OK) {
                app_die_msg(err.msg);
                rc = APP_EXIT_FAIL;
                goto out;
            }
        }
        rc = APP_EXIT_OK;
        goto out;
    }
    if (load_replay(o, o->module_path, mpi ? ctx->pod : NULL, order, norder,
                    mpi ? report.trace != NULL : o->trace != NULL, &L, &err) != TPU_OK) {
        goto fail;
    }
    pod = L.pod;
    mod = L.mod;
    rep = L.rep;
    m = L.m;
    if (!mpi && (o->trace != NULL || o->heatmap != NULL || o->trace_measured)) {
        char title[256];

        snprintf(title, sizeof(title), "tpuemu replay %s: %d chips of %s as %s (wrap %s)",
                 o->module_path, tpu_pod_topo(pod)->nchips, tpu_pod_chip(pod)->name,
                 tpu_pod_shape(pod), tpu_pod_wrap(pod));
        if (app_report_open(&report, o, pod, title, &err) != TPU_OK) {
            goto fail;
        }
    }
    {
        int n = rep->ncolls > rep->nops ? rep->ncolls : rep->nops;
        double *total = tpu__malloc(sizeof(double) * (size_t)(n + 1));

        if (total != NULL) {
            for (i = 0; i < rep->ncolls; i++) {
                total[i] = rep->colls[i].modeled_us * (double)rep->colls[i].executions;
            }
            ci = app_replay_rank_rows(rep->ncolls, total);
            for (i = 0; i < rep->nops; i++) {
                total[i] = rep->ops[i].modeled_us * (double)rep->ops[i].executions;
            }
            oi = app_replay_rank_rows(rep->nops, total);
            tpu__free(total);
        }
    }
    if (ci == NULL || oi == NULL) {
        /* One rank alone may fail here: under mpirun, it ends the job-> */
        if (mpi) {
            app_job_abort(job, "out of host memory for the replay's tables");
        }
        app_die_msg("out of memory");
        rc = APP_EXIT_FAIL;
        goto out;
    }
    if (mpi) {
        status = app_replay_run_mpi(job, rep, &ms, o->quiet ? NULL : app_sink_text(o->json, o->csv),
                                    &err);
        if (status != TPU_OK) {
            goto fail;
        }
        if (o->trace_measured) {
            /* Every rank's executions, to rank 0 (with the watchdog). */
            if (rank0) {
                spans =
                    tpu__malloc(2 * sizeof(double) * (size_t)(ms.nspans + 1) * (size_t)job->nranks);
                if (spans == NULL) {
                    app_job_abort(job, "out of host memory for the measured trace");
                }
            }
            app_job_gather(job, ms.spans, (int)(2 * sizeof(double) * (size_t)ms.nspans), spans, 0,
                           "the gather of the measured executions");
        }
    }
    if (!rank0) {
        rc = APP_EXIT_OK;
        goto out;
    }
    if (!o->quiet) {
        for (i = 0; i < rep->nwarnings; i++) {
            fprintf(stderr, "tpuemu: warning: %s\n", rep->warnings[i]);
        }
    }
    /* Open the JSON and CSV targets first: one that cannot be written is the only line. */
    if (o->json != NULL && app_sink_open(&sink, o->json, &err) != TPU_OK) {
        goto fail;
    }
    if (o->csv != NULL && app_sink_open(&csv_sink, o->csv, &err) != TPU_OK) {
        goto fail;
    }
    txt = app_sink_text(o->json, o->csv);
    if (app_report_active(&report)) {
        status =
            app_replay_write_report(&report, pod, mod, rep, spans, ms.nspans, txt, o->quiet, &err);
        if (status == TPU_OK) {
            status = app_report_close(&report, &err);
        }
        if (status != TPU_OK) {
            app_die_msg(err.msg);
            rc = APP_EXIT_FAIL;
            goto out;
        }
    }
    if (L.slice[0] != '\0') {
        fprintf(txt,
                "(no --topology: the module runs on %d devices, so %s, the %s's default "
                "slice for them)\n",
                rep->devices, L.slice, tpu_pod_chip(pod)->name);
    }
    app_replay_print_text(txt, pod, o->module_path, m, L.hf->nmodules, mod, rep, ci, oi, o->top);
    if (o->by_source > 0) {
        app_replay_print_by_source(txt, rep, o->by_source);
    }
    if (mpi) {
        app_replay_print_measured(txt, rep, &ms, ci, job->nranks);
    }
    if (o->json != NULL) {
        app_json_t j;

        app_json_init(&j, sink.f);
        app_replay_write_json(&j, pod, o->module_path, m, mod, rep, ci, oi, mpi ? &ms : NULL,
                              o->by_source);
        status = app_json_end(&j, &err);
        if (app_sink_close(&sink, &err) != TPU_OK || status != TPU_OK) {
            if (rank0) {
                app_die_msg(err.msg);
            }
            rc = APP_EXIT_FAIL;
            goto out;
        }
    }
    if (o->csv != NULL) {
        app_replay_write_csv(csv_sink.f, pod, rep, ci, oi, mpi ? &ms : NULL);
        if (app_sink_close(&csv_sink, &err) != TPU_OK) {
            app_die_msg(err.msg);
            rc = APP_EXIT_FAIL;
            goto out;
        }
    }
    rc = ms.total_wrong > 0 || ms.model_mismatches > 0 ? APP_EXIT_FAIL : APP_EXIT_OK;
    goto out;
fail:
    if (rank0) {
        app_die_msg(err.msg);
    }
    app_sink_discard(&sink); /* the old files stay as they were */
    app_sink_discard(&csv_sink);
    rc = err.status == TPU_ERR_NO_MEMORY ? APP_EXIT_FAIL : APP_EXIT_USAGE;
out:
    app_sink_close(&sink, NULL);
    app_sink_close(&csv_sink, NULL);
    app_report_close(&report, NULL);
    tpu__free(spans);
    app_replay_measured_fini(&ms);
    tpu__free(ci);
    tpu__free(oi);
    tpu__free(order);
    loaded_fini(&L);
    loaded_fini(&A);
    if (mpi) {
        return app_job_end(job, rc);
    }
    return rc;
}
