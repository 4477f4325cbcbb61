/*
 * The tpuemu program: the options every command reads (filled by the option
 * parser from the command table's rows), the exit codes, and what a command's
 * runner gets (the program's entry, app_main(), is cli.h's).  This is the only
 * layer that prints, chooses exit codes, and calls MPI_Init/MPI_Finalize.
 */
#ifndef APP_LAUNCH_H
#define APP_LAUNCH_H

#include "tpu/chip.h"
#include "tpu/coll.h"
#include "tpu/pod.h"
#include "tpu/topo.h"

#include "config_yaml.h"
#include "coords.h"
#include "opt.h"

#include <stdint.h>
#include <stdio.h>

/*
 * Exit codes, one per class of failure (docs/errors.md): 0 success, 1 a failure
 * of the run itself (a wrong result, out of memory, an internal error), 2 bad
 * input (refused before the work), 3 an output that could not be written (a
 * file or stdout, once the run has started), 4 a timeout (the watchdog ended
 * the job: a rank stopped, stuck or too slow).  SIGINT and SIGTERM end the
 * program with 130 and 143 (128 + the signal); a lost rank ends an MPI job with
 * mpirun's status for it (137 for SIGKILL).
 */
#define APP_EXIT_OK      0
#define APP_EXIT_FAIL    1
#define APP_EXIT_USAGE   2
#define APP_EXIT_OUTPUT  3
#define APP_EXIT_TIMEOUT 4

/* The watchdog's --timeout S (run, bench, train, replay): seconds any wait may last. */
#define APP_TIMEOUT_MIN_S 0.1
#define APP_TIMEOUT_MAX_S 86400

/* replay: at most this many --trip-count and --custom-call-us entries. */
#define APP_MAX_KV_FLAGS 4096

/*
 * Everything the command line says (NULL / 0: not given; numbers without a
 * default: -1).  One struct for every command: each command's rows
 * (commands.def) say which fields it fills.
 */
typedef struct app_opts {
    const char *cmd;   /* the command's name: "run", "model", ... */
    const char *topic; /* help COMMAND */
    /* The pod and the outputs (the shared rows). */
    const char *chip, *topology, *wrap, *config, *json, *csv, *mesh;
    const char *trace, *heatmap; /* --trace FILE, --heatmap FILE.svg */
    int trace_measured;
    int slices;
    int quiet;
    double ici_bw, ici_latency_us, dcn_bw, dcn_latency_us; /* -1: the chip's */
    double msg_cost_us, pcie_bw, nic_bw, reduce_bw;        /* -1: the chip's */
    int calibrated;
    /* --fault KIND:key=value,... (repeatable) */
    const char *fault[TPU_MAX_FAULTS];
    int nfault;
    double timeout;     /* the watchdog (seconds) */
    const char *inject; /* --inject crash:chip=C,call=N */
    int help;
    /* model and bench: the collective. */
    const char *collective, *axes, *algo, *dtype, *op;
    const char *bytes, *min_bytes, *max_bytes;
    double factor;
    int iters, warmup, chunks;
    int shift, has_shift;
    const char *src, *dst;
    int compare_mpi;
    const char *step_bytes; /* bench -i: the sweep's step in bytes */
    int check;              /* bench -c: check the results (1, the default) or not (0) */
    int wide;               /* bench --wide: every column */
    /* info */
    int dump_topology, algorithms;
    /* 'model --op': the chip op and its sizes. */
    int op_mode;
    const char *chip_op, *out_dtype, *m, *k, *n, *elements, *cols;
    /* train */
    int steps;
    int64_t batch, hidden, seed;                      /* batch, hidden: 0 when not given */
    const char *model;                                /* --model: mlp (NULL) or transformer */
    int64_t layers, d_model, heads, d_ff, vocab, seq; /* transformer; 0 when not given */
    double lr;                                        /* -1 when not given */
    const char *precision, *strategy, *data, *labels, *init, *save;
    int model_only;
    /* train --model transformer: the planner's workload (0 / NULL / -1 when not given) */
    int64_t kv_heads, head_dim;
    const char *mlp, *block, *remat, *param_dtype, *optimizer, *preset, *attention;
    int tied_embeddings, search, prefetch;
    double input_rate;
    double dcn_fabric_bw; /* -1: the generation's fit */
    double mxu_fraction;  /* -1: the generation's fit */
    /* replay */
    const char *module_path;
    int module, list, top;
    const char *device_order, *entry;
    app_kv_t trips, customs; /* --trip-count, --custom-call-us */
    int by_source;           /* --by-source N: 0 when not given */
    const char *compare;     /* --compare A.hlo: replayed beside the operand */
} app_opts_t;

/*
 * What a command's runner gets from the start-up (cli.c): the options, argc and
 * argv (MPI_Init may change them), and the pod: the job's (under a job) or this
 * process's (when the command's row asks the start-up to build it), else NULL.
 * A runner under a job ends it (app_job_end()); the start-up frees a local pod.
 */
struct app_job;
typedef struct app_ctx {
    app_opts_t *o;
    int *argc;
    char ***argv;
    struct app_job *job; /* NULL: one process */
    tpu_pod_t *pod;
} app_ctx_t;

#endif /* APP_LAUNCH_H */
