/*
 * tpuemu train --model transformer: the decoder-only transformer of
 * include/tpu/transformer.h trained on the emulated pod, sharded over the mesh
 * axes dcn, data, fsdp, sequence and tensor (include/tpu/transformer_pod.h), with the
 * loss of every step and the step's report (train_xfmr_out.c: the collectives,
 * the modeled step, HBM peak and MFU of the step cost model,
 * include/tpu/transformer_cost.h, with the run's own collective times).
 *
 *   tpuemu train --model transformer --topology 2x2 --mesh data=2,tensor=2
 *   mpirun -n 4 tpuemu train --model transformer --topology 2x2 --mesh sequence=2,tensor=2
 *   tpuemu train --model transformer --model-only --chip v5p --topology 16x16x16 --mesh ...
 *
 * Without mpirun every chip runs in this process over the loopback transport
 * (real bytes; the local chips in lock step on threads); under mpirun each
 * rank is one chip and the collectives move real bytes over MPI, under the
 * job's watchdog (--timeout).  --model-only runs nothing: the step cost model
 * alone, on any pod (no data, no transport, no mpirun).
 *
 * Data: --data X.npy --labels Y.npy, int32 (or int64) token ids [rows, S] in
 * [0, V), step t taking rows tpu_xfmr_batch_row(rows, B, t); without them a
 * synthetic task from --seed: 4 B sequences, each an arithmetic progression
 * modulo V, x[i] = (a + i d) mod V with a random start a in [0, V) and a random
 * stride d in 1..4, and the targets the next element, y[i] = x[i + 1] (the
 * model must read the stride from the context: attention), train_tokens.c.
 * Each step's batch comes through the input pipeline (train_prefetch.c): each
 * local chip's window of it, read ahead by a reader thread (--prefetch) at the
 * host's --input-rate, the loop's wait for it measured beside the modeled
 * input (train_plan.c).  Weights: --init
 * DIR (the files of transformer.md), else random from --seed.  --save DIR
 * writes the final weights (every chip's piece gathered into the whole
 * parameter) and losses.npy [steps].
 *
 * Bad input: one line on stderr (the lowest failing rank) and exit 2.
 */
#include "train_xfmr.h"

#include "tpu/npy.h"
#include "tpu/pod.h"
#include "tpu/spmd.h"
#include "tpu/transformer.h"
#include "tpu/transformer_cost.h"
#include "tpu/transformer_pod.h"

#include "alloc.h"
#include "ckpt.h"
#include "clock.h"
#include "config_yaml.h"
#include "faults.h"
#include "jobenv.h"
#include "json.h"
#include "progress.h"
#include "report.h"
#include "sink.h"
#include "train_out.h"
#include "train_plan.h"
#include "train_prefetch.h"
#include "train_run.h"
#include "train_search.h"
#include "train_tokens.h"
#include "train_xfmr_out.h"
#include "watch.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The transformer's defaults where the MLP's rows differ or give none. */
#define XDEF_BATCH 16
#define XDEF_LR    0.1

/* A planner flag is given that the real run does not honour (it runs the input pipeline). */
static int plan_given(const app_opts_t *o)
{
    app_opts_t q = *o;

    q.prefetch = 2;
    q.input_rate = -1;
    return app_xfmr_plan_given(&q);
}

tpu_status_t app_train_xfmr_check(const app_opts_t *o, tpu_err_t *err)
{
    if (o->hidden > 0 || o->strategy != NULL) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "--%s is a flag of the MLP (--model mlp), not of the transformer",
                           o->hidden > 0 ? "hidden" : "strategy");
    }
    if (o->model_only && (o->data || o->labels || o->init || o->save)) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "--model-only runs without data: drop --data, --labels, --init and "
                           "--save");
    }
    if (!o->model_only && plan_given(o)) {
        return tpu_err_set(err, TPU_ERR_UNSUPPORTED,
                           "the real run trains only the model of issue 24 (MHA, GELU, sequential, "
                           "SGD); --preset, --kv-heads, --head-dim, --mlp, --block, "
                           "--tied-embeddings, --remat, --param-dtype, --optimizer, --attention, "
                           "--mxu-fraction, --dcn-fabric-bw and --search need --model-only");
    }
    if (o->trace_measured && o->model_only) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "--trace-measured needs measured steps: drop it with --model-only");
    }
    if (o->trace_measured && o->trace == NULL) {
        return tpu_err_set(err, TPU_ERR_INVALID, "--trace-measured needs --trace FILE");
    }
    if ((o->data == NULL) != (o->labels == NULL)) {
        return tpu_err_set(err, TPU_ERR_INVALID, "--data and --labels go together");
    }
    return TPU_OK;
}

typedef struct xrun {
    tpu_xfmr_config_t m; /* the whole model, batch the global batch */
    int steps;
    double lr;
    char mesh[128];
    app_tokens_t tok;             /* --data and --labels mapped, or the synthetic task */
    double *losses, *measured_us; /* [steps] */
    double *wait_us;              /* [steps]: the loop's measured wait for each batch */
    double t0;                    /* --trace-measured's clock: the run's start (wall clock, s) */
    int nchips_pod;               /* the pod's chips: the measured trace's processes */
    tpu_xfmr_report_t rep;        /* the last step's, local chip 0 */
    tpu_xfmr_cost_t cost;         /* the step cost model of the layout */
    tpu_xfmr_plan_t plan;         /* the workload beyond the trained model (--model-only) */
    app_xfmr_input_t input;       /* the input pipeline, modeled */
    int plan_mode;                /* --model-only with a plan flag or --calibrated */
    char note[512];               /* where the run's collectives differ from the model's */
    double wall_us;
    uint64_t *hashes; /* [chips] by chip id: tpu_xfmr_pod_piece's, on the root */
    int *pieces;      /* [chips] */
    int nchips;
} xrun_t;

/*
 * Parameter p whole on the root: the local chips' pieces (loopback), or every
 * rank's piece gathered (MPI: each piece's origin, shape and values, the same
 * size on every rank since the splits are even).
 */
static tpu_status_t gather_param(tpu_xfmr_pod_t *p, app_job_t *job, int pi, float *whole,
                                 const int64_t wshape[2], tpu_err_t *err)
{
    int nlocal = tpu_xfmr_pod_nlocal(p), n = job != NULL ? job->nranks : nlocal, i;
    int64_t shape[2], org[2];
    float *piece = tpu_xfmr_param(tpu_xfmr_pod_chip(p, 0), pi, shape);
    size_t rec = 4 * sizeof(int64_t) + (size_t)(shape[0] * shape[1]) * sizeof(float);
    unsigned char *all = NULL, *mine = NULL;

    if (job != NULL) {
        mine = tpu__malloc(rec);
        all = job->chip == 0 ? tpu__malloc(rec * (size_t)n) : NULL;
        if (mine == NULL || (job->chip == 0 && all == NULL)) {
            tpu__free(mine);
            tpu__free(all);
            return tpu_err_set(err, TPU_ERR_NO_MEMORY, "no memory to gather the weights");
        }
        tpu_xfmr_param_origin(tpu_xfmr_pod_chip(p, 0), pi, org);
        memcpy(mine, org, 2 * sizeof(int64_t));
        memcpy(mine + 2 * sizeof(int64_t), shape, 2 * sizeof(int64_t));
        memcpy(mine + 4 * sizeof(int64_t), piece, rec - 4 * sizeof(int64_t));
        app_job_gather(job, mine, (int)rec, all, 0, "the weights for --save");
        tpu__free(mine);
        if (all == NULL) {
            return TPU_OK;
        }
    }
    for (i = 0; i < n; i++) {
        const float *v;
        int64_t k;

        if (job != NULL) {
            memcpy(org, all + rec * (size_t)i, 2 * sizeof(int64_t));
            memcpy(shape, all + rec * (size_t)i + 2 * sizeof(int64_t), 2 * sizeof(int64_t));
            v = (const float *)(all + rec * (size_t)i + 4 * sizeof(int64_t));
        } else {
            v = tpu_xfmr_param(tpu_xfmr_pod_chip(p, i), pi, shape);
            tpu_xfmr_param_origin(tpu_xfmr_pod_chip(p, i), pi, org);
        }
        for (k = 0; k < shape[0]; k++) {
            memcpy(whole + (org[0] + k) * wshape[1] + org[1], v + k * shape[1],
                   (size_t)shape[1] * sizeof(float));
        }
    }
    tpu__free(all);
    return TPU_OK;
}

/* --save DIR: every parameter whole (gathered on every rank, written by the root) and
 * losses.npy, whole or not at all (ckpt.h). */
static tpu_status_t save_all(const char *dir, tpu_xfmr_pod_t *p, app_job_t *job, const xrun_t *r,
                             int root, tpu_err_t *err)
{
    int np = tpu_xfmr_param_count(&r->m), pi;
    char(*names)[TPU_XFMR_NAME_LEN] = tpu__calloc((size_t)np + 1, sizeof(*names));
    const char **list = tpu__calloc((size_t)np + 1, sizeof(*list));
    tpu_status_t status = TPU_OK;
    app_ckpt_t ck;
    int64_t n = r->steps;

    memset(&ck, 0, sizeof(ck));
    if (names == NULL || list == NULL) {
        status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "no memory for --save's file names");
        goto out;
    }
    for (pi = 0; pi < np; pi++) {
        int64_t shape[2];

        tpu_xfmr_param_info(&r->m, pi, names[pi], shape);
        list[pi] = names[pi];
    }
    list[np] = "losses";
    if (root) {
        status = app_ckpt_begin(&ck, dir, list, np + 1, err);
    }
    /* Every rank takes part in every gather, whatever the root's status. */
    for (pi = 0; pi < np; pi++) {
        int64_t shape[2] = {1, 1}, w2[2];
        int nd = tpu_xfmr_param_info(&r->m, pi, names[pi], shape);
        float *whole;

        w2[0] = shape[0];
        w2[1] = shape[1];
        whole = tpu__calloc((size_t)(w2[0] * w2[1]), sizeof(float));
        if (whole == NULL) {
            status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "no memory to gather %s", names[pi]);
            goto out;
        }
        if (gather_param(p, job, pi, whole, w2, err) != TPU_OK) {
            tpu__free(whole);
            status = err->status;
            goto out;
        }
        if (root && status == TPU_OK) {
            status = app_ckpt_write(&ck, pi, nd, shape, whole, err);
        }
        tpu__free(whole);
    }
    if (root && status == TPU_OK) {
        float *l = tpu__malloc((size_t)r->steps * sizeof(float));
        int s;

        if (l == NULL) {
            status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "no memory for the losses");
            goto out;
        }
        for (s = 0; s < r->steps; s++) {
            l[s] = (float)r->losses[s];
        }
        status = app_ckpt_write(&ck, np, 1, &n, l, err);
        tpu__free(l);
    }
out:
    if (app_ckpt_finish(&ck, status == TPU_OK, err) != TPU_OK) {
        status = TPU_ERR_IO;
    }
    tpu__free(list);
    tpu__free(names);
    return status;
}

/*
 * Every chip's piece and parameter hash (tpu_xfmr_pod_piece) by chip id on the
 * root (gathered under MPI): the JSON's "replicas", where the replicas over dcn
 * and data (the chips of one piece) must show one hash.
 */
static tpu_status_t piece_hashes(tpu_xfmr_pod_t *p, app_job_t *job, xrun_t *r, tpu_err_t *err)
{
    int nlocal = tpu_xfmr_pod_nlocal(p), n = job != NULL ? job->nranks : nlocal, i, piece;
    uint64_t mine[3], *all = tpu__calloc((size_t)(3 * n), sizeof(uint64_t));

    r->nchips = n;
    r->hashes = tpu__calloc((size_t)n, sizeof(uint64_t));
    r->pieces = tpu__calloc((size_t)n, sizeof(int));
    if (all == NULL || r->hashes == NULL || r->pieces == NULL) {
        tpu__free(all);
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "no memory for the replicas' hashes");
    }
    for (i = 0; i < nlocal; i++) {
        tpu_xfmr_pod_piece(p, i, &piece, &mine[2]);
        mine[0] = (uint64_t)tpu_xfmr_pod_chip_id(p, i);
        mine[1] = (uint64_t)piece;
        memcpy(all + 3 * i, mine, sizeof(mine));
    }
    if (job != NULL) {
        app_job_gather(job, mine, (int)sizeof(mine), all, 0, "the replicas' hashes");
    }
    for (i = 0; i < n; i++) {
        uint64_t c = all[3 * i];

        if (c < (uint64_t)n) {
            r->pieces[c] = (int)all[3 * i + 1];
            r->hashes[c] = all[3 * i + 2];
        }
    }
    tpu__free(all);
    return TPU_OK;
}

/* Every two chips of one piece hold the same hash. */
static int replicas_identical(const xrun_t *r)
{
    int a, b;

    for (a = 0; a < r->nchips; a++) {
        for (b = 0; b < a; b++) {
            if (r->pieces[a] == r->pieces[b] && r->hashes[a] != r->hashes[b]) {
                return 0;
            }
        }
    }
    return 1;
}

static void write_json(app_json_t *j, const app_opts_t *o, const tpu_pod_t *pod, const xrun_t *r,
                       int mpi, double wall0)
{
    const tpu_xfmr_cost_t *c = &r->cost;
    int k;

    app_json_document(j, "train");
    app_pod_json_header(j, pod);
    app_json_kstr(j, "model", "transformer");
    app_json_kint(j, "layers", (long long)r->m.layers);
    app_json_kint(j, "d_model", (long long)r->m.d_model);
    app_json_kint(j, "heads", (long long)r->m.heads);
    app_json_kint(j, "d_ff", (long long)r->m.d_ff);
    app_json_kint(j, "vocab", (long long)r->m.vocab);
    app_json_kint(j, "seq", (long long)r->m.seq);
    app_json_kint(j, "batch", (long long)r->m.batch);
    app_json_kobject(j, "mesh");
    app_json_kint(j, "data", c->data);
    app_json_kint(j, "fsdp", c->fsdp);
    app_json_kint(j, "sequence", c->sequence);
    app_json_kint(j, "tensor", c->tensor);
    app_json_kint(j, "dcn", c->dcn);
    app_json_object_end(j);
    app_json_kstr(j, "dtype", r->m.precision == TPU_XFMR_BF16 ? "bf16" : "f32");
    app_train_json_num(j, "lr", r->lr);
    app_json_kint(j, "steps", r->steps);
    app_json_kbool(j, "model_only", o->model_only);
    app_json_kstr(j, "data", o->model_only ? "none" : o->data != NULL ? o->data : "synthetic");
    app_json_kstr(j, "transport", o->model_only ? "none" : mpi ? "mpi" : "loopback");
    app_json_karray(j, "losses");
    for (k = 0; !o->model_only && k < r->steps; k++) {
        app_train_json_num(j, NULL, r->losses[k]);
    }
    app_json_array_end(j);
    app_train_json_num(j, "peak_bf16_flops", tpu_pod_chip(pod)->bf16_flops);
    app_xfmr_json(j, c, (uint64_t)tpu_pod_chip(pod)->hbm_bytes);
    if (r->plan_mode) {
        app_xfmr_plan_json(j, &r->plan, c, &r->input);
    }
    if (!o->model_only) {
        /* The run's own figures beside the model's. */
        app_train_json_num(j, "run_compute_us", r->rep.compute_us);
        app_train_json_num(j, "run_chip_flops", r->rep.flops);
        app_json_kstr(j, "collectives_note", r->note);
        app_json_kbool(j, "replicas_identical", replicas_identical(r));
        app_json_karray(j, "replicas");
        for (k = 0; k < r->nchips; k++) {
            char h[24];

            snprintf(h, sizeof(h), "%016llx", (unsigned long long)r->hashes[k]);
            app_json_object(j);
            app_json_kint(j, "chip", k);
            app_json_kint(j, "piece", r->pieces[k]);
            app_json_kstr(j, "param_hash", h);
            app_json_object_end(j);
        }
        app_json_array_end(j);
        app_json_kfixed(j, "measured_us", r->wall_us, 1);
        app_xfmr_wait_json(j, &r->input, r->wait_us, r->steps);
    }
    app_json_kfixed(j, "wall_s", tpu__now_s() - wall0, 3);
    app_json_object_end(j);
}

/* The flags into the model (the defaults of the rows), the dtype checked. */
static tpu_status_t read_flags(const app_opts_t *o, int nchips, xrun_t *r, tpu_err_t *err)
{
    tpu_xfmr_config_init(&r->m);
    r->m.layers = o->layers > 0 ? o->layers : 2;
    r->m.d_model = o->d_model > 0 ? o->d_model : 256;
    r->m.heads = o->heads > 0 ? o->heads : 8;
    r->m.d_ff = o->d_ff > 0 ? o->d_ff : 1024;
    r->m.vocab = o->vocab > 0 ? o->vocab : 512;
    r->m.seq = o->seq > 0 ? o->seq : 128;
    r->m.batch = o->batch > 0 ? o->batch : XDEF_BATCH;
    r->lr = o->lr >= 0 ? o->lr : XDEF_LR;
    r->steps = o->model_only ? 1 : o->steps;
    if (app_xfmr_plan_read(o, &r->m, &r->plan, err) != TPU_OK) {
        return TPU_ERR_INVALID;
    }
    r->plan_mode = o->model_only && (app_xfmr_plan_given(o) || o->calibrated);
    snprintf(r->mesh, sizeof(r->mesh), "data=%d", nchips);
    if (o->mesh != NULL) {
        snprintf(r->mesh, sizeof(r->mesh), "%s", o->mesh);
    } else if (o->config != NULL) {
        /* The config file's mesh, when the flags give none (the file loaded fine in the pod
         * setup). */
        static app_config_t cfg;
        tpu_err_t e = {0};

        app_config_init(&cfg);
        if (app_config_load(o->config, &cfg, &e) == TPU_OK && cfg.mesh[0] != '\0') {
            snprintf(r->mesh, sizeof(r->mesh), "%s", cfg.mesh);
        }
    }
    if (o->precision == NULL || strcmp(o->precision, "bf16") == 0 ||
        strcmp(o->precision, "bfloat16") == 0) {
        r->m.precision = TPU_XFMR_BF16;
    } else if (strcmp(o->precision, "f32") == 0 || strcmp(o->precision, "float32") == 0) {
        r->m.precision = TPU_XFMR_F32;
    } else {
        return tpu_err_set(err, TPU_ERR_INVALID, "--dtype must be bf16 or f32, got '%s'",
                           o->precision);
    }
    if (r->plan.head_dim == 0 && r->m.d_model % r->m.heads != 0) {
        return tpu_err_set(err, TPU_ERR_INVALID, "--d-model %lld is not a multiple of --heads %lld",
                           (long long)r->m.d_model, (long long)r->m.heads);
    }
    r->losses = tpu__calloc((size_t)r->steps, sizeof(double));
    r->measured_us = tpu__calloc((size_t)r->steps, sizeof(double));
    r->wait_us = tpu__calloc((size_t)r->steps, sizeof(double));
    return r->losses != NULL && r->measured_us != NULL && r->wait_us != NULL
               ? TPU_OK
               : tpu_err_set(err, TPU_ERR_NO_MEMORY, "no memory for the losses");
}

/* The pod's models: created, then their weights from --init or --seed. */
static tpu_status_t make_pod(const app_opts_t *o, const tpu_pod_t *pod, tpu_xport_t *x,
                             app_job_t *job, const xrun_t *r, tpu_xfmr_pod_t **p_p, tpu_err_t *err)
{
    tpu_spmd_opts_t so;
    tpu_status_t status;
    int i;

    tpu_spmd_opts_init(&so);
    so.timeout_s = o->timeout;
    if (job != NULL) {
        /* Heartbeats while a collective waits: the watchdog names a stopped chip. */
        so.on_wait = app_job_on_wait;
        so.on_wait_arg = job;
    }
    status = tpu_xfmr_pod_create(pod, x, r->mesh, &r->m, &so, p_p, err);
    for (i = 0; status == TPU_OK && i < tpu_xfmr_pod_nlocal(*p_p); i++) {
        tpu_xfmr_t *xf = tpu_xfmr_pod_chip(*p_p, i);

        if (o->init != NULL) {
            status = tpu_xfmr_load(xf, o->init, err);
        } else {
            tpu_xfmr_init_random(xf, (uint64_t)o->seed);
        }
    }
    return status;
}

static int exit_code(tpu_status_t status)
{
    if (status == TPU_ERR_IO) {
        return APP_EXIT_OUTPUT; /* --save's files */
    }
    return status == TPU_ERR_INVALID || status == TPU_ERR_RESOURCE_EXHAUSTED ||
                   status == TPU_ERR_UNSUPPORTED
               ? APP_EXIT_USAGE
               : APP_EXIT_FAIL;
}

/* The header lines (root). */
static void print_head(FILE *txt, const app_opts_t *o, const tpu_pod_t *pod, const xrun_t *r,
                       int mpi)
{
    const tpu_chip_spec_t *chip = tpu_pod_chip(pod);

    fprintf(txt,
            "train: transformer L=%lld D=%lld H=%lld F=%lld V=%lld S=%lld on %d chips of %s as "
            "%s, mesh %s, global batch %lld sequences, %s, lr %g, %s%s\n",
            (long long)r->m.layers, (long long)r->m.d_model, (long long)r->m.heads,
            (long long)r->m.d_ff, (long long)r->m.vocab, (long long)r->m.seq,
            tpu_pod_topo(pod)->nchips, chip->name, tpu_pod_shape(pod), r->mesh,
            (long long)r->m.batch,
            r->m.precision == TPU_XFMR_BF16 ? "bf16 matmuls (f32 accumulation)" : "f32", r->lr,
            o->model_only ? "no data"
            : o->data     ? "data "
                          : "synthetic data (progressions mod V, from --seed)",
            o->data ? o->data : "");
    app_train_print_transport(txt, pod, o->model_only, mpi);
}

/* --trace, --heatmap (root): opened before the work. */
static tpu_status_t open_report(const app_opts_t *o, const tpu_pod_t *pod, const xrun_t *r,
                                app_report_t *rep, tpu_err_t *err)
{
    char title[256];

    snprintf(title, sizeof(title),
             "tpuemu train: transformer L=%lld D=%lld H=%lld F=%lld V=%lld S=%lld, mesh %s, %d "
             "steps, on %d chips of %s as %s (wrap %s)",
             (long long)r->m.layers, (long long)r->m.d_model, (long long)r->m.heads,
             (long long)r->m.d_ff, (long long)r->m.vocab, (long long)r->m.seq, r->mesh, r->steps,
             tpu_pod_topo(pod)->nchips, tpu_pod_chip(pod)->name, tpu_pod_shape(pod),
             tpu_pod_wrap(pod));
    return app_report_open(rep, o, pod, title, err);
}

/*
 * The input pipeline of the local chips: each one's window of the batch (its
 * ids checked in every batch the run reads), the reader started at --prefetch
 * and this process's share of its host's --input-rate.
 */
static tpu_status_t open_input(const app_opts_t *o, tpu_xfmr_pod_t *p, xrun_t *r,
                               app_prefetch_t **pf_p, tpu_err_t *err)
{
    const int n = tpu_xfmr_pod_nlocal(p);
    app_tokens_window_t *win = tpu__calloc((size_t)n, sizeof(*win));
    app_prefetch_opts_t po;
    tpu_status_t status = TPU_OK;
    int i;

    if (win == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "no memory for the input windows");
    }
    for (i = 0; i < n && status == TPU_OK; i++) {
        app_tokens_window_t *w = &win[i];

        tpu_xfmr_pod_shard(p, i, &w->row0, &w->rows, &w->col0, &w->cols);
        if (o->data != NULL) {
            status = app_tokens_check(&r->tok, w, r->steps, r->m.vocab, o->data, o->labels, err);
        }
    }
    memset(&po, 0, sizeof(po));
    po.src = &r->tok;
    po.nwin = n;
    po.win = win;
    po.depth = o->prefetch;
    po.steps = r->steps;
    po.tokens_per_s = o->input_rate > 0 ? o->input_rate * n / r->input.chips_per_host : 0;
    if (status == TPU_OK) {
        status = app_prefetch_create(&po, pf_p, err);
    }
    tpu__free(win);
    return status;
}

/* The steps of a real run, each with its line, the report's times from the run's log. */
static tpu_status_t run_steps(const app_opts_t *o, tpu_xfmr_pod_t *p, app_prefetch_t *pf,
                              const app_train_where_t *w, xrun_t *r, app_report_t *rep, FILE *txt,
                              tpu_err_t *err)
{
    app_progress_t progress;
    tpu_status_t status = TPU_OK;
    int t;

    app_progress_init(&progress, w->root && !o->quiet, r->steps, txt);
    for (t = 0; t < r->steps && status == TPU_OK; t++) {
        const int32_t *const *x, *const *y;
        double span[4], w0 = tpu__now_s();
        char item[32];

        snprintf(item, sizeof(item), "step %d", t);
        app_progress_update(&progress, t, item);
        app_prefetch_take(pf, &x, &y, &r->wait_us[t]);
        span[0] = (w0 - r->t0) * 1e6;
        span[1] = r->wait_us[t]; /* this chip's, in its trace */
        /* The step waits for the slowest chip's batch: the report's wait is the largest. */
        r->wait_us[t] = app_train_max_all(w, r->wait_us[t], "the waits for input");
        w0 = tpu__now_s();
        status = tpu_xfmr_pod_step_shards(p, x, y, r->lr, &r->rep, err);
        r->measured_us[t] = (tpu__now_s() - w0) * 1e6;
        app_prefetch_release(pf);
        span[2] = (w0 - r->t0) * 1e6;
        span[3] = r->measured_us[t];
        if (o->trace_measured && status == TPU_OK) {
            app_xfmr_trace_measured(rep, w->job, r->nchips_pod, t, span);
        }
        r->wall_us += r->measured_us[t];
        r->losses[t] = r->rep.loss;
        if (status != TPU_OK || !w->root) {
            continue;
        }
        if (t == 0) { /* every step makes the same calls */
            app_xfmr_from_log(&r->cost, p, r->note, sizeof(r->note));
        }
        if (rep != NULL) {
            status = app_xfmr_trace(rep, &r->cost, t, err);
        }
        if (!o->quiet) {
            app_progress_end(&progress);
            fprintf(txt,
                    "step %4d  loss %-12.6g modeled %12.3f us (compute %.3f, exposed comm %.3f)  "
                    "measured %10.1f us, input wait %.1f us\n",
                    t, r->rep.loss, r->cost.step_us, r->cost.compute_us, r->cost.exposed_comm_us,
                    r->measured_us[t], r->wait_us[t]);
            fflush(txt);
        }
    }
    app_progress_end(&progress);
    r->wall_us /= r->steps;
    return status;
}

int app_cmd_train_xfmr(app_ctx_t *ctx)
{
    app_opts_t *o = ctx->o;
    app_job_t *job = ctx->job;
    const tpu_pod_t *pod = ctx->pod;
    const tpu_topo_t *topo = tpu_pod_topo(pod);
    const tpu_chip_spec_t *chip = tpu_pod_chip(pod);
    app_train_where_t where = {MPI_COMM_NULL, 1, NULL};
    app_sink_t sink = {NULL, NULL}, csv_sink = {NULL, NULL};
    app_report_t report, *rep = NULL;
    tpu_xport_t *x = NULL;
    tpu_xfmr_pod_t *p = NULL;
    app_prefetch_t *pf = NULL;
    tpu_err_t err = {0};
    tpu_status_t status;
    xrun_t r;
    FILE *txt = app_sink_text(o->json, o->csv);
    int mpi = job != NULL, code = APP_EXIT_OK, printer = -1, rank = mpi ? job->chip : 0;
    int nranks = mpi ? job->nranks : 1;
    double wall0 = tpu__now_s();

    memset(&r, 0, sizeof(r));
    memset(&report, 0, sizeof(report));
    if (mpi) {
        x = job->x;
        where.comm = job->comm;
        where.root = job->chip == 0;
        where.job = job;
    } else if (o->model_only) {
        where.root = app_jobenv_root(); /* --model-only under mpirun: rank 0 prints */
    }
    status = read_flags(o, topo->nchips, &r, &err);
    status = status == TPU_OK ? app_xfmr_plan_pod(o, pod, &r.plan, &err) : status;
    if (status == TPU_OK && o->search) {
        code = app_train_search(o, pod, &r.m, &r.plan, where.root);
        goto out;
    }
    if (status == TPU_OK && !o->model_only) {
        status = o->data != NULL ? app_tokens_open(&r.tok, o->data, o->labels, &r.m, &err)
                                 : app_tokens_synth(&r.tok, &r.m, (uint64_t)o->seed, &err);
    }
    if (status == TPU_OK && !mpi && !o->model_only) {
        status = tpu_xport_loopback_create(topo->nchips, &x, &err);
    }
    if (status == TPU_OK) {
        status = app_sink_check(o->json, o->csv, &err);
    }
    if (status == TPU_OK && o->csv != NULL && where.root) {
        status = app_sink_open(&csv_sink, o->csv, &err);
    }
    if (status == TPU_OK && o->json != NULL && where.root) {
        status = app_sink_open(&sink, o->json, &err);
    }
    if (status == TPU_OK && (o->trace != NULL || o->heatmap != NULL) && where.root) {
        status = open_report(o, pod, &r, &report, &err);
        rep = status == TPU_OK ? &report : NULL;
    }
    if (status == TPU_OK && !o->model_only) {
        status = make_pod(o, pod, x, job, &r, &p, &err);
    }
    if (status == TPU_OK) {
        status = tpu_xfmr_cost_run_plan(pod, &r.m, &r.plan, r.mesh, &r.cost, &err);
    }
    if (status == TPU_OK && r.plan_mode) {
        status = app_xfmr_fit_check(&r.cost, (uint64_t)chip->hbm_bytes, &err);
    }
    if (status == TPU_OK) {
        app_xfmr_input(o, pod, &r.cost, &r.input);
    }
    if (status == TPU_OK && !o->model_only) {
        status = open_input(o, p, &r, &pf, &err);
    }
    printer = app_train_agree(&where, &status, rank, nranks);
    if (status != TPU_OK) {
        code = exit_code(status);
        goto out;
    }
    if (where.root) {
        print_head(txt, o, pod, &r, mpi);
    }
    if (o->model_only) {
        status = rep != NULL ? app_xfmr_trace(rep, &r.cost, 0, &err) : TPU_OK;
    } else {
        r.t0 = wall0;
        r.nchips_pod = topo->nchips;
        status = run_steps(o, p, pf, &where, &r, rep, txt, &err);
        if (status == TPU_OK) {
            status = piece_hashes(p, job, &r, &err);
        }
    }
    printer = app_train_agree(&where, &status, rank, nranks);
    if (status != TPU_OK) {
        code = exit_code(status);
        goto out;
    }
    if (where.root) {
        if (o->model_only && !o->quiet) {
            fprintf(txt, "step %4d  modeled %12.3f us (compute %.3f, exposed comm %.3f)\n", 0,
                    r.cost.step_us, r.cost.compute_us, r.cost.exposed_comm_us);
        }
        app_xfmr_print(txt, &r.cost, (uint64_t)chip->hbm_bytes);
        if (r.plan_mode || !o->model_only) {
            app_xfmr_input_print(txt, &r.input);
        }
        if (!o->model_only) {
            app_xfmr_wait_print(txt, &r.input, r.wait_us, r.steps, o->input_rate);
        }
        if (r.note[0] != '\0') {
            fprintf(txt, "  note: the run's collectives differ from the model's: %s\n", r.note);
        }
        if (!o->model_only) {
            fprintf(txt,
                    "loss %.6g -> %.6g over %d steps; measured %.1f us per step on this host "
                    "(the run's compute %.3f us, the model's %.3f us)\n",
                    r.losses[0], r.losses[r.steps - 1], r.steps, r.wall_us, r.rep.compute_us,
                    r.cost.compute_us);
        }
    }
    if (o->save != NULL) {
        status = save_all(o->save, p, job, &r, where.root, &err);
        printer = app_train_agree(&where, &status, rank, nranks);
        if (status != TPU_OK) {
            code = exit_code(status);
            goto out;
        }
        if (where.root) {
            fprintf(txt, "saved the final weights and losses.npy in %s\n", o->save);
        }
    }
    if (sink.f != NULL) {
        app_json_t j;

        app_json_init(&j, sink.f);
        write_json(&j, o, pod, &r, mpi, wall0);
        if (app_json_end(&j, &err) != TPU_OK) {
            code = APP_EXIT_FAIL;
            app_die_msg(err.msg);
        }
    }
    if (csv_sink.f != NULL) {
        app_xfmr_csv(csv_sink.f, pod, &r.cost, &r.input, o->model_only ? 1 : r.steps,
                     o->model_only ? NULL : r.losses, o->model_only ? NULL : r.measured_us,
                     o->model_only ? NULL : r.wait_us);
        if (app_sink_close(&csv_sink, &err) != TPU_OK) {
            code = APP_EXIT_FAIL;
            app_die_msg(err.msg);
        }
    }
    if (rep != NULL) {
        rep = NULL;
        if (app_report_close(&report, &err) != TPU_OK) {
            code = APP_EXIT_FAIL;
            app_die_msg(err.msg);
        }
    }
out:
    if (rep != NULL) {
        app_report_close(&report, NULL);
    }
    if (status != TPU_OK && (printer < 0 ? where.root : printer == rank)) {
        app_die_msg(err.msg);
    }
    code = app_train_close_sinks(&sink, &csv_sink, status != TPU_OK, code);
    fflush(stdout);
    tpu_xfmr_pod_destroy(p);
    tpu_xfmr_cost_fini(&r.cost);
    app_prefetch_destroy(pf);
    app_tokens_fini(&r.tok);
    tpu__free(r.wait_us);
    tpu__free(r.losses);
    tpu__free(r.measured_us);
    tpu__free(r.hashes);
    tpu__free(r.pieces);
    if (mpi) {
        int worst = code;

        app_job_allreduce(job, &code, &worst, 1, MPI_INT, MPI_MAX, "the exit codes");
        return app_job_end(job, worst);
    }
    tpu_xport_destroy(x);
    return code;
}
