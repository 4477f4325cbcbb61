/*
 * "tpuemu model --op ...": model one chip op without data.
 *
 *   tpuemu model --op matmul --m 8192 --k 8192 --n 8192 [--dtype bf16|f32|i8]
 *                [--out-dtype bf16|f32] [--calibrated] [--chip v5e] [--json FILE|-]
 *   tpuemu model --op add|mul|max|relu|exp|tanh|gelu|softmax|sum|reduce_max
 *                --elements N [--cols C] [--dtype bf16|f32|i8] [--chip v5e] [--json FILE|-]
 *
 * Prints the roofline of the op (FLOPs, HBM bytes, arithmetic intensity,
 * compute and memory time, the modeled time and which bound it hits; see
 * include/tpu/roofline.h) and the pipelined time of the VMEM executor for the block
 * plan the op would run, modelled without data.  --cols C makes softmax, sum
 * and reduce_max work on rows of C elements (N / C rows; default: one row of
 * N).  --calibrated adds the matmul's calibrated time, the fraction of peak it
 * reaches and where the chip's MXU profile comes from (tpu_mxu_seconds_calibrated(),
 * tpu/calibration.h).  Sizes are plain positive integers.  The flags are rows of the command
 * table (commands.def); bad input: one line "tpuemu: ..." on stderr and exit 2.
 */
#include "op.h"

#include "tpu/calibration.h"
#include "tpu/chip.h"
#include "tpu/mxu.h"
#include "tpu/roofline.h"
#include "tpu/status.h"
#include "tpu/vmem.h"
#include "tpu/vpu.h"

#include "jobenv.h"
#include "json.h"
#include "sink.h"
#include "units.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The pipelined time is only modelled up to this many grid steps (it walks them). */
#define MAX_MODEL_STEPS 4e6

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
    tpu_mxu_desc_t mm;
    tpu_vpu_desc_t vpu;
    tpu_roofline_report_t rep;
    int has_pipeline;
    int calibrated;       /* --calibrated (matmul only) */
    double calibrated_us; /* tpu_mxu_seconds_calibrated() */
    char pipeline_note[TPU_ERR_MSG_LEN + 64];
} op_result_t;

static tpu_status_t setup(const app_opts_t *a, op_result_t *r, tpu_err_t *err)
{
    tpu_status_t status;
    tpu_dtype_t in = TPU_DTYPE_BF16;
    tpu_dtype_t out;
    tpu_vpu_op_t vop;
    int64_t m, k, n, elements, cols;

    if (a->chip_op == NULL) {
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
    r->is_matmul = strcmp(a->chip_op, "matmul") == 0;
    if (r->is_matmul) {
        if (a->m == NULL || a->k == NULL || a->n == NULL) {
            return tpu_err_set(err, TPU_ERR_INVALID, "--op matmul needs --m, --k and --n");
        }
        if ((status = not_for("elements", a->elements, a->chip_op, err)) != TPU_OK ||
            (status = not_for("cols", a->cols, a->chip_op, err)) != TPU_OK ||
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
        tpu_mxu_desc_init(&r->mm, m, k, n, in);
        if (a->out_dtype != NULL) {
            status = tpu_dtype_parse(a->out_dtype, &out, err);
            if (status != TPU_OK) {
                return status;
            }
            r->mm.out = out;
        }
        r->calibrated = a->calibrated;
        r->calibrated_us = 1e6 * tpu_mxu_seconds_calibrated(&r->spec, m, k, n, in);
        return tpu_mxu_roofline(&r->spec, &r->mm, &r->rep.roofline, err);
    }
    if (a->calibrated) {
        return tpu_err_set(err, TPU_ERR_INVALID, "--calibrated applies to --op matmul, not to %s",
                           a->chip_op);
    }
    if (tpu_vpu_op_parse(a->chip_op, &vop, NULL) != TPU_OK) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "unknown op '%s' (known: matmul, add, mul, max, relu, exp, tanh, gelu, "
                           "softmax, sum, reduce_max)",
                           a->chip_op);
    }
    if (a->elements == NULL) {
        return tpu_err_set(err, TPU_ERR_INVALID, "--op %s needs --elements", a->chip_op);
    }
    if ((status = not_for("m", a->m, a->chip_op, err)) != TPU_OK ||
        (status = not_for("k", a->k, a->chip_op, err)) != TPU_OK ||
        (status = not_for("n", a->n, a->chip_op, err)) != TPU_OK ||
        (status = not_for("out-dtype", a->out_dtype, a->chip_op, err)) != TPU_OK ||
        (status = parse_size("elements", a->elements, &elements, err)) != TPU_OK) {
        return status;
    }
    cols = elements;
    if (a->cols != NULL) {
        if (vop != TPU_VPU_SOFTMAX && vop != TPU_VPU_SUM && vop != TPU_VPU_REDUCE_MAX) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "--cols applies to softmax, sum and reduce_max, not to %s",
                               a->chip_op);
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
    return tpu_vpu_roofline(&r->spec, &r->vpu, &r->rep.roofline, err);
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
        status = tpu_mxu_matmul_model(vmem, &r->mm, &r->rep, &perr);
    } else {
        status = tpu_vpu_model(vmem, &r->vpu, &r->rep, &perr);
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

static void print_json(app_json_t *j, const op_result_t *r)
{
    const tpu_roofline_t *rl = &r->rep.roofline;
    const tpu_vmem_stats_t *p = &r->rep.pipeline;

    app_json_object(j);
    app_json_kstr(j, "chip", r->spec.name);
    if (r->is_matmul) {
        app_json_kstr(j, "op", "matmul");
        app_json_kstr(j, "dtype", tpu_dtype_name(r->mm.in));
        app_json_kstr(j, "out_dtype", tpu_dtype_name(r->mm.out));
        app_json_kint(j, "m", (long long)r->mm.m);
        app_json_kint(j, "k", (long long)r->mm.k);
        app_json_kint(j, "n", (long long)r->mm.n);
    } else {
        app_json_kstr(j, "op", tpu_vpu_op_name(r->vpu.op));
        app_json_kstr(j, "dtype", tpu_dtype_name(r->vpu.dtype));
        app_json_kstr(j, "out_dtype", tpu_dtype_name(tpu_vpu_out_dtype(&r->vpu)));
        app_json_kint(j, "elements", (long long)(r->vpu.rows * r->vpu.cols));
        app_json_kint(j, "rows", (long long)r->vpu.rows);
        app_json_kint(j, "cols", (long long)r->vpu.cols);
    }
    app_json_kstr(j, "unit", r->is_matmul ? "mxu" : "vpu");
    app_json_kfixed(j, "flops", rl->flops, 0);
    app_json_kfixed(j, "hw_flops", rl->hw_flops, 0);
    app_json_kfixed(j, "hbm_bytes", rl->hbm_bytes, 0);
    app_json_ksig(j, "intensity", rl->intensity, 6);
    app_json_ksig(j, "peak_flops", rl->peak, 6);
    app_json_ksig(j, "hbm_bw", r->spec.hbm_bw, 6);
    app_json_kfixed(j, "compute_us", rl->compute_us, 6);
    app_json_kfixed(j, "memory_us", rl->memory_us, 6);
    app_json_kfixed(j, "modeled_us", rl->modeled_us, 6);
    app_json_kstr(j, "bound", tpu_roofline_bound_name(rl->bound));
    if (r->calibrated) {
        const tpu_chip_calibration_t *cal = tpu_chip_calibration(r->spec.name);

        app_json_kfixed(j, "calibrated_us", r->calibrated_us, 6);
        app_json_ksig(j, "calibrated_flops_per_s", rl->flops / (r->calibrated_us * 1e-6), 6);
        app_json_ksig(j, "mxu_efficiency", rl->flops / (r->calibrated_us * 1e-6) / rl->peak, 6);
        app_json_kstr(j, "calibration_chip", cal->mxu_from);
        app_json_kstr(j, "calibration_source", cal->mxu_source);
    }
    if (r->has_pipeline) {
        app_json_kfixed(j, "pipelined_us", p->modeled_us, 6);
        app_json_kint(j, "grid_steps", (long long)p->steps);
        app_json_kfixed(j, "vmem_bytes", p->vmem_bytes, 0);
        app_json_karray(j, "block");
        app_json_int(j, (long long)r->rep.block[0]);
        if (r->is_matmul) {
            app_json_int(j, (long long)r->rep.block[1]);
            app_json_int(j, (long long)r->rep.block[2]);
        }
        app_json_array_end(j);
    } else {
        app_json_key(j, "pipelined_us");
        app_json_null(j);
        app_json_kstr(j, "pipeline_note", r->pipeline_note);
    }
    app_json_object_end(j);
}

/* Bytes up to MiB, one decimal. */
static void fmt_mib(double bytes, char *buf, size_t len)
{
    static const int decimals[] = {0, 1, 1};

    app_units_bytes(bytes, 2, decimals, buf, len);
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
                tpu_dtype_name(r->vpu.dtype), tpu_dtype_name(tpu_vpu_out_dtype(&r->vpu)));
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
    fprintf(out, "%-12s %s us at %.3g FLOP/s\n", "compute",
            app_units_us(rl->compute_us, us, sizeof(us)), rl->peak);
    fprintf(out, "%-12s %s us at %.3g B/s\n", "memory", app_units_us(rl->memory_us, us, sizeof(us)),
            r->spec.hbm_bw);
    fprintf(out, "%-12s %s us, %s-bound\n", "modeled", app_units_us(rl->modeled_us, us, sizeof(us)),
            tpu_roofline_bound_name(rl->bound));
    if (r->calibrated) {
        const tpu_chip_calibration_t *cal = tpu_chip_calibration(r->spec.name);
        double rate = rl->flops / (r->calibrated_us * 1e-6);

        fprintf(out, "%-12s %s us, %.4g FLOP/s (%.1f%% of peak)\n", "calibrated",
                app_units_us(r->calibrated_us, us, sizeof(us)), rate, 100 * rate / rl->peak);
        if (strcmp(cal->mxu_from, r->spec.name) == 0) {
            fprintf(out, "%-12s %s\n", "profile", cal->mxu_source);
        } else {
            fprintf(out, "%-12s no %s matmul measurement: %s's (%s)\n", "profile", r->spec.name,
                    cal->mxu_from, cal->mxu_source);
        }
    }
    if (r->has_pipeline) {
        fmt_mib(p->vmem_bytes, b2, sizeof(b2));
        if (r->is_matmul) {
            snprintf(b1, sizeof(b1), "%lldx%lldx%lld", (long long)r->rep.block[0],
                     (long long)r->rep.block[1], (long long)r->rep.block[2]);
        } else {
            snprintf(b1, sizeof(b1), "%lld", (long long)r->rep.block[0]);
        }
        fprintf(out, "%-12s %s us (VMEM executor: blocks %s, %lld step%s, %s of VMEM)\n",
                "pipelined", app_units_us(p->modeled_us, us, sizeof(us)), b1, (long long)p->steps,
                p->steps == 1 ? "" : "s", b2);
    } else {
        fprintf(out, "%-12s %s\n", "pipelined", r->pipeline_note);
    }
}

int app_cmd_op(app_ctx_t *ctx)
{
    const app_opts_t *o = ctx->o;
    tpu_err_t err = {0};
    op_result_t res;
    app_sink_t sink;
    app_json_t j;

    memset(&res, 0, sizeof(res));
    if (setup(o, &res, &err) != TPU_OK) {
        app_die_msg(err.msg);
        return APP_EXIT_USAGE;
    }
    if (pipeline(&res, &err) != TPU_OK) {
        app_die_msg(err.msg);
        return APP_EXIT_FAIL;
    }
    if (o->json == NULL) {
        print_table(stdout, &res);
        return APP_EXIT_OK;
    }
    if (app_sink_open(&sink, o->json, &err) != TPU_OK) {
        app_die_msg(err.msg);
        return APP_EXIT_USAGE;
    }
    app_json_init(&j, sink.f);
    print_json(&j, &res);
    if (app_json_end(&j, &err) != TPU_OK || app_sink_close(&sink, &err) != TPU_OK) {
        app_sink_close(&sink, NULL);
        app_die_msg(err.msg);
        return APP_EXIT_FAIL;
    }
    return APP_EXIT_OK;
}
