/*
 * Command-line parsing, help texts, and the pod a job runs on (config file
 * first, then flags).
 */
#include "launch.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum {
    ARG_NONE = 0,
    ARG_STR,
    ARG_INT,
    ARG_DBL
};

typedef struct opt_def {
    const char *name;
    int type;
    size_t off;
    const char *cmds; /* subcommands that take it: "rmbtio" (run model bench train info, and
                         o for 'model --op', the chip op) */
} opt_def_t;

#define OFF(f) offsetof(tpu_opts_t, f)

static const opt_def_t defs[] = {
    {"chip", ARG_STR, OFF(chip), "rmbtio"},
    {"topology", ARG_STR, OFF(topology), "rmbti"},
    {"wrap", ARG_STR, OFF(wrap), "rmbti"},
    {"slices", ARG_INT, OFF(slices), "rmbti"},
    {"config", ARG_STR, OFF(config), "rmbti"},
    {"json", ARG_STR, OFF(json), "rmbtio"},
    {"csv", ARG_STR, OFF(csv), "b"},
    {"mesh", ARG_STR, OFF(mesh), "t"},
    {"quiet", ARG_NONE, OFF(quiet), "rmbti"},
    {"collective", ARG_STR, OFF(collective), "mb"},
    {"axes", ARG_STR, OFF(axes), "mb"},
    {"algo", ARG_STR, OFF(algo), "mb"},
    {"chunks", ARG_INT, OFF(chunks), "mb"},
    {"dtype", ARG_STR, OFF(dtype), "mbo"},
    {"op", ARG_STR, OFF(op), "b"},
    {"redop", ARG_STR, OFF(op), "mb"},
    {"bytes", ARG_STR, OFF(bytes), "m"},
    {"min-bytes", ARG_STR, OFF(min_bytes), "b"},
    {"max-bytes", ARG_STR, OFF(max_bytes), "b"},
    {"factor", ARG_DBL, OFF(factor), "b"},
    {"iters", ARG_INT, OFF(iters), "b"},
    {"warmup", ARG_INT, OFF(warmup), "b"},
    {"shift", ARG_INT, OFF(shift), "mb"},
    {"src", ARG_STR, OFF(src), "mb"},
    {"dst", ARG_STR, OFF(dst), "mb"},
    {"timeout", ARG_DBL, OFF(timeout), "rb"},
    {"compare-mpi", ARG_NONE, OFF(compare_mpi), "b"},
    {"dump-topology", ARG_NONE, OFF(dump_topology), "i"},
    {"algorithms", ARG_NONE, OFF(algorithms), "i"},
    {"ici-bw", ARG_STR, OFF(ici_bw), "rmbti"},
    {"ici-latency-us", ARG_STR, OFF(ici_latency_us), "rmbti"},
    {"dcn-bw", ARG_STR, OFF(dcn_bw), "rmbti"},
    {"dcn-latency-us", ARG_STR, OFF(dcn_latency_us), "rmbti"},
    {"help", ARG_NONE, OFF(help), "rmbtio"},
    {"op", ARG_STR, OFF(chip_op), "o"},
    {"out-dtype", ARG_STR, OFF(out_dtype), "o"},
    {"m", ARG_STR, OFF(m), "o"},
    {"k", ARG_STR, OFF(k), "o"},
    {"n", ARG_STR, OFF(n), "o"},
    {"elements", ARG_STR, OFF(elements), "o"},
    {"cols", ARG_STR, OFF(cols), "o"},
};

static const char *const cmds[] = {"run", "model", "bench", "train", "info"};

static char cmd_letter(const tpu_opts_t *o)
{
    return o->op_mode                     ? 'o'
           : strcmp(o->cmd, "run") == 0   ? 'r'
           : strcmp(o->cmd, "model") == 0 ? 'm'
           : strcmp(o->cmd, "bench") == 0 ? 'b'
           : strcmp(o->cmd, "train") == 0 ? 't'
                                          : 'i';
}

/* 'model --op' (or a flag only it takes): the chip op's roofline, not a collective. */
static int is_op_mode(int argc, char **argv, int from)
{
    static const char *const only[] = {"--op", "--out-dtype", "--m",   "--k",
                                       "--n",  "--elements",  "--cols"};
    int i;
    size_t k, len;

    for (i = from; i < argc; i++) {
        for (k = 0; k < sizeof(only) / sizeof(only[0]); k++) {
            len = strlen(only[k]);
            if (strncmp(argv[i], only[k], len) == 0 &&
                (argv[i][len] == '\0' || argv[i][len] == '=')) {
                return 1;
            }
        }
    }
    return 0;
}

static tpu_status_t parse_int(const char *name, const char *v, int *out, tpu_err_t *err)
{
    char *end;
    long x;

    errno = 0;
    x = strtol(v, &end, 10);
    if (*v == '\0' || *end != '\0' || errno != 0 || x < -1000000000L || x > 1000000000L) {
        return tpu_err_set(err, TPU_ERR_INVALID, "--%s takes an integer, got '%s'", name, v);
    }
    *out = (int)x;
    return TPU_OK;
}

static tpu_status_t parse_dbl(const char *name, const char *v, double *out, tpu_err_t *err)
{
    char *end;
    double x;

    errno = 0;
    x = strtod(v, &end);
    if (*v == '\0' || *end != '\0' || errno != 0 || !isfinite(x)) {
        return tpu_err_set(err, TPU_ERR_INVALID, "--%s takes a number, got '%s'", name, v);
    }
    *out = x;
    return TPU_OK;
}

tpu_status_t tpu_opts_parse(int argc, char **argv, tpu_opts_t *o, tpu_err_t *err)
{
    int i = 1;
    size_t k;

    memset(o, 0, sizeof(*o));
    o->cmd = "run";
    o->slices = 0;
    o->timeout = -1;
    o->factor = 2;
    o->iters = -1;
    o->warmup = -1;
    if (argc > 1 && argv[1][0] != '-') {
        for (k = 0; k < sizeof(cmds) / sizeof(cmds[0]); k++) {
            if (strcmp(argv[1], cmds[k]) == 0) {
                o->cmd = cmds[k];
                break;
            }
        }
        if (k == sizeof(cmds) / sizeof(cmds[0])) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "unknown command '%s' (commands: run, model, bench, train, info)",
                               argv[1]);
        }
        i = 2;
    }
    o->op_mode = strcmp(o->cmd, "model") == 0 && is_op_mode(argc, argv, i);
    for (; i < argc; i++) {
        const char *a = argv[i], *val = NULL;
        char name[64];
        const opt_def_t *d = NULL;

        if (strcmp(a, "-h") == 0) {
            o->help = 1;
            continue;
        }
        if (strncmp(a, "--", 2) != 0) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "unexpected argument '%s' (options start with --; see tpuemu "
                               "%s --help)",
                               a, o->cmd);
        }
        snprintf(name, sizeof(name), "%s", a + 2);
        if (strchr(name, '=') != NULL) {
            *strchr(name, '=') = '\0';
            val = strchr(a, '=') + 1;
        }
        for (k = 0; k < sizeof(defs) / sizeof(defs[0]) && d == NULL; k++) {
            if (strcmp(defs[k].name, name) == 0 && strchr(defs[k].cmds, cmd_letter(o)) != NULL) {
                d = &defs[k];
            }
        }
        if (d == NULL) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "unknown option '--%s' for 'tpuemu %s%s' (see "
                               "tpuemu %s%s --help)",
                               name, o->cmd, o->op_mode ? " --op" : "", o->cmd,
                               o->op_mode ? " --op matmul" : "");
        }
        if (d->type == ARG_NONE) {
            if (val != NULL) {
                return tpu_err_set(err, TPU_ERR_INVALID, "--%s takes no value", name);
            }
            *(int *)((char *)o + d->off) = 1;
            continue;
        }
        if (val == NULL) {
            if (i + 1 >= argc) {
                return tpu_err_set(err, TPU_ERR_INVALID, "--%s needs a value", name);
            }
            val = argv[++i];
        }
        if (d->type == ARG_STR) {
            *(const char **)((char *)o + d->off) = val;
        } else if (d->type == ARG_INT) {
            if (parse_int(name, val, (int *)((char *)o + d->off), err) != TPU_OK) {
                return TPU_ERR_INVALID;
            }
        } else if (parse_dbl(name, val, (double *)((char *)o + d->off), err) != TPU_OK) {
            return TPU_ERR_INVALID;
        }
        if (strcmp(name, "shift") == 0) {
            o->has_shift = 1;
        }
        if (strcmp(name, "slices") == 0 && o->slices < 1) {
            return tpu_err_set(err, TPU_ERR_INVALID, "--slices must be 1 or more, got %s", val);
        }
    }
    return TPU_OK;
}

void tpu_usage(FILE *out, const char *cmd)
{
    static const char common[] =
        "Pod options (all subcommands):\n"
        "  --chip v4|v5e|v5p|v6e|v7   chip generation (default: v5e for 1-2 axes, v5p for 3)\n"
        "  --topology SHAPE           torus shape of one slice: 16, 4x4, 4x4x4, 16x20x28 "
        "(default 4x4)\n"
        "  --wrap auto|all|none|x,z   wraparound per axis (default auto: the TPU slice rules)\n"
        "  --slices N                 slices joined by DCN (default 1); axis 'dcn' spans them\n"
        "  --config FILE.yaml         pod description; flags override it\n"
        "  --ici-bw B/s --ici-latency-us US --dcn-bw B/s --dcn-latency-us US\n"
        "                             override the link constants of the chip\n"
        "  --json FILE|-              write JSON (- for stdout)\n"
        "  --quiet                    print less\n";

    if (strcmp(cmd, "model") == 0) {
        fprintf(
            out,
            "usage: tpuemu model [pod options] --collective C --axes A --bytes SIZE [--json -]\n"
            "       tpuemu model --op matmul|add|... (see tpuemu model --op matmul --help)\n\n"
            "Model a collective on the pod in one process, without mpirun or data: the\n"
            "same schedules and link model as a real run, through the sim transport.\n\n"
            "  --collective C   psum, all-gather, reduce-scatter, all-to-all, ppermute, p2p\n"
            "  --axes A         axes of the collective: x, x,y, x,y,z, dcn, dcn,x,y (default: "
            "all ICI axes)\n"
            "  --bytes SIZE     bytes, with K, M, G suffixes (powers of 2): all-gather output,\n"
            "                   reduce-scatter input, psum/all-to-all buffer, bytes sent\n"
            "  --dtype f32|bf16|i32   --redop sum|max|min\n"
            "  --shift K        ppermute: send to the chip K ahead on the axis (default 1)\n"
            "  --src C --dst C  p2p: chips as coordinates (1,2) or ids (default: chip 0 to\n"
            "                   the farthest chip)\n"
            "  --algo NAME      force an algorithm (tpuemu info --algorithms)\n"
            "  --chunks K       force the pipeline depth of the torus algorithms\n\n%s",
            common);
    } else if (strcmp(cmd, "bench") == 0) {
        fprintf(
            out,
            "usage: mpirun -n N tpuemu bench [pod options] [--collective C] [--axes A]\n"
            "                    [--min-bytes S] [--max-bytes S] [--factor F] [--dtype D]\n"
            "                    [--iters N] [--warmup N] [--compare-mpi] [--json F] [--csv F]\n\n"
            "Sweep sizes with real data over MPI; print nccl-tests style rows with the modeled\n"
            "and the measured time side by side.  Without --collective, all of them.\n"
            "  --compare-mpi    also time the host MPI library's own collective on the same\n"
            "                   bytes (MPI_Allreduce, MPI_Allgather, MPI_Reduce_scatter_block,\n"
            "                   MPI_Alltoall) and print the ratio\n"
            "  --timeout S      watchdog seconds per collective (default 60)\n\n%s",
            common);
    } else if (strcmp(cmd, "info") == 0) {
        fprintf(out,
                "usage: tpuemu info [--chip C] [--json -] [--dump-topology] [--algorithms]\n\n"
                "Print the chip constants (with the ridge point), the topology's links,\n"
                "or the collective algorithms.\n\n%s",
                common);
    } else {
        fprintf(out,
                "usage: mpirun -n N tpuemu [run] [pod options] [--timeout S]\n"
                "       tpuemu model|bench|train|info ... (tpuemu COMMAND --help)\n\n"
                "Emulate a TPU pod: every MPI rank is one chip.  The default run prints the pod\n"
                "and where each chip runs, proves the wiring (a token over every link), and runs\n"
                "every collective at a small and a large size with real data, verified, with the\n"
                "modeled TPU time and the measured emulation time side by side, and ends with\n"
                "one sharded training step (tpuemu train) checked against one chip.\n\n%s",
                common);
    }
}

/* A positive number, with K/M/G for sizes when 'size' is set. */
static tpu_status_t flag_number(const char *name, const char *text, double *out, tpu_err_t *err)
{
    double v;

    if (parse_dbl(name, text, &v, err) != TPU_OK) {
        return TPU_ERR_INVALID;
    }
    if (v < 0) {
        return tpu_err_set(err, TPU_ERR_INVALID, "--%s must not be negative, got %s", name, text);
    }
    *out = v;
    return TPU_OK;
}

tpu_status_t tpu_pod_setup(const tpu_opts_t *o, tpu_pod_t **pod_p, tpu_err_t *err)
{
    tpu_config_t cfg;
    tpu_pod_spec_t spec;
    tpu_status_t status;
    double v = 0;

    *pod_p = NULL;
    tpu_config_init(&cfg);
    if (o->config != NULL) {
        status = tpu_config_load(o->config, &cfg, err);
        if (status != TPU_OK) {
            return status;
        }
    }
    tpu_pod_spec_init(&spec);
    spec.shape = o->topology ? o->topology : cfg.topology[0] ? cfg.topology : "4x4";
    spec.chip = o->chip ? o->chip : cfg.chip[0] ? cfg.chip : NULL;
    if (o->chip == NULL && cfg.chip_custom) {
        spec.chip_spec = &cfg.custom;
    }
    spec.wrap = o->wrap ? o->wrap : cfg.wrap[0] ? cfg.wrap : "auto";
    spec.slices = o->slices > 0 ? o->slices : cfg.slices > 0 ? cfg.slices : 1;
    spec.ici_bw = cfg.ici_bw;
    spec.ici_latency = cfg.ici_latency;
    spec.dcn_bw = cfg.dcn_bw;
    spec.dcn_latency = cfg.dcn_latency;
    if (o->ici_bw && flag_number("ici-bw", o->ici_bw, &v, err) == TPU_OK) {
        spec.ici_bw = v;
    }
    if (o->ici_latency_us && flag_number("ici-latency-us", o->ici_latency_us, &v, err) == TPU_OK) {
        spec.ici_latency = v * 1e-6;
    }
    if (o->dcn_bw && flag_number("dcn-bw", o->dcn_bw, &v, err) == TPU_OK) {
        spec.dcn_bw = v;
    }
    if (o->dcn_latency_us && flag_number("dcn-latency-us", o->dcn_latency_us, &v, err) == TPU_OK) {
        spec.dcn_latency = v * 1e-6;
    }
    if (err != NULL && err->status != TPU_OK) {
        return err->status;
    }
    return tpu_pod_create(&spec, pod_p, err);
}

tpu_status_t tpu_parse_chip(const tpu_pod_t *pod, const char *text, const char *what, int *chip_p,
                            tpu_err_t *err)
{
    const tpu_topo_t *t = tpu_pod_topo(pod);
    int vals[TPU_MAX_AXES + 1], n = 0, c[TPU_MAX_AXES] = {0, 0, 0}, slice = 0, i, chip;
    const char *p = text;

    while (n <= TPU_MAX_AXES) {
        char *end;
        long v = strtol(p, &end, 10);

        if (end == p || !isdigit((unsigned char)*p)) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "--%s '%s': expected coordinates like 1,2 or a chip id", what, text);
        }
        vals[n++] = (int)v;
        if (*end == '\0') {
            break;
        }
        if (*end != ',') {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "--%s '%s': expected coordinates like 1,2 or a chip id", what, text);
        }
        p = end + 1;
    }
    if (n == 1) {
        if (vals[0] >= t->nchips) {
            return tpu_err_set(err, TPU_ERR_INVALID, "--%s chip %d is outside the %d-chip pod",
                               what, vals[0], t->nchips);
        }
        *chip_p = vals[0];
        return TPU_OK;
    }
    if (n != t->naxes + (t->slices > 1)) {
        return tpu_err_set(err, TPU_ERR_INVALID, "--%s '%s': give %d coordinates for topology %s%s",
                           what, text, t->naxes + (t->slices > 1), tpu_pod_shape(pod),
                           t->slices > 1 ? " (slice first)" : "");
    }
    i = 0;
    if (t->slices > 1) {
        slice = vals[i++];
    }
    for (; i < n; i++) {
        c[i - (t->slices > 1)] = vals[i];
    }
    chip = tpu_topo_chip(t, slice, c);
    if (chip < 0) {
        return tpu_err_set(err, TPU_ERR_INVALID, "--%s '%s' is outside topology %s", what, text,
                           tpu_pod_shape(pod));
    }
    *chip_p = chip;
    return TPU_OK;
}

tpu_status_t tpu_desc_setup(const tpu_opts_t *o, const tpu_pod_t *pod, const char *bytes,
                            tpu_coll_desc_t *d, tpu_err_t *err)
{
    unsigned long long n = 0;
    tpu_status_t status;

    tpu_coll_desc_init(d);
    if (o->collective != NULL) {
        status = tpu_coll_parse(o->collective, &d->kind, err);
        if (status != TPU_OK) {
            return status;
        }
    }
    if (o->axes != NULL) {
        status = tpu_topo_parse_axes(tpu_pod_topo(pod), o->axes, &d->axes, err);
        if (status != TPU_OK) {
            return status;
        }
    } else {
        d->axes = (1u << tpu_pod_topo(pod)->naxes) - 1;
        if (d->kind == TPU_COLL_PPERMUTE) {
            d->axes = 1;
        }
    }
    if (o->dtype != NULL && tpu_dtype_parse(o->dtype, &d->dtype, err) != TPU_OK) {
        return TPU_ERR_INVALID;
    }
    if (o->op != NULL && tpu_redop_parse(o->op, &d->op, err) != TPU_OK) {
        return TPU_ERR_INVALID;
    }
    if (bytes != NULL) {
        status = tpu_parse_size(bytes, &n, err);
        if (status != TPU_OK) {
            return status;
        }
        d->bytes = n;
    }
    if (o->has_shift) {
        d->shift = o->shift;
    }
    if (o->src != NULL && tpu_parse_chip(pod, o->src, "src", &d->src, err) != TPU_OK) {
        return TPU_ERR_INVALID;
    }
    if (o->dst != NULL && tpu_parse_chip(pod, o->dst, "dst", &d->dst, err) != TPU_OK) {
        return TPU_ERR_INVALID;
    }
    if (o->algo != NULL) {
        snprintf(d->algo, sizeof(d->algo), "%s", o->algo);
    }
    if (o->chunks < 0) {
        return tpu_err_set(err, TPU_ERR_INVALID, "--chunks must be positive, got %d", o->chunks);
    }
    d->chunks = o->chunks;
    return TPU_OK;
}

void tpu_die_msg(const char *msg)
{
    fprintf(stderr, "tpuemu: %s\n", msg);
}

int tpu_main(int argc, char **argv)
{
    tpu_opts_t opts;
    tpu_err_t err = {0};

    if (argc > 1 && strcmp(argv[1], "train") == 0) {
        return tpu_cmd_train(argc, argv); /* its own flags, then the pod flags */
    }
    if (tpu_opts_parse(argc, argv, &opts, &err) != TPU_OK) {
        tpu_die_msg(err.msg);
        return TPU_EXIT_USAGE;
    }
    if (opts.op_mode) {
        return tpu_cmd_op(&opts);
    }
    if (opts.help) {
        tpu_usage(stdout, opts.cmd);
        return TPU_EXIT_OK;
    }
    if (strcmp(opts.cmd, "info") == 0) {
        return tpu_cmd_info(&opts);
    }
    if (strcmp(opts.cmd, "model") == 0) {
        return tpu_cmd_model(&opts);
    }
    if (strcmp(opts.cmd, "bench") == 0) {
        return tpu_cmd_bench(&opts, argc, argv);
    }
    return tpu_cmd_run(&opts, argc, argv);
}
