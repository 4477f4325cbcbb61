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
    const char *cmds; /* subcommands that take it: "rmbti" (run model bench train info) */
} opt_def_t;

#define OFF(f) offsetof(tpu_opts_t, f)

static const opt_def_t defs[] = {
    {"chip", ARG_STR, OFF(chip), "rmbti"},
    {"topology", ARG_STR, OFF(topology), "rmbti"},
    {"wrap", ARG_STR, OFF(wrap), "rmbti"},
    {"slices", ARG_INT, OFF(slices), "rmbti"},
    {"config", ARG_STR, OFF(config), "rmbti"},
    {"json", ARG_STR, OFF(json), "rmbti"},
    {"csv", ARG_STR, OFF(csv), "b"},
    {"mesh", ARG_STR, OFF(mesh), "t"},
    {"quiet", ARG_NONE, OFF(quiet), "rmbti"},
    {"collective", ARG_STR, OFF(collective), "mb"},
    {"axes", ARG_STR, OFF(axes), "mb"},
    {"algo", ARG_STR, OFF(algo), "mb"},
    {"chunks", ARG_INT, OFF(chunks), "mb"},
    {"dtype", ARG_STR, OFF(dtype), "mb"},
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
    {"help", ARG_NONE, OFF(help), "rmbti"},
};

static const char *const cmds[] = {"run", "model", "bench", "train", "info"};

static char cmd_letter(const char *cmd)
{
    return strcmp(cmd, "run") == 0     ? 'r'
           : strcmp(cmd, "model") == 0 ? 'm'
           : strcmp(cmd, "bench") == 0 ? 'b'
           : strcmp(cmd, "train") == 0 ? 't'
                                       : 'i';
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
            return tpu_err_set(
                err, TPU_ERR_INVALID,
                "unknown command '%s' (commands: run, model, bench, train, info, replay)", argv[1]);
        }
        i = 2;
    }
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
        for (k = 0; k < sizeof(defs) / sizeof(defs[0]); k++) {
            if (strcmp(defs[k].name, name) == 0) {
                d = &defs[k];
            }
        }
        if (d == NULL || strchr(d->cmds, cmd_letter(o->cmd)) == NULL) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "unknown option '--%s' for 'tpuemu %s' (see "
                               "tpuemu %s --help)",
                               name, o->cmd, o->cmd);
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
    } else if (strcmp(cmd, "train") == 0) {
        fprintf(out, "usage: mpirun -n N tpuemu train --mesh data=4,model=4 ...\n\n"
                     "Sharded training workloads.  Not built yet: this command says so and "
                     "exits.\n");
    } else {
        fprintf(out,
                "usage: mpirun -n N tpuemu [run] [pod options] [--timeout S]\n"
                "       tpuemu model|bench|train|info|replay ... (tpuemu COMMAND --help)\n\n"
                "Emulate a TPU pod: every MPI rank is one chip.  The default run prints the pod\n"
                "and where each chip runs, proves the wiring (a token over every link), and runs\n"
                "every collective at a small and a large size with real data, verified, with the\n"
                "modeled TPU time and the measured emulation time side by side.\n\n%s",
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

tpu_status_t tpu_pod_setup(const tpu_opts_t *o, tpu_pod_t *pod, tpu_err_t *err)
{
    tpu_config_t cfg;
    const char *shape, *wrap, *chip;
    int dims[TPU_MAX_AXES], w[TPU_MAX_AXES], naxes, slices, a;
    tpu_status_t status;
    double v = 0;

    memset(pod, 0, sizeof(*pod));
    tpu_config_init(&cfg);
    if (o->config != NULL) {
        status = tpu_config_load(o->config, &cfg, err);
        if (status != TPU_OK) {
            return status;
        }
    }
    shape = o->topology ? o->topology : cfg.topology[0] ? cfg.topology : "4x4";
    status = tpu_topo_parse_shape(shape, dims, &naxes, err);
    if (status != TPU_OK) {
        return status;
    }
    chip = o->chip ? o->chip : cfg.chip[0] ? cfg.chip : NULL;
    if (o->chip == NULL && cfg.chip_custom) {
        pod->chip = cfg.custom;
    } else {
        status = tpu_chip_preset(chip ? chip : tpu_chip_default_for_axes(naxes), &pod->chip, err);
        if (status != TPU_OK) {
            return status;
        }
    }
    if (naxes > pod->chip.ici_axes) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "topology %s has %d axes, but %s chips form a %dD torus", shape, naxes,
                           pod->chip.name, pod->chip.ici_axes);
    }
    {
        int sd[TPU_MAX_AXES], sm[TPU_MAX_AXES], i, j;

        for (i = 0; i < TPU_MAX_AXES; i++) {
            sd[i] = i < naxes ? dims[i] : 1;
            sm[i] = pod->chip.max_pod[i] > 0 ? pod->chip.max_pod[i] : 1;
        }
        for (i = 0; i < TPU_MAX_AXES; i++) {
            for (j = i + 1; j < TPU_MAX_AXES; j++) {
                if (sd[j] > sd[i]) {
                    int t = sd[i];
                    sd[i] = sd[j];
                    sd[j] = t;
                }
                if (sm[j] > sm[i]) {
                    int t = sm[i];
                    sm[i] = sm[j];
                    sm[j] = t;
                }
            }
        }
        for (i = 0; i < TPU_MAX_AXES; i++) {
            if (sd[i] > sm[i]) {
                return tpu_err_set(err, TPU_ERR_INVALID,
                                   "topology %s does not fit a %s pod (at most %dx%dx%d)", shape,
                                   pod->chip.name, pod->chip.max_pod[0], pod->chip.max_pod[1],
                                   pod->chip.max_pod[2]);
            }
        }
    }
    wrap = o->wrap ? o->wrap : cfg.wrap[0] ? cfg.wrap : "auto";
    status = tpu_topo_parse_wrap(wrap, naxes, w, &pod->wrap_auto, err);
    if (status != TPU_OK) {
        return status;
    }
    if (pod->wrap_auto) {
        tpu_topo_wrap_auto(pod->chip.wrap_rule, naxes, dims, w);
    }
    slices = o->slices > 0 ? o->slices : cfg.slices > 0 ? cfg.slices : 1;
    status = tpu_topo_init(&pod->topo, naxes, dims, w, slices, err);
    if (status != TPU_OK) {
        return status;
    }
    if (cfg.ici_bw >= 0) {
        pod->chip.ici_bw = cfg.ici_bw;
    }
    if (cfg.ici_latency >= 0) {
        pod->chip.ici_latency = cfg.ici_latency;
    }
    if (cfg.dcn_bw >= 0) {
        pod->chip.dcn_bw = cfg.dcn_bw;
    }
    if (cfg.dcn_latency >= 0) {
        pod->chip.dcn_latency = cfg.dcn_latency;
    }
    if (o->ici_bw && flag_number("ici-bw", o->ici_bw, &v, err) == TPU_OK) {
        pod->chip.ici_bw = v;
    }
    if (o->ici_latency_us && flag_number("ici-latency-us", o->ici_latency_us, &v, err) == TPU_OK) {
        pod->chip.ici_latency = v * 1e-6;
    }
    if (o->dcn_bw && flag_number("dcn-bw", o->dcn_bw, &v, err) == TPU_OK) {
        pod->chip.dcn_bw = v;
    }
    if (o->dcn_latency_us && flag_number("dcn-latency-us", o->dcn_latency_us, &v, err) == TPU_OK) {
        pod->chip.dcn_latency = v * 1e-6;
    }
    if (err != NULL && err->status != TPU_OK) {
        return err->status;
    }
    status = tpu_chip_check(&pod->chip, err);
    if (status != TPU_OK) {
        return status;
    }
    tpu_chip_link_model(&pod->chip, &pod->link);
    tpu_topo_shape_str(&pod->topo, pod->shape, sizeof(pod->shape));
    tpu_topo_wrap_str(&pod->topo, pod->wrap, sizeof(pod->wrap));
    for (a = 0; a < TPU_MAX_AXES; a++) {
        (void)a;
    }
    return TPU_OK;
}

tpu_status_t tpu_parse_chip(const tpu_pod_t *pod, const char *text, const char *what, int *chip_p,
                            tpu_err_t *err)
{
    const tpu_topo_t *t = &pod->topo;
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
                           what, text, t->naxes + (t->slices > 1), pod->shape,
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
                           pod->shape);
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
        status = tpu_topo_parse_axes(&pod->topo, o->axes, &d->axes, err);
        if (status != TPU_OK) {
            return status;
        }
    } else {
        d->axes = (1u << pod->topo.naxes) - 1;
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

/*
 * The published-formula time (shared/reference/fidelity.md), for the "vs ideal"
 * column of bench and model: what the torus could do at best by the book.
 */
double tpu_ideal_us(const tpu_pod_t *pod, const tpu_coll_desc_t *d)
{
    const tpu_topo_t *t = &pod->topo;
    double W = pod->link.ici_bw, alpha = pod->link.ici_latency, V = (double)d->bytes;
    double sumf = 0, N = 1, worst = 0, dcn;
    int a, D = tpu_topo_diameter(t, d->axes & 7u);

    for (a = 0; a < t->naxes; a++) {
        if ((d->axes & (1u << a)) && t->dims[a] > 1) {
            int n = t->dims[a];
            double f = t->wrap[a] ? 1.0 : 0.5;
            double x = V * floor(n * n / 4.0) / (n * W * f);

            sumf += f;
            N *= n;
            if (x > worst) {
                worst = x;
            }
        }
    }
    /* Across slices: the DCN stage moves the slice's share, V / (chips of the group
     * in one slice), at the DCN bandwidth per chip (fidelity.md, multi-slice rows). */
    if (d->axes & TPU_AXIS_MASK_DCN) {
        double S = t->slices, ici = 0;

        dcn = (S - 1) / S * (V / N) / pod->link.dcn_bw;
        if (sumf > 0) {
            ici = (N - 1) / N * V / (W * sumf) + D * alpha;
        }
        switch (d->kind) {
        case TPU_COLL_PSUM:
            return 1e6 * (2 * ici + 2 * dcn);
        case TPU_COLL_ALL_GATHER:
        case TPU_COLL_REDUCE_SCATTER:
            return 1e6 * (ici + dcn);
        default:
            break;
        }
    }
    switch (d->kind) {
    case TPU_COLL_ALL_GATHER:
    case TPU_COLL_REDUCE_SCATTER:
        return sumf > 0 ? 1e6 * ((N - 1) / N * V / (W * sumf) + D * alpha) : 0;
    case TPU_COLL_PSUM:
        return sumf > 0 ? 1e6 * 2 * ((N - 1) / N * V / (W * sumf) + D * alpha) : 0;
    case TPU_COLL_ALL_TO_ALL:
        return 1e6 * (worst + D * alpha);
    case TPU_COLL_PPERMUTE:
        return 1e6 * (V / (W / 2) + alpha);
    default: {
        /* p2p: split over the P edge-disjoint minimal routes, plus the hops. */
        tpu_route_t routes[TPU_MAX_ROUTES];
        int src = d->src < 0 ? 0 : d->src, dst = d->dst < 0 ? 0 : d->dst;

        if (tpu_topo_slice_of(t, src) != tpu_topo_slice_of(t, dst)) {
            return 1e6 * V / pod->link.dcn_bw;
        }
        return 1e6 * (V / (tpu_topo_routes_disjoint(t, src, dst, routes) * W / 2) +
                      tpu_topo_hops(t, src, dst) * alpha);
    }
    }
}

void tpu_json_str(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') {
            fprintf(out, "\\%c", *s);
        } else if ((unsigned char)*s < 0x20) {
            fprintf(out, "\\u%04x", *s);
        } else {
            fputc(*s, out);
        }
    }
    fputc('"', out);
}

FILE *tpu_open_output(const char *path, int *close_p, tpu_err_t *err)
{
    FILE *f;

    *close_p = 0;
    if (strcmp(path, "-") == 0) {
        return stdout;
    }
    f = fopen(path, "w");
    if (f == NULL) {
        tpu_err_set(err, TPU_ERR_INVALID, "cannot write '%s': %s", path, strerror(errno));
        return NULL;
    }
    *close_p = 1;
    return f;
}

void tpu_die_msg(const char *msg)
{
    fprintf(stderr, "tpuemu: %s\n", msg);
}
