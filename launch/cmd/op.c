/*
 * "tpuemu model --op ...": model one chip op without data.
 *
 *   tpuemu model --op matmul --m 8192 --k 8192 --n 8192 [--dtype bf16|f32|int8]
 *                [--out-dtype bf16|f32] [--chip v5e] [--json FILE|-]
 *   tpuemu model --op add|mul|max|relu|exp|tanh|gelu|softmax|sum|reduce_max
 *                --elements N [--cols C] [--dtype bf16|f32|int8] [--chip v5e] [--json FILE|-]
 *
 * Prints the roofline of the op (FLOPs, HBM bytes, arithmetic intensity,
 * compute and memory time, the modeled time and which bound it hits; see
 * include/tpu/ops.h) and the pipelined time of the VMEM executor for the block
 * plan the op would run, modelled without data.  --cols C makes softmax, sum
 * and reduce_max work on rows of C elements (N / C rows; default: one row of
 * N).  Sizes are plain positive integers.  Bad input: one line "tpuemu: ..." on
 * stderr and 2.  Uses libc and libtpuemu only.
 */
#include "tpu/chip.h"
#include "tpu/ops.h"
#include "tpu/status.h"
#include "tpu/vmem.h"

#include "cmd_op.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_USAGE 2
#define EXIT_FAIL  1

/* The pipelined time is only modelled up to this many grid steps (it walks them). */
#define MAX_MODEL_STEPS 4e6

typedef struct op_args {
    const char *op;
    const char *chip;
    const char *dtype;
    const char *out_dtype;
    const char *json;
    const char *m;
    const char *k;
    const char *n;
    const char *elements;
    const char *cols;
    int help;
} op_args_t;

static const struct {
    const char *name;
    size_t off;
} flags[] = {
    {"op", offsetof(op_args_t, op)},
    {"chip", offsetof(op_args_t, chip)},
    {"dtype", offsetof(op_args_t, dtype)},
    {"out-dtype", offsetof(op_args_t, out_dtype)},
    {"json", offsetof(op_args_t, json)},
    {"m", offsetof(op_args_t, m)},
    {"k", offsetof(op_args_t, k)},
    {"n", offsetof(op_args_t, n)},
    {"elements", offsetof(op_args_t, elements)},
    {"cols", offsetof(op_args_t, cols)},
};

#define NFLAGS (sizeof(flags) / sizeof(flags[0]))

static void usage(FILE *out)
{
    fprintf(out,
            "usage: tpuemu model --op matmul --m M --k K --n N [--dtype bf16|f32|i8]\n"
            "                    [--out-dtype bf16|f32] [--chip CHIP] [--json FILE|-]\n"
            "       tpuemu model --op add|mul|max|relu|exp|tanh|gelu|softmax|sum|reduce_max\n"
            "                    --elements N [--cols C] [--dtype bf16|f32|i8] [--chip CHIP]\n"
            "                    [--json FILE|-]\n\n"
            "Model one op on one chip, without data: FLOPs, HBM bytes, arithmetic intensity,\n"
            "the roofline time max(FLOPs / peak, bytes / HBM bandwidth) and its bound, and the\n"
            "pipelined time of the VMEM executor's block plan.\n\n"
            "  --op OP          matmul (MXU) or a VPU op; sum and reduce_max reduce rows\n"
            "  --m --k --n      matmul dimensions: [m,k] @ [k,n]\n"
            "  --elements N     elements of a VPU op's input\n"
            "  --cols C         softmax, sum, reduce_max: row length (default N: one row)\n"
            "  --dtype D        input type (default bf16); i8 matmuls accumulate in i32\n"
            "  --out-dtype D    bf16 matmul output: bf16 (default) or f32\n"
            "  --chip CHIP      v4, v5e, v5p, v6e, v7 (default v5e)\n"
            "  --json FILE|-    one JSON object instead of the table (- for stdout)\n");
}

/* Print "tpuemu: msg" and return the usage exit code. */
static int bad(const char *msg)
{
    fprintf(stderr, "tpuemu: %s\n", msg);
    return EXIT_USAGE;
}

static tpu_status_t parse_args(int argc, char **argv, op_args_t *a, tpu_err_t *err)
{
    const char *arg;
    const char *name;
    const char *eq;
    const char *val;
    size_t len;
    size_t f;
    int i = 0;

    memset(a, 0, sizeof(*a));
    if (argc > 0 && strcmp(argv[0], "model") == 0) {
        i = 1;
    }
    for (; i < argc; i++) {
        arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            a->help = 1;
            continue;
        }
        if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0') {
            return tpu_err_set(err, TPU_ERR_INVALID, "unexpected argument '%s' (flags are --name)",
                               arg);
        }
        name = arg + 2;
        eq = strchr(name, '=');
        len = eq != NULL ? (size_t)(eq - name) : strlen(name);
        for (f = 0; f < NFLAGS; f++) {
            if (strlen(flags[f].name) == len && strncmp(flags[f].name, name, len) == 0) {
                break;
            }
        }
        if (f == NFLAGS) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "unknown flag '--%.*s' for 'tpuemu model --op' (known: --op, --m, "
                               "--k, --n, --elements, --cols, --dtype, --out-dtype, --chip, "
                               "--json)",
                               (int)len, name);
        }
        if (eq != NULL) {
            val = eq + 1;
        } else if (i + 1 < argc) {
            val = argv[++i];
        } else {
            return tpu_err_set(err, TPU_ERR_INVALID, "--%s needs a value", flags[f].name);
        }
        *(const char **)(void *)((char *)a + flags[f].off) = val;
    }
    return TPU_OK;
}

/* Parse a plain positive integer (digits only, at most 2^50). */
static tpu_status_t parse_size(const char *flag, const char *text, int64_t *v_p, tpu_err_t *err)
{
    const char *p;
    long long v;
    char *end;

    for (p = text; *p != '\0'; p++) {
        if (*p < '0' || *p > '9') {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "--%s must be a plain positive integer, got '%s'", flag, text);
        }
    }
    errno = 0;
    v = strtoll(text, &end, 10);
    if (p == text || errno == ERANGE || v > (1LL << 50)) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "--%s must be a positive integer up to 2^50, got '%s'", flag, text);
    }
    if (v < 1) {
        return tpu_err_set(err, TPU_ERR_INVALID, "--%s must be positive, got '%s'", flag, text);
    }
    *v_p = (int64_t)v;
    return TPU_OK;
}

static tpu_status_t not_for(const char *flag, const char *value, const char *op, tpu_err_t *err)
{
    if (value == NULL) {
        return TPU_OK;
    }
    return tpu_err_set(err, TPU_ERR_INVALID, "--%s does not apply to --op %s", flag, op);
}

/* What the command works out, before printing. */
typedef struct op_result {
    tpu_chip_spec_t spec;
    int is_matmul;
    tpu_matmul_desc_t mm;
    tpu_vpu_desc_t vpu;
    tpu_op_report_t rep;
    int has_pipeline;
    char pipeline_note[TPU_ERR_MSG_LEN + 64];
} op_result_t;

static tpu_status_t setup(const op_args_t *a, op_result_t *r, tpu_err_t *err)
{
    tpu_status_t status;
    tpu_dtype_t in = TPU_DTYPE_BF16;
    tpu_dtype_t out;
    tpu_vpu_op_t vop;
    int64_t m, k, n, elements, cols;

    if (a->op == NULL) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "--op is required: matmul, add, mul, max, relu, exp, tanh, gelu, "
                           "softmax, sum, reduce_max");
    }
    status = tpu_chip_preset(a->chip != NULL ? a->chip : "v5e", &r->spec, err);
    if (status != TPU_OK) {
        return status;
    }
    if (a->dtype != NULL) {
        status = tpu_dtype_parse(a->dtype, &in, err);
        if (status != TPU_OK) {
            return status;
        }
    }
    r->is_matmul = strcmp(a->op, "matmul") == 0;
    if (r->is_matmul) {
        if (a->m == NULL || a->k == NULL || a->n == NULL) {
            return tpu_err_set(err, TPU_ERR_INVALID, "--op matmul needs --m, --k and --n");
        }
        if ((status = not_for("elements", a->elements, a->op, err)) != TPU_OK ||
            (status = not_for("cols", a->cols, a->op, err)) != TPU_OK ||
            (status = parse_size("m", a->m, &m, err)) != TPU_OK ||
            (status = parse_size("k", a->k, &k, err)) != TPU_OK ||
            (status = parse_size("n", a->n, &n, err)) != TPU_OK) {
            return status;
        }
        if (in != TPU_DTYPE_BF16 && in != TPU_DTYPE_F32 && in != TPU_DTYPE_I8) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "matmul does not take %s inputs (bf16, f32, i8)",
                               tpu_dtype_name(in));
        }
        tpu_matmul_desc_init(&r->mm, m, k, n, in);
        if (a->out_dtype != NULL) {
            status = tpu_dtype_parse(a->out_dtype, &out, err);
            if (status != TPU_OK) {
                return status;
            }
            r->mm.out = out;
        }
        return tpu_roofline_matmul(&r->spec, &r->mm, &r->rep.roofline, err);
    }
    if (tpu_vpu_op_parse(a->op, &vop, NULL) != TPU_OK) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "unknown op '%s' (known: matmul, add, mul, max, relu, exp, tanh, gelu, "
                           "softmax, sum, reduce_max)",
                           a->op);
    }
    if (a->elements == NULL) {
        return tpu_err_set(err, TPU_ERR_INVALID, "--op %s needs --elements", a->op);
    }
    if ((status = not_for("m", a->m, a->op, err)) != TPU_OK ||
        (status = not_for("k", a->k, a->op, err)) != TPU_OK ||
        (status = not_for("n", a->n, a->op, err)) != TPU_OK ||
        (status = not_for("out-dtype", a->out_dtype, a->op, err)) != TPU_OK ||
        (status = parse_size("elements", a->elements, &elements, err)) != TPU_OK) {
        return status;
    }
    cols = elements;
    if (a->cols != NULL) {
        if (vop != TPU_VPU_SOFTMAX && vop != TPU_VPU_SUM && vop != TPU_VPU_REDUCE_MAX) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "--cols applies to softmax, sum and reduce_max, not to %s", a->op);
        }
        status = parse_size("cols", a->cols, &cols, err);
        if (status != TPU_OK) {
            return status;
        }
        if (elements % cols != 0) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "--elements %lld is not a whole number of rows of --cols %lld",
                               (long long)elements, (long long)cols);
        }
    }
    tpu_vpu_desc_init(&r->vpu, vop, in, elements / cols, cols);
    return tpu_roofline_vpu(&r->spec, &r->vpu, &r->rep.roofline, err);
}

/* The executor's pipelined time, when the plan fits and the grid is not huge. */
static tpu_status_t pipeline(op_result_t *r, tpu_err_t *err)
{
    tpu_status_t status;
    tpu_err_t perr = {0};
    tpu_vmem_t *vmem;
    tpu_roofline_t rl = r->rep.roofline;
    double steps;

    if (r->is_matmul) {
        steps = ((double)r->mm.m / 2048 + 1) * ((double)r->mm.n / 2048 + 1) *
                ((double)r->mm.k / 2048 + 1);
    } else {
        steps = (double)r->vpu.rows * (double)r->vpu.cols / (256 * 1024) + (double)r->vpu.rows;
    }
    if (steps > MAX_MODEL_STEPS) {
        snprintf(r->pipeline_note, sizeof(r->pipeline_note),
                 "not modelled: more than %.0f grid steps", MAX_MODEL_STEPS);
        return TPU_OK;
    }
    status = tpu_vmem_create(&r->spec, &vmem, err);
    if (status != TPU_OK) {
        return status;
    }
    if (r->is_matmul) {
        status = tpu_op_matmul_model(vmem, &r->mm, &r->rep, &perr);
    } else {
        status = tpu_op_vpu_model(vmem, &r->vpu, &r->rep, &perr);
    }
    tpu_vmem_destroy(vmem);
    r->rep.roofline = rl;
    if (status == TPU_OK) {
        r->has_pipeline = 1;
        return TPU_OK;
    }
    if (status == TPU_ERR_RESOURCE_EXHAUSTED || status == TPU_ERR_INVALID) {
        snprintf(r->pipeline_note, sizeof(r->pipeline_note), "not modelled: %s", perr.msg);
        return TPU_OK;
    }
    return tpu_err_set(err, status, "%s", perr.msg);
}

static void json_str(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s != '\0'; s++) {
        if (*s == '"' || *s == '\\') {
            fputc('\\', out);
            fputc(*s, out);
        } else if ((unsigned char)*s < 0x20) {
            fprintf(out, "\\u%04x", (unsigned)(unsigned char)*s);
        } else {
            fputc(*s, out);
        }
    }
    fputc('"', out);
}

static void print_json(FILE *out, const op_result_t *r)
{
    const tpu_roofline_t *rl = &r->rep.roofline;
    const tpu_vmem_stats_t *p = &r->rep.pipeline;

    fputs("{\"chip\":", out);
    json_str(out, r->spec.name);
    if (r->is_matmul) {
        fprintf(out,
                ",\"op\":\"matmul\",\"dtype\":\"%s\",\"out_dtype\":\"%s\",\"m\":%lld,\"k\":%lld,"
                "\"n\":%lld",
                tpu_dtype_name(r->mm.in), tpu_dtype_name(r->mm.out), (long long)r->mm.m,
                (long long)r->mm.k, (long long)r->mm.n);
    } else {
        fprintf(out,
                ",\"op\":\"%s\",\"dtype\":\"%s\",\"out_dtype\":\"%s\",\"elements\":%lld,"
                "\"rows\":%lld,\"cols\":%lld",
                tpu_vpu_op_name(r->vpu.op), tpu_dtype_name(r->vpu.dtype),
                tpu_dtype_name(tpu_vpu_out_elem(&r->vpu)), (long long)(r->vpu.rows * r->vpu.cols),
                (long long)r->vpu.rows, (long long)r->vpu.cols);
    }
    fprintf(out,
            ",\"unit\":\"%s\",\"flops\":%.0f,\"hw_flops\":%.0f,\"hbm_bytes\":%.0f,"
            "\"intensity\":%.6g,\"peak_flops\":%.6g,\"hbm_bw\":%.6g,\"compute_us\":%.6f,"
            "\"memory_us\":%.6f,\"modeled_us\":%.6f,\"bound\":\"%s\"",
            r->is_matmul ? "mxu" : "vpu", rl->flops, rl->hw_flops, rl->hbm_bytes, rl->intensity,
            rl->peak, r->spec.hbm_bw, rl->compute_us, rl->memory_us, rl->modeled_us,
            tpu_bound_name(rl->bound));
    if (r->has_pipeline) {
        fprintf(out, ",\"pipelined_us\":%.6f,\"grid_steps\":%lld,\"vmem_bytes\":%.0f",
                p->modeled_us, (long long)p->steps, p->vmem_bytes);
        if (r->is_matmul) {
            fprintf(out, ",\"block\":[%lld,%lld,%lld]", (long long)r->rep.block[0],
                    (long long)r->rep.block[1], (long long)r->rep.block[2]);
        } else {
            fprintf(out, ",\"block\":%lld", (long long)r->rep.block[0]);
        }
    } else {
        fputs(",\"pipelined_us\":null,\"pipeline_note\":", out);
        json_str(out, r->pipeline_note);
    }
    fputs("}\n", out);
}

static void fmt_mib(double bytes, char *buf, size_t len)
{
    if (bytes >= 1024.0 * 1024.0) {
        snprintf(buf, len, "%.1f MiB", bytes / (1024.0 * 1024.0));
    } else if (bytes >= 1024.0) {
        snprintf(buf, len, "%.1f KiB", bytes / 1024.0);
    } else {
        snprintf(buf, len, "%.0f B", bytes);
    }
}

/* Microseconds with 3 decimals, or 4 significant digits below 1 us. */
static const char *fmt_us(double us, char *buf, size_t len)
{
    snprintf(buf, len, us >= 1.0 || us == 0.0 ? "%.3f" : "%.4g", us);
    return buf;
}

static void print_table(FILE *out, const op_result_t *r)
{
    const tpu_roofline_t *rl = &r->rep.roofline;
    const tpu_vmem_stats_t *p = &r->rep.pipeline;
    char b1[32];
    char b2[32];
    char us[32];

    fprintf(out, "%-12s %s\n", "chip", r->spec.name);
    if (r->is_matmul) {
        fprintf(out, "%-12s matmul on the MXU, %s x %s -> %s\n", "op", tpu_dtype_name(r->mm.in),
                tpu_dtype_name(r->mm.in), tpu_dtype_name(r->mm.out));
        fprintf(out, "%-12s m %lld, k %lld, n %lld\n", "shape", (long long)r->mm.m,
                (long long)r->mm.k, (long long)r->mm.n);
    } else {
        fprintf(out, "%-12s %s on the VPU, %s -> %s\n", "op", tpu_vpu_op_name(r->vpu.op),
                tpu_dtype_name(r->vpu.dtype), tpu_dtype_name(tpu_vpu_out_elem(&r->vpu)));
        fprintf(out, "%-12s %lld elements (%lld row%s of %lld)\n", "shape",
                (long long)(r->vpu.rows * r->vpu.cols), (long long)r->vpu.rows,
                r->vpu.rows == 1 ? "" : "s", (long long)r->vpu.cols);
    }
    fmt_mib(rl->hbm_bytes, b1, sizeof(b1));
    fprintf(out, "%-12s %.6g (padded for the %s: %.6g)\n", "FLOPs", rl->flops,
            r->is_matmul ? "MXU" : "(8,128) tiles", rl->hw_flops);
    fprintf(out, "%-12s %.0f (%s)\n", "HBM bytes", rl->hbm_bytes, b1);
    fprintf(out, "%-12s %.6g FLOP/byte (ridge %.1f)\n", "intensity", rl->intensity,
            rl->peak / r->spec.hbm_bw);
    fprintf(out, "%-12s %s us at %.3g FLOP/s\n", "compute", fmt_us(rl->compute_us, us, sizeof(us)),
            rl->peak);
    fprintf(out, "%-12s %s us at %.3g B/s\n", "memory", fmt_us(rl->memory_us, us, sizeof(us)),
            r->spec.hbm_bw);
    fprintf(out, "%-12s %s us, %s-bound\n", "modeled", fmt_us(rl->modeled_us, us, sizeof(us)),
            tpu_bound_name(rl->bound));
    if (r->has_pipeline) {
        fmt_mib(p->vmem_bytes, b2, sizeof(b2));
        if (r->is_matmul) {
            snprintf(b1, sizeof(b1), "%lldx%lldx%lld", (long long)r->rep.block[0],
                     (long long)r->rep.block[1], (long long)r->rep.block[2]);
        } else {
            snprintf(b1, sizeof(b1), "%lld", (long long)r->rep.block[0]);
        }
        fprintf(out, "%-12s %s us (VMEM executor: blocks %s, %lld step%s, %s of VMEM)\n",
                "pipelined", fmt_us(p->modeled_us, us, sizeof(us)), b1, (long long)p->steps,
                p->steps == 1 ? "" : "s", b2);
    } else {
        fprintf(out, "%-12s %s\n", "pipelined", r->pipeline_note);
    }
}

int tpu__cmd_model_op(int argc, char **argv)
{
    tpu_status_t status;
    tpu_err_t err = {0};
    op_args_t args;
    op_result_t res;
    FILE *out = stdout;
    int rc = 0;

    status = parse_args(argc, argv, &args, &err);
    if (status != TPU_OK) {
        return bad(err.msg);
    }
    if (args.help) {
        usage(stdout);
        return 0;
    }
    memset(&res, 0, sizeof(res));
    status = setup(&args, &res, &err);
    if (status != TPU_OK) {
        return bad(err.msg);
    }
    status = pipeline(&res, &err);
    if (status != TPU_OK) {
        fprintf(stderr, "tpuemu: %s\n", err.msg);
        return EXIT_FAIL;
    }
    if (args.json != NULL && strcmp(args.json, "-") != 0) {
        out = fopen(args.json, "w");
        if (out == NULL) {
            fprintf(stderr, "tpuemu: cannot write '%s': %s\n", args.json, strerror(errno));
            return EXIT_USAGE;
        }
    }
    if (args.json != NULL) {
        print_json(out, &res);
    } else {
        print_table(out, &res);
    }
    if (out != stdout) {
        if (fclose(out) != 0) {
            fprintf(stderr, "tpuemu: cannot write '%s': %s\n", args.json, strerror(errno));
            rc = EXIT_FAIL;
        }
    } else {
        fflush(stdout);
    }
    return rc;
}
