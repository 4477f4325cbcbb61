/*
 * tpuemu replay --compare A.hlo B.hlo: the two replays side by side (the
 * figures of each report, B - A), and the collectives that differ, matched by
 * (kind, axes, bytes): a collective both modules run the same number of times
 * is the same; any other is listed with each side's executions and total time.
 */
#include "replay_compare.h"

#include "alloc.h"

#include <stdlib.h>
#include <string.h>

typedef struct ckey {
    const char *kind;
    char axes[16];
    uint64_t bytes;
    int64_t exec[2];
    double total[2];
} ckey_t;

static int by_diff(const void *x, const void *y)
{
    const ckey_t *p = x, *q = y;
    double dp = p->total[1] - p->total[0], dq = q->total[1] - q->total[0];

    dp = dp < 0 ? -dp : dp;
    dq = dq < 0 ? -dq : dq;
    return dp != dq ? (dp < dq) - (dp > dq) : strcmp(p->kind, q->kind);
}

/* The collectives of both reports by (kind, axes, bytes); NULL when out of memory. */
static ckey_t *collect(const tpu_replay_report_t *a, const tpu_replay_report_t *b, int *n_p)
{
    const tpu_replay_report_t *r[2] = {a, b};
    ckey_t *k = tpu__calloc((size_t)(a->ncolls + b->ncolls) + 1, sizeof(ckey_t));
    int n = 0, s, i, j;

    if (k == NULL) {
        *n_p = 0;
        return NULL;
    }
    for (s = 0; s < 2; s++) {
        for (i = 0; i < r[s]->ncolls; i++) {
            const tpu_replay_coll_t *c = &r[s]->colls[i];
            const char *kind = tpu_coll_name(c->desc.kind);

            if (c->executions == 0) {
                continue;
            }
            for (j = 0; j < n; j++) {
                if (strcmp(k[j].kind, kind) == 0 && strcmp(k[j].axes, c->axes) == 0 &&
                    k[j].bytes == c->bytes) {
                    break;
                }
            }
            if (j == n) {
                k[n].kind = kind;
                snprintf(k[n].axes, sizeof(k[n].axes), "%s", c->axes);
                k[n].bytes = c->bytes;
                n++;
            }
            k[j].exec[s] += c->executions;
            k[j].total[s] += c->modeled_us * (double)c->executions;
        }
    }
    /* Keep the ones that differ. */
    for (i = j = 0; i < n; i++) {
        if (k[i].exec[0] != k[i].exec[1]) {
            k[j++] = k[i];
        }
    }
    qsort(k, (size_t)j, sizeof(*k), by_diff);
    *n_p = j;
    return k;
}

static void row(FILE *out, const char *what, double x, double y, const char *unit)
{
    fprintf(out, "  %-22s %16.3f %16.3f %16.3f  %s\n", what, x, y, y - x, unit);
}

void app_replay_print_compare(FILE *out, const app_replay_side_t *sa, const app_replay_side_t *sb)
{
    const tpu_replay_report_t *a = sa->rep, *b = sb->rep;
    int n = 0, i;
    ckey_t *k = collect(a, b, &n);
    const double gib = 1024.0 * 1024 * 1024;

    fprintf(out, "A  %s (%s): %d devices on %s %s\n", sa->mod->name, sa->path, a->devices,
            tpu_pod_chip(sa->pod)->name, tpu_pod_shape(sa->pod));
    fprintf(out, "B  %s (%s): %d devices on %s %s\n\n", sb->mod->name, sb->path, b->devices,
            tpu_pod_chip(sb->pod)->name, tpu_pod_shape(sb->pod));
    fprintf(out, "  %-22s %16s %16s %16s\n", "", "A", "B", "B - A");
    row(out, "step", a->step_us, b->step_us, "us");
    row(out, "scheduled step", a->scheduled_step_us, b->scheduled_step_us, "us");
    row(out, "compute", a->compute_us, b->compute_us, "us");
    row(out, "comm", a->comm_us, b->comm_us, "us");
    row(out, "exposed comm", a->exposed_comm_us, b->exposed_comm_us, "us");
    row(out, "HBM peak", a->hbm_peak_bytes / gib, b->hbm_peak_bytes / gib, "GiB per chip");
    row(out, "HBM traffic", a->hbm_bytes / gib, b->hbm_bytes / gib, "GiB per chip");
    row(out, "GFLOP", a->flops / 1e9, b->flops / 1e9, "per chip");
    fprintf(out, "  %-22s %16s %16s\n", "fits in HBM", a->hbm_over ? "NO" : "yes",
            b->hbm_over ? "NO" : "yes");
    fprintf(out, "\ncollectives that differ (kind, axes, bytes; %d)\n", n);
    if (n > 0) {
        fprintf(out, "  %-16s %-6s %14s %8s %8s %14s %14s\n", "kind", "axes", "bytes", "exec A",
                "exec B", "total_us A", "total_us B");
    }
    for (i = 0; i < n; i++) {
        fprintf(out, "  %-16s %-6s %14llu %8lld %8lld %14.3f %14.3f\n", k[i].kind, k[i].axes,
                (unsigned long long)k[i].bytes, (long long)k[i].exec[0], (long long)k[i].exec[1],
                k[i].total[0], k[i].total[1]);
    }
    tpu__free(k);
}

static void side_json(app_json_t *j, const char *key, const app_replay_side_t *s)
{
    const tpu_replay_report_t *r = s->rep;

    app_json_kobject(j, key);
    app_json_kstr(j, "file", s->path);
    app_json_kstr(j, "module", s->mod->name);
    app_json_kint(j, "devices", r->devices);
    app_json_kstr(j, "chip", tpu_pod_chip(s->pod)->name);
    app_json_kstr(j, "topology", tpu_pod_shape(s->pod));
    app_json_kfixed(j, "step_us", r->step_us, 6);
    app_json_kfixed(j, "scheduled_step_us", r->scheduled_step_us, 6);
    app_json_kfixed(j, "compute_us", r->compute_us, 6);
    app_json_kfixed(j, "comm_us", r->comm_us, 6);
    app_json_kfixed(j, "exposed_comm_us", r->exposed_comm_us, 6);
    app_json_kfixed(j, "hbm_peak_bytes", r->hbm_peak_bytes, 0);
    app_json_kfixed(j, "hbm_capacity_bytes", r->hbm_capacity_bytes, 0);
    app_json_kfixed(j, "hbm_traffic_bytes", r->hbm_bytes, 0);
    app_json_kbool(j, "hbm_fits", !r->hbm_over);
    app_json_object_end(j);
}

void app_replay_compare_json(app_json_t *j, const app_replay_side_t *a, const app_replay_side_t *b)
{
    int n = 0, i;
    ckey_t *k = collect(a->rep, b->rep, &n);

    app_json_document(j, "replay");
    side_json(j, "a", a);
    side_json(j, "b", b);
    app_json_karray(j, "collectives");
    for (i = 0; i < n; i++) {
        app_json_object(j);
        app_json_kstr(j, "collective", k[i].kind);
        app_json_kstr(j, "axes", k[i].axes);
        app_json_kuint(j, "bytes", (unsigned long long)k[i].bytes);
        app_json_kint(j, "executions_a", (long long)k[i].exec[0]);
        app_json_kint(j, "executions_b", (long long)k[i].exec[1]);
        app_json_kfixed(j, "total_us_a", k[i].total[0], 6);
        app_json_kfixed(j, "total_us_b", k[i].total[1], 6);
        app_json_object_end(j);
    }
    app_json_array_end(j);
    app_json_object_end(j);
    tpu__free(k);
}
