/*
 * The replay's op costs: the roofline time of one compute instruction (dot and
 * convolution as matmuls, elementwise ops and reductions on the VPU and HBM,
 * fusions from the ops inside them, custom calls) and its op row of the report.
 * The walk (replay_walk.c) advances the compute stream by these times.
 */
#include "hlo_cost.h"

#include "tpu/mxu.h"
#include "tpu/roofline.h"
#include "tpu/vpu.h"

#include "alloc.h"
#include "replay_backend.h"
#include "replay_coll.h"
#include "replay_state.h"

#include <math.h>
#include <string.h>

const tpu_hlo_instr_t *tpu__replay_operand(const tpu_hlo_comp_t *c, const tpu_hlo_instr_t *in,
                                           int k)
{
    if (k >= in->noperands || in->operands[k] < 0 || in->operands[k] >= c->ninstrs) {
        return NULL;
    }
    return &c->instrs[in->operands[k]];
}

static double operand_bytes(const tpu_hlo_comp_t *c, const tpu_hlo_instr_t *in)
{
    double b = 0;
    int k;

    for (k = 0; k < in->noperands; k++) {
        const tpu_hlo_instr_t *o = tpu__replay_operand(c, in, k);

        if (o != NULL) {
            b += (double)tpu_hlo_shape_bytes(&o->shape);
        }
    }
    return b;
}

/* ---------------------------------------------------------------- compute */

typedef struct cost {
    double flops, bytes, mxu_us, vpu_us;
} cost_t;

static tpu_dtype_t elem_of(tpu_hlo_type_t t, int *complex_p)
{
    *complex_p = t == TPU_HLO_TYPE_C64 || t == TPU_HLO_TYPE_C128;
    switch (t) {
    case TPU_HLO_TYPE_BF16:
    case TPU_HLO_TYPE_F16:
        return TPU_DTYPE_BF16;
    case TPU_HLO_TYPE_F32:
    case TPU_HLO_TYPE_F64:
    case TPU_HLO_TYPE_C64:
    case TPU_HLO_TYPE_C128:
    case TPU_HLO_TYPE_S32:
    case TPU_HLO_TYPE_U32:
    case TPU_HLO_TYPE_S64:
    case TPU_HLO_TYPE_U64:
    case TPU_HLO_TYPE_S16:
    case TPU_HLO_TYPE_U16:
        return TPU_DTYPE_F32;
    default:
        return TPU_DTYPE_I8;
    }
}

static int in_list(const tpu_hlo_ints_t *l, int d)
{
    int k;

    for (k = 0; k < l->n; k++) {
        if (l->v[k] == d) {
            return 1;
        }
    }
    return 0;
}

/* B batched matmuls of M x K x N of element type 'lt' into 'ot' through the roofline. */
static void matmul_cost(walker_t *w, int64_t B, int64_t M, int64_t K, int64_t N, tpu_hlo_type_t lt,
                        tpu_hlo_type_t ot, cost_t *k)
{
    tpu_mxu_desc_t desc;
    tpu_roofline_t rl;
    int cplx, cplx2;
    tpu_dtype_t inel, outel;
    double mult;

    if (B < 1 || M < 1 || K < 1 || N < 1) {
        return;
    }
    inel = elem_of(lt, &cplx);
    outel = elem_of(ot, &cplx2);
    tpu_mxu_desc_init(&desc, M, K, N, inel);
    if (inel == TPU_DTYPE_BF16 && outel == TPU_DTYPE_F32) {
        desc.out = TPU_DTYPE_F32;
    }
    if (tpu_mxu_roofline(w->chip, &desc, &rl, NULL) != TPU_OK) {
        return;
    }
    mult = (double)B * (cplx ? 4 : 1);
    k->flops += mult * rl.flops;
    k->bytes += (double)B * rl.hbm_bytes * (cplx ? 2 : 1);
    k->mxu_us += mult * rl.compute_us;
}

/*
 * A library matmul custom-call (oneDNN, Eigen, cuBLAS): result [batch..., M, N]
 * (the first element of a tuple result), lhs holding batch x M x K elements.
 */
static void library_matmul_cost(walker_t *w, const tpu_hlo_comp_t *c, const tpu_hlo_instr_t *in,
                                cost_t *k)
{
    const tpu_hlo_instr_t *lo = tpu__replay_operand(c, in, 0);
    const tpu_hlo_shape_t *out = &in->shape;
    int64_t B = 1, M = 1, N = 1, lhs;
    int d;

    if (out->type == TPU_HLO_TYPE_TUPLE && out->ntuple > 0) {
        out = &out->tuple[0];
    }
    if (lo == NULL || lo->shape.type == TPU_HLO_TYPE_TUPLE || out->type == TPU_HLO_TYPE_TUPLE ||
        out->rank < 1) {
        return;
    }
    for (d = 0; d + 2 < out->rank; d++) {
        B *= out->dims[d];
    }
    N = out->dims[out->rank - 1];
    M = out->rank >= 2 ? out->dims[out->rank - 2] : 1;
    lhs = tpu_hlo_shape_elements(&lo->shape);
    if (B * M < 1 || lhs % (B * M) != 0) {
        return;
    }
    matmul_cost(w, B, M, lhs / (B * M), N, lo->shape.type, out->type, k);
}

/* A dot: B batched matmuls of M x K x N through the roofline. */
static void dot_cost(walker_t *w, const tpu_hlo_comp_t *c, const tpu_hlo_instr_t *in, cost_t *k)
{
    const tpu_hlo_instr_t *lo = tpu__replay_operand(c, in, 0), *ro = tpu__replay_operand(c, in, 1);
    int64_t B = 1, M = 1, K = 1, N = 1;
    int d;

    if (lo == NULL || ro == NULL || lo->shape.type == TPU_HLO_TYPE_TUPLE ||
        ro->shape.type == TPU_HLO_TYPE_TUPLE) {
        return;
    }
    for (d = 0; d < lo->shape.rank; d++) {
        if (in_list(&in->lhs_batch, d)) {
            B *= lo->shape.dims[d];
        } else if (in_list(&in->lhs_contracting, d)) {
            K *= lo->shape.dims[d];
        } else {
            M *= lo->shape.dims[d];
        }
    }
    for (d = 0; d < ro->shape.rank; d++) {
        if (!in_list(&in->rhs_batch, d) && !in_list(&in->rhs_contracting, d)) {
            N *= ro->shape.dims[d];
        }
    }
    matmul_cost(w, B, M, K, N, lo->shape.type, tpu__replay_leaf_type(&in->shape), k);
}

/* A convolution: output positions x (kernel window x input features) x output features. */
static void conv_cost(walker_t *w, const tpu_hlo_comp_t *c, const tpu_hlo_instr_t *in, cost_t *k)
{
    const tpu_hlo_instr_t *lo = tpu__replay_operand(c, in, 0), *ro = tpu__replay_operand(c, in, 1);
    const char *lab = in->dim_labels, *rl_start, *arrow;
    int64_t out_e = tpu_hlo_shape_elements(&in->shape), ifeat = 1, ofeat = 1, win = 1, m;
    tpu_mxu_desc_t desc;
    tpu_roofline_t rl;
    int d, cplx;

    if (lo == NULL || ro == NULL || lab == NULL || ro->shape.type == TPU_HLO_TYPE_TUPLE) {
        return;
    }
    rl_start = strchr(lab, '_');
    arrow = strstr(lab, "->");
    if (rl_start == NULL || arrow == NULL || arrow < rl_start ||
        arrow - rl_start - 1 != ro->shape.rank) {
        return;
    }
    for (d = 0; d < ro->shape.rank; d++) {
        char ch = rl_start[1 + d];

        if (ch == 'i') {
            ifeat = ro->shape.dims[d];
        } else if (ch == 'o') {
            ofeat = ro->shape.dims[d];
        } else {
            win *= ro->shape.dims[d];
        }
    }
    if (ofeat < 1 || out_e < ofeat || ifeat < 1 || win < 1) {
        return;
    }
    m = out_e / ofeat;
    tpu_mxu_desc_init(&desc, m, win * ifeat, ofeat, elem_of(lo->shape.type, &cplx));
    if (desc.in == TPU_DTYPE_BF16 && tpu__replay_leaf_type(&in->shape) == TPU_HLO_TYPE_F32) {
        desc.out = TPU_DTYPE_F32;
    }
    if (tpu_mxu_roofline(w->chip, &desc, &rl, NULL) != TPU_OK) {
        return;
    }
    k->flops += rl.flops * (cplx ? 4 : 1);
    k->mxu_us += rl.compute_us * (cplx ? 4 : 1);
}

static double vpu_us(walker_t *w, int64_t elements, double fpe)
{
    return tpu_vpu_seconds(w->chip, elements, fpe) * 1e6;
}

/* FLOPs and unit time of one instruction inside a fusion (no HBM bytes). */
static tpu_status_t inner_cost(walker_t *w, const tpu_hlo_comp_t *c, const tpu_hlo_instr_t *in,
                               cost_t *k);

static tpu_status_t fused_cost(walker_t *w, int ci, cost_t *k)
{
    const tpu_hlo_comp_t *c = &w->mod->comps[ci];
    tpu_status_t status = TPU_OK;
    int i;

    if (++w->depth > MAX_CALL_DEPTH) {
        return tpu_err_set(w->err, TPU_ERR_INVALID,
                           "%s:%d:1: computations nest deeper than %d (a cycle?) at '%s'",
                           w->mod->file, c->line, MAX_CALL_DEPTH, c->name);
    }
    for (i = 0; i < c->ninstrs && status == TPU_OK; i++) {
        status = inner_cost(w, c, &c->instrs[i], k);
    }
    w->depth--;
    return status;
}

static tpu_status_t inner_cost(walker_t *w, const tpu_hlo_comp_t *c, const tpu_hlo_instr_t *in,
                               cost_t *k)
{
    int64_t e = tpu_hlo_shape_elements(&in->shape);

    switch (tpu_hlo_op_class(in->op)) {
    case TPU_HLO_CLASS_DOT:
        dot_cost(w, c, in, k);
        break;
    case TPU_HLO_CLASS_CONV:
        conv_cost(w, c, in, k);
        break;
    case TPU_HLO_CLASS_ELEMWISE:
        k->flops += (double)e;
        k->vpu_us += vpu_us(w, e, 1);
        break;
    case TPU_HLO_CLASS_TRANSC:
        k->flops += (double)e * TPU_VPU_TRANSCENDENTAL_FLOPS;
        k->vpu_us += vpu_us(w, e, TPU_VPU_TRANSCENDENTAL_FLOPS);
        break;
    case TPU_HLO_CLASS_REDUCE: {
        const tpu_hlo_instr_t *o = tpu__replay_operand(c, in, 0);
        int64_t ie = o != NULL ? tpu_hlo_shape_elements(&o->shape) : e;

        k->flops += (double)ie;
        k->vpu_us += vpu_us(w, ie, 1);
        break;
    }
    case TPU_HLO_CLASS_FFT: {
        double n = in->fft_length > 1 ? (double)in->fft_length : 1;
        double f = n > 1 ? 5 * log2(n) : 0;

        k->flops += (double)e * f;
        k->vpu_us += vpu_us(w, e, f);
        break;
    }
    case TPU_HLO_CLASS_FUSION:
        if (in->calls_c >= 0) {
            return fused_cost(w, in->calls_c, k);
        }
        break;
    default:
        break;
    }
    return TPU_OK;
}

/*
 * Bytes a top-level op moves through HBM: operands read, result written.  Ops
 * that touch part of an operand count that part: a slice or gather reads what
 * it writes; a dynamic-update-slice or scatter updates its buffer in place.
 */
static double io_bytes(const tpu_hlo_comp_t *c, const tpu_hlo_instr_t *in)
{
    double out = (double)tpu_hlo_shape_bytes(&in->shape);
    const tpu_hlo_instr_t *upd;

    switch (in->op) {
    case TPU_HLO_OP_SLICE:
    case TPU_HLO_OP_DYNAMIC_SLICE:
    case TPU_HLO_OP_GATHER:
        return 2 * out;
    case TPU_HLO_OP_DYNAMIC_UPDATE_SLICE:
    case TPU_HLO_OP_SCATTER:
        upd = tpu__replay_operand(c, in, in->op == TPU_HLO_OP_SCATTER ? in->noperands - 1 : 1);
        return upd != NULL ? 2 * (double)tpu_hlo_shape_bytes(&upd->shape) : out;
    default:
        return operand_bytes(c, in) + out;
    }
}

/*
 * A fusion's HBM bytes, as XLA moves them: its result written and its operands
 * read, except that an operand the fused computation only slices (operand 0 of
 * dynamic-slice, slice, gather) is read for the slices alone, and a fused
 * dynamic-update-slice (or scatter) root of a parameter updates that operand in
 * place: its update is written, not the whole buffer.
 */
static double fusion_bytes(walker_t *w, const tpu_hlo_comp_t *c, const tpu_hlo_instr_t *in)
{
    const tpu_hlo_comp_t *fc;
    const tpu_hlo_instr_t *root, *base;
    double b, *sliced = NULL;
    char *full = NULL;
    int j, k, inplace = -1;

    if (in->calls_c < 0 || in->noperands == 0) {
        return io_bytes(c, in);
    }
    fc = &w->mod->comps[in->calls_c];
    sliced = tpu__calloc((size_t)in->noperands, sizeof(double));
    full = tpu__calloc((size_t)in->noperands, 1);
    if (sliced == NULL || full == NULL) {
        tpu__free(sliced);
        tpu__free(full);
        return io_bytes(c, in);
    }
    b = (double)tpu_hlo_shape_bytes(&in->shape);
    root = &fc->instrs[fc->root];
    base = tpu__replay_operand(fc, root, 0);
    if ((root->op == TPU_HLO_OP_DYNAMIC_UPDATE_SLICE || root->op == TPU_HLO_OP_SCATTER) &&
        base != NULL && base->op == TPU_HLO_OP_PARAMETER && base->parameter_number >= 0 &&
        base->parameter_number < in->noperands) {
        const tpu_hlo_instr_t *upd =
            tpu__replay_operand(fc, root, root->op == TPU_HLO_OP_SCATTER ? root->noperands - 1 : 1);

        inplace = (int)base->parameter_number;
        b = upd != NULL ? (double)tpu_hlo_shape_bytes(&upd->shape) : b;
    }
    for (j = 0; j < fc->ninstrs; j++) {
        const tpu_hlo_instr_t *u = &fc->instrs[j];

        for (k = 0; k < u->noperands; k++) {
            const tpu_hlo_instr_t *o = tpu__replay_operand(fc, u, k);
            int pn;

            if (o == NULL || o->op != TPU_HLO_OP_PARAMETER || o->parameter_number < 0 ||
                o->parameter_number >= in->noperands) {
                continue;
            }
            pn = (int)o->parameter_number;
            if (k == 0 && (u->op == TPU_HLO_OP_DYNAMIC_SLICE || u->op == TPU_HLO_OP_SLICE ||
                           u->op == TPU_HLO_OP_GATHER)) {
                sliced[pn] += (double)tpu_hlo_shape_bytes(&u->shape);
            } else if (!(pn == inplace && u == root && k == 0)) {
                full[pn] = 1;
            }
        }
    }
    for (k = 0; k < in->noperands; k++) {
        const tpu_hlo_instr_t *o = tpu__replay_operand(c, in, k);
        double ob = o != NULL ? (double)tpu_hlo_shape_bytes(&o->shape) : 0;

        b += full[k] || (sliced[k] == 0 && k != inplace) ? ob : sliced[k] < ob ? sliced[k] : ob;
    }
    tpu__free(sliced);
    tpu__free(full);
    return b;
}

/* Is 'in' a reshape XLA makes a bitcast (default layouts on both sides, no tiling)? */
int tpu__replay_reshape_free(const tpu_hlo_comp_t *c, const tpu_hlo_instr_t *in)
{
    const tpu_hlo_instr_t *o = tpu__replay_operand(c, in, 0);

    return in->op == TPU_HLO_OP_RESHAPE && o != NULL && o->shape.type == in->shape.type &&
           !o->shape.layout_other && !in->shape.layout_other &&
           tpu_hlo_shape_elements(&o->shape) == tpu_hlo_shape_elements(&in->shape);
}

static double custom_us(const walker_t *w, const tpu_hlo_instr_t *in, int *given_p)
{
    int k;

    *given_p = 0;
    for (k = 0; w->opts != NULL && k < w->opts->ncustom; k++) {
        if (strcmp(w->opts->custom_names[k], in->name) == 0 ||
            (in->custom_call_target != NULL &&
             strcmp(w->opts->custom_names[k], in->custom_call_target) == 0)) {
            *given_p = 1;
            return w->opts->custom_us[k];
        }
    }
    return 0;
}

/* The row and time of compute instruction 'i' of 'c'. */
tpu_status_t tpu__replay_op_at(walker_t *w, const tpu_hlo_comp_t *c, int i, int64_t mult,
                               double *us_p)
{
    const tpu_hlo_instr_t *in = &c->instrs[i];
    int *slot = tpu__replay_rowslot(w, c, i);
    tpu_replay_op_t *row;
    tpu_status_t status;

    if (slot == NULL) {
        return tpu__replay_oom(w);
    }
    if (*slot < 0) {
        cost_t k = {0, 0, 0, 0};
        double mem_us, t;
        int given = 0;

        row = tpu__replay_new_op(w);
        if (row == NULL) {
            return tpu__replay_oom(w);
        }
        row->name = in->name;
        row->opcode = in->opcode;
        row->line = in->line;
        *slot = w->rep->nops - 1;
        row->source = in->op_name;
        if (in->op == TPU_HLO_OP_CUSTOM_CALL) {
            tpu_replay_custom_t kind = tpu__replay_custom_kind(in);
            const char *tgt = in->custom_call_target ? in->custom_call_target : "?";

            row->detail = in->custom_call_target;
            w->rep->custom_calls++;
            if (kind == TPU_REPLAY_CUSTOM_MATMUL && !custom_us(w, in, &given) && !given) {
                /* A library matmul: the dot it is. */
                library_matmul_cost(w, c, in, &k);
                mem_us = k.bytes / w->chip->hbm_bw * 1e6;
                row->compute_bound = k.mxu_us > mem_us;
                row->modeled_us = (k.mxu_us > mem_us ? k.mxu_us : mem_us) /
                                  tpu_faults_slowest_chip(w->link->faults);
                row->flops = k.flops;
                row->bytes = k.bytes;
            } else {
                row->custom = 1;
                row->modeled_us = custom_us(w, in, &given);
                row->bytes = io_bytes(c, in);
                status =
                    kind == TPU_REPLAY_CUSTOM_COMM && !given
                        ? tpu__replay_warn(w,
                                           "%s:%d: custom-call '%s' (%s) costs 0, and its name "
                                           "suggests it communicates: the step misses its time "
                                           "(give it with --custom-call-us NAME=US)",
                                           w->mod->file, in->line, in->name, tgt)
                        : tpu__replay_warn(
                              w, "%s:%d: custom-call '%s' (%s%s) costs %s", w->mod->file, in->line,
                              in->name,
                              kind == TPU_REPLAY_CUSTOM_KERNEL ? "a Pallas/Mosaic/Triton kernel "
                                                               : "",
                              tgt,
                              given ? "the time given by --custom-call-us"
                                    : "0 (unknown; set it with --custom-call-us NAME=US)");
                if (status != TPU_OK) {
                    return status;
                }
            }
        } else {
            if (in->op == TPU_HLO_OP_FUSION) {
                row->detail = in->calls;
                if (in->calls_c >= 0) {
                    status = fused_cost(w, in->calls_c, &k);
                    if (status != TPU_OK) {
                        return status;
                    }
                }
                k.bytes = fusion_bytes(w, c, in);
            } else {
                status = inner_cost(w, c, in, &k);
                if (status != TPU_OK) {
                    return status;
                }
                if (tpu_hlo_op_class(in->op) != TPU_HLO_CLASS_DOT) {
                    k.bytes = io_bytes(c, in);
                }
            }
            mem_us = k.bytes / w->chip->hbm_bw * 1e6;
            t = k.mxu_us > k.vpu_us ? k.mxu_us : k.vpu_us;
            row->compute_bound = t > mem_us;
            /* A slow chip (tpu/fault.h) paces every op of the SPMD program. */
            row->modeled_us = (t > mem_us ? t : mem_us) / tpu_faults_slowest_chip(w->link->faults);
            row->flops = k.flops;
            row->bytes = k.bytes;
        }
    }
    row = &w->rep->ops[*slot];
    if (w->record) {
        row->executions += mult;
    }
    *us_p = row->modeled_us;
    return TPU_OK;
}
