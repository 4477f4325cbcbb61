/*
 * tpuemu replay --by-source N: the replay's compute and collective rows
 * grouped by the first N parts of their metadata op_name (the JAX op path),
 * each group's compute time, communication time, FLOPs and share of the total.
 */
#include "replay_source.h"

#include "alloc.h"

#include <stdlib.h>
#include <string.h>

typedef struct group {
    char key[160];
    double compute_us, comm_us, flops;
} group_t;

static int by_total(const void *a, const void *b)
{
    const group_t *x = a, *y = b;
    double tx = x->compute_us + x->comm_us, ty = y->compute_us + y->comm_us;

    return tx != ty ? (tx < ty) - (tx > ty) : strcmp(x->key, y->key);
}

/* The first 'depth' '/'-separated parts of 'src'. */
static void key_of(const char *src, int depth, char *key, size_t size)
{
    size_t n = 0;
    int parts = 0;

    if (src == NULL || src[0] == '\0') {
        snprintf(key, size, "(no op_name)");
        return;
    }
    while (src[n] != '\0') {
        if (src[n] == '/' && ++parts == depth) {
            break;
        }
        n++;
    }
    snprintf(key, size, "%.*s", (int)(n < size - 1 ? n : size - 1), src);
}

static group_t *find_or_add(group_t **g, int *n, int *cap, const char *key)
{
    int k;

    for (k = 0; k < *n; k++) {
        if (strcmp((*g)[k].key, key) == 0) {
            return &(*g)[k];
        }
    }
    if (*n == *cap) {
        int ncap = *cap ? *cap * 2 : 32;
        group_t *ng = tpu__realloc(*g, (size_t)ncap * sizeof(group_t));

        if (ng == NULL) {
            return NULL;
        }
        *g = ng;
        *cap = ncap;
    }
    memset(&(*g)[*n], 0, sizeof(group_t));
    snprintf((*g)[*n].key, sizeof((*g)[*n].key), "%s", key);
    return &(*g)[(*n)++];
}

/* The groups, sorted; NULL (and *n_p 0) when out of memory. */
static group_t *groups_of(const tpu_replay_report_t *r, int depth, int *n_p)
{
    group_t *g = NULL, *x;
    int n = 0, cap = 0, i;
    char key[160];

    for (i = 0; i < r->nops; i++) {
        key_of(r->ops[i].source, depth, key, sizeof(key));
        x = find_or_add(&g, &n, &cap, key);
        if (x == NULL) {
            goto oom;
        }
        x->compute_us += r->ops[i].modeled_us * (double)r->ops[i].executions;
        x->flops += r->ops[i].flops * (double)r->ops[i].executions;
    }
    for (i = 0; i < r->ncolls; i++) {
        if (!r->colls[i].supported) {
            continue;
        }
        key_of(r->colls[i].source, depth, key, sizeof(key));
        x = find_or_add(&g, &n, &cap, key);
        if (x == NULL) {
            goto oom;
        }
        x->comm_us += r->colls[i].modeled_us * (double)r->colls[i].executions;
    }
    if (n > 0) {
        qsort(g, (size_t)n, sizeof(*g), by_total);
    }
    *n_p = n;
    return g;
oom:
    tpu__free(g);
    *n_p = 0;
    return NULL;
}

void app_replay_print_by_source(FILE *out, const tpu_replay_report_t *r, int depth)
{
    int n = 0, i;
    group_t *g = groups_of(r, depth, &n);
    double all = r->compute_us + r->comm_us;

    fprintf(out,
            "\nby source (op_name, depth %d; compute and communication summed, not the "
            "critical path)\n",
            depth);
    fprintf(out, "  %-60s %12s %12s %10s %6s\n", "op_name", "compute_us", "comm_us", "GFLOP",
            "share");
    for (i = 0; i < n; i++) {
        fprintf(out, "  %-60.60s %12.3f %12.3f %10.4g %5.1f%%\n", g[i].key, g[i].compute_us,
                g[i].comm_us, g[i].flops / 1e9,
                all > 0 ? 100 * (g[i].compute_us + g[i].comm_us) / all : 0);
    }
    tpu__free(g);
}

void app_replay_by_source_json(app_json_t *j, const tpu_replay_report_t *r, int depth)
{
    int n = 0, i;
    group_t *g = groups_of(r, depth, &n);

    app_json_karray(j, "by_source");
    for (i = 0; i < n; i++) {
        app_json_object(j);
        app_json_kstr(j, "op_name", g[i].key);
        app_json_kfixed(j, "compute_us", g[i].compute_us, 6);
        app_json_kfixed(j, "comm_us", g[i].comm_us, 6);
        app_json_kfixed(j, "flops", g[i].flops, 0);
        app_json_object_end(j);
    }
    app_json_array_end(j);
    tpu__free(g);
}
