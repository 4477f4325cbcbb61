/*
 * The replay's HBM fit: the peak of live bytes per chip over the module's
 * order, as XLA's buffer assignment would hold them.
 *
 * Model.  Each instruction of a computation, in text order, either allocates
 * its result or aliases buffers it was given:
 *   - free aliases: tuple, get-tuple-element (of a tuple: the one element),
 *     bitcast (and a reshape XLA makes one), opt-barrier, add-dependency, domain, the -done and
 * -update of an async pair (the start's buffer), a while (its loop state), sharding markers;
 * dynamic-update-slice and scatter, and a fusion whose fused root is a dynamic-update-slice of a
 * fused parameter, update their operand in place;
 *   - an async -start allocates its result minus its operands (the tuple it
 *     returns holds them), and its operands stay live until its -done;
 *   - a fusion allocates its result only (its internals are not materialised);
 *   - every other instruction allocates its result's bytes.
 * A buffer lives from its instruction to its last use (through the aliases);
 * the entry's parameters live from the start to the end, and so do the
 * buffers of its ROOT; an output that input_output_alias gives a parameter's
 * buffer allocates nothing.  Parameters of other computations belong to their
 * caller (0 bytes).  At a while the body's (or the condition's) own peak sits on
 * top of what is live; at a conditional its largest branch; at a call the callee.
 *
 *   live(i) = sum of sizes with def <= i <= last use;   peak = max_i live(i) + inner(i)
 *
 * Linear in the instructions (one pass to find last uses, a prefix sum for the
 * live bytes), each called computation's peak computed once.
 */
#include "replay_hbm.h"

#include "alloc.h"
#include "hlo_cost.h"
#include "replay_backend.h"
#include "replay_trip.h"

#include <stdio.h>
#include <string.h>

typedef struct hbm {
    walker_t *w;
    double *memo; /* per computation: its own peak (-1 unknown) */
    int depth;
} hbm_t;

/* The fused parameter a fusion's dynamic-update-slice root updates in place; -1. */
static int fused_inplace_operand(const tpu_hlo_module_t *m, const tpu_hlo_instr_t *in)
{
    const tpu_hlo_comp_t *fc;
    const tpu_hlo_instr_t *r, *o;
    int guard;

    if (in->op != TPU_HLO_OP_FUSION || in->calls_c < 0) {
        return -1;
    }
    fc = &m->comps[in->calls_c];
    r = &fc->instrs[fc->root];
    if (r->op != TPU_HLO_OP_DYNAMIC_UPDATE_SLICE && r->op != TPU_HLO_OP_SCATTER) {
        return -1;
    }
    o = tpu__replay_operand(fc, r, 0);
    for (guard = 0; o != NULL && o->op == TPU_HLO_OP_BITCAST && guard < 8; guard++) {
        o = tpu__replay_operand(fc, o, 0);
    }
    if (o == NULL || o->op != TPU_HLO_OP_PARAMETER || o->parameter_number < 0 ||
        o->parameter_number >= in->noperands) {
        return -1;
    }
    return (int)o->parameter_number;
}

/* Does 'in' allocate nothing, passing on (some of) its operands' buffers? */
static int is_alias(const tpu_hlo_module_t *m, const tpu_hlo_comp_t *c, const tpu_hlo_instr_t *in)
{
    switch (in->op) {
    case TPU_HLO_OP_TUPLE:
    case TPU_HLO_OP_GET_TUPLE_ELEMENT:
    case TPU_HLO_OP_BITCAST:
    case TPU_HLO_OP_OPT_BARRIER:
    case TPU_HLO_OP_ADD_DEPENDENCY:
    case TPU_HLO_OP_DOMAIN:
    case TPU_HLO_OP_WHILE:
    case TPU_HLO_OP_DYNAMIC_UPDATE_SLICE:
    case TPU_HLO_OP_SCATTER:
        return 1;
    case TPU_HLO_OP_FUSION:
        return fused_inplace_operand(m, in) >= 0;
    case TPU_HLO_OP_RESHAPE:
        return tpu__replay_reshape_free(c, in);
    case TPU_HLO_OP_CUSTOM_CALL:
        return tpu__replay_custom_kind(in) == TPU_REPLAY_CUSTOM_MARKER;
    default:
        return in->async == TPU_HLO_DONE || in->async == TPU_HLO_UPDATE;
    }
}

/* The operands whose buffers an alias passes on: [*lo, *hi). */
static void alias_span(const tpu_hlo_module_t *m, const tpu_hlo_instr_t *in, int *lo, int *hi)
{
    int k = fused_inplace_operand(m, in);

    *lo = 0;
    *hi = in->noperands;
    if (k >= 0) {
        *lo = k;
        *hi = k + 1;
    } else if (in->op == TPU_HLO_OP_DYNAMIC_UPDATE_SLICE || in->op == TPU_HLO_OP_SCATTER ||
               in->async == TPU_HLO_DONE || in->async == TPU_HLO_UPDATE ||
               in->op == TPU_HLO_OP_WHILE || in->op == TPU_HLO_OP_BITCAST ||
               in->op == TPU_HLO_OP_RESHAPE) {
        *hi = in->noperands > 0 ? 1 : 0;
    }
}

/* Bytes instruction 'in' allocates (0 for an alias or a non-entry parameter). */
static double alloc_bytes(const tpu_hlo_module_t *m, const tpu_hlo_comp_t *c,
                          const tpu_hlo_instr_t *in, int entry)
{
    double b;
    int k;

    if (is_alias(m, c, in) || (in->op == TPU_HLO_OP_PARAMETER && !entry)) {
        return 0;
    }
    b = (double)tpu_hlo_shape_bytes(&in->shape);
    if (in->async == TPU_HLO_START && in->shape.type == TPU_HLO_TYPE_TUPLE) {
        for (k = 0; k < in->noperands; k++) {
            const tpu_hlo_instr_t *o = tpu__replay_operand(c, in, k);

            b -= o != NULL ? (double)tpu_hlo_shape_bytes(&o->shape) : 0;
        }
        b = b > 0 ? b : 0;
    }
    return b;
}

/*
 * The instruction whose buffer get-tuple-element 'in' passes on, when it is one
 * element: of a tuple, or of a while whose loop state is a tuple (the state's
 * buffers are the while's); -1 otherwise.
 */
static int element_of(const tpu_hlo_comp_t *c, const tpu_hlo_instr_t *in)
{
    const tpu_hlo_instr_t *t;

    if (in->op != TPU_HLO_OP_GET_TUPLE_ELEMENT || in->noperands != 1 || in->operands[0] < 0 ||
        in->index < 0) {
        return -1;
    }
    t = &c->instrs[in->operands[0]];
    if (t->op == TPU_HLO_OP_WHILE && t->noperands == 1 && t->operands[0] >= 0) {
        t = &c->instrs[t->operands[0]];
    }
    return t->op == TPU_HLO_OP_TUPLE && in->index < t->noperands ? t->operands[in->index] : -1;
}

/* Extend the buffers instruction j stands for to use 'at'. */
static void mark(const tpu_hlo_module_t *m, const tpu_hlo_comp_t *c, int j, int at, int *last,
                 int depth)
{
    const tpu_hlo_instr_t *in;
    int lo, hi, k;

    if (j < 0 || j >= c->ninstrs || last[j] >= at || depth > 256) {
        return;
    }
    last[j] = at;
    in = &c->instrs[j];
    if (!is_alias(m, c, in)) {
        return;
    }
    k = element_of(c, in);
    if (k >= 0) {
        mark(m, c, k, at, last, depth + 1);
        return;
    }
    alias_span(m, in, &lo, &hi);
    for (k = lo; k < hi; k++) {
        mark(m, c, in->operands[k], at, last, depth + 1);
    }
}

/* The allocating instruction an output resolves to through aliases; -1. */
static int owner_of(const tpu_hlo_module_t *m, const tpu_hlo_comp_t *c, int j)
{
    int guard, lo, hi;

    for (guard = 0; j >= 0 && j < c->ninstrs && guard < 64; guard++) {
        const tpu_hlo_instr_t *in = &c->instrs[j];

        if (!is_alias(m, c, in) || in->op == TPU_HLO_OP_TUPLE) {
            return is_alias(m, c, in) ? -1 : j;
        }
        if (element_of(c, in) >= 0) {
            j = element_of(c, in);
            continue;
        }
        alias_span(m, in, &lo, &hi);
        if (hi <= lo) {
            return -1;
        }
        j = in->operands[lo];
    }
    return -1;
}

static tpu_status_t comp_peak(hbm_t *h, int ci, tpu_replay_buffer_t *list, int *nlist, int cap,
                              double *peak_p);

/* The peak of the computations instruction 'in' runs inside it; its computation in *which. */
static tpu_status_t inner_peak(hbm_t *h, const tpu_hlo_instr_t *in, double *peak_p, int *which)
{
    int subs[3], n = 0, k;
    tpu_status_t status = TPU_OK;

    *peak_p = 0;
    *which = -1;
    if (in->op == TPU_HLO_OP_WHILE) {
        subs[n++] = in->body_c;
        subs[n++] = in->condition_c;
    } else if (in->op == TPU_HLO_OP_CALL) {
        subs[n++] = in->to_apply_c;
    }
    for (k = 0; k < n && status == TPU_OK; k++) {
        double p = 0;

        if (subs[k] >= 0) {
            status = comp_peak(h, subs[k], NULL, NULL, 0, &p);
        }
        if (p > *peak_p) {
            *peak_p = p;
            *which = subs[k];
        }
    }
    if (in->op == TPU_HLO_OP_CONDITIONAL) {
        int nb = in->nbranches > 0 ? in->nbranches : 2;

        for (k = 0; k < nb && status == TPU_OK; k++) {
            int bc = in->nbranches > 0 ? in->branches[k] : k == 0 ? in->true_c : in->false_c;
            double p = 0;

            if (bc >= 0) {
                status = comp_peak(h, bc, NULL, NULL, 0, &p);
            }
            if (p > *peak_p) {
                *peak_p = p;
                *which = bc;
            }
        }
    }
    return status;
}

/* "bf16[8,128]" into buf; a tuple as "(f32[8], s32[])" (truncated to the buffer). */
static void array_text(const tpu_hlo_shape_t *sh, char *buf, size_t size)
{
    size_t n;
    int d;

    if (size < 2) {
        return;
    }
    if (sh->type == TPU_HLO_TYPE_TUPLE) {
        snprintf(buf, size, "(");
        for (d = 0; d < sh->ntuple; d++) {
            n = strlen(buf);
            if (d > 0) {
                snprintf(buf + n, size - n, ", ");
                n = strlen(buf);
            }
            array_text(&sh->tuple[d], buf + n, size - n);
        }
        n = strlen(buf);
        snprintf(buf + n, size - n, ")");
        return;
    }
    snprintf(buf, size, "%s[", tpu_hlo_type_name(sh->type));
    for (d = 0; d < sh->rank; d++) {
        n = strlen(buf);
        snprintf(buf + n, size - n, "%s%lld", d ? "," : "", (long long)sh->dims[d]);
    }
    n = strlen(buf);
    snprintf(buf + n, size - n, "]");
}

/* The shape of the buffer 'in' allocates: an async start's output (its tuple's last
 * element), else its result. */
static void shape_text(const tpu_hlo_instr_t *in, char *buf, size_t size)
{
    const tpu_hlo_shape_t *sh = &in->shape;

    if (in->async == TPU_HLO_START && sh->type == TPU_HLO_TYPE_TUPLE && sh->ntuple > 1) {
        sh = &sh->tuple[1];
    }
    array_text(sh, buf, size);
}

/* Keep the 'cap' largest buffers in list (largest first). */
static void list_add(tpu_replay_buffer_t *list, int *nlist, int cap, const tpu_hlo_instr_t *in,
                     double bytes)
{
    int k;

    if (*nlist == cap) {
        if ((double)list[cap - 1].bytes >= bytes) {
            return;
        }
        k = cap - 1;
    } else {
        k = (*nlist)++;
    }
    while (k > 0 && (double)list[k - 1].bytes < bytes) {
        list[k] = list[k - 1];
        k--;
    }
    list[k].name = in->name;
    list[k].source = in->op_name;
    list[k].bytes = (uint64_t)bytes;
    shape_text(in, list[k].shape, sizeof(list[k].shape));
}

/*
 * The peak of computation ci (its parameters free unless it is the entry);
 * with 'list', the largest buffers live at the peak (and inside the
 * computation it runs there) are added to it.
 */
static tpu_status_t comp_peak(hbm_t *h, int ci, tpu_replay_buffer_t *list, int *nlist, int cap,
                              double *peak_p)
{
    walker_t *w = h->w;
    const tpu_hlo_module_t *m = w->mod;
    const tpu_hlo_comp_t *c = &m->comps[ci];
    int entry = h->depth == 0, n = c->ninstrs, i, k, at = -1, which_at = -1;
    int *last = NULL;
    double *size = NULL, *delta = NULL, live = 0, peak = -1;
    tpu_status_t status = TPU_OK;

    if (list == NULL && h->memo[ci] >= 0) {
        *peak_p = h->memo[ci];
        return TPU_OK;
    }
    if (++h->depth > MAX_CALL_DEPTH) {
        h->depth--;
        return tpu_err_set(w->err, TPU_ERR_INVALID,
                           "%s:%d:1: computations call each other deeper than %d (a cycle?) at "
                           "'%s'",
                           m->file, c->line, MAX_CALL_DEPTH, c->name);
    }
    last = tpu__malloc((size_t)(n + 1) * sizeof(int));
    size = tpu__malloc((size_t)(n + 1) * sizeof(double));
    delta = tpu__calloc((size_t)n + 2, sizeof(double));
    if (last == NULL || size == NULL || delta == NULL) {
        status = tpu__replay_oom(w);
        goto out;
    }
    for (i = 0; i < n; i++) {
        last[i] = -1;
        size[i] = alloc_bytes(m, c, &c->instrs[i], entry);
    }
    for (i = 0; i < n; i++) {
        const tpu_hlo_instr_t *in = &c->instrs[i];

        for (k = 0; k < in->noperands; k++) {
            mark(m, c, in->operands[k], i, last, 0);
        }
        if (in->async == TPU_HLO_DONE) {
            int s = tpu__replay_start_of(c, i);

            for (k = 0; s >= 0 && k < c->instrs[s].noperands; k++) {
                mark(m, c, c->instrs[s].operands[k], i, last, 0);
            }
        }
    }
    if (entry) {
        mark(m, c, c->root, n - 1, last, 0);
        for (k = 0; k < m->nio_alias; k++) {
            int64_t out = m->io_alias[2 * k];
            const tpu_hlo_instr_t *r = &c->instrs[c->root];
            int o = out < 0                                           ? c->root
                    : r->op == TPU_HLO_OP_TUPLE && out < r->noperands ? r->operands[out]
                                                                      : -1;

            o = owner_of(m, c, o);
            if (o >= 0 && c->instrs[o].op != TPU_HLO_OP_PARAMETER) {
                size[o] = 0; /* written into the parameter's buffer */
            }
        }
    }
    for (i = 0; i < n; i++) {
        const tpu_hlo_instr_t *in = &c->instrs[i];
        int from = entry && in->op == TPU_HLO_OP_PARAMETER ? 0 : i;
        int to = entry && in->op == TPU_HLO_OP_PARAMETER ? n - 1 : last[i] > i ? last[i] : i;

        delta[from] += size[i];
        delta[to + 1] -= size[i];
    }
    for (i = 0; i < n && status == TPU_OK; i++) {
        double inner = 0;
        int which = -1;

        live += delta[i];
        status = inner_peak(h, &c->instrs[i], &inner, &which);
        if (live + inner > peak) {
            peak = live + inner;
            at = i;
            which_at = which;
        }
    }
    if (status != TPU_OK) {
        goto out;
    }
    if (list != NULL && at >= 0) {
        for (i = 0; i < n; i++) {
            const tpu_hlo_instr_t *in = &c->instrs[i];
            int from = entry && in->op == TPU_HLO_OP_PARAMETER ? 0 : i;
            int to = entry && in->op == TPU_HLO_OP_PARAMETER ? n - 1 : last[i] > i ? last[i] : i;

            if (size[i] > 0 && from <= at && at <= to) {
                list_add(list, nlist, cap, in, size[i]);
            }
        }
        if (entry) {
            w->rep->hbm_peak_at = c->instrs[at].name;
        }
        if (which_at >= 0) {
            double p;

            status = comp_peak(h, which_at, list, nlist, cap, &p);
        }
    }
    peak = peak > 0 ? peak : 0;
    if (!entry) {
        h->memo[ci] = peak;
    }
    *peak_p = peak;
out:
    h->depth--;
    tpu__free(last);
    tpu__free(size);
    tpu__free(delta);
    return status;
}

tpu_status_t tpu__replay_hbm(walker_t *w, int entry)
{
    tpu_replay_report_t *r = w->rep;
    hbm_t h;
    int c;
    tpu_status_t status;
    char b1[32], b2[32];

    memset(&h, 0, sizeof(h));
    h.w = w;
    h.memo = tpu__malloc((size_t)w->mod->ncomps * sizeof(double));
    if (h.memo == NULL) {
        return tpu__replay_oom(w);
    }
    for (c = 0; c < w->mod->ncomps; c++) {
        h.memo[c] = -1;
    }
    status = comp_peak(&h, entry, r->buffers, &r->nbuffers, TPU_REPLAY_HBM_TOP, &r->hbm_peak_bytes);
    tpu__free(h.memo);
    if (status != TPU_OK) {
        return status;
    }
    r->hbm_capacity_bytes = w->chip->hbm_bytes;
    r->hbm_over = r->hbm_peak_bytes > r->hbm_capacity_bytes;
    if (r->hbm_over) {
        snprintf(b1, sizeof(b1), "%.2f GiB", r->hbm_peak_bytes / (1024.0 * 1024 * 1024));
        snprintf(b2, sizeof(b2), "%.2f GiB", r->hbm_capacity_bytes / (1024.0 * 1024 * 1024));
        return tpu__replay_warn(w,
                                "RESOURCE_EXHAUSTED: the module needs %s of HBM per chip at '%s' "
                                "and a %s chip has %s (costed all the same)",
                                b1, r->hbm_peak_at ? r->hbm_peak_at : "?", w->chip->name, b2);
    }
    return TPU_OK;
}
