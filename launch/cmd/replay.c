/*
 * tpuemu replay MODULE.hlo: what a compiled XLA module would cost on the pod.
 *
 *   tpuemu replay MODULE.hlo [pod options] [--module N] [--list] [--device-order LIST]
 *                 [--trip-count NAME=K,...] [--custom-call-us NAME=US,...] [--top N]
 *                 [--json FILE|-] [--trace FILE [--trace-measured]] [--heatmap FILE.svg]
 *                 [--timeout S] [--inject crash|stop:chip=C,call=N]
 *
 * Reads the HLO text (the library's parser, include/tpu/hlo.h), picks one module
 * (--module N counts from 1; by default the first whose device count equals the
 * pod's chips), replays it (include/tpu/replay.h) and prints the step time,
 * the compute / communication split, the exposed communication, every
 * collective and the top ops.  Bad input: one line "tpuemu: ..." and exit 2.
 */
#include "tpu/replay.h"

#include "tpu/hlo.h"

#include "alloc.h"
#include "csv.h"
#include "faults.h"
#include "file.h"
#include "json.h"
#include "launch.h"
#include "progress.h"
#include "replay_mpi.h"
#include "report.h"
#include "sink.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_HLO_BYTES ((long)1 << 31)
#define MAX_LIST      4096

typedef struct replay_args {
    const char *path;
    int module; /* 1-based; 0: choose */
    int list;
    int top;
    const char *device_order;
    const char *entry; /* --entry NAME: the computation replayed as the step */
    const char *trips[MAX_LIST];
    int ntrips_args;
    const char *customs[MAX_LIST];
    int ncustom_args;
} replay_args_t;

/* Name=value lists, several flags or commas: parsed into the arrays. */
typedef struct kv_list {
    int n;
    char *names[MAX_LIST];
    double values[MAX_LIST];
    int64_t ivalues[MAX_LIST];
} kv_list_t;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: tpuemu replay MODULE.hlo [pod options] [--module N] [--list]\n"
            "                     [--device-order LIST] [--entry NAME] [--trip-count NAME=K,...]\n"
            "                     [--custom-call-us NAME=US,...] [--top N] [--json FILE|-]\n"
            "                     [--timeout S] [--inject crash|stop:chip=C,call=N]\n\n"
            "Replay a compiled XLA module (HLO text: jax.jit(f).lower(...).compile().as_text(),\n"
            "or the after_optimizations dump of --xla_dump_to) on the emulated pod: its\n"
            "collectives through the schedules and link model of 'tpuemu model', its dots,\n"
            "convolutions and fusions through the chip's roofline, while loops by trip count,\n"
            "async start/done pairs overlapping the work between them.\n\n"
            "  --module N          the module of a multi-module file (from 1; default: the first\n"
            "                      whose device count equals the pod's chips)\n"
            "  --list              list the modules of the file and their device counts\n"
            "  --device-order LIST device (mesh position) -> chip id, e.g. 0,4,8,12,1,...\n"
            "                      (default: device d on chip d, row-major over the torus)\n"
            "  --entry NAME        the computation replayed as the step (default: the\n"
            "                      ENTRY; for files of test computations)\n"
            "  --trip-count NAME=K trip count of the while loop NAME (overrides the module)\n"
            "  --custom-call-us NAME=US  time of a custom-call (instruction name or target)\n"
            "  --top N             collectives and ops listed (default 20)\n"
            "  --json FILE|-       one JSON object (- for stdout; the text goes to stderr)\n"
            "  --csv FILE|-        the collectives, then the ops, one row each\n"
            "  --trace FILE        Chrome trace / Perfetto JSON of one step on the modeled\n"
            "                      timeline: per chip the module's ops in order on a compute\n"
            "                      track, its collectives with their steps, a counter per\n"
            "                      link (summarised above 256 chips, at most 4 MB)\n"
            "  --trace-measured    with --trace under mpirun: each chip's measured\n"
            "                      collective executions too\n"
            "  --heatmap FILE.svg  the torus, every link coloured by the bytes it carried\n"
            "                      over the step (every collective, every execution)\n"
            "  --quiet             no warnings, no progress bar\n"
            "  --timeout S         under mpirun: the watchdog, seconds any wait may last\n"
            "                      (default 60)\n"
            "  --inject crash|stop:chip=C,call=N  under mpirun, for tests: chip C dies\n"
            "                      (SIGKILL) or stops (SIGSTOP) at execution N of the\n"
            "                      module's collectives, counted from 0\n\n"
            "Pod options: --chip --topology --wrap --slices --config --ici-bw --ici-latency-us\n"
            "--dcn-bw --dcn-latency-us --fault (see tpuemu --help).  The module's partitions (or\n"
            "replicas) must equal the pod's chips.\n");
}

/* Split "A=1,B=2" and append to 'l'. */
static tpu_status_t parse_kv(const char *flag, const char *text, int integer, kv_list_t *l,
                             tpu_err_t *err)
{
    const char *p = text;

    while (*p != '\0') {
        const char *comma = strchr(p, ','), *eq;
        size_t len = comma != NULL ? (size_t)(comma - p) : strlen(p);
        char item[256], *end;

        if (len == 0 || len >= sizeof(item)) {
            return tpu_err_set(err, TPU_ERR_INVALID, "--%s '%s': expected NAME=VALUE[,...]", flag,
                               text);
        }
        memcpy(item, p, len);
        item[len] = '\0';
        eq = strchr(item, '=');
        if (eq == NULL || eq == item || eq[1] == '\0') {
            return tpu_err_set(err, TPU_ERR_INVALID, "--%s '%s': expected NAME=VALUE", flag, item);
        }
        if (l->n >= MAX_LIST) {
            return tpu_err_set(err, TPU_ERR_INVALID, "--%s: more than %d entries", flag, MAX_LIST);
        }
        errno = 0;
        if (integer) {
            long long v = strtoll(eq + 1, &end, 10);

            if (*end != '\0' || errno != 0 || v < 0 || v > (1LL << 40)) {
                return tpu_err_set(err, TPU_ERR_INVALID,
                                   "--%s %s: the trip count must be a non-negative integer", flag,
                                   item);
            }
            l->ivalues[l->n] = v;
        } else {
            double v = strtod(eq + 1, &end);

            if (*end != '\0' || errno != 0 || !(v >= 0) || v > 1e12) {
                return tpu_err_set(err, TPU_ERR_INVALID,
                                   "--%s %s: the time must be a non-negative number of us", flag,
                                   item);
            }
            l->values[l->n] = v;
        }
        l->names[l->n] = tpu__malloc((size_t)(eq - item) + 1);
        if (l->names[l->n] == NULL) {
            return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory");
        }
        memcpy(l->names[l->n], item, (size_t)(eq - item));
        l->names[l->n][eq - item] = '\0';
        l->n++;
        p += len;
        if (*p == ',') {
            p++;
        }
    }
    return TPU_OK;
}

static void kv_free(kv_list_t *l)
{
    int i;

    for (i = 0; i < l->n; i++) {
        tpu__free(l->names[i]);
    }
    l->n = 0;
}

static tpu_status_t parse_int_flag(const char *flag, const char *v, int lo, int *out,
                                   tpu_err_t *err)
{
    char *end;
    long x;

    errno = 0;
    x = strtol(v, &end, 10);
    if (*v == '\0' || *end != '\0' || errno != 0 || x < lo || x > 1000000) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "--%s takes an integer from %d to 1000000, got '%s'", flag, lo, v);
    }
    *out = (int)x;
    return TPU_OK;
}

/* The flags: pod flags into 'o', replay flags into 'a'. */
static tpu_status_t parse_args(int argc, char **argv, tpu_opts_t *o, replay_args_t *a,
                               tpu_err_t *err)
{
    static const struct {
        const char *name;
        size_t off;
        const char *valid;
    } pod_flags[] = {
        {"chip", offsetof(tpu_opts_t, chip), "a chip such as v4, v5e, v5p, v6e, v7"},
        {"topology", offsetof(tpu_opts_t, topology), "a shape such as 16, 4x4 or 4x4x4"},
        {"wrap", offsetof(tpu_opts_t, wrap), "auto, all, none or axes such as x,z"},
        {"config", offsetof(tpu_opts_t, config), "a YAML file"},
        {"json", offsetof(tpu_opts_t, json), "a file name or - for stdout"},
        {"csv", offsetof(tpu_opts_t, csv), "a file name or - for stdout"},
        {"trace", offsetof(tpu_opts_t, trace), "a file name or - for stdout"},
        {"heatmap", offsetof(tpu_opts_t, heatmap), "a file name or - for stdout"},
        {"ici-bw", offsetof(tpu_opts_t, ici_bw), "bytes/s from 1e3 to 1e15, such as 9e10"},
        {"ici-latency-us", offsetof(tpu_opts_t, ici_latency_us),
         "microseconds from 0 to 1e6, such as 1.5"},
        {"dcn-bw", offsetof(tpu_opts_t, dcn_bw), "bytes/s from 1e3 to 1e15, such as 2.5e10"},
        {"dcn-latency-us", offsetof(tpu_opts_t, dcn_latency_us),
         "microseconds from 0 to 1e6, such as 10"},
    };
    /* Flags given so far (each at most once; --trip-count and --custom-call-us repeat). */
    const char *given[sizeof(pod_flags) / sizeof(pod_flags[0]) + 10] = {NULL};
    static const char *const own[] = {"slices", "module",         "top",   "device-order",
                                      "list",   "trace-measured", "quiet", "timeout",
                                      "entry",  "inject"};
    int i;
    size_t k;

    memset(o, 0, sizeof(*o));
    memset(a, 0, sizeof(*a));
    o->cmd = "replay";
    a->top = 20;
    for (i = 0; i < argc; i++) {
        const char *arg = argv[i], *val = NULL;
        char name[64];
        int found = 0;

        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            o->help = 1;
            continue;
        }
        if (strncmp(arg, "--help=", 7) == 0) {
            return tpu_err_set(err, TPU_ERR_INVALID, "--help takes no value");
        }
        if (strncmp(arg, "--", 2) != 0) {
            if (a->path != NULL) {
                return tpu_err_set(err, TPU_ERR_INVALID,
                                   "unexpected argument '%s' (one module file: '%s')", arg,
                                   a->path);
            }
            a->path = arg;
            continue;
        }
        snprintf(name, sizeof(name), "%s", arg + 2);
        if (strchr(name, '=') != NULL) {
            *strchr(name, '=') = '\0';
            val = strchr(arg, '=') + 1;
        }
        for (k = 0; k < sizeof(own) / sizeof(own[0]); k++) {
            if (strcmp(own[k], name) == 0) {
                if (given[sizeof(pod_flags) / sizeof(pod_flags[0]) + k] != NULL) {
                    return tpu_err_set(err, TPU_ERR_INVALID, "--%s is given twice: give it once",
                                       name);
                }
                given[sizeof(pod_flags) / sizeof(pod_flags[0]) + k] = arg;
            }
        }
        if (strcmp(name, "list") == 0 || strcmp(name, "quiet") == 0 ||
            strcmp(name, "trace-measured") == 0) {
            if (val != NULL) {
                return tpu_err_set(err, TPU_ERR_INVALID, "--%s takes no value", name);
            }
            *(name[0] == 'l' ? &a->list : name[0] == 'q' ? &o->quiet : &o->trace_measured) = 1;
            continue;
        }
        if (val == NULL) {
            if (i + 1 >= argc) {
                return tpu_err_set(err, TPU_ERR_INVALID, "--%s needs a value", name);
            }
            val = argv[++i];
        }
        if (strcmp(name, "fault") == 0) {
            if (*val == '\0' || o->nfault == TPU_MAX_FAULTS) {
                return tpu_err_set(err, TPU_ERR_INVALID, "--fault: %s",
                                   *val == '\0' ? "empty value; give a fault such as "
                                                  "slow-link:chip=5,dir=+x,factor=0.5"
                                                : "too many faults");
            }
            o->fault[o->nfault++] = val;
            continue;
        }
        for (k = 0; k < sizeof(pod_flags) / sizeof(pod_flags[0]); k++) {
            if (strcmp(pod_flags[k].name, name) == 0) {
                if (given[k] != NULL) {
                    return tpu_err_set(err, TPU_ERR_INVALID,
                                       "--%s is given twice ('%.40s', then '%.40s'): give it once",
                                       name, given[k], val);
                }
                if (*val == '\0') {
                    return tpu_err_set(err, TPU_ERR_INVALID, "--%s got an empty value; give %s",
                                       name, pod_flags[k].valid);
                }
                given[k] = val;
                *(const char **)(void *)((char *)o + pod_flags[k].off) = val;
                found = 1;
            }
        }
        if (found) {
            continue;
        }
        if (strcmp(name, "slices") == 0) {
            if (parse_int_flag(name, val, 1, &o->slices, err) != TPU_OK) {
                return TPU_ERR_INVALID;
            }
            if (o->slices > TPU_MAX_SLICES) {
                return tpu_err_set(err, TPU_ERR_INVALID, "--slices must be 1 to %d, got %s",
                                   TPU_MAX_SLICES, val);
            }
        } else if (strcmp(name, "module") == 0) {
            if (parse_int_flag(name, val, 1, &a->module, err) != TPU_OK) {
                return TPU_ERR_INVALID;
            }
        } else if (strcmp(name, "top") == 0) {
            if (parse_int_flag(name, val, 0, &a->top, err) != TPU_OK) {
                return TPU_ERR_INVALID;
            }
        } else if (strcmp(name, "timeout") == 0) {
            if (tpu_parse_number(name, val, TPU_TIMEOUT_MIN_S, TPU_TIMEOUT_MAX_S, &o->timeout,
                                 err) != TPU_OK) {
                return TPU_ERR_INVALID;
            }
        } else if (strcmp(name, "inject") == 0) {
            o->inject = val; /* checked by tpu_opts_check */
        } else if (strcmp(name, "entry") == 0) {
            if (*val == '\0') {
                return tpu_err_set(err, TPU_ERR_INVALID,
                                   "--entry got an empty value; give a computation's name");
            }
            a->entry = val;
        } else if (strcmp(name, "device-order") == 0) {
            if (*val == '\0') {
                return tpu_err_set(err, TPU_ERR_INVALID,
                                   "--device-order got an empty value; give chip ids such as "
                                   "0,4,8,12,1,...");
            }
            a->device_order = val;
        } else if (strcmp(name, "trip-count") == 0 || strcmp(name, "custom-call-us") == 0) {
            int trip = name[0] == 't';

            if ((trip ? a->ntrips_args : a->ncustom_args) >= MAX_LIST) {
                return tpu_err_set(err, TPU_ERR_INVALID, "--%s is given more than %d times", name,
                                   MAX_LIST);
            }
            if (trip) {
                a->trips[a->ntrips_args++] = val;
            } else {
                a->customs[a->ncustom_args++] = val;
            }
        } else {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "unknown option '--%s' for 'tpuemu replay' (see tpuemu replay "
                               "--help)",
                               name);
        }
    }
    if (a->list && (a->module || a->device_order || a->ntrips_args || a->ncustom_args ||
                    a->top != 20 || o->json || a->entry)) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "--list only lists the modules of the file: drop --%s",
                           a->module         ? "module"
                           : a->device_order ? "device-order"
                           : a->ntrips_args  ? "trip-count"
                           : a->ncustom_args ? "custom-call-us"
                           : o->json         ? "json"
                           : a->entry        ? "entry"
                                             : "top");
    }
    if (!o->help && a->path == NULL) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "replay needs a module file: tpuemu replay MODULE.hlo (see --help)");
    }
    /* The link constants' ranges, as for the other commands. */
    return o->help ? TPU_OK : tpu_opts_check(o, err);
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

/* Rows sorted by total time, descending. */
typedef struct by_total {
    double total;
    int index;
} by_total_t;

static int by_total_desc(const void *a, const void *b)
{
    double x = ((const by_total_t *)a)->total, y = ((const by_total_t *)b)->total;
    int i = ((const by_total_t *)a)->index, j = ((const by_total_t *)b)->index;

    return x != y ? (x < y) - (x > y) : (i > j) - (i < j);
}

/* 'order[k]' = the row of rank k, for 'n' rows whose totals are 'total[i]'. */
static int *rank_rows(int n, const double *total)
{
    by_total_t *t = tpu__malloc(sizeof(*t) * (size_t)(n + 1));
    int *order = tpu__malloc(sizeof(int) * (size_t)(n + 1)), i;

    if (t == NULL || order == NULL) {
        tpu__free(t);
        tpu__free(order);
        return NULL;
    }
    for (i = 0; i < n; i++) {
        t[i].total = total[i];
        t[i].index = i;
    }
    qsort(t, (size_t)n, sizeof(*t), by_total_desc);
    for (i = 0; i < n; i++) {
        order[i] = t[i].index;
    }
    tpu__free(t);
    return order;
}

/* The JSON document of the replay ('ms': the real run under mpirun, or NULL). */
static void write_json(tpu_json_t *j, const tpu_pod_t *pod, const char *path, int index,
                       const tpu_hlo_module_t *mod, const tpu_replay_report_t *r, const int *ci,
                       const int *oi, const tpu_replay_measured_t *ms)
{
    int i;

    tpu_json_object(j);
    tpu_json_kstr(j, "file", path);
    tpu_json_kstr(j, "module", mod->name);
    tpu_json_kint(j, "module_index", index + 1);
    tpu_json_kint(j, "devices", r->devices);
    tpu_pod_json_header(j, pod);
    tpu_json_kfixed(j, "step_us", r->step_us, 6);
    tpu_json_kfixed(j, "compute_us", r->compute_us, 6);
    tpu_json_kfixed(j, "comm_us", r->comm_us, 6);
    tpu_json_kfixed(j, "exposed_comm_us", r->exposed_comm_us, 6);
    tpu_json_kfixed(j, "hbm_bytes", r->hbm_bytes, 0);
    tpu_json_kfixed(j, "flops", r->flops, 0);
    tpu_json_kint(j, "custom_calls", r->custom_calls);
    tpu_json_kint(j, "unknown_opcodes", r->unknown_opcodes);
    tpu_json_kint(j, "unsupported_collectives", r->unsupported);
    tpu_json_kint(j, "executions", (long long)r->nseq);
    tpu_json_karray(j, "collectives");
    for (i = 0; i < r->ncolls; i++) {
        const tpu_replay_coll_t *c = &r->colls[ci[i]];

        if (c->executions == 0) {
            continue;
        }
        tpu_json_object(j);
        tpu_json_kstr(j, "name", c->name);
        tpu_json_kstr(j, "opcode", c->opcode);
        tpu_json_kstr(j, "kind", tpu_coll_name(c->desc.kind));
        tpu_json_kstr(j, "groups", c->groups);
        tpu_json_kint(j, "ngroups", c->ngroups);
        tpu_json_kint(j, "group_size", c->group_size);
        tpu_json_kuint(j, "bytes", (unsigned long long)c->bytes);
        tpu_json_kuint(j, "hlo_bytes", (unsigned long long)c->hlo_bytes);
        tpu_json_kint(j, "executions", (long long)c->executions);
        tpu_json_kbool(j, "async", c->async);
        tpu_json_kbool(j, "supported", c->supported);
        tpu_json_kfixed(j, "modeled_us", c->modeled_us, 6);
        tpu_json_kfixed(j, "total_us", c->modeled_us * (double)c->executions, 6);
        tpu_json_kfixed(j, "exposed_us", c->exposed_us, 6);
        tpu_json_kstr(j, "axes", c->axes);
        tpu_json_kstr(j, "algorithm", c->algorithm);
        tpu_json_kstr(j, "note", c->note);
        if (ms != NULL) {
            tpu_json_kint(j, "runs", (long long)ms->runs[ci[i]]);
            tpu_json_kfixed(j, "measured_us", ms->measured_us[ci[i]], 3);
            tpu_json_kint(j, "wrong", ms->wrong[ci[i]]);
        }
        tpu_json_kint(j, "line", c->line);
        tpu_json_object_end(j);
    }
    tpu_json_array_end(j);
    tpu_json_karray(j, "compute");
    for (i = 0; i < r->nops; i++) {
        const tpu_replay_op_t *op = &r->ops[oi[i]];

        if (op->executions == 0) {
            continue;
        }
        tpu_json_object(j);
        tpu_json_kstr(j, "name", op->name);
        tpu_json_kstr(j, "opcode", op->opcode);
        tpu_json_kfixed(j, "flops", op->flops, 0);
        tpu_json_kfixed(j, "bytes", op->bytes, 0);
        tpu_json_kint(j, "executions", (long long)op->executions);
        tpu_json_kfixed(j, "modeled_us", op->modeled_us, 6);
        tpu_json_kfixed(j, "total_us", op->modeled_us * (double)op->executions, 6);
        tpu_json_kstr(j, "bound", op->custom ? "given" : op->compute_bound ? "compute" : "memory");
        tpu_json_kbool(j, "custom_call", op->custom);
        tpu_json_kint(j, "line", op->line);
        tpu_json_object_end(j);
    }
    tpu_json_array_end(j);
    if (ms != NULL) {
        tpu_json_kobject(j, "mpi");
        tpu_json_kint(j, "executions", (long long)ms->executions);
        tpu_json_kint(j, "skipped", (long long)ms->skipped);
        tpu_json_kint(j, "wrong", ms->total_wrong);
        tpu_json_kint(j, "modeled_mismatches", ms->model_mismatches);
        tpu_json_object_end(j);
    }
    tpu_json_karray(j, "warnings");
    for (i = 0; i < r->nwarnings; i++) {
        tpu_json_str(j, r->warnings[i]);
    }
    tpu_json_array_end(j);
    tpu_json_object_end(j);
}

/*
 * --csv: one row per collective (slowest first), then one per op; the columns
 * that do not apply to a row are empty (measured_us, runs, wrong: under mpirun).
 */
static void write_csv(FILE *f, const tpu_replay_report_t *r, const int *ci, const int *oi,
                      const tpu_replay_measured_t *ms)
{
    static const char *const cols[] = {
        "type",  "name",  "opcode",      "kind",       "axes",     "groups",     "group_size",
        "bytes", "flops", "executions",  "modeled_us", "total_us", "exposed_us", "algorithm",
        "bound", "line",  "measured_us", "runs",       "wrong"};
    tpu_csv_t c;
    int i;

    tpu_csv_init(&c, f);
    tpu_csv_header(&c, cols, (int)(sizeof(cols) / sizeof(cols[0])));
    for (i = 0; i < r->ncolls; i++) {
        const tpu_replay_coll_t *x = &r->colls[ci[i]];

        if (x->executions == 0) {
            continue;
        }
        tpu_csv_str(&c, "collective");
        tpu_csv_str(&c, x->name);
        tpu_csv_str(&c, x->opcode);
        tpu_csv_str(&c, tpu_coll_name(x->desc.kind));
        tpu_csv_str(&c, x->axes);
        tpu_csv_str(&c, x->groups);
        tpu_csv_int(&c, x->group_size);
        tpu_csv_uint(&c, (unsigned long long)x->bytes);
        tpu_csv_empty(&c);
        tpu_csv_int(&c, (long long)x->executions);
        tpu_csv_fixed(&c, x->modeled_us, 6);
        tpu_csv_fixed(&c, x->modeled_us * (double)x->executions, 6);
        tpu_csv_fixed(&c, x->exposed_us, 6);
        tpu_csv_str(&c, x->supported ? x->algorithm : "");
        tpu_csv_empty(&c);
        tpu_csv_int(&c, x->line);
        if (ms != NULL) {
            tpu_csv_fixed(&c, ms->measured_us[ci[i]], 3);
            tpu_csv_int(&c, (long long)ms->runs[ci[i]]);
            tpu_csv_int(&c, ms->wrong[ci[i]]);
        } else {
            tpu_csv_empty(&c);
            tpu_csv_empty(&c);
            tpu_csv_empty(&c);
        }
        tpu_csv_end_row(&c);
    }
    for (i = 0; i < r->nops; i++) {
        const tpu_replay_op_t *op = &r->ops[oi[i]];

        if (op->executions == 0) {
            continue;
        }
        tpu_csv_str(&c, "op");
        tpu_csv_str(&c, op->name);
        tpu_csv_str(&c, op->opcode);
        tpu_csv_empty(&c);
        tpu_csv_empty(&c);
        tpu_csv_empty(&c);
        tpu_csv_empty(&c);
        tpu_csv_fixed(&c, op->bytes, 0);
        tpu_csv_fixed(&c, op->flops, 0);
        tpu_csv_int(&c, (long long)op->executions);
        tpu_csv_fixed(&c, op->modeled_us, 6);
        tpu_csv_fixed(&c, op->modeled_us * (double)op->executions, 6);
        tpu_csv_empty(&c);
        tpu_csv_empty(&c);
        tpu_csv_str(&c, op->custom ? "given" : op->compute_bound ? "compute" : "memory");
        tpu_csv_int(&c, op->line);
        tpu_csv_empty(&c);
        tpu_csv_empty(&c);
        tpu_csv_empty(&c);
        tpu_csv_end_row(&c);
    }
}

static const char *human_bytes(double b, char *buf, size_t size)
{
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;

    while (b >= 1024 && i < 4) {
        b /= 1024;
        i++;
    }
    snprintf(buf, size, i ? "%.1f %s" : "%.0f %s", b, u[i]);
    return buf;
}

static void print_text(FILE *out, const tpu_pod_t *pod, const char *path, int index, int nmodules,
                       const tpu_hlo_module_t *mod, const tpu_replay_report_t *r, const int *ci,
                       const int *oi, int top)
{
    char b1[32];
    int i, shown = 0;
    double hidden = r->comm_us > 0 ? 100 * (1 - r->exposed_comm_us / r->comm_us) : 0;

    hidden = hidden < 0.05 ? 0 : hidden;

    fprintf(out, "module     %s (%s, module %d of %d): %d device%s, %d computation%s%s\n",
            mod->name[0] ? mod->name : "(no header)", path, index + 1, nmodules, r->devices,
            r->devices == 1 ? "" : "s", mod->ncomps, mod->ncomps == 1 ? "" : "s",
            mod->is_scheduled ? ", scheduled" : "");
    fprintf(out, "pod        %s %s (wrap %s), %d slice%s, %d chips\n", tpu_pod_chip(pod)->name,
            tpu_pod_shape(pod), tpu_pod_wrap(pod), tpu_pod_topo(pod)->slices,
            tpu_pod_topo(pod)->slices > 1 ? "s" : "", tpu_pod_topo(pod)->nchips);
    tpu_faults_print(out, pod, "fault      ");
    fprintf(out, "step       %12.3f us   critical path of one step\n", r->step_us);
    fprintf(out, "compute    %12.3f us   %.3g GFLOP, HBM traffic %s\n", r->compute_us,
            r->flops / 1e9, human_bytes(r->hbm_bytes, b1, sizeof(b1)));
    fprintf(out, "comm       %12.3f us   %d collectives\n", r->comm_us, r->ncolls);
    fprintf(out, "exposed    %12.3f us   %.0f%% of the communication hidden behind compute\n",
            r->exposed_comm_us, hidden);
    if (r->ncolls > 0) {
        double kt[TPU_COLL_COUNT] = {0};
        int64_t kn[TPU_COLL_COUNT] = {0};
        int k, first = 1;

        for (i = 0; i < r->ncolls; i++) {
            kt[r->colls[i].desc.kind] += r->colls[i].modeled_us * (double)r->colls[i].executions;
            kn[r->colls[i].desc.kind] += r->colls[i].executions;
        }
        fprintf(out, "by kind   ");
        for (k = 0; k < TPU_COLL_COUNT; k++) {
            if (kn[k] > 0) {
                fprintf(out, "%s %s x%lld %.3f us", first ? "" : ";", tpu_coll_name(k),
                        (long long)kn[k], kt[k]);
                first = 0;
            }
        }
        fprintf(out, "\n");
        fprintf(out, "\ncollectives (slowest first)\n");
        fprintf(out, "  %-24s %-14s %-6s %5s %10s %6s %12s %12s %12s  %s\n", "name", "kind", "axes",
                "size", "bytes", "exec", "modeled_us", "total_us", "exposed_us",
                "algorithm / groups");
        for (i = 0; i < r->ncolls; i++) {
            const tpu_replay_coll_t *c = &r->colls[ci[i]];

            if (c->executions == 0) {
                continue;
            }
            if (shown == top) {
                fprintf(out, "  ... %d more (--top N, or --json for every row)\n", r->ncolls - i);
                break;
            }
            shown++;
            fprintf(out,
                    "  %-24.24s %-14s %-6s %5d %10s %6lld %12.3f %12.3f %12.3f  %s%s%s  %.60s\n",
                    c->name, tpu_coll_name(c->desc.kind), c->supported ? c->axes : "-",
                    c->group_size, human_bytes((double)c->bytes, b1, sizeof(b1)),
                    (long long)c->executions, c->modeled_us, c->modeled_us * (double)c->executions,
                    c->exposed_us, c->supported ? c->algorithm : "NOT TIMED",
                    c->note[0] ? ": " : "", c->note, c->groups);
        }
    }
    shown = 0;
    if (r->nops > 0 && top > 0) {
        fprintf(out, "\nops (top %d of %d by total time)\n", top < r->nops ? top : r->nops,
                r->nops);
        fprintf(out, "  %-28s %-14s %12s %10s %6s %12s %12s  %s\n", "name", "opcode", "flops",
                "bytes", "exec", "modeled_us", "total_us", "bound");
        for (i = 0; i < r->nops && shown < top; i++) {
            const tpu_replay_op_t *op = &r->ops[oi[i]];

            if (op->executions == 0) {
                continue;
            }
            fprintf(out, "  %-28.28s %-14.14s %12.4g %10s %6lld %12.3f %12.3f  %s\n", op->name,
                    op->opcode, op->flops, human_bytes(op->bytes, b1, sizeof(b1)),
                    (long long)op->executions, op->modeled_us,
                    op->modeled_us * (double)op->executions,
                    op->custom          ? "given"
                    : op->compute_bound ? "compute"
                                        : "memory");
            shown++;
        }
    }
}

/*
 * --trace and --heatmap: the step's timeline (compute ops on every chip's
 * compute track under "module NAME", each collective execution at its start
 * with its steps), and every collective row's links counted once per execution.
 * 'spans' (--trace-measured under mpirun): nranks x nspans (start, duration) of
 * each rank's executions of the sequence.  Plans are made once per row.
 */
static tpu_status_t write_report(tpu_report_t *report, const tpu_pod_t *pod,
                                 const tpu_hlo_module_t *mod, const tpu_replay_report_t *r,
                                 const double *spans, int64_t nspans, FILE *txt, int quiet,
                                 tpu_err_t *err)
{
    tpu_coll_plan_t **plans = tpu__calloc((size_t)r->ncolls + 1, sizeof(*plans));
    tpu_status_t status = TPU_OK;
    tpu_progress_t progress;
    char name[256];
    int64_t k;
    int i, c;

    if (plans == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for the trace");
    }
    for (i = 0; i < r->ncolls && status == TPU_OK; i++) {
        tpu_groups_t groups;
        tpu_coll_desc_t desc;

        if (!r->colls[i].supported || r->colls[i].executions == 0) {
            continue;
        }
        tpu_replay_coll_desc(&r->colls[i], &groups, &desc);
        status = tpu_coll_plan_create(tpu_pod_topo(pod), tpu_pod_link(pod), &desc, &plans[i], err);
        if (status == TPU_OK) {
            /* The heatmap: the row's links, once per execution. */
            status = tpu_report_model_at(report, plans[i], NULL, 0, r->colls[i].modeled_us,
                                         (double)r->colls[i].executions, err);
        }
    }
    if (status == TPU_OK && !tpu_report_trace_done(report)) {
        snprintf(name, sizeof(name), "module %s", mod->name[0] ? mod->name : "(no header)");
        tpu_report_compute(report, name, 0, r->step_us);
    }
    tpu_progress_init(&progress, !quiet, (long)r->ntimeline, txt);
    for (k = 0; k < r->ntimeline && status == TPU_OK && !tpu_report_trace_done(report); k++) {
        const tpu_replay_event_t *e = &r->timeline[k];
        double end = e->start_us + e->dur_us;

        /* Inside the module's slice, whatever the rounding of the loop's copies. */
        end = end < r->step_us ? end : r->step_us;
        if (k % 64 == 0) {
            tpu_progress_update(&progress, (long)k, "writing the trace");
        }
        if (!e->coll) {
            const tpu_replay_op_t *op = &r->ops[e->row];

            snprintf(name, sizeof(name), "%s (%s)", op->name, op->opcode);
            tpu_report_compute(report, name, e->start_us, end - e->start_us);
        } else if (plans[e->row] != NULL) {
            const tpu_replay_coll_t *cl = &r->colls[e->row];

            snprintf(name, sizeof(name), "%s %s", tpu_coll_name(cl->desc.kind), cl->name);
            status = tpu_report_model_at(report, plans[e->row], name, e->start_us,
                                         end - e->start_us, 0, err);
        }
    }
    tpu_progress_end(&progress);
    if (status == TPU_OK && r->timeline_truncated && !quiet) {
        fprintf(stderr, "tpuemu: warning: the trace shows the first %d events of the step\n",
                TPU_REPLAY_MAX_TIMELINE);
    }
    for (c = 0; spans != NULL && c < tpu_pod_topo(pod)->nchips; c++) {
        for (k = 0; k < nspans && k < r->nseq; k++) {
            const double *sp = &spans[2 * ((size_t)c * (size_t)nspans + (size_t)k)];

            if (sp[0] >= 0) {
                tpu_report_measured(report, c, r->colls[r->seq[k]].name, sp[0], sp[1]);
            }
        }
    }
    tpu_report_advance(report, r->step_us);
    for (i = 0; i < r->ncolls; i++) {
        tpu_coll_plan_destroy(plans[i]);
    }
    tpu__free(plans);
    return status;
}

/* Started by mpirun (Open MPI, or a PMI launcher)? */
static int under_mpirun(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") != NULL || getenv("PMI_SIZE") != NULL ||
           getenv("PMIX_RANK") != NULL;
}

static void print_measured(FILE *out, const tpu_replay_report_t *r, const tpu_replay_measured_t *ms,
                           const int *ci, int nranks)
{
    int i;

    fprintf(out,
            "\nreal run over MPI (%d ranks): %lld executions with real bytes, %ld wrong elements, "
            "%lld not run%s\n",
            nranks, (long long)ms->executions, ms->total_wrong, (long long)ms->skipped,
            ms->model_mismatches ? ", MODELED TIME DIFFERS FROM THE REPLAY" : "");
    fprintf(out, "  %-24s %-14s %6s %12s %12s %8s\n", "name", "kind", "runs", "modeled_us",
            "measured_us", "#wrong");
    for (i = 0; i < r->ncolls; i++) {
        const tpu_replay_coll_t *c = &r->colls[ci[i]];

        if (c->executions == 0) {
            continue;
        }
        fprintf(out, "  %-24.24s %-14s %6lld %12.3f %12.3f %8ld\n", c->name,
                tpu_coll_name(c->desc.kind), (long long)ms->runs[ci[i]], c->modeled_us,
                ms->measured_us[ci[i]], ms->wrong[ci[i]]);
    }
}

/* Join 'n' values with ';' into 'buf' (a digest: only equality matters). */
static const char *joined(const char *const *v, int n, char *buf, size_t len)
{
    size_t used = 0;
    int i;

    buf[0] = '\0';
    for (i = 0; i < n && used + 1 < len; i++) {
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ";" : "", v[i]);
    }
    return n > 0 ? buf : NULL;
}

/*
 * Halves of an MPI job started with different replay flags would replay
 * different calls and wait for each other forever: compare them at start.
 * Returns 0 when they agree; else the rank that prints has printed.
 */
static int agree_replay(const replay_args_t *a)
{
    static const char *const names[] = {"the module file", "--module",         "--device-order",
                                        "--trip-count",    "--custom-call-us", "--top",
                                        "--entry"};
    char trips[8192], customs[8192];
    char num[2][32], msg[TPU_ERR_MSG_LEN];
    const char *vals[7];
    int who;

    snprintf(num[0], sizeof(num[0]), "%d", a->module);
    snprintf(num[1], sizeof(num[1]), "%d", a->top);
    vals[0] = a->path;
    vals[1] = num[0];
    vals[2] = a->device_order;
    vals[3] = joined(a->trips, a->ntrips_args, trips, sizeof(trips));
    vals[4] = joined(a->customs, a->ncustom_args, customs, sizeof(customs));
    vals[5] = num[1];
    vals[6] = a->entry;
    who = tpu_job_agree_values(7, names, vals, msg, sizeof(msg));
    if (who == 1) {
        tpu_die_msg(msg);
    }
    return who;
}

int tpu_cmd_replay(int argc, char **argv)
{
    tpu_job_t job;
    tpu_replay_measured_t ms;
    int mpi = under_mpirun(), rank0 = 1;
    tpu_err_t err = {0};
    tpu_opts_t o;
    replay_args_t a;
    tpu_pod_t *pod = NULL;
    FILE *txt;
    tpu_sink_t sink = {NULL, NULL}, csv_sink = {NULL, NULL};
    kv_list_t *trips = NULL, *customs = NULL;
    char *text = NULL;
    size_t len = 0;
    tpu_hlo_file_t *hf = NULL;
    tpu_replay_report_t *rep = NULL;
    tpu_replay_opts_t ropts;
    tpu_report_t report;
    double *spans = NULL;
    int32_t *order = NULL;
    int norder = 0, m, i, rc = TPU_EXIT_USAGE, *ci = NULL, *oi = NULL;
    const tpu_hlo_module_t *mod;
    tpu_status_t status;

    memset(&ms, 0, sizeof(ms));
    memset(&report, 0, sizeof(report));
    if (parse_args(argc, argv, &o, &a, &err) == TPU_OK &&
        tpu_sink_check(o.json, o.csv, &err) == TPU_OK && o.trace_measured && !mpi) {
        tpu_err_set(&err, TPU_ERR_INVALID,
                    "--trace-measured needs a run under mpirun (without it replay measures "
                    "nothing)");
        err.status = TPU_ERR_INVALID;
    }
    if (err.status == TPU_OK && o.inject != NULL && !mpi) {
        tpu_err_set(&err, TPU_ERR_INVALID,
                    "--inject needs a run under mpirun (without it replay runs no collective)");
    }
    if (err.status != TPU_OK) {
        if (mpi) {
            /* Meet the ranks that parsed theirs (tpu_job_start) and end with them. */
            return tpu_job_refuse(err.msg, &argc, &argv);
        }
        tpu_die_msg(err.msg);
        return TPU_EXIT_USAGE;
    }
    if (o.help) {
        usage(stdout);
        return TPU_EXIT_OK;
    }
    if (mpi) {
        rc = tpu_job_start(&o, &argc, &argv, &job);
        if (rc >= 0) {
            return rc;
        }
        if (agree_replay(&a) != 0) {
            return tpu_job_end(&job, TPU_EXIT_USAGE);
        }
        rc = TPU_EXIT_USAGE;
        pod = job.pod;
        rank0 = job.world_rank == 0;
        if (!a.list) {
            /* Every rank learns whether rank 0 could open the files. */
            rc = tpu_job_report_open(&job, &o, "replay", &report);
            if (rc >= 0) {
                return rc;
            }
            rc = TPU_EXIT_USAGE;
        }
    }
    trips = tpu__calloc(1, sizeof(*trips));
    customs = tpu__calloc(1, sizeof(*customs));
    if (trips == NULL || customs == NULL) {
        if (mpi) {
            tpu_job_abort(&job, "out of host memory for the replay's flags");
        }
        tpu_die_msg("out of memory");
        rc = TPU_EXIT_FAIL;
        goto out;
    }
    for (i = 0; i < a.ntrips_args; i++) {
        if (parse_kv("trip-count", a.trips[i], 1, trips, &err) != TPU_OK) {
            goto fail;
        }
    }
    for (i = 0; i < a.ncustom_args; i++) {
        if (parse_kv("custom-call-us", a.customs[i], 0, customs, &err) != TPU_OK) {
            goto fail;
        }
    }
    if (a.device_order != NULL && parse_order(a.device_order, &order, &norder, &err) != TPU_OK) {
        goto fail;
    }
    if (read_file(a.path, &text, &len, &err) != TPU_OK) {
        goto fail;
    }
    status = tpu_hlo_parse(text, len, a.path, &hf, &err);
    if (status != TPU_OK) {
        goto fail;
    }
    if (a.list) {
        for (m = 0; m < hf->nmodules && rank0; m++) {
            const tpu_hlo_module_t *x = &hf->modules[m];

            int nd = tpu_replay_device_count(x);

            printf("%d  %-40s line %-6d %5d device%s %d computation%s\n", m + 1,
                   x->name[0] ? x->name : "(no header)", x->line, nd, nd == 1 ? " " : "s",
                   x->ncomps, x->ncomps == 1 ? "" : "s");
        }
        rc = TPU_EXIT_OK;
        goto out;
    }
    if (!mpi && tpu_pod_setup(&o, &pod, &err) != TPU_OK) {
        goto fail;
    }
    if (!mpi && (o.trace != NULL || o.heatmap != NULL || o.trace_measured)) {
        char title[256];

        snprintf(title, sizeof(title), "tpuemu replay %s: %d chips of %s as %s (wrap %s)", a.path,
                 tpu_pod_topo(pod)->nchips, tpu_pod_chip(pod)->name, tpu_pod_shape(pod),
                 tpu_pod_wrap(pod));
        if (tpu_report_open(&report, &o, pod, title, &err) != TPU_OK) {
            goto fail;
        }
    }
    if (a.module > hf->nmodules) {
        tpu_err_set(&err, TPU_ERR_INVALID, "--module %d: '%s' holds %d module%s", a.module, a.path,
                    hf->nmodules, hf->nmodules > 1 ? "s" : "");
        goto fail;
    }
    m = a.module - 1;
    if (m < 0) {
        for (m = 0; m < hf->nmodules; m++) {
            if (tpu_replay_device_count(&hf->modules[m]) == tpu_pod_topo(pod)->nchips) {
                break;
            }
        }
        if (m == hf->nmodules) {
            m = 0;
        }
    }
    mod = &hf->modules[m];
    memset(&ropts, 0, sizeof(ropts));
    ropts.device_order = order;
    ropts.ndevice_order = norder;
    ropts.ntrips = trips->n;
    ropts.trip_names = (const char *const *)trips->names;
    ropts.trip_counts = trips->ivalues;
    ropts.ncustom = customs->n;
    ropts.custom_names = (const char *const *)customs->names;
    ropts.custom_us = customs->values;
    ropts.timeline = report.trace != NULL;
    ropts.entry = a.entry;
    status = tpu_replay_run(mod, tpu_pod_topo(pod), tpu_pod_link(pod), tpu_pod_chip(pod), &ropts,
                            &rep, &err);
    if (status != TPU_OK) {
        goto fail;
    }
    for (i = 0; i < trips->n; i++) {
        int found = 0, c, k;

        for (c = 0; c < mod->ncomps && !found; c++) {
            for (k = 0; k < mod->comps[c].ninstrs; k++) {
                if (mod->comps[c].instrs[k].op == TPU_HLO_OP_WHILE &&
                    strcmp(mod->comps[c].instrs[k].name, trips->names[i]) == 0) {
                    found = 1;
                }
            }
        }
        if (!found) {
            tpu_err_set(&err, TPU_ERR_INVALID,
                        "--trip-count %s: the module has no while loop named '%s'", trips->names[i],
                        trips->names[i]);
            goto fail;
        }
    }
    /* A --custom-call-us that names no custom-call (by name or target) would be
     * dropped without a word. */
    for (i = 0; i < customs->n; i++) {
        int found = 0, c, k;

        for (c = 0; c < mod->ncomps && !found; c++) {
            for (k = 0; k < mod->comps[c].ninstrs && !found; k++) {
                const tpu_hlo_instr_t *in = &mod->comps[c].instrs[k];

                found = in->op == TPU_HLO_OP_CUSTOM_CALL &&
                        (strcmp(in->name, customs->names[i]) == 0 ||
                         (in->custom_call_target != NULL &&
                          strcmp(in->custom_call_target, customs->names[i]) == 0));
            }
        }
        if (!found) {
            tpu_err_set(&err, TPU_ERR_INVALID,
                        "--custom-call-us %s: the module has no custom-call named or targeting "
                        "'%s'",
                        customs->names[i], customs->names[i]);
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
            ci = rank_rows(rep->ncolls, total);
            for (i = 0; i < rep->nops; i++) {
                total[i] = rep->ops[i].modeled_us * (double)rep->ops[i].executions;
            }
            oi = rank_rows(rep->nops, total);
            tpu__free(total);
        }
    }
    if (ci == NULL || oi == NULL) {
        /* One rank alone may fail here: under mpirun, it ends the job. */
        if (mpi) {
            tpu_job_abort(&job, "out of host memory for the replay's tables");
        }
        tpu_die_msg("out of memory");
        rc = TPU_EXIT_FAIL;
        goto out;
    }
    if (mpi) {
        status = tpu__replay_run_mpi(&job, rep, &ms, o.quiet ? NULL : tpu_sink_text(o.json, o.csv),
                                     &err);
        if (status != TPU_OK) {
            goto fail;
        }
        if (o.trace_measured) {
            /* Every rank's executions, to rank 0 (with the watchdog). */
            if (rank0) {
                spans =
                    tpu__malloc(2 * sizeof(double) * (size_t)(ms.nspans + 1) * (size_t)job.nranks);
                if (spans == NULL) {
                    tpu_job_abort(&job, "out of host memory for the measured trace");
                }
            }
            tpu_job_gather(&job, ms.spans, (int)(2 * sizeof(double) * (size_t)ms.nspans), spans, 0,
                           "the gather of the measured executions");
        }
    }
    if (!rank0) {
        rc = TPU_EXIT_OK;
        goto out;
    }
    if (!o.quiet) {
        for (i = 0; i < rep->nwarnings; i++) {
            fprintf(stderr, "tpuemu: warning: %s\n", rep->warnings[i]);
        }
    }
    /* Open the JSON and CSV targets first: one that cannot be written is the only line. */
    if (o.json != NULL && tpu_sink_open(&sink, o.json, &err) != TPU_OK) {
        goto fail;
    }
    if (o.csv != NULL && tpu_sink_open(&csv_sink, o.csv, &err) != TPU_OK) {
        goto fail;
    }
    txt = tpu_sink_text(o.json, o.csv);
    if (tpu_report_active(&report)) {
        status = write_report(&report, pod, mod, rep, spans, ms.nspans, txt, o.quiet, &err);
        if (status == TPU_OK) {
            status = tpu_report_close(&report, &err);
        }
        if (status != TPU_OK) {
            tpu_die_msg(err.msg);
            rc = TPU_EXIT_FAIL;
            goto out;
        }
    }
    print_text(txt, pod, a.path, m, hf->nmodules, mod, rep, ci, oi, a.top);
    if (mpi) {
        print_measured(txt, rep, &ms, ci, job.nranks);
    }
    if (o.json != NULL) {
        tpu_json_t j;

        tpu_json_init(&j, sink.f);
        write_json(&j, pod, a.path, m, mod, rep, ci, oi, mpi ? &ms : NULL);
        status = tpu_json_end(&j, &err);
        if (tpu_sink_close(&sink, &err) != TPU_OK || status != TPU_OK) {
            if (rank0) {
                tpu_die_msg(err.msg);
            }
            rc = TPU_EXIT_FAIL;
            goto out;
        }
    }
    if (o.csv != NULL) {
        write_csv(csv_sink.f, rep, ci, oi, mpi ? &ms : NULL);
        if (tpu_sink_close(&csv_sink, &err) != TPU_OK) {
            tpu_die_msg(err.msg);
            rc = TPU_EXIT_FAIL;
            goto out;
        }
    }
    rc = ms.total_wrong > 0 || ms.model_mismatches > 0 ? TPU_EXIT_FAIL : TPU_EXIT_OK;
    goto out;
fail:
    if (rank0) {
        tpu_die_msg(err.msg);
    }
    rc = err.status == TPU_ERR_NO_MEMORY ? TPU_EXIT_FAIL : TPU_EXIT_USAGE;
out:
    tpu_sink_close(&sink, NULL);
    tpu_sink_close(&csv_sink, NULL);
    tpu_report_close(&report, NULL);
    tpu__free(spans);
    tpu__replay_measured_fini(&ms);
    tpu__free(ci);
    tpu__free(oi);
    tpu_replay_report_destroy(rep);
    tpu_hlo_file_destroy(hf);
    tpu__free(text);
    tpu__free(order);
    if (trips != NULL) {
        kv_free(trips);
    }
    if (customs != NULL) {
        kv_free(customs);
    }
    tpu__free(trips);
    tpu__free(customs);
    if (mpi) {
        return tpu_job_end(&job, rc);
    }
    tpu_pod_destroy(pod);
    return rc;
}
