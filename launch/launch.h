/*
 * The tpuemu program: shared declarations of launch/.  This is the only layer
 * that prints, chooses exit codes, and calls MPI_Init/MPI_Finalize.
 */
#ifndef TPU_LAUNCH_H
#define TPU_LAUNCH_H

#include "tpu/chip.h"
#include "tpu/coll.h"
#include "tpu/pod.h"
#include "tpu/topo.h"

#include "config.h"
#include "coords.h"

#include <stdio.h>

/* Exit codes: 0 success, 1 a failed check or run, 2 bad input. */
#define TPU_EXIT_OK    0
#define TPU_EXIT_FAIL  1
#define TPU_EXIT_USAGE 2

/* Everything the command line says (NULL / 0 / -1: not given). */
typedef struct tpu_opts {
    const char *cmd;
    const char *chip, *topology, *wrap, *config, *json, *csv, *mesh;
    const char *trace, *heatmap; /* --trace FILE, --heatmap FILE.svg */
    int trace_measured;
    int slices;
    int quiet;
    const char *collective, *axes, *algo, *dtype, *op;
    const char *bytes, *min_bytes, *max_bytes;
    double factor;
    int iters, warmup, chunks;
    int shift, has_shift;
    const char *src, *dst;
    double timeout;
    int compare_mpi, dump_topology, algorithms, help;
    const char *ici_bw, *ici_latency_us, *dcn_bw, *dcn_latency_us;
    const char *inject; /* --inject crash:chip=C,call=N */
    const char *msg_cost_us, *pcie_bw, *nic_bw, *reduce_bw;
    int calibrated;
    /* --fault KIND:key=value,... (repeatable; checked by tpu_opts_parse) */
    const char *fault[TPU_MAX_FAULTS];
    int nfault;
    /* 'model --op': the chip op and its sizes. */
    int op_mode;
    const char *chip_op, *out_dtype, *m, *k, *n, *elements, *cols;
} tpu_opts_t;

/* Parse argv into 'opts' (argv[1] may be a subcommand).  Prints nothing. */
tpu_status_t tpu_opts_parse(int argc, char **argv, tpu_opts_t *opts, tpu_err_t *err);
/* The checks of tpu_opts_parse() that need no pod (ranges, names, flags that do not
 * apply), for options a command's own parser filled in. */
tpu_status_t tpu_opts_check(const tpu_opts_t *opts, tpu_err_t *err);
/* The help text of a subcommand. */
void tpu_usage(FILE *out, const char *cmd);
/* Build the pod from the config file and the flags (flags win); tpu_pod_destroy() it. */
tpu_status_t tpu_pod_setup(const tpu_opts_t *opts, tpu_pod_t **pod_p, tpu_err_t *err);
/* Build a collective description from the flags. */
tpu_status_t tpu_desc_setup(const tpu_opts_t *opts, const tpu_pod_t *pod, const char *bytes,
                            tpu_coll_desc_t *desc, tpu_err_t *err);
/* The watchdog's --timeout S (run, bench, train, replay): seconds any wait may last. */
#define TPU_TIMEOUT_MIN_S 0.1
#define TPU_TIMEOUT_MAX_S 86400
/* A number flag '--NAME V': finite, in C syntax, 'lo' to 'hi'; one message naming
 * the flag otherwise.  Every command's number flags read through it. */
tpu_status_t tpu_parse_number(const char *name, const char *v, double lo, double hi, double *out,
                              tpu_err_t *err);
/* Parse a chip given as coordinates "1,2" (slice first when slices > 1) or an id. */
tpu_status_t tpu_parse_chip(const tpu_pod_t *pod, const char *text, const char *what, int *chip_p,
                            tpu_err_t *err);

int tpu_cmd_info(const tpu_opts_t *opts);
int tpu_cmd_model(const tpu_opts_t *opts);
int tpu_cmd_run(const tpu_opts_t *opts, int argc, char **argv);
int tpu_cmd_bench(const tpu_opts_t *opts, int argc, char **argv);
/* 'tpuemu train' (argv[1] is "train"): parses its own flags, then the pod flags. */
int tpu_cmd_train(int argc, char **argv);
/* 'tpuemu model --op ...': the roofline and pipelined time of one chip op. */
int tpu_cmd_op(const tpu_opts_t *opts);
/* tpuemu replay MODULE.hlo (launch/cmd/replay.c): its own flags, after "replay". */
int tpu_cmd_replay(int argc, char **argv);

/* The program: parse, dispatch, return the exit code. */
int tpu_main(int argc, char **argv);

/* Print "tpuemu: msg" on stderr. */
void tpu_die_msg(const char *msg);

#endif /* TPU_LAUNCH_H */
