/*
 * Command-line parsing, help texts, and the pod a job runs on (config file
 * first, then flags).
 */
#include "job.h"
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
    ARG_DBL,
    ARG_LIST /* a string flag that may be given several times (--fault) */
};

typedef struct opt_def {
    const char *name;
    int type;
    size_t off;
    const char *cmds;  /* subcommands that take it: "rmbtio" (run model bench train info, and
                          o for 'model --op', the chip op) */
    double lo, hi;     /* ARG_INT and ARG_DBL: the valid range */
    const char *valid; /* what a valid value looks like, for messages */
} opt_def_t;

#define OFF(f) offsetof(tpu_opts_t, f)
#define S(name, f, cmds, valid)                  \
    {                                            \
        name, ARG_STR, OFF(f), cmds, 0, 0, valid \
    }
#define I(name, f, cmds, lo, hi)                  \
    {                                             \
        name, ARG_INT, OFF(f), cmds, lo, hi, NULL \
    }
#define D(name, f, cmds, lo, hi)                  \
    {                                             \
        name, ARG_DBL, OFF(f), cmds, lo, hi, NULL \
    }
#define F(name, f, cmds)                         \
    {                                            \
        name, ARG_NONE, OFF(f), cmds, 0, 0, NULL \
    }

/* Link constants given on the command line: bytes/s and microseconds. */
#define MIN_BW     1e3
#define MAX_BW     1e15
#define MAX_LAT_US 1e6
/* Sizes above this are refused (2^50 bytes, 1 PiB). */
#define MAX_BYTES (1ull << 50)
/* bench: at most this many sizes per collective. */
#define MAX_ROWS 10000

static const opt_def_t defs[] = {
    S("chip", chip, "rmbtio", "a chip such as v4, v5e, v5p, v6e, v7"),
    S("topology", topology, "rmbti", "a shape such as 16, 4x4 or 4x4x4"),
    S("wrap", wrap, "rmbti", "auto, all, none or axes such as x,z"),
    I("slices", slices, "rmbti", 1, TPU_MAX_SLICES),
    S("config", config, "rmbti", "a YAML file"),
    S("json", json, "rmbtio", "a file name or - for stdout"),
    S("csv", csv, "rmbt", "a file name or - for stdout"),
    S("trace", trace, "rmbt", "a file name or - for stdout"),
    F("trace-measured", trace_measured, "rbt"),
    S("heatmap", heatmap, "rmbt", "a file name or - for stdout"),
    S("mesh", mesh, "t", "a mesh such as data=4,model=4"),
    F("quiet", quiet, "rmbti"),
    S("collective", collective, "mb",
      "psum, all-gather, reduce-scatter, all-to-all, ppermute or p2p"),
    S("axes", axes, "mb", "axes such as x, x,y or dcn"),
    S("algo", algo, "mb", "an algorithm name (tpuemu info --algorithms)"),
    I("chunks", chunks, "mb", 1, TPU_MAX_CHUNKS),
    S("dtype", dtype, "mbo", "f32, bf16 or i32"),
    S("op", op, "b", "sum, max or min"),
    S("redop", op, "mb", "sum, max or min"),
    S("bytes", bytes, "m", "a size such as 4096, 64K, 16M or 1G"),
    S("min-bytes", min_bytes, "b", "a size such as 4096, 64K, 16M or 1G"),
    S("max-bytes", max_bytes, "b", "a size such as 4096, 64K, 16M or 1G"),
    D("factor", factor, "b", 1.01, 1024),
    I("iters", iters, "b", 1, 1000000),
    I("warmup", warmup, "b", 0, 1000000),
    I("shift", shift, "mb", -TPU_MAX_DIM, TPU_MAX_DIM),
    S("src", src, "mb", "a chip as coordinates such as 1,2 or an id"),
    S("dst", dst, "mb", "a chip as coordinates such as 1,2 or an id"),
    D("timeout", timeout, "rb", TPU_TIMEOUT_MIN_S, TPU_TIMEOUT_MAX_S),
    F("compare-mpi", compare_mpi, "b"),
    S("inject", inject, "rb", "crash|stop:chip=C,call=N"),
    {"fault", ARG_LIST, OFF(fault), "rmbt", 0, 0,
     "a fault such as slow-link:chip=5,dir=+x,factor=0.5 (see --help)"},
    F("dump-topology", dump_topology, "i"),
    F("algorithms", algorithms, "i"),
    S("ici-bw", ici_bw, "rmbti", "bytes/s from 1e3 to 1e15, such as 9e10"),
    S("ici-latency-us", ici_latency_us, "rmbti", "microseconds from 0 to 1e6, such as 1.5"),
    S("dcn-bw", dcn_bw, "rmbti", "bytes/s from 1e3 to 1e15, such as 2.5e10"),
    S("dcn-latency-us", dcn_latency_us, "rmbti", "microseconds from 0 to 1e6, such as 10"),
    S("msg-cost-us", msg_cost_us, "rmbti", "microseconds from 0 to 1e6, such as 0.2"),
    S("pcie-bw", pcie_bw, "rmbti", "bytes/s from 0 to 1e15, such as 1.6e10"),
    S("nic-bw", nic_bw, "rmbti", "bytes/s from 0 to 1e15, such as 2.5e10"),
    S("reduce-bw", reduce_bw, "rmbti", "bytes/s from 0 to 1e15, such as 2.7e11"),
    F("calibrated", calibrated, "rmbti"),
    F("help", help, "rmbtio"),
    S("op", chip_op, "o", "matmul or a VPU op such as add"),
    S("out-dtype", out_dtype, "o", "bf16 or f32"),
    S("m", m, "o", "a positive whole number"),
    S("k", k, "o", "a positive whole number"),
    S("n", n, "o", "a positive whole number"),
    S("elements", elements, "o", "a positive whole number"),
    S("cols", cols, "o", "a positive whole number"),
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

/* Print a range bound without trailing zeros. */
static const char *num(double v, char *buf, size_t len)
{
    snprintf(buf, len, "%.10g", v);
    return buf;
}

static tpu_status_t parse_int(const opt_def_t *d, const char *v, int *out, tpu_err_t *err)
{
    char *end, lo[32], hi[32];
    long long x;

    errno = 0;
    x = strtoll(v, &end, 10);
    if (*v == '\0' || *end != '\0' || isspace((unsigned char)*v)) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "--%s takes a whole number from %s to %s, got '%s'", d->name,
                           num(d->lo, lo, sizeof(lo)), num(d->hi, hi, sizeof(hi)), v);
    }
    if (errno == ERANGE || x < (long long)d->lo || x > (long long)d->hi) {
        return tpu_err_set(err, TPU_ERR_INVALID, "--%s must be %s to %s, got %s", d->name,
                           num(d->lo, lo, sizeof(lo)), num(d->hi, hi, sizeof(hi)), v);
    }
    *out = (int)x;
    return TPU_OK;
}

/* A finite number in C syntax, at least 'lo' and at most 'hi' (launch.h). */
tpu_status_t tpu_parse_number(const char *name, const char *v, double lo, double hi, double *out,
                              tpu_err_t *err)
{
    char *end, a[32], b[32];
    double x;

    errno = 0;
    x = strtod(v, &end);
    if (*v == '\0' || *end != '\0' || isspace((unsigned char)*v) || isnan(x)) {
        return tpu_err_set(err, TPU_ERR_INVALID, "--%s takes a number from %s to %s, got '%s'",
                           name, num(lo, a, sizeof(a)), num(hi, b, sizeof(b)), v);
    }
    if (!(x >= lo && x <= hi)) {
        return tpu_err_set(err, TPU_ERR_INVALID, "--%s must be %s to %s, got %s", name,
                           num(lo, a, sizeof(a)), num(hi, b, sizeof(b)), v);
    }
    *out = x;
    return TPU_OK;
}

/* A size flag: K, M, G suffixes, above 0 and at most MAX_BYTES. */
static tpu_status_t parse_bytes(const char *name, const char *v, unsigned long long *out,
                                tpu_err_t *err)
{
    tpu_err_t e = {0};

    if (tpu_parse_size(v, out, &e) != TPU_OK) {
        return tpu_err_set(err, TPU_ERR_INVALID, "--%s: %s", name, e.msg);
    }
    if (*out == 0 || *out > MAX_BYTES) {
        return tpu_err_set(err, TPU_ERR_INVALID, "--%s must be 1 byte to 1P (2^50 bytes), got %s",
                           name, v);
    }
    return TPU_OK;
}

/* Which flags the collective named takes; 'given' is the flag the user gave. */
static tpu_status_t check_applies(const tpu_opts_t *o, tpu_coll_kind_t kind, tpu_err_t *err)
{
    const char *name = tpu_coll_name(kind);

    if (o->has_shift && kind != TPU_COLL_PPERMUTE) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "--shift applies to ppermute only, not to %s (drop it)", name);
    }
    if ((o->src != NULL || o->dst != NULL) && kind != TPU_COLL_P2P) {
        return tpu_err_set(err, TPU_ERR_INVALID, "--%s applies to p2p only, not to %s (drop it)",
                           o->src != NULL ? "src" : "dst", name);
    }
    if (o->chunks > 0 && (kind == TPU_COLL_P2P || kind == TPU_COLL_PPERMUTE)) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "--chunks applies to psum, all-gather, reduce-scatter and all-to-all, "
                           "not to %s (drop it)",
                           name);
    }
    if (o->op != NULL && kind != TPU_COLL_PSUM && kind != TPU_COLL_REDUCE_SCATTER) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "--redop applies to psum and reduce-scatter only, not to %s (drop it)",
                           name);
    }
    return TPU_OK;
}

/* Every value that can be checked without the pod, at parse time, on every rank. */
tpu_status_t tpu_opts_check(const tpu_opts_t *o, tpu_err_t *err)
{
    static const struct {
        const char *name;
        size_t off;
        double lo, hi;
    } links[] = {{"ici-bw", OFF(ici_bw), MIN_BW, MAX_BW},
                 {"ici-latency-us", OFF(ici_latency_us), 0, MAX_LAT_US},
                 {"dcn-bw", OFF(dcn_bw), MIN_BW, MAX_BW},
                 {"dcn-latency-us", OFF(dcn_latency_us), 0, MAX_LAT_US},
                 {"msg-cost-us", OFF(msg_cost_us), 0, MAX_LAT_US},
                 {"pcie-bw", OFF(pcie_bw), 0, MAX_BW},
                 {"nic-bw", OFF(nic_bw), 0, MAX_BW},
                 {"reduce-bw", OFF(reduce_bw), 0, MAX_BW}};
    unsigned long long lo = 1024, hi = 1u << 20, b;
    tpu_coll_kind_t kind;
    tpu_dtype_t dtype;
    tpu_redop_t redop;
    double v;
    size_t i;

    if (tpu_sink_check_target("json", o->json, err) != TPU_OK ||
        tpu_sink_check_target("csv", o->csv, err) != TPU_OK ||
        tpu_sink_check_target("trace", o->trace, err) != TPU_OK ||
        tpu_sink_check_target("heatmap", o->heatmap, err) != TPU_OK) {
        return TPU_ERR_INVALID;
    }
    for (i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
        const char *text = *(const char *const *)((const char *)o + links[i].off);

        if (text != NULL &&
            tpu_parse_number(links[i].name, text, links[i].lo, links[i].hi, &v, err) != TPU_OK) {
            return TPU_ERR_INVALID;
        }
    }
    if (o->inject != NULL) {
        int chip = -1, n = -1;
        long call = -1;
        char ikind[8] = "";

        if (sscanf(o->inject, "%5[a-z]:chip=%d,call=%ld%n", ikind, &chip, &call, &n) != 3 ||
            n != (int)strlen(o->inject) || chip < 0 || call < 0 ||
            (strcmp(ikind, "crash") != 0 && strcmp(ikind, "stop") != 0)) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "--inject '%s': expected crash:chip=C,call=N (chip C dies at its "
                               "collective call N, counted from 0) or stop:chip=C,call=N (it "
                               "stops there, as with SIGSTOP)",
                               o->inject);
        }
    }
    for (i = 0; i < (size_t)o->nfault; i++) {
        tpu_fault_t f;
        tpu_err_t e = {0};

        if (tpu_fault_parse(o->fault[i], &f, &e) != TPU_OK) {
            return tpu_err_set(err, TPU_ERR_INVALID, "--%s", e.msg);
        }
    }
    if (o->op_mode) {
        return TPU_OK;
    }
    if (o->dtype != NULL && tpu_dtype_parse(o->dtype, &dtype, err) != TPU_OK) {
        return TPU_ERR_INVALID;
    }
    if (o->op != NULL && tpu_redop_parse(o->op, &redop, err) != TPU_OK) {
        return TPU_ERR_INVALID;
    }
    if (o->bytes != NULL && parse_bytes("bytes", o->bytes, &b, err) != TPU_OK) {
        return TPU_ERR_INVALID;
    }
    if ((o->min_bytes != NULL && parse_bytes("min-bytes", o->min_bytes, &lo, err) != TPU_OK) ||
        (o->max_bytes != NULL && parse_bytes("max-bytes", o->max_bytes, &hi, err) != TPU_OK)) {
        return TPU_ERR_INVALID;
    }
    if (hi < lo) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "--max-bytes %llu is below --min-bytes %llu: give min <= max", hi, lo);
    }
    if (strcmp(o->cmd, "bench") == 0 && log((double)hi / (double)lo) / log(o->factor) > MAX_ROWS) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "--factor %g makes over %d sizes from %llu to %llu bytes: give a larger "
                           "--factor",
                           o->factor, MAX_ROWS, lo, hi);
    }
    if (o->collective != NULL) {
        if (tpu_coll_parse(o->collective, &kind, err) != TPU_OK) {
            return TPU_ERR_INVALID;
        }
        return check_applies(o, kind, err);
    }
    if (strcmp(o->cmd, "model") == 0) {
        return check_applies(o, TPU_COLL_PSUM, err); /* the default collective */
    }
    return TPU_OK;
}

tpu_status_t tpu_opts_parse(int argc, char **argv, tpu_opts_t *o, tpu_err_t *err)
{
    const char *given[sizeof(defs) / sizeof(defs[0])] = {NULL};
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
        if (strcspn(a + 2, "=") >= sizeof(name)) {
            return tpu_err_set(err, TPU_ERR_INVALID, "unknown option '%s' (see tpuemu %s --help)",
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
            if (given[d - defs] != NULL) {
                return tpu_err_set(err, TPU_ERR_INVALID, "--%s is given twice: give it once", name);
            }
            given[d - defs] = "";
            *(int *)((char *)o + d->off) = 1;
            continue;
        }
        if (val == NULL) {
            if (i + 1 >= argc) {
                return tpu_err_set(err, TPU_ERR_INVALID, "--%s needs a value", name);
            }
            val = argv[++i];
        }
        /* --fault repeats (a list); every other flag is given once. */
        if (d->type != ARG_LIST && given[d - defs] != NULL) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "--%s is given twice ('%.40s', then '%.40s'): give it once", name,
                               given[d - defs], val);
        }
        given[d - defs] = val;
        if (d->type == ARG_LIST) {
            if (*val == '\0') {
                return tpu_err_set(err, TPU_ERR_INVALID, "--%s got an empty value; give %s",
                                   d->name, d->valid);
            }
            if (o->nfault == TPU_MAX_FAULTS) {
                return tpu_err_set(err, TPU_ERR_INVALID, "--%s: at most %d faults", d->name,
                                   TPU_MAX_FAULTS);
            }
            o->fault[o->nfault++] = val;
        } else if (d->type == ARG_STR) {
            if (*val == '\0') {
                return tpu_err_set(err, TPU_ERR_INVALID, "--%s got an empty value; give %s",
                                   d->name, d->valid);
            }
            *(const char **)((char *)o + d->off) = val;
        } else if (d->type == ARG_INT) {
            if (parse_int(d, val, (int *)((char *)o + d->off), err) != TPU_OK) {
                return TPU_ERR_INVALID;
            }
        } else if (tpu_parse_number(d->name, val, d->lo, d->hi, (double *)((char *)o + d->off),
                                    err) != TPU_OK) {
            return TPU_ERR_INVALID;
        }
        if (strcmp(name, "shift") == 0) {
            o->has_shift = 1;
        }
    }
    return tpu_opts_check(o, err);
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
        "  --msg-cost-us US --pcie-bw B/s --nic-bw B/s --reduce-bw B/s\n"
        "                             message start (DMA, per message), chip-host PCIe\n"
        "                             (0: not modeled), host NIC (0: chips x dcn-bw),\n"
        "                             reduction rate (0: HBM bytes/s / 3)\n"
        "  --calibrated               link efficiency and launch cost fitted to the\n"
        "                             book's measured v5e figures (README, link model)\n"
        "  --fault SPEC               a fault in the model (repeatable; run, model, bench,\n"
        "                             train, replay); modeled times and routes change, the\n"
        "                             data stays correct.  C: chip id or coordinates (1,2)\n"
        "       slow-link:chip=C,dir=+x,factor=F[,both=yes]  the link leaving C along +x\n"
        "                             (both=yes: and the link back) at F x its bandwidth\n"
        "       link-down:chip=C,dir=+x[,both=yes]  a failed link: routes go around it\n"
        "                             (another minimal route, else a longer one; refused\n"
        "                             when it cuts the torus)\n"
        "       slow-chip:chip=C,factor=F   computes at F x speed (pacing every step), and\n"
        "                             its outgoing links carry F x their bandwidth\n"
        "       slow-nic:host=H,factor=F    host H's DCN NICs at F x their bandwidth\n"
        "                             F is above 0 and at most 1; YAML: faults: (README)\n"
        "  --json FILE|-              write JSON (- for stdout)\n"
        "  --trace FILE               Chrome trace / Perfetto JSON of the modeled timeline\n"
        "                             (run, model, bench, train, replay); --trace-measured\n"
        "                             adds the measured one (run, bench, train, replay)\n"
        "  --heatmap FILE.svg         the torus with every link coloured by its bytes\n"
        "  --quiet                    print less\n";

    if (strcmp(cmd, "model") == 0) {
        fprintf(
            out,
            "usage: tpuemu model [pod options] --collective C --axes A --bytes SIZE [--json -]\n"
            "                    [--csv FILE|-]\n"
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
            "  --chunks K       force the pipeline depth of the torus algorithms\n"
            "  --csv FILE|-     the collective as one CSV row after a header line\n\n%s",
            common);
    } else if (strcmp(cmd, "bench") == 0) {
        fprintf(
            out,
            "usage: mpirun -n N tpuemu bench [pod options] [--collective C] [--axes A]\n"
            "                    [--min-bytes S] [--max-bytes S] [--factor F] [--dtype D]\n"
            "                    [--iters N] [--warmup N] [--compare-mpi] [--json F] [--csv F]\n\n"
            "Sweep sizes with real data over MPI; print nccl-tests style rows with the modeled\n"
            "and the measured time side by side.  Without --collective, all of them\n"
            "(ppermute only when --axes names at most one axis).\n"
            "  --compare-mpi    also time the host MPI library's own collective on the same\n"
            "                   bytes (MPI_Allreduce, MPI_Allgather, MPI_Reduce_scatter_block,\n"
            "                   MPI_Alltoall) and print the ratio\n"
            "  --iters N        timed iterations per size (default 5)\n"
            "  --warmup N       untimed iterations before them (default 5: MPI libraries\n"
            "                   set up their fast paths per peer over the first messages)\n"
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
                "usage: mpirun -n N tpuemu [run] [pod options] [--timeout S] [--csv FILE|-]\n"
                "       tpuemu model|bench|train|info|replay ... (tpuemu COMMAND --help)\n\n"
                "Emulate a TPU pod: every MPI rank is one chip.  The default run prints the pod\n"
                "and where each chip runs, proves the wiring (a token over every link), and runs\n"
                "every collective at a small and a large size with real data, verified, with the\n"
                "modeled TPU time and the measured emulation time side by side, and ends with\n"
                "one sharded training step (tpuemu train) checked against one chip.\n\n"
                "  --csv FILE|-     the verified collectives, one CSV row each after a header\n"
                "  --timeout S      watchdog seconds any wait may last (default 60)\n\n%s",
                common);
    }
}

/*
 * What the pod accepts but a job should not: hosts that do not tile the
 * topology, and a wraparound asked for on an axis of one chip.
 */
static tpu_status_t check_pod(const tpu_opts_t *o, const tpu_config_t *cfg, const tpu_pod_t *pod,
                              tpu_err_t *err)
{
    const tpu_topo_t *t = tpu_pod_topo(pod);
    const int *hd = tpu_pod_chip(pod)->host_dims;
    const char *wrap = o->wrap != NULL ? o->wrap : cfg->wrap;
    int a;

    /* The presets' hosts may be cut by a small slice (2x3); host_dims the file sets must
     * tile the topology (a slice smaller than one host along an axis is fine). */
    for (a = 0; a < t->naxes && cfg->host_dims_at[0] != '\0' && o->chip == NULL; a++) {
        int h = hd[a] > 0 ? hd[a] : 1;

        if (t->dims[a] > h && t->dims[a] % h != 0) {
            return tpu_err_set(
                err, TPU_ERR_INVALID,
                "%s: host_dims [%d,%d,%d] of %s do not tile topology %s: axis %s has "
                "%d chips, not a multiple of %d (give host_dims that divide each "
                "axis)",
                cfg->host_dims_at, hd[0], hd[1], hd[2], tpu_pod_chip(pod)->name, tpu_pod_shape(pod),
                tpu_topo_axis_name(a), t->dims[a], h);
        }
    }
    if (wrap[0] != '\0' && strcmp(wrap, "auto") != 0 && strcmp(wrap, "all") != 0 &&
        strcmp(wrap, "none") != 0) {
        for (a = 0; a < t->naxes; a++) {
            const char *p = wrap;
            size_t len;

            for (; *p != '\0'; p += len + (p[len] == ',')) {
                len = strcspn(p, ",");
                if (len == strlen(tpu_topo_axis_name(a)) &&
                    strncmp(p, tpu_topo_axis_name(a), len) == 0 && t->dims[a] == 1) {
                    return tpu_err_set(err, TPU_ERR_INVALID,
                                       "%s%swrap %s: axis %s of topology %s has 1 chip, so it "
                                       "has no wraparound link (drop %s from the wrap list)",
                                       o->wrap != NULL ? "--" : cfg->wrap_at,
                                       o->wrap != NULL ? "" : ": ", wrap, tpu_topo_axis_name(a),
                                       tpu_pod_shape(pod), tpu_topo_axis_name(a));
                }
            }
        }
    }
    return TPU_OK;
}

/*
 * The faults of the file, then of the flags, into 'list'; each checked on its own
 * against the pod, so that a bad one is named where it was given (the file's
 * line or the flag).  The whole set (a cut needs several) is checked by
 * tpu_pod_create().  Returns the count, or -1 with 'err' set.
 */
static int gather_faults(const tpu_opts_t *o, const tpu_config_t *cfg, const tpu_pod_t *pod,
                         tpu_fault_t *list, tpu_err_t *err)
{
    int n = 0, i;

    if (cfg->nfaults + o->nfault > TPU_MAX_FAULTS) {
        tpu_err_set(err, TPU_ERR_INVALID, "%d faults in the file and %d flags: at most %d in all",
                    cfg->nfaults, o->nfault, TPU_MAX_FAULTS);
        return -1;
    }
    for (i = 0; i < cfg->nfaults + o->nfault; i++) {
        tpu_faults_t *one = NULL;
        tpu_err_t e = {0};

        if (i < cfg->nfaults) {
            list[n] = cfg->faults[i];
        } else if (tpu_fault_parse(o->fault[i - cfg->nfaults], &list[n], &e) != TPU_OK) {
            tpu_err_set(err, TPU_ERR_INVALID, "--%s", e.msg);
            return -1;
        }
        if (tpu_faults_create(tpu_pod_topo(pod), tpu_pod_link(pod)->host_dims, &list[n], 1, &one,
                              &e) != TPU_OK) {
            if (i < cfg->nfaults) {
                tpu_err_set(err, e.status, "%s: %s", cfg->fault_at[i], e.msg);
            } else {
                tpu_err_set(err, e.status, "--fault '%s': %s", o->fault[i - cfg->nfaults], e.msg);
            }
            return -1;
        }
        tpu_faults_destroy(one);
        n++;
    }
    return n;
}

tpu_status_t tpu_pod_setup(const tpu_opts_t *o, tpu_pod_t **pod_p, tpu_err_t *err)
{
    tpu_fault_t faults[TPU_MAX_FAULTS];
    int nfaults;
    tpu_config_t cfg;
    tpu_pod_spec_t spec;
    tpu_pod_t *pod = NULL;
    tpu_err_t e = {0};
    tpu_status_t status;

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
    /* The link flags were checked by tpu_opts_parse(). */
    if (o->ici_bw) {
        spec.ici_bw = strtod(o->ici_bw, NULL);
    }
    if (o->ici_latency_us) {
        spec.ici_latency = strtod(o->ici_latency_us, NULL) * 1e-6;
    }
    if (o->dcn_bw) {
        spec.dcn_bw = strtod(o->dcn_bw, NULL);
    }
    if (o->dcn_latency_us) {
        spec.dcn_latency = strtod(o->dcn_latency_us, NULL) * 1e-6;
    }
    if (o->msg_cost_us) {
        spec.msg_cost = strtod(o->msg_cost_us, NULL) * 1e-6;
    }
    if (o->pcie_bw) {
        spec.pcie_bw = strtod(o->pcie_bw, NULL);
    }
    if (o->nic_bw) {
        spec.nic_bw = strtod(o->nic_bw, NULL);
    }
    if (o->reduce_bw) {
        spec.reduce_bw = strtod(o->reduce_bw, NULL);
    }
    spec.calibrated = o->calibrated;
    status = tpu_pod_create(&spec, &pod, &e);
    if (status == TPU_OK) {
        status = check_pod(o, &cfg, pod, &e);
    }
    if (status == TPU_OK && cfg.nfaults + o->nfault > 0) {
        /* The pod again, with its faults, once each is known to fit it. */
        nfaults = gather_faults(o, &cfg, pod, faults, err);
        tpu_pod_destroy(pod);
        pod = NULL;
        if (nfaults < 0) {
            return TPU_ERR_INVALID;
        }
        spec.faults = faults;
        spec.nfaults = nfaults;
        status = tpu_pod_create(&spec, &pod, &e);
        if (status != TPU_OK) {
            /* Only the set as a whole can fail here: failed links that cut the torus. */
            if (o->nfault > 0) {
                return tpu_err_set(err, status, "--fault: %s", e.msg);
            }
            return tpu_err_set(err, status, "%s: %s", cfg.fault_at[0], e.msg);
        }
    }
    if (status != TPU_OK) {
        tpu_pod_destroy(pod);
        /* A pod the file describes: say where in the file. */
        if (strncmp(e.msg, cfg.host_dims_at, strlen(cfg.host_dims_at)) == 0 &&
            cfg.host_dims_at[0] != '\0') {
            return tpu_err_set(err, status, "%s", e.msg);
        }
        if (o->topology == NULL && cfg.topology_at[0] != '\0') {
            return tpu_err_set(err, status, "%s: %s", cfg.topology_at, e.msg);
        }
        if (o->chip == NULL && cfg.chip_at[0] != '\0') {
            return tpu_err_set(err, status, "%s: chip: %s", cfg.chip_at, e.msg);
        }
        return tpu_err_set(err, status, "%s", e.msg);
    }
    *pod_p = pod;
    return TPU_OK;
}

tpu_status_t tpu_parse_chip(const tpu_pod_t *pod, const char *text, const char *what, int *chip_p,
                            tpu_err_t *err)
{
    return tpu_parse_coords(tpu_pod_topo(pod), tpu_pod_shape(pod), text, what, chip_p, err);
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
    status = check_applies(o, d->kind, err);
    if (status != TPU_OK) {
        return status;
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

    if (argc >= 2 && strcmp(argv[1], "replay") == 0) {
        return tpu_cmd_replay(argc - 2, argv + 2);
    }
    if (argc > 1 && strcmp(argv[1], "train") == 0) {
        return tpu_cmd_train(argc, argv); /* its own flags, then the pod flags */
    }
    if (tpu_opts_parse(argc, argv, &opts, &err) != TPU_OK) {
        /* In an MPI job, one line from the lowest rank that failed, not one per rank. */
        if (getenv("OMPI_COMM_WORLD_SIZE") != NULL || getenv("PMIX_RANK") != NULL ||
            getenv("PMI_SIZE") != NULL) {
            if (strcmp(opts.cmd, "run") == 0 || strcmp(opts.cmd, "bench") == 0 ||
                strcmp(opts.cmd, "train") == 0) {
                return tpu_job_refuse(err.msg, &argc, &argv);
            }
            if (tpu_job_env_rank() > 0) {
                return TPU_EXIT_USAGE;
            }
        }
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
