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
#include "tpu/mlp.h"
#include "tpu/npy.h"
#include "tpu/pod.h"

#include "alloc.h"
#include "csv.h"
#include "faults.h"
#include "json.h"
#include "progress.h"
#include "report.h"
#include "sink.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define NIN  TPU_MLP_IN
#define NOUT TPU_MLP_OUT

typedef struct train_args {
    int steps;
    int64_t batch, hidden;
    double lr;
    uint64_t seed;
    const char *dtype, *strategy, *data, *labels, *init, *save;
    int model_only;
    double timeout;
} train_args_t;

static double now_s(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Is this process one rank of an MPI job (started by mpirun or mpiexec)? */
static int under_mpirun(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") != NULL || getenv("PMI_SIZE") != NULL ||
           getenv("PMIX_RANK") != NULL;
}

/* Rank 0, or not under mpirun: the process that prints before MPI_Init. */
static int early_root(void)
{
    const char *r = getenv("OMPI_COMM_WORLD_RANK");

    if (r == NULL) {
        r = getenv("PMI_RANK");
    }
    return r == NULL || strcmp(r, "0") == 0;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: mpirun -n N tpuemu train [pod options] [--mesh data=D,model=M] [options]\n"
            "       tpuemu train [pod options] ...        (no mpirun: every chip in this "
            "process)\n"
            "       tpuemu train --model-only [pod options] ...   (no data: the cost of a step)\n\n"
            "Train the MLP 784-H-H-10 (ReLU, loss = mean over the batch of the sum over the 10\n"
            "classes of (logits - one_hot)^2, plain SGD) on the pod, sharded by the mesh, and\n"
            "report each step's modeled time (compute, communication, exposed), every\n"
            "collective, the HBM peak, the MFU and the measured wall time.\n\n"
            "  --mesh data=D,model=M   mesh axes (default data=<chips>); D*M = chips\n"
            "  --strategy S     auto (default: dp, tp or dp_tp from the mesh), dp, tp, dp_tp, "
            "fsdp\n"
            "  --steps N        training steps (default 10)\n"
            "  --batch B        global batch (default 256), a multiple of data\n"
            "  --hidden H       hidden width (default 1024), a multiple of model\n"
            "  --lr LR          learning rate (default 0.005)\n"
            "  --seed S         seed of the random weights and the synthetic data (default 0)\n"
            "  --dtype bf16|f32 bf16: bf16 matmul inputs, f32 accumulation and master weights\n"
            "                   (default); f32: f32 throughout\n"
            "  --data X.npy     training inputs, float32 [N,784] (default: synthetic from "
            "--seed)\n"
            "  --labels Y.npy   labels, int32 or int64 [N] in 0..9; N a multiple of --batch;\n"
            "                   step s uses rows [(s mod N/B)*B, +B)\n"
            "  --init DIR       initial weights DIR/w1.npy [784,H] b1.npy [H] w2.npy [H,H]\n"
            "                   b2.npy [H] w3.npy [H,10] b3.npy [10] (float32)\n"
            "  --save DIR       write the final weights (gathered, same layout) and\n"
            "                   losses.npy [steps]\n"
            "  --model-only     no mpirun, no data: model one step on any pod (an uneven\n"
            "                   hidden is padded up to a multiple of model, as XLA pads)\n"
            "  --json FILE|-    one JSON object (- for stdout; the text goes to stderr)\n"
            "  --csv FILE|-     one row per step: step, loss, modeled_us, compute_us,\n"
            "                   comm_us, exposed_comm_us, measured_us\n"
            "  --trace FILE     Chrome trace / Perfetto JSON of the steps on the modeled\n"
            "                   timeline: per chip a compute track (each matmul and VPU pass)\n"
            "                   and a collectives track (each collective and its steps),\n"
            "                   a counter per link; --trace-measured adds each chip's\n"
            "                   measured steps (not with --model-only)\n"
            "  --heatmap FILE.svg  the torus, every link coloured by the bytes it carried\n"
            "                   over the whole run\n"
            "  --timeout S      watchdog seconds per collective (default 60)\n\n"
            "Pod options: --chip --topology --wrap --slices --config --ici-bw --ici-latency-us\n"
            "             --dcn-bw --dcn-latency-us --fault --quiet (see tpuemu --help)\n");
}

static tpu_status_t parse_i64(const char *flag, const char *v, int64_t lo, int64_t *out,
                              tpu_err_t *err)
{
    char *end;
    long long x;

    *out = lo; /* set on every path (the compiler cannot see the status of tpu_err_set) */
    errno = 0;
    x = strtoll(v, &end, 10);
    if (*v == '\0' || *end != '\0' || errno != 0 || x < lo) {
        return tpu_err_set(err, TPU_ERR_INVALID, "--%s takes an integer of at least %lld, got '%s'",
                           flag, (long long)lo, v);
    }
    *out = (int64_t)x;
    return TPU_OK;
}

/*
 * Take the train flags out of argv; the rest (pod flags, --mesh, --json,
 * --help) go to 'rest' for the common parser.
 */
static tpu_status_t parse_args(int argc, char **argv, train_args_t *a, int *nrest, char **rest,
                               tpu_err_t *err)
{
    static const char *const with_value[] = {"steps", "batch", "hidden",   "lr",
                                             "seed",  "dtype", "data",     "labels",
                                             "init",  "save",  "strategy", "timeout"};
    const char *given[sizeof(with_value) / sizeof(with_value[0]) + 1] = {NULL};
    int i;

    memset(a, 0, sizeof(*a));
    a->steps = 10;
    a->batch = 256;
    a->hidden = 1024;
    a->lr = 0.005;
    a->timeout = 60;
    *nrest = 0;
    rest[(*nrest)++] = argv[0];
    rest[(*nrest)++] = argv[1];
    for (i = 2; i < argc; i++) {
        char name[64];
        const char *val = NULL, *arg = argv[i];
        size_t k;
        int64_t v;

        if (strncmp(arg, "--", 2) != 0) {
            rest[(*nrest)++] = argv[i];
            continue;
        }
        snprintf(name, sizeof(name), "%s", arg + 2);
        if (strchr(name, '=') != NULL) {
            *strchr(name, '=') = '\0';
            val = strchr(arg, '=') + 1;
        }
        if (strcmp(name, "model-only") == 0) {
            if (val != NULL) {
                return tpu_err_set(err, TPU_ERR_INVALID, "--model-only takes no value");
            }
            if (a->model_only) {
                return tpu_err_set(err, TPU_ERR_INVALID,
                                   "--model-only is given twice: give it once");
            }
            a->model_only = 1;
            continue;
        }
        for (k = 0; k < sizeof(with_value) / sizeof(with_value[0]); k++) {
            if (strcmp(name, with_value[k]) == 0) {
                break;
            }
        }
        if (k == sizeof(with_value) / sizeof(with_value[0])) {
            rest[(*nrest)++] = argv[i];
            continue;
        }
        if (val == NULL) {
            if (i + 1 >= argc) {
                return tpu_err_set(err, TPU_ERR_INVALID, "--%s needs a value", name);
            }
            val = argv[++i];
        }
        if (given[k] != NULL) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "--%s is given twice ('%.40s', then '%.40s'): give it once", name,
                               given[k], val);
        }
        given[k] = val;
        if (*val == '\0') {
            return tpu_err_set(err, TPU_ERR_INVALID, "--%s got an empty value; give %s", name,
                               strcmp(name, "dtype") == 0      ? "bf16 or f32"
                               : strcmp(name, "strategy") == 0 ? "auto, dp, tp, dp_tp or fsdp"
                               : strcmp(name, "init") == 0 || strcmp(name, "save") == 0 ? "a folder"
                               : strcmp(name, "data") == 0 || strcmp(name, "labels") == 0
                                   ? "a .npy file"
                                   : "a number");
        }
        if (strcmp(name, "steps") == 0) {
            tpu_err_t scratch = {0};

            if (parse_i64(name, val, 1, &v, &scratch) != TPU_OK || v > 1000000) {
                return tpu_err_set(err, TPU_ERR_INVALID,
                                   "--steps takes an integer from 1 to 1000000, got '%s'", val);
            }
            a->steps = (int)v;
        } else if (strcmp(name, "batch") == 0) {
            if (parse_i64(name, val, 1, &a->batch, err) != TPU_OK) {
                return TPU_ERR_INVALID;
            }
        } else if (strcmp(name, "hidden") == 0) {
            if (parse_i64(name, val, 1, &a->hidden, err) != TPU_OK) {
                return TPU_ERR_INVALID;
            }
        } else if (strcmp(name, "seed") == 0) {
            if (parse_i64(name, val, 0, &v, err) != TPU_OK) {
                return TPU_ERR_INVALID;
            }
            a->seed = (uint64_t)v;
        } else if (strcmp(name, "lr") == 0) {
            /* 0 (weights kept, as the round-trip test uses) to 1000. */
            if (tpu_parse_number(name, val, 0, 1000, &a->lr, err) != TPU_OK) {
                return TPU_ERR_INVALID;
            }
        } else if (strcmp(name, "timeout") == 0) {
            /* The watchdog: as the other commands' --timeout. */
            if (tpu_parse_number(name, val, TPU_TIMEOUT_MIN_S, TPU_TIMEOUT_MAX_S, &a->timeout,
                                 err) != TPU_OK) {
                return TPU_ERR_INVALID;
            }
        } else if (strcmp(name, "dtype") == 0) {
            a->dtype = val;
        } else if (strcmp(name, "strategy") == 0) {
            a->strategy = val;
        } else if (strcmp(name, "data") == 0) {
            a->data = val;
        } else if (strcmp(name, "labels") == 0) {
            a->labels = val;
        } else if (strcmp(name, "init") == 0) {
            a->init = val;
        } else {
            a->save = val;
        }
    }
    if (a->model_only && (a->data || a->labels || a->init || a->save)) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "--model-only runs without data: drop --data, --labels, --init and "
                           "--save");
    }
    if ((a->data == NULL) != (a->labels == NULL)) {
        return tpu_err_set(err, TPU_ERR_INVALID, "--data and --labels go together");
    }
    return TPU_OK;
}

/*
 * Halves of an MPI job started with different train flags would run different
 * steps and wait for each other forever: compare them at start.  Returns 0 when
 * they agree; else the rank that prints has printed, and every rank must end.
 */
static int agree_train(const train_args_t *a)
{
    static const char *const names[] = {"--steps",  "--batch", "--hidden",   "--lr",
                                        "--seed",   "--dtype", "--strategy", "--data",
                                        "--labels", "--init",  "--save",     "--timeout"};
    char num[6][64], msg[TPU_ERR_MSG_LEN];
    const char *vals[sizeof(names) / sizeof(names[0])];
    int who;

    snprintf(num[0], 64, "%d", a->steps);
    snprintf(num[1], 64, "%lld", (long long)a->batch);
    snprintf(num[2], 64, "%lld", (long long)a->hidden);
    snprintf(num[3], 64, "%.17g", a->lr);
    snprintf(num[4], 64, "%llu", (unsigned long long)a->seed);
    snprintf(num[5], 64, "%.17g", a->timeout);
    vals[0] = num[0];
    vals[1] = num[1];
    vals[2] = num[2];
    vals[3] = num[3];
    vals[4] = num[4];
    vals[5] = a->dtype;
    vals[6] = a->strategy;
    vals[7] = a->data;
    vals[8] = a->labels;
    vals[9] = a->init;
    vals[10] = a->save;
    vals[11] = num[5];
    who = tpu_job_agree_values((int)(sizeof(names) / sizeof(names[0])), names, vals, msg,
                               sizeof(msg));
    if (who == 1) {
        tpu_die_msg(msg);
    }
    return who;
}

/* "data=4,model=4", "data=16", "model=8": the sizes of the two axes. */
static tpu_status_t parse_mesh(const char *text, int nchips, int *data_p, int *model_p,
                               tpu_err_t *err)
{
    char buf[128], *tok, *save = NULL;
    int data = 0, model = 0;

    if (text == NULL) {
        *data_p = nchips;
        *model_p = 1;
        return TPU_OK;
    }
    snprintf(buf, sizeof(buf), "%s", text);
    for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '='), *end;
        long v;

        if (eq == NULL) {
            return tpu_err_set(err, TPU_ERR_INVALID, "--mesh '%s': expected name=size, got '%s'",
                               text, tok);
        }
        *eq = '\0';
        errno = 0;
        v = strtol(eq + 1, &end, 10);
        if (eq[1] == '\0' || *end != '\0' || errno != 0 || v < 1 || v > TPU_MAX_CHIPS) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "--mesh '%s': size of '%s' must be a "
                               "positive integer, got '%s'",
                               text, tok, eq + 1);
        }
        if (strcmp(tok, "data") == 0 && data == 0) {
            data = (int)v;
        } else if (strcmp(tok, "model") == 0 && model == 0) {
            model = (int)v;
        } else {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "--mesh '%s': axis '%s' is unknown or repeated (train shards over "
                               "'data' and 'model')",
                               text, tok);
        }
    }
    *data_p = data ? data : 1;
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
static tpu_status_t load_data(const train_args_t *a, tpu_npy_t *x, int32_t **y_p, int64_t *n_p,
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

static tpu_status_t save_all(const char *dir, int64_t H, float *const w[TPU_MLP_NPARAMS],
                             const float *losses, int steps, tpu_err_t *err)
{
    char path[1024];
    int64_t n = steps;
    int p;

    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        return tpu_err_set(err, TPU_ERR_INVALID, "--save %s: cannot create it: %s", dir,
                           strerror(errno));
    }
    for (p = 0; p < TPU_MLP_NPARAMS; p++) {
        int64_t shape[2];
        int nd = tpu_mlp_param_shape(H, p, shape);
        tpu_status_t status;

        snprintf(path, sizeof(path), "%s/%s.npy", dir, tpu_mlp_param_name(p));
        status = tpu_npy_write(path, TPU_NPY_F32, nd, shape, w[p], err);
        if (status != TPU_OK) {
            return status;
        }
    }
    snprintf(path, sizeof(path), "%s/losses.npy", dir);
    return tpu_npy_write(path, TPU_NPY_F32, 1, &n, losses, err);
}

/* ---- output ---- */

/* A number, or null when it is not finite (a diverged loss). */
static void json_num(tpu_json_t *j, const char *key, double v)
{
    if (key != NULL) {
        tpu_json_key(j, key);
    }
    if (isfinite(v)) {
        tpu_json_sig(j, v, 9);
    } else {
        tpu_json_null(j);
    }
}

static void fmt_bytes(double b, char *buf, size_t len)
{
    if (b >= 1024.0 * 1024 * 1024) {
        snprintf(buf, len, "%.2f GiB", b / (1024.0 * 1024 * 1024));
    } else if (b >= 1024.0 * 1024) {
        snprintf(buf, len, "%.2f MiB", b / (1024.0 * 1024));
    } else if (b >= 1024.0) {
        snprintf(buf, len, "%.1f KiB", b / 1024.0);
    } else {
        snprintf(buf, len, "%.0f B", b);
    }
}

/* The collectives of a step, as a table. */
static void print_colls(FILE *txt, const tpu_mlp_report_t *r)
{
    int k;

    if (r->ncoll == 0) {
        fprintf(txt, "  no collectives (every mesh axis has size 1)\n");
        return;
    }
    fprintf(txt, "  %-20s %-15s %-6s %-13s %5s %11s %11s %-8s %s\n", "collective", "kind", "axis",
            "torus", "group", "bytes", "modeled_us", "overlap", "algorithm");
    for (k = 0; k < r->ncoll; k++) {
        const tpu_mlp_coll_t *c = &r->coll[k];
        char b[32];

        fmt_bytes((double)c->bytes, b, sizeof(b));
        fprintf(txt, "  %-20s %-15s %-6s %-13s %5d %11s %11.3f %-8s %s\n", c->what,
                tpu_coll_name(c->kind), c->axis, c->layout, c->group, b, c->modeled_us,
                c->overlapped ? "async" : "exposed", c->algorithm);
    }
    for (k = 0; k < 2; k++) {
        const char *axis = k == 0 ? "data" : "model";
        int j;

        for (j = 0; j < r->ncoll; j++) {
            if (strcmp(r->coll[j].axis, axis) == 0) {
                fprintf(txt, "  groups over '%s' (chip ids): %s\n", axis, r->coll[j].groups);
                break;
            }
        }
    }
}

/* The cost split of a step, in words. */
static void print_split(FILE *txt, const tpu_mlp_report_t *r, uint64_t capacity)
{
    char peak[32], cap[32];

    fmt_bytes((double)r->hbm_peak, peak, sizeof(peak));
    fmt_bytes((double)capacity, cap, sizeof(cap));
    fprintf(txt,
            "  modeled step %.3f us = compute %.3f us + exposed communication %.3f us\n"
            "  communication %.3f us in %d collectives (%.1f%% of the step if none overlapped); "
            "%.3f us hidden behind compute\n"
            "  HBM peak %s per chip of %s; MFU %.2f%% (%.4g model FLOPs per step)\n",
            r->step_us, r->compute_us, r->exposed_us, r->comm_us, r->ncoll,
            r->compute_us + r->comm_us > 0 ? 100.0 * r->comm_us / (r->compute_us + r->comm_us)
                                           : 0.0,
            r->comm_us - r->exposed_us, peak, cap, 100.0 * r->mfu, r->model_flops);
}

/* The cost members of a step report, into the object being written. */
static void json_report(tpu_json_t *j, const tpu_mlp_report_t *r)
{
    int k;

    json_num(j, "step_time_us", r->step_us);
    json_num(j, "compute_us", r->compute_us);
    json_num(j, "comm_us", r->comm_us);
    json_num(j, "exposed_comm_us", r->exposed_us);
    json_num(j, "overlapped_comm_us", r->comm_us - r->exposed_us);
    tpu_json_kuint(j, "hbm_peak_bytes", (unsigned long long)r->hbm_peak);
    json_num(j, "mfu", r->mfu);
    json_num(j, "model_flops", r->model_flops);
    tpu_json_karray(j, "collectives");
    for (k = 0; k < r->ncoll; k++) {
        const tpu_mlp_coll_t *c = &r->coll[k];

        tpu_json_object(j);
        tpu_json_kstr(j, "what", c->what);
        tpu_json_kstr(j, "kind", tpu_coll_name(c->kind));
        tpu_json_kstr(j, "axis", c->axis);
        tpu_json_kstr(j, "torus_axes", c->layout);
        tpu_json_kstr(j, "groups", c->groups);
        tpu_json_kint(j, "group", c->group);
        tpu_json_kuint(j, "bytes", (unsigned long long)c->bytes);
        json_num(j, "modeled_us", c->modeled_us);
        tpu_json_kbool(j, "overlapped", c->overlapped);
        tpu_json_kstr(j, "algorithm", c->algorithm);
        tpu_json_object_end(j);
    }
    tpu_json_array_end(j);
}

/* ---- the run ---- */

/* Where the chips are: one per rank (comm), or all in this process. */
typedef struct where {
    MPI_Comm comm;  /* MPI_COMM_NULL: this process holds every chip */
    int root;       /* prints */
    tpu_job_t *job; /* the MPI job (NULL without one) */
} where_t;

/*
 * One double or int reduced in place over the chips' ranks: watched under the job
 * (a stalled chip is named within --timeout, launch/watch.c), else plain MPI.
 */
static void reduce_one(const where_t *w, void *v, MPI_Datatype type, MPI_Op op, const char *what)
{
    union {
        double d;
        int i;
    } mine;

    memcpy(&mine, v, type == MPI_DOUBLE ? sizeof(double) : sizeof(int));
    if (w->job != NULL) {
        tpu_job_allreduce(w->job, &mine, v, 1, type, op, what);
    }
}

static double max_all(const where_t *w, double v)
{
    reduce_one(w, &v, MPI_DOUBLE, MPI_MAX, "the step times");
    return v;
}

/*
 * Under MPI, make a failure that some ranks saw (an unreadable file on one node)
 * a failure of all, before anyone enters a collective the others would never
 * join.  Returns the lowest failing rank (it prints its message), or -1.
 */
static int agree(const where_t *w, tpu_status_t *status_p, int rank, int nranks)
{
    int first = *status_p != TPU_OK ? rank : nranks;

    if (w->comm == MPI_COMM_NULL) {
        return *status_p != TPU_OK ? rank : -1;
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

static int replicas_identical(const where_t *w, const tpu_mlp_t *mlp, int nlocal, int nchips)
{
    replica_t *rep = tpu__calloc((size_t)nchips, sizeof(*rep));
    int i, j, ok = 1;

    if (rep == NULL) {
        if (w->job != NULL) {
            /* The others are in the gather below: end the job with one line. */
            tpu_job_abort(w->job, "out of host memory for the check of the replicas");
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

        tpu_job_allgather(w->job, &mine, (int)sizeof(mine), rep, "the check of the replicas");
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

/* Everything a run needs and produces. */
typedef struct run {
    const tpu_pod_t *pod;
    tpu_mlp_spec_t spec;
    int steps;
    tpu_xport_t *x;
    where_t where;
    tpu_mlp_t *mlp;
    float *losses;
    double *wall_us;
    double (*modeled)[4]; /* per step: step, compute, comm, exposed comm (us) */
    tpu_mlp_report_t first, last;
    int replicas_ok;
    tpu_report_t *report;      /* --trace, --heatmap (root; NULL or inactive: none) */
    int measured;              /* --trace-measured */
    double t0;                 /* the job's start (wall clock), for the measured trace */
    float *w[TPU_MLP_NPARAMS]; /* the gathered weights (when asked) */
} run_t;

static void run_fini(run_t *r)
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
static tpu_status_t run_create(run_t *r, tpu_err_t *err)
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
static tpu_status_t trace_step(run_t *r, int s, const tpu_mlp_report_t *rep, tpu_err_t *err)
{
    char name[96];
    int k;

    if (!tpu_report_active(r->report)) {
        return TPU_OK;
    }
    snprintf(name, sizeof(name), "step %d", s);
    tpu_report_compute(r->report, name, 0, rep->step_us);
    for (k = 0; k < rep->nops; k++) {
        tpu_report_compute(r->report, rep->ops[k].what, rep->ops[k].start_us, rep->ops[k].dur_us);
    }
    for (k = 0; k < rep->ncoll; k++) {
        const tpu_mlp_coll_t *c = &rep->coll[k];
        tpu_status_t status;

        if (c->plan == NULL) {
            continue;
        }
        snprintf(name, sizeof(name), "%s %s (step %d)", tpu_coll_name(c->kind), c->what, s);
        status = tpu_report_model_at(r->report, c->plan, name, c->start_us, c->modeled_us, 1, err);
        if (status != TPU_OK) {
            return status;
        }
    }
    tpu_report_advance(r->report, rep->step_us);
    return TPU_OK;
}

/*
 * --trace-measured: step 's' ran from 't0' to 't1' (wall clock) on each chip:
 * under MPI every rank's, gathered to rank 0 with the watchdog; in one process
 * the same span for every chip.
 */
static void trace_measured(run_t *r, int s, double t0, double t1)
{
    const tpu_topo_t *t = tpu_pod_topo(r->pod);
    double mine[2] = {(t0 - r->t0) * 1e6, (t1 - t0) * 1e6}, *all = NULL;
    char name[32];
    int c;

    if (r->where.job != NULL) {
        if (r->where.root) {
            all = tpu__calloc(2 * (size_t)t->nchips, sizeof(double));
            if (all == NULL) {
                tpu_job_abort(r->where.job, "out of host memory for the measured trace");
            }
        }
        tpu_job_gather(r->where.job, mine, (int)sizeof(mine), all, 0,
                       "the gather of the measured steps");
    }
    if (r->where.root && r->report != NULL) {
        snprintf(name, sizeof(name), "step %d", s);
        for (c = 0; c < t->nchips; c++) {
            tpu_report_measured(r->report, c, name, all ? all[2 * c] : mine[0],
                                all ? all[2 * c + 1] : mine[1]);
        }
    }
    tpu__free(all);
}

/* Train, check the replicas after every step, gather the weights if asked. */
static tpu_status_t run_train(run_t *r, int gather, FILE *txt, int print_steps, tpu_err_t *err)
{
    tpu_status_t status;
    tpu_progress_t progress;
    int s, p;

    /* A bar with the step running, on a terminal, once training takes over 2 s. */
    tpu_progress_init(&progress, r->where.root && print_steps, r->steps, txt);
    for (s = 0; s < r->steps; s++) {
        tpu_mlp_report_t rep;
        double t0 = now_s();
        char item[32];

        snprintf(item, sizeof(item), "step %d", s);
        tpu_progress_update(&progress, s, item);

        status = tpu_mlp_step(r->mlp, s, &rep, err);
        if (status != TPU_OK) {
            tpu_progress_end(&progress);
            return status;
        }
        if (r->measured) {
            trace_measured(r, s, t0, now_s());
        }
        if (r->report != NULL && r->where.root) {
            status = trace_step(r, s, &rep, err);
            if (status != TPU_OK) {
                tpu_progress_end(&progress);
                return status;
            }
        }
        r->wall_us[s] = max_all(&r->where, (now_s() - t0) * 1e6);
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
            tpu_progress_end(&progress);
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
    tpu_progress_end(&progress);
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

static int exit_code(tpu_status_t status)
{
    return status == TPU_ERR_INVALID || status == TPU_ERR_RESOURCE_EXHAUSTED ? TPU_EXIT_USAGE
                                                                             : TPU_EXIT_FAIL;
}

int tpu_cmd_train(int argc, char **argv)
{
    train_args_t a;
    tpu_opts_t o;
    tpu_err_t err = {0};
    tpu_job_t job;
    tpu_pod_t *pod_local = NULL;
    const tpu_pod_t *pod;
    const tpu_topo_t *topo;
    const tpu_chip_spec_t *chip;
    tpu_sink_t sink = {NULL, NULL}, csv_sink = {NULL, NULL};
    tpu_json_t json_w, *json = NULL;
    tpu_report_t report;
    run_t r;
    char **rest = tpu__calloc((size_t)argc + 1, sizeof(char *));
    float *init[TPU_MLP_NPARAMS] = {0};
    tpu_npy_t x = {0}; /* --data, mapped */
    int32_t *y = NULL;
    int64_t nrows = 0;
    int nrest, mpi = 0, code = TPU_EXIT_OK, p, data = 1, model = 1;
    FILE *txt;
    tpu_status_t status;
    double wall0 = now_s(), wall_sum = 0;
    int printer = -1; /* the rank that prints a failure all ranks agreed on */

    memset(&r, 0, sizeof(r));
    memset(&report, 0, sizeof(report));
    if (rest == NULL) {
        if (under_mpirun()) {
            return tpu_job_refuse("out of host memory for the command line", &argc, &argv);
        }
        tpu_die_msg("out of host memory for the command line");
        return TPU_EXIT_FAIL;
    }
    if (parse_args(argc, argv, &a, &nrest, rest, &err) != TPU_OK ||
        tpu_opts_parse(nrest, rest, &o, &err) != TPU_OK) {
        tpu__free(rest);
        if (!a.model_only && under_mpirun()) {
            /* Meet the ranks that parsed theirs (tpu_job_start) and end with them. */
            return tpu_job_refuse(err.msg, &argc, &argv);
        }
        if (early_root()) {
            tpu_die_msg(err.msg);
        }
        return TPU_EXIT_USAGE;
    }
    tpu__free(rest);
    if (o.help) {
        usage(stdout);
        return TPU_EXIT_OK;
    }
    /* The pod: an MPI job (one chip per rank) or this process. */
    r.where.comm = MPI_COMM_NULL;
    r.where.root = 1;
    if (!a.model_only && under_mpirun()) {
        o.timeout = a.timeout; /* the whole job's watchdog, not only the collectives' */
        code = tpu_job_start(&o, &argc, &argv, &job);
        if (code >= 0) {
            return code;
        }
        if (agree_train(&a) != 0) {
            return tpu_job_end(&job, TPU_EXIT_USAGE);
        }
        code = TPU_EXIT_OK;
        mpi = 1;
        pod = job.pod;
        r.x = job.x;
        r.where.comm = job.comm;
        r.where.root = job.chip == 0;
        r.where.job = &job;
    } else {
        if (tpu_pod_setup(&o, &pod_local, &err) != TPU_OK) {
            tpu_die_msg(err.msg);
            return TPU_EXIT_USAGE;
        }
        pod = pod_local;
        r.where.root = early_root(); /* --model-only under mpirun: rank 0 prints */
    }
    r.pod = pod;
    topo = tpu_pod_topo(pod);
    chip = tpu_pod_chip(pod);
    txt = tpu_sink_text(o.json, o.csv);
    r.steps = a.model_only ? 1 : a.steps;
    tpu_mlp_spec_init(&r.spec);
    r.spec.batch = a.batch;
    r.spec.hidden = a.hidden;
    r.spec.lr = a.lr;
    r.spec.seed = a.seed;
    r.spec.model_only = a.model_only;
    r.spec.pad_hidden = a.model_only;
    r.spec.timeout_s = a.timeout;
    if (mpi) {
        /* Heartbeats while a collective waits: the watchdog tells a chip that
         * waits on a stopped one from the stopped one. */
        r.spec.on_wait = tpu_job_on_wait;
        r.spec.on_wait_arg = &job;
    }
    if (o.mesh == NULL && o.config != NULL) {
        /* The config file's mesh, when the flags give none (the file loaded fine
         * in the pod setup). */
        static tpu_config_t cfg;

        tpu_config_init(&cfg);
        if (tpu_config_load(o.config, &cfg, &err) == TPU_OK && cfg.mesh[0] != '\0') {
            o.mesh = cfg.mesh;
        }
    }
    status = parse_mesh(o.mesh, topo->nchips, &data, &model, &err);
    if (status == TPU_OK && a.dtype != NULL) {
        if (strcmp(a.dtype, "bf16") == 0 || strcmp(a.dtype, "bfloat16") == 0) {
            r.spec.precision = TPU_MLP_BF16;
        } else if (strcmp(a.dtype, "f32") == 0 || strcmp(a.dtype, "float32") == 0) {
            r.spec.precision = TPU_MLP_F32;
        } else {
            status = tpu_err_set(&err, TPU_ERR_INVALID, "--dtype must be bf16 or f32, got '%s'",
                                 a.dtype);
        }
    }
    if (status == TPU_OK && a.strategy != NULL) {
        status = tpu_mlp_strategy_parse(a.strategy, &r.spec.strategy, &err);
    }
    r.spec.data = data;
    r.spec.model = model;
    if (status == TPU_OK && a.data != NULL) {
        status = load_data(&a, &x, &y, &nrows, &err);
        r.spec.x = x.data;
        r.spec.y = y;
        r.spec.nrows = nrows;
    }
    if (status == TPU_OK && a.init != NULL) {
        status = load_init(a.init, a.hidden, init, &err);
        for (p = 0; p < TPU_MLP_NPARAMS; p++) {
            r.spec.init[p] = init[p];
        }
    }
    if (status == TPU_OK && !mpi && !a.model_only) {
        status = tpu_xport_loopback_create(topo->nchips, &r.x, &err);
    }
    if (status == TPU_OK) {
        status = tpu_sink_check(o.json, o.csv, &err);
    }
    if (status == TPU_OK && o.csv != NULL && r.where.root) {
        status = tpu_sink_open(&csv_sink, o.csv, &err);
    }
    if (status == TPU_OK && o.json != NULL && r.where.root) {
        status = tpu_sink_open(&sink, o.json, &err);
        if (status == TPU_OK) {
            tpu_json_init(&json_w, sink.f);
            json = &json_w;
        }
    }
    if (status == TPU_OK && a.model_only && o.trace_measured) {
        status = tpu_err_set(&err, TPU_ERR_INVALID,
                             "--trace-measured needs measured steps: drop it with --model-only");
    }
    if (status == TPU_OK && (o.trace != NULL || o.heatmap != NULL || o.trace_measured)) {
        /* Rank 0 writes them; the others only check what every rank can. */
        if (r.where.root) {
            char title[256];

            snprintf(title, sizeof(title),
                     "tpuemu train: MLP 784-%lld-%lld-10, mesh data=%d,model=%d, %d steps, on %d "
                     "chips of %s as %s (wrap %s)",
                     (long long)a.hidden, (long long)a.hidden, data, model, r.steps, topo->nchips,
                     chip->name, tpu_pod_shape(pod), tpu_pod_wrap(pod));
            status = tpu_report_open(&report, &o, pod, title, &err);
            r.report = &report;
        } else if (o.trace_measured && o.trace == NULL) {
            status = tpu_err_set(&err, TPU_ERR_INVALID, "--trace-measured needs --trace FILE");
        }
        r.measured = o.trace_measured;
        r.t0 = wall0;
    }
    if (status == TPU_OK) {
        status = run_create(&r, &err);
    }
    printer = agree(&r.where, &status, mpi ? job.chip : 0, mpi ? job.nranks : 1);
    if (status != TPU_OK) {
        code = exit_code(status);
        goto out;
    }
    if (r.where.root) {
        fprintf(txt,
                "train: MLP 784-%lld-%lld-10 on %d chips of %s as %s, mesh data=%d,model=%d, "
                "global batch %lld, %s, lr %g, %s%s\n",
                (long long)a.hidden, (long long)a.hidden, topo->nchips, chip->name,
                tpu_pod_shape(pod), data, model, (long long)a.batch,
                r.spec.precision == TPU_MLP_BF16 ? "bf16 matmuls (f32 accumulation)" : "f32", a.lr,
                a.data ? "data " : "synthetic data", a.data ? a.data : "");
        fprintf(txt, "transport: %s\n",
                a.model_only ? "none (--model-only: one step modeled, nothing computed)"
                : mpi        ? "mpi (one chip per rank, real bytes)"
                             : "loopback (every chip in this process, real bytes)");
        tpu_faults_print(txt, pod, "fault: ");
        fflush(txt);
    }
    status = run_train(&r, a.save != NULL, txt, !o.quiet, &err);
    printer = agree(&r.where, &status, mpi ? job.chip : 0, mpi ? job.nranks : 1);
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
        if (tpu_mlp_hidden(r.mlp) != a.hidden) {
            fprintf(txt,
                    "note: hidden %lld padded to %lld, a multiple of model=%d (as XLA pads "
                    "an uneven sharding)\n",
                    (long long)a.hidden, (long long)tpu_mlp_hidden(r.mlp), model);
        }
        fprintf(txt, "\nstrategy %s; every step costs the same on the model; step %d:\n",
                tpu_mlp_strategy_name(tpu_mlp_strategy(r.mlp)), r.steps - 1);
        print_colls(txt, L);
        print_split(txt, L, (uint64_t)chip->hbm_bytes);
        if (!a.model_only) {
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
    if (a.save != NULL && r.where.root) {
        status = save_all(a.save, a.hidden, r.w, r.losses, r.steps, &err);
        if (status != TPU_OK) {
            code = exit_code(status);
            goto out;
        }
        fprintf(txt, "saved the final weights and losses.npy in %s\n", a.save);
    }
    if (json != NULL) {
        int s;

        tpu_json_object(json);
        tpu_json_kstr(json, "command", "train");
        tpu_pod_json_header(json, pod);
        tpu_json_kobject(json, "mesh");
        tpu_json_kint(json, "data", data);
        tpu_json_kint(json, "model", model);
        tpu_json_object_end(json);
        tpu_json_kstr(json, "strategy", tpu_mlp_strategy_name(tpu_mlp_strategy(r.mlp)));
        tpu_json_kstr(json, "dtype", r.spec.precision == TPU_MLP_BF16 ? "bf16" : "f32");
        tpu_json_kint(json, "batch", (long long)a.batch);
        tpu_json_kint(json, "hidden", (long long)a.hidden);
        tpu_json_kint(json, "hidden_used", (long long)tpu_mlp_hidden(r.mlp));
        json_num(json, "lr", a.lr);
        tpu_json_kint(json, "steps", r.steps);
        tpu_json_kbool(json, "model_only", a.model_only);
        tpu_json_kstr(json, "transport", a.model_only ? "none" : mpi ? "mpi" : "loopback");
        tpu_json_karray(json, "losses");
        for (s = 0; !a.model_only && s < r.steps; s++) {
            json_num(json, NULL, r.losses[s]);
        }
        tpu_json_array_end(json);
        tpu_json_karray(json, "measured_us");
        for (s = 0; s < r.steps; s++) {
            tpu_json_fixed(json, r.wall_us[s], 1);
        }
        tpu_json_array_end(json);
        tpu_json_kuint(json, "hbm_capacity_bytes", (unsigned long long)chip->hbm_bytes);
        json_num(json, "peak_bf16_flops", chip->bf16_flops);
        if (!a.model_only && tpu_mlp_strategy(r.mlp) != TPU_MLP_FSDP) {
            tpu_json_kbool(json, "replicas_identical", r.replicas_ok);
        }
        json_report(json, &r.last);
        tpu_json_kfixed(json, "wall_s", now_s() - wall0, 3);
        tpu_json_object_end(json);
        if (tpu_json_end(json, &err) != TPU_OK) {
            code = TPU_EXIT_FAIL;
            tpu_die_msg(err.msg);
        }
        json = NULL;
    }
    if (csv_sink.f != NULL) {
        static const char *const cols[] = {"step",       "loss",    "modeled_us",
                                           "compute_us", "comm_us", "exposed_comm_us",
                                           "measured_us"};
        tpu_csv_t csv;
        int s;

        tpu_csv_init(&csv, csv_sink.f);
        tpu_csv_header(&csv, cols, (int)(sizeof(cols) / sizeof(cols[0])));
        for (s = 0; s < r.steps; s++) {
            int k;

            tpu_csv_int(&csv, s);
            if (a.model_only) {
                tpu_csv_empty(&csv);
            } else {
                tpu_csv_fixed(&csv, r.losses[s], 9); /* empty when not finite */
            }
            for (k = 0; k < 4; k++) {
                tpu_csv_fixed(&csv, r.modeled[s][k], 6);
            }
            tpu_csv_fixed(&csv, r.wall_us[s], 1);
            tpu_csv_end_row(&csv);
        }
        if (tpu_sink_close(&csv_sink, &err) != TPU_OK) {
            code = TPU_EXIT_FAIL;
            tpu_die_msg(err.msg);
        }
    }
    if (!r.replicas_ok) {
        code = TPU_EXIT_FAIL;
    }
    if (r.report != NULL) {
        r.report = NULL;
        if (tpu_report_close(&report, &err) != TPU_OK) {
            code = TPU_EXIT_FAIL;
            tpu_die_msg(err.msg);
        }
    }
out:
    if (r.report != NULL) {
        tpu_report_close(&report, NULL);
    }
    if (status != TPU_OK && (printer < 0 ? r.where.root : printer == (mpi ? job.chip : 0))) {
        tpu_die_msg(err.msg);
    }
    if (csv_sink.f != NULL) {
        tpu_sink_close(&csv_sink, NULL);
    }
    if (sink.f != NULL && tpu_sink_close(&sink, &err) != TPU_OK && code == TPU_EXIT_OK) {
        code = TPU_EXIT_FAIL;
        tpu_die_msg(err.msg);
    }
    fflush(stdout);
    run_fini(&r);
    tpu_npy_fini(&x);
    tpu__free(y);
    for (p = 0; p < TPU_MLP_NPARAMS; p++) {
        tpu__free(init[p]);
    }
    if (mpi) {
        /* A failure every rank saw the same way (bad input) ends the job cleanly. */
        int worst = code;

        tpu_job_allreduce(&job, &code, &worst, 1, MPI_INT, MPI_MAX, "the exit codes");
        return tpu_job_end(&job, worst);
    }
    tpu_xport_destroy(r.x);
    tpu_pod_destroy(pod_local);
    return code;
}

/* ---- the default run's step ---- */

int tpu__train_default_step(tpu_job_t *job, FILE *txt, tpu_json_t *json)
{
    const tpu_topo_t *t = tpu_pod_topo(job->pod);
    tpu_err_t err = {0};
    run_t r, ref;
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
    r.spec.on_wait = tpu_job_on_wait;
    r.spec.on_wait_arg = job;
    tol = r.spec.precision == TPU_MLP_BF16 ? 1e-2 : 1e-5;
    status = run_create(&r, &err);
    if (status == TPU_OK) {
        status = run_train(&r, 1, txt, 0, &err);
    }
    if (status != TPU_OK) {
        tpu_job_abort(job, err.msg);
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
            status = run_create(&ref, &err);
        }
        if (status == TPU_OK) {
            status = run_train(&ref, 1, txt, 0, &err);
        }
        if (status != TPU_OK) {
            tpu_job_abort(job, err.msg);
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
        print_colls(txt, &r.last);
        print_split(txt, &r.last, (uint64_t)tpu_pod_chip(job->pod)->hbm_bytes);
        fprintf(txt, "  measured %.1f us for the step on this host\n", r.wall_us[0]);
        if (json != NULL) {
            tpu_json_kobject(json, "train");
            tpu_json_kobject(json, "mesh");
            tpu_json_kint(json, "data", r.spec.data);
            tpu_json_kint(json, "model", r.spec.model);
            tpu_json_object_end(json);
            tpu_json_kstr(json, "strategy", tpu_mlp_strategy_name(tpu_mlp_strategy(r.mlp)));
            tpu_json_kint(json, "hidden", (long long)r.spec.hidden);
            tpu_json_kint(json, "batch", (long long)r.spec.batch);
            json_num(json, "loss", r.losses[0]);
            json_num(json, "loss_one_chip", ref.losses[0]);
            json_num(json, "rel_diff", loss_diff > w_diff ? loss_diff : w_diff);
            tpu_json_kbool(json, "ok", ok);
            json_report(json, &r.last);
            tpu_json_kfixed(json, "measured_us", r.wall_us[0], 1);
            tpu_json_object_end(json);
        }
        tpu_xport_destroy(ref.x);
        run_fini(&ref);
        tpu_pod_destroy(one);
    }
    run_fini(&r);
    tpu_job_bcast(job, &ok, 1, MPI_INT, 0, "the comparison with the one-chip run");
    return ok ? 0 : 1;
}
