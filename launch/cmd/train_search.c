/*
 * The sharding search of train --model transformer --model-only --search:
 * every layout of the pod, dcn = the slices times data x fsdp x sequence x
 * tensor = the chips of a slice (each a divisor, in that mesh order, tensor
 * the fastest-varying), times the remat policies (none, minimal, full; only
 * --remat's when given), with the global batch (--batch) fixed.  Each is
 * modeled by the step cost model (tpu_xfmr_cost_run_plan()); those a
 * dimension does not divide over, or that do not fit the chip's HBM, are
 * dropped; the rest are ranked by step time (a first pass without the
 * collectives bounds each step from below, so only the layouts that can reach
 * the top 10 are modeled in full; one whose collective the engine cannot plan,
 * out of memory, is left out and counted, with the first one's message).
 * Printed: the top 10 (layout,
 * step, MFU, communication share, exposed communication, HBM peak) and why
 * the best beats the next; --json writes those modeled in full, ranked, under
 * 'layouts'.
 */
#include "train_search.h"

#include "tpu/transformer_presets.h"

#include "alloc.h"
#include "faults.h"
#include "jobenv.h"
#include "json.h"
#include "sink.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct layout {
    char mesh[96];
    int remat;
    double step_us, compute_us, comm_us, exposed_us, mfu;
    uint64_t hbm_peak;
} layout_t;

static const char *const remat_names[] = {"none", "minimal", "full"};

static int by_step(const void *a, const void *b)
{
    const layout_t *x = a, *y = b;

    return x->step_us < y->step_us ? -1 : x->step_us > y->step_us ? 1 : 0;
}

/* The mesh spec of dcn x data x fsdp x sequence x tensor (size-1 axes left out). */
static void spec(char *buf, size_t len, int dcn, int d, int f, int s, int t)
{
    const char *names[] = {"dcn", "data", "fsdp", "sequence", "tensor"};
    const int sizes[] = {dcn, d, f, s, t};
    size_t at = 0;
    int i;

    buf[0] = '\0';
    for (i = 0; i < 5; i++) {
        if (sizes[i] > 1 || (i == 1 && d * f * s * t == 1 && dcn == 1)) {
            at +=
                (size_t)snprintf(buf + at, len - at, "%s%s=%d", at ? "," : "", names[i], sizes[i]);
        }
    }
}

/* One layout modeled; 0 when a dimension does not divide over an axis (or, in full, when
 * the engine cannot plan one of its collectives: its message into 'why'). */
static int model_one(const tpu_pod_t *pod, const tpu_xfmr_config_t *m, const tpu_xfmr_plan_t *p,
                     int bound, layout_t *l, char *why, size_t len)
{
    tpu_xfmr_plan_t q = *p;
    tpu_xfmr_cost_t c;
    tpu_err_t e = {0};

    q.remat = (tpu_xfmr_remat_t)l->remat;
    q.bound_only = bound;
    if (tpu_xfmr_cost_run_plan(pod, m, &q, l->mesh, &c, &e) != TPU_OK) {
        snprintf(why, len, "%s", e.msg);
        return 0;
    }
    l->step_us = c.step_us;
    l->compute_us = c.compute_us;
    l->comm_us = c.comm_us;
    l->exposed_us = c.exposed_comm_us;
    l->mfu = c.mfu;
    l->hbm_peak = c.hbm_peak_bytes;
    tpu_xfmr_cost_fini(&c);
    return 1;
}

/*
 * Model the layouts; the fitting ones ranked into *out (allocated).  Two passes:
 * every layout without its collectives (the compute and fixed cost: a lower
 * bound of its step, and its HBM), then, in the order of that bound, the full
 * model, until the next bound is no better than the tenth step found (no
 * later layout can enter the top 10).  *tried_p: layouts, *full_p: fully modeled.
 */
static tpu_status_t search(const app_opts_t *o, const tpu_pod_t *pod, const tpu_xfmr_config_t *m,
                           const tpu_xfmr_plan_t *p, layout_t **out, int *n_p, int *tried_p,
                           int *full_p, int *failed_p, char *first_why, size_t why_len,
                           tpu_err_t *err)
{
    char why[TPU_ERR_MSG_LEN];

    const int chips = tpu_pod_topo(pod)->nchips, dcn = o->slices > 1 ? o->slices : 1;
    const int per = chips / dcn;
    const uint64_t cap = (uint64_t)tpu_pod_chip(pod)->hbm_bytes;
    int n = 0, capn = 64, tried = 0, full = 0, t, s, f, r, i;
    layout_t *ls = tpu__calloc((size_t)capn, sizeof(*ls));
    tpu_xfmr_plan_t q = *p;

    q.cache = tpu_xfmr_time_cache_create();
    p = &q;
    if (ls == NULL || q.cache == NULL) {
        tpu__free(ls);
        tpu_xfmr_time_cache_destroy(q.cache);
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "search: no memory");
    }
    for (t = 1; t <= per; t++) {
        for (s = 1; per % t == 0 && s <= per / t; s++) {
            for (f = 1; (per / t) % s == 0 && f <= per / t / s; f++) {
                for (r = 0; (per / t / s) % f == 0 && r < 3; r++) {
                    layout_t *l;

                    if (o->remat != NULL && r != (int)p->remat) {
                        continue;
                    }
                    if (n == capn) {
                        layout_t *g = tpu__realloc(ls, (size_t)capn * 2 * sizeof(*ls));

                        if (g == NULL) {
                            tpu__free(ls);
                            tpu_xfmr_time_cache_destroy(q.cache);
                            return tpu_err_set(err, TPU_ERR_NO_MEMORY, "search: no memory");
                        }
                        ls = g;
                        capn *= 2;
                    }
                    l = &ls[n];
                    memset(l, 0, sizeof(*l));
                    spec(l->mesh, sizeof(l->mesh), dcn, per / t / s / f, f, s, t);
                    l->remat = r;
                    tried++;
                    n += model_one(pod, m, p, 1, l, why, sizeof(why)) && l->hbm_peak <= cap;
                }
            }
        }
    }
    qsort(ls, (size_t)n, sizeof(*ls), by_step); /* by the bound */
    for (i = 0; i < n; i++) {
        if (i >= 10) { /* the tenth best full step so far */
            layout_t *done = tpu__calloc((size_t)i, sizeof(*done));
            double tenth;

            if (done == NULL) {
                tpu__free(ls);
                tpu_xfmr_time_cache_destroy(q.cache);
                return tpu_err_set(err, TPU_ERR_NO_MEMORY, "search: no memory");
            }
            memcpy(done, ls, (size_t)i * sizeof(*done));
            qsort(done, (size_t)i, sizeof(*done), by_step);
            tenth = done[9].step_us;
            tpu__free(done);
            if (ls[i].step_us >= tenth) {
                break;
            }
        }
        if (!model_one(pod, m, p, 0, &ls[i], why, sizeof(why))) { /* not ranked */
            if ((*failed_p)++ == 0) {
                snprintf(first_why, why_len, "%s: %s", ls[i].mesh, why);
            }
            ls[i].step_us = HUGE_VAL;
        }
        full++;
    }
    qsort(ls, (size_t)full, sizeof(*ls), by_step); /* the unmodeled last */
    full -= *failed_p;
    tpu_xfmr_time_cache_destroy(q.cache);
    *out = ls;
    *n_p = full;
    *tried_p = tried;
    *full_p = n;
    return TPU_OK;
}

static void print(FILE *txt, const layout_t *ls, int n, int tried, int fit, int failed,
                  const char *why)
{
    int i;

    fprintf(txt,
            "search: %d layouts, %d fit HBM, %d modeled in full (the others bounded out by "
            "their compute alone); the fastest %d:\n",
            tried, fit, n, n < 10 ? n : 10);
    if (failed > 0) {
        fprintf(txt, "  %d layouts left out: the engine could not model them (the first, %s)\n",
                failed, why);
    }
    fprintf(txt, "  %-4s %-44s %-8s %14s %7s %10s %14s %10s\n", "rank", "mesh", "remat", "step_us",
            "mfu", "comm_share", "exposed_us", "hbm_GiB");
    for (i = 0; i < n && i < 10; i++) {
        const layout_t *l = &ls[i];

        fprintf(txt, "  %-4d %-44s %-8s %14.1f %6.2f%% %9.1f%% %14.1f %10.2f\n", i + 1, l->mesh,
                remat_names[l->remat], l->step_us, 100 * l->mfu,
                l->step_us > 0 ? 100 * l->comm_us / l->step_us : 0, l->exposed_us,
                (double)l->hbm_peak / (1 << 30));
    }
    if (n >= 2) {
        const layout_t *a = &ls[0], *b = &ls[1];

        fprintf(txt,
                "  best: %s remat %s, %.2f%% faster than %s remat %s: compute %.1f vs %.1f us, "
                "exposed communication %.1f vs %.1f us\n",
                a->mesh, remat_names[a->remat], 100 * (b->step_us / a->step_us - 1), b->mesh,
                remat_names[b->remat], a->compute_us, b->compute_us, a->exposed_us, b->exposed_us);
    } else if (n == 1) {
        fprintf(txt, "  best: %s remat %s, the only layout that fits\n", ls[0].mesh,
                remat_names[ls[0].remat]);
    }
}

/* "data=4,fsdp=64" as the map "mesh": {"data": 4, "fsdp": 64}, as every document has it. */
static void mesh_json(app_json_t *j, const char *mesh)
{
    const char *at = mesh;

    app_json_kobject(j, "mesh");
    while (*at != '\0') {
        const char *eq = strchr(at, '='), *end = strchr(at, ',');
        char axis[32];

        if (eq == NULL || (end != NULL && end < eq)) {
            break;
        }
        snprintf(axis, sizeof(axis), "%.*s", (int)(eq - at), at);
        app_json_kint(j, axis, strtol(eq + 1, NULL, 10));
        at = end != NULL ? end + 1 : eq + strlen(eq);
    }
    app_json_object_end(j);
}

static void write_json(app_json_t *j, const tpu_pod_t *pod, const layout_t *ls, int n, int tried,
                       int fit)
{
    int i;

    app_json_document(j, "train");
    app_pod_json_header(j, pod);
    app_json_kstr(j, "model", "transformer");
    app_json_kbool(j, "search", 1);
    app_json_kint(j, "tried", tried);
    app_json_kint(j, "fit", fit);
    app_json_karray(j, "layouts");
    for (i = 0; i < n; i++) {
        app_json_object(j);
        mesh_json(j, ls[i].mesh);
        app_json_kstr(j, "remat", remat_names[ls[i].remat]);
        app_json_kfixed(j, "step_us", ls[i].step_us, 3);
        app_json_kfixed(j, "compute_us", ls[i].compute_us, 3);
        app_json_kfixed(j, "comm_us", ls[i].comm_us, 3);
        app_json_kfixed(j, "exposed_comm_us", ls[i].exposed_us, 3);
        app_json_kfixed(j, "mfu", ls[i].mfu, 6);
        app_json_kuint(j, "hbm_peak_bytes", (unsigned long long)ls[i].hbm_peak);
        app_json_object_end(j);
    }
    app_json_array_end(j);
    app_json_object_end(j);
}

int app_train_search(const app_opts_t *o, const tpu_pod_t *pod, const tpu_xfmr_config_t *m,
                     const tpu_xfmr_plan_t *p, int root)
{
    FILE *txt = app_sink_text(o->json, o->csv);
    app_sink_t sink = {NULL, NULL};
    layout_t *ls = NULL;
    tpu_err_t err = {0};
    int n = 0, tried = 0, fit = 0, failed = 0, code = APP_EXIT_OK;
    char why[TPU_ERR_MSG_LEN + 100] = "";
    tpu_status_t status = app_sink_check(o->json, o->csv, &err);

    if (status == TPU_OK && o->csv != NULL) {
        status = tpu_err_set(&err, TPU_ERR_INVALID, "--search writes no CSV: use --json");
    }
    status = status == TPU_OK
                 ? search(o, pod, m, p, &ls, &n, &tried, &fit, &failed, why, sizeof(why), &err)
                 : status;
    if (status == TPU_OK && n == 0 && failed > 0) {
        status = tpu_err_set(&err, TPU_ERR_RESOURCE_EXHAUSTED,
                             "search: the engine could not model any of the %d layouts that fit "
                             "(the first, %s)",
                             failed, why);
    }
    if (status == TPU_OK && n == 0) {
        status = tpu_err_set(&err, TPU_ERR_RESOURCE_EXHAUSTED,
                             "search: none of the %d layouts fits the chip's HBM (or divides the "
                             "model)",
                             tried);
    }
    if (status != TPU_OK) {
        if (root) {
            app_die_msg(err.msg);
        }
        tpu__free(ls);
        return status == TPU_ERR_NO_MEMORY ? APP_EXIT_FAIL : APP_EXIT_USAGE;
    }
    if (root && !o->quiet) {
        print(txt, ls, n, tried, fit, failed, why);
    }
    if (root && o->json != NULL) {
        app_json_t j;

        status = app_sink_open(&sink, o->json, &err);
        if (status == TPU_OK) {
            app_json_init(&j, sink.f);
            write_json(&j, pod, ls, n, tried, fit);
            status = app_json_end(&j, &err);
        }
        if (app_sink_close(&sink, status == TPU_OK ? &err : NULL) != TPU_OK || status != TPU_OK) {
            app_die_msg(err.msg);
            code = APP_EXIT_FAIL;
        }
    }
    tpu__free(ls);
    return code;
}
