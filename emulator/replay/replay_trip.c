/*
 * The replay's control flow helpers: the start instruction a -done or -update
 * refers to, and the trip count of a while loop (--trip-count NAME=K, else
 * backend_config known_trip_count, else the counted-loop pattern, else 1 with a
 * warning).
 */
#include "replay_trip.h"

#include "hlo_cost.h"
#include "replay_state.h"

#include <string.h>

/* ---------------------------------------------------------------- control flow */

/* The start instruction a -done / -update refers to (through updates). */
int tpu__replay_start_of(const tpu_hlo_comp_t *c, int i)
{
    int guard;

    for (guard = 0; guard < 64; guard++) {
        const tpu_hlo_instr_t *in = &c->instrs[i];

        if (in->noperands < 1 || in->operands[0] < 0) {
            return -1;
        }
        i = in->operands[0];
        if (c->instrs[i].async == TPU_HLO_START ||
            (c->instrs[i].op == TPU_HLO_OP_ASYNC && c->instrs[i].async == TPU_HLO_START)) {
            return i;
        }
    }
    return -1;
}

/* A constant feeding 'in' (through copy / convert / bitcast). */
static int const_value(const tpu_hlo_comp_t *c, const tpu_hlo_instr_t *in, int64_t *v)
{
    int guard;

    for (guard = 0; in != NULL && guard < 8; guard++) {
        if (in->has_int_value) {
            *v = in->int_value;
            return 1;
        }
        if (in->op != TPU_HLO_OP_COPY && in->op != TPU_HLO_OP_CONVERT &&
            in->op != TPU_HLO_OP_BITCAST && in->op != TPU_HLO_OP_RESHAPE) {
            return 0;
        }
        in = tpu__replay_operand(c, in, 0);
    }
    return 0;
}

/* Is 'in' get-tuple-element(parameter, index=k)?  Sets *k_p. */
static int is_param_gte(const tpu_hlo_comp_t *c, const tpu_hlo_instr_t *in, int64_t *k_p)
{
    const tpu_hlo_instr_t *p;

    if (in == NULL || in->op != TPU_HLO_OP_GET_TUPLE_ELEMENT || in->index < 0) {
        return 0;
    }
    p = tpu__replay_operand(c, in, 0);
    if (p == NULL || p->op != TPU_HLO_OP_PARAMETER) {
        return 0;
    }
    *k_p = in->index;
    return 1;
}

/*
 * The counted-loop pattern: condition compare(gte(param, k), constant) (either
 * side), init tuple element k a constant, body root tuple element k
 * add(gte(param, k), constant).  -1 when the loop does not match.
 */
static int64_t infer_trip(const walker_t *w, const tpu_hlo_comp_t *caller,
                          const tpu_hlo_instr_t *loop)
{
    const tpu_hlo_module_t *m = w->mod;
    const tpu_hlo_comp_t *cond, *body;
    const tpu_hlo_instr_t *cmp, *a, *b, *init, *broot, *upd;
    int64_t k, k2, limit, start, step, n;
    const char *dir;
    int flip = 0;

    if (loop->condition_c < 0 || loop->body_c < 0) {
        return -1;
    }
    cond = &m->comps[loop->condition_c];
    body = &m->comps[loop->body_c];
    cmp = &cond->instrs[cond->root];
    if (cmp->op != TPU_HLO_OP_COMPARE || cmp->direction == NULL || cmp->noperands != 2) {
        return -1;
    }
    a = tpu__replay_operand(cond, cmp, 0);
    b = tpu__replay_operand(cond, cmp, 1);
    if (is_param_gte(cond, a, &k) && const_value(cond, b, &limit)) {
    } else if (is_param_gte(cond, b, &k) && const_value(cond, a, &limit)) {
        flip = 1;
    } else {
        return -1;
    }
    init = tpu__replay_operand(caller, loop, 0);
    if (init == NULL || init->op != TPU_HLO_OP_TUPLE || k >= init->noperands ||
        !const_value(caller, tpu__replay_operand(caller, init, (int)k), &start)) {
        return -1;
    }
    broot = &body->instrs[body->root];
    if (broot->op != TPU_HLO_OP_TUPLE || k >= broot->noperands) {
        return -1;
    }
    upd = tpu__replay_operand(body, broot, (int)k);
    if (upd == NULL || upd->op != TPU_HLO_OP_ADD || upd->noperands != 2) {
        return -1;
    }
    if (is_param_gte(body, tpu__replay_operand(body, upd, 0), &k2) && k2 == k &&
        const_value(body, tpu__replay_operand(body, upd, 1), &step)) {
    } else if (is_param_gte(body, tpu__replay_operand(body, upd, 1), &k2) && k2 == k &&
               const_value(body, tpu__replay_operand(body, upd, 0), &step)) {
    } else {
        return -1;
    }
    dir = cmp->direction;
    if (flip) {
        dir = strcmp(dir, "LT") == 0   ? "GT"
              : strcmp(dir, "LE") == 0 ? "GE"
              : strcmp(dir, "GT") == 0 ? "LT"
              : strcmp(dir, "GE") == 0 ? "LE"
                                       : dir;
    }
    if (step == 0) {
        return -1;
    }
    if (strcmp(dir, "LT") == 0 && step > 0) {
        n = limit > start ? (limit - start + step - 1) / step : 0;
    } else if (strcmp(dir, "LE") == 0 && step > 0) {
        n = limit >= start ? (limit - start) / step + 1 : 0;
    } else if (strcmp(dir, "GT") == 0 && step < 0) {
        n = start > limit ? (start - limit + (-step) - 1) / (-step) : 0;
    } else if (strcmp(dir, "GE") == 0 && step < 0) {
        n = start >= limit ? (start - limit) / (-step) + 1 : 0;
    } else if (strcmp(dir, "NE") == 0 && (limit - start) % step == 0 &&
               (limit - start) / step >= 0) {
        n = (limit - start) / step;
    } else {
        return -1;
    }
    return n;
}

tpu_status_t tpu__replay_trip_count(walker_t *w, const tpu_hlo_comp_t *caller,
                                    const tpu_hlo_instr_t *loop, int64_t *n_p)
{
    int k;
    int64_t n;

    for (k = 0; w->opts != NULL && k < w->opts->ntrips; k++) {
        if (strcmp(w->opts->trip_names[k], loop->name) == 0) {
            *n_p = w->opts->trip_counts[k];
            return TPU_OK;
        }
    }
    if (loop->known_trip_count >= 0) {
        *n_p = loop->known_trip_count;
        return TPU_OK;
    }
    n = infer_trip(w, caller, loop);
    if (n >= 0) {
        *n_p = n;
        return TPU_OK;
    }
    *n_p = 1;
    return tpu__replay_warn(
        w,
        "%s:%d: while '%s': trip count unknown (no known_trip_count, not a counted loop); "
        "counted once (set it with --trip-count %s=K)",
        w->mod->file, loop->line, loop->name, loop->name);
}

/*
 * Append to the timeline: one event (from < 0), or a copy of events [from, from +
 * n) shifted by 'shift' us (a loop's later iterations).
 */
