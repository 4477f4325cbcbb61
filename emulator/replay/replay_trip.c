/*
 * The replay's control flow helpers: the start instruction a -done or -update
 * refers to, and the trip count of a while loop (--trip-count NAME=K, else
 * backend_config known_trip_count, else XLA's while-loop analysis of the
 * induction variable, else 1 with a warning naming the reason), each loop
 * recorded in the report with how its count was found.
 */
#include "replay_trip.h"

#include "alloc.h"
#include "hlo_cost.h"
#include "replay_state.h"

#include <stdio.h>
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

#define MAX_PATH 8

/* Skip the value-preserving ops XLA's analysis looks through. */
static const tpu_hlo_instr_t *skip_moves(const tpu_hlo_comp_t *c, const tpu_hlo_instr_t *in,
                                         int broadcast)
{
    int guard;

    for (guard = 0; in != NULL && guard < 16; guard++) {
        if (in->op != TPU_HLO_OP_COPY && in->op != TPU_HLO_OP_CONVERT &&
            in->op != TPU_HLO_OP_BITCAST && in->op != TPU_HLO_OP_RESHAPE &&
            !(broadcast && in->op == TPU_HLO_OP_BROADCAST)) {
            return in;
        }
        in = tpu__replay_operand(c, in, 0);
    }
    return NULL;
}

/* A constant feeding 'in' (through copy / convert / bitcast / reshape / broadcast). */
static int const_value(const tpu_hlo_comp_t *c, const tpu_hlo_instr_t *in, int64_t *v)
{
    in = skip_moves(c, in, 1);
    if (in != NULL && in->has_int_value) {
        *v = in->int_value;
        return 1;
    }
    return 0;
}

/* Is 'in' the loop state's element at a tuple path (nested get-tuple-elements of
 * the parameter)?  The path, outermost first, in path[0..*np). */
static int state_path(const tpu_hlo_comp_t *c, const tpu_hlo_instr_t *in, int64_t *path, int *np)
{
    int64_t rev[MAX_PATH];
    int n = 0, k;

    in = skip_moves(c, in, 0);
    while (in != NULL && in->op == TPU_HLO_OP_GET_TUPLE_ELEMENT && in->index >= 0 && n < MAX_PATH) {
        rev[n++] = in->index;
        in = skip_moves(c, tpu__replay_operand(c, in, 0), 0);
    }
    if (in == NULL || in->op != TPU_HLO_OP_PARAMETER || n == 0) {
        return 0;
    }
    for (k = 0; k < n; k++) {
        path[k] = rev[n - 1 - k];
    }
    *np = n;
    return 1;
}

static int same_path(const int64_t *a, int na, const int64_t *b, int nb)
{
    return na == nb && memcmp(a, b, (size_t)na * sizeof(int64_t)) == 0;
}

/* The element at 'path' of the tuple 'in' builds (through nested tuples); NULL. */
static const tpu_hlo_instr_t *tuple_at(const tpu_hlo_comp_t *c, const tpu_hlo_instr_t *in,
                                       const int64_t *path, int np)
{
    int k;

    for (k = 0; k < np; k++) {
        in = skip_moves(c, in, 0);
        if (in == NULL || in->op != TPU_HLO_OP_TUPLE || path[k] >= in->noperands) {
            return NULL;
        }
        in = tpu__replay_operand(c, in, (int)path[k]);
    }
    return in;
}

/* Is 'in' the state element at 'path' plus a constant, through chains of adds and
 * subtracts of constants?  The sum of the constants in *step. */
static int affine(const tpu_hlo_comp_t *c, const tpu_hlo_instr_t *in, const int64_t *path, int np,
                  int64_t *step)
{
    int64_t acc = 0, v, p2[MAX_PATH];
    int guard, n2;

    for (guard = 0; in != NULL && guard < 64; guard++) {
        if (state_path(c, in, p2, &n2)) {
            *step = acc;
            return same_path(p2, n2, path, np);
        }
        in = skip_moves(c, in, 0);
        if (in == NULL || in->noperands != 2 ||
            (in->op != TPU_HLO_OP_ADD && in->op != TPU_HLO_OP_SUBTRACT)) {
            return 0;
        }
        if (const_value(c, tpu__replay_operand(c, in, 1), &v)) {
            acc += in->op == TPU_HLO_OP_ADD ? v : -v;
            in = tpu__replay_operand(c, in, 0);
        } else if (in->op == TPU_HLO_OP_ADD && const_value(c, tpu__replay_operand(c, in, 0), &v)) {
            acc += v;
            in = tpu__replay_operand(c, in, 1);
        } else {
            return 0;
        }
    }
    return 0;
}

static void path_text(const int64_t *path, int np, char *buf, size_t size)
{
    size_t n;
    int k;

    snprintf(buf, size, "{");
    for (k = 0; k < np; k++) {
        n = strlen(buf);
        snprintf(buf + n, size - n, "%s%lld", k ? "," : "", (long long)path[k]);
    }
    n = strlen(buf);
    snprintf(buf + n, size - n, "}");
}

/* Does 'i DIR limit' hold? */
static int holds(const char *dir, int64_t i, int64_t limit)
{
    return strcmp(dir, "LT") == 0   ? i < limit
           : strcmp(dir, "LE") == 0 ? i <= limit
           : strcmp(dir, "GT") == 0 ? i > limit
           : strcmp(dir, "GE") == 0 ? i >= limit
           : strcmp(dir, "NE") == 0 ? i != limit
           : strcmp(dir, "EQ") == 0 ? i == limit
                                    : -1;
}

/* Iterations of 'for (i = start; i DIR limit; i += step)'; -1 when it never ends. */
static int64_t count_trips(const char *dir, int64_t start, int64_t step, int64_t limit)
{
    int64_t d = limit - start;

    if (holds(dir, start, limit) <= 0) {
        return holds(dir, start, limit) == 0 ? 0 : -1;
    }
    if (step == 0) {
        return -1;
    }
    if (strcmp(dir, "LT") == 0 && step > 0) {
        return (d + step - 1) / step;
    }
    if (strcmp(dir, "LE") == 0 && step > 0) {
        return d / step + 1;
    }
    if (strcmp(dir, "GT") == 0 && step < 0) {
        return (-d + (-step) - 1) / (-step);
    }
    if (strcmp(dir, "GE") == 0 && step < 0) {
        return -d / (-step) + 1;
    }
    if (strcmp(dir, "NE") == 0 && d % step == 0 && d / step > 0) {
        return d / step;
    }
    if (strcmp(dir, "EQ") == 0) {
        return 1;
    }
    return -1;
}

/*
 * XLA's while-loop analysis: the condition compares an element of the loop
 * state (nested tuples allowed) with a constant (or with an element the body
 * passes through unchanged from a constant initial value), LT/LE/GT/GE/NE/EQ
 * either way round; the initial value of that element is a constant of the
 * while's operand; the body's ROOT gives it back plus a constant through a chain
 * of adds and subtracts of constants.  Constants through copy, convert,
 * bitcast, reshape and broadcast.  -1 with the reason in 'why' otherwise.
 */
static int64_t infer_trip(const walker_t *w, const tpu_hlo_comp_t *caller,
                          const tpu_hlo_instr_t *loop, char *why, size_t whysize, char *how,
                          size_t howsize)
{
    const tpu_hlo_module_t *m = w->mod;
    const tpu_hlo_comp_t *cond, *body;
    const tpu_hlo_instr_t *cmp, *side[2], *init, *broot, *upd, *lim_init;
    int64_t path[MAX_PATH], lpath[MAX_PATH], limit = 0, start, step, n;
    int np = 0, nl = 0, s, k;
    const char *dir;
    char ps[64];

    cond = &m->comps[loop->condition_c];
    body = &m->comps[loop->body_c];
    cmp = skip_moves(cond, &cond->instrs[cond->root], 0);
    if (cmp == NULL || cmp->op != TPU_HLO_OP_COMPARE || cmp->direction == NULL ||
        cmp->noperands != 2) {
        snprintf(why, whysize, "the condition's ROOT is %s, not a compare",
                 cmp != NULL ? cmp->opcode : "not an instruction");
        return -1;
    }
    side[0] = tpu__replay_operand(cond, cmp, 0);
    side[1] = tpu__replay_operand(cond, cmp, 1);
    init = tpu__replay_operand(caller, loop, 0);
    broot = &body->instrs[body->root];
    for (s = 0; s < 2; s++) {
        if (!state_path(cond, side[s], path, &np)) {
            continue;
        }
        if (const_value(cond, side[1 - s], &limit)) {
            break;
        }
        /* A bound carried in the state unchanged from a constant. */
        if (state_path(cond, side[1 - s], lpath, &nl) &&
            affine(body, tuple_at(body, broot, lpath, nl), lpath, nl, &step) && step == 0 &&
            (lim_init = tuple_at(caller, init, lpath, nl)) != NULL &&
            const_value(caller, lim_init, &limit)) {
            break;
        }
    }
    if (s == 2) {
        snprintf(why, whysize, "the compare '%s' is not of a loop-state element with a constant",
                 cmp->name);
        return -1;
    }
    path_text(path, np, ps, sizeof(ps));
    if (!const_value(caller, tuple_at(caller, init, path, np), &start)) {
        snprintf(why, whysize, "the initial value of loop-state element %s is not a constant", ps);
        return -1;
    }
    upd = tuple_at(body, broot, path, np);
    if (upd == NULL || !affine(body, upd, path, np, &step)) {
        snprintf(why, whysize, "the body does not update loop-state element %s by adding constants",
                 ps);
        return -1;
    }
    dir = cmp->direction;
    if (s == 1) {
        static const char *const flip[][2] = {
            {"LT", "GT"}, {"LE", "GE"}, {"GT", "LT"}, {"GE", "LE"}};

        for (k = 0; k < 4; k++) {
            if (strcmp(dir, flip[k][0]) == 0) {
                dir = flip[k][1];
                break;
            }
        }
    }
    n = count_trips(dir, start, step, limit);
    if (n < 0) {
        snprintf(why, whysize, "induction variable %s from %lld by %lld %s %lld never ends", ps,
                 (long long)start, (long long)step, dir, (long long)limit);
        return -1;
    }
    snprintf(how, howsize, "induction variable %s from %lld by %lld while %s %lld", ps,
             (long long)start, (long long)step, dir, (long long)limit);
    return n;
}

/* Record loop 'loop' (once) in the report's loops. */
static tpu_status_t record_loop(walker_t *w, const tpu_hlo_instr_t *loop, int64_t n, int known,
                                const char *how)
{
    tpu_replay_report_t *r = w->rep;
    tpu_replay_loop_t *l;
    int k;

    if (!w->record) {
        return TPU_OK;
    }
    for (k = 0; k < r->nloops; k++) {
        if (r->loops[k].name == loop->name) {
            return TPU_OK;
        }
    }
    if (r->nloops == w->loopcap) {
        int ncap = w->loopcap ? w->loopcap * 2 : 8;
        void *nl = tpu__realloc(r->loops, (size_t)ncap * sizeof(*r->loops));

        if (nl == NULL) {
            return tpu__replay_oom(w);
        }
        r->loops = nl;
        w->loopcap = ncap;
    }
    l = &r->loops[r->nloops++];
    l->name = loop->name;
    l->line = loop->line;
    l->trips = n;
    l->known = known;
    snprintf(l->how, sizeof(l->how), "%s", how);
    return TPU_OK;
}

tpu_status_t tpu__replay_trip_count(walker_t *w, const tpu_hlo_comp_t *caller,
                                    const tpu_hlo_instr_t *loop, int64_t *n_p)
{
    int k;
    int64_t n;
    char why[160], how[160];
    tpu_status_t status;

    for (k = 0; w->opts != NULL && k < w->opts->ntrips; k++) {
        if (strcmp(w->opts->trip_names[k], loop->name) == 0) {
            *n_p = w->opts->trip_counts[k];
            return record_loop(w, loop, *n_p, 1, "--trip-count");
        }
    }
    if (loop->known_trip_count >= 0) {
        *n_p = loop->known_trip_count;
        return record_loop(w, loop, *n_p, 1, "known_trip_count");
    }
    n = infer_trip(w, caller, loop, why, sizeof(why), how, sizeof(how));
    if (n >= 0) {
        *n_p = n;
        return record_loop(w, loop, n, 1, how);
    }
    *n_p = 1;
    status = record_loop(w, loop, 1, 0, why);
    if (status != TPU_OK) {
        return status;
    }
    return tpu__replay_warn(w,
                            "%s:%d: while '%s': trip count unknown (%s); counted once (set it "
                            "with --trip-count %s=K)",
                            w->mod->file, loop->line, loop->name, why, loop->name);
}
