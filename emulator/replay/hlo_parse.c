/*
 * The HLO text parser (see include/tpu/hlo.h for what it reads): the file and
 * module level (HloModule headers, stack-frame blocks, "// -----" separators),
 * computations, and the names that tie them together (operands to
 * instructions, called computations to computations, by hash tables).
 *
 * A recursive-descent reader over a cursor (hlo_lex.h) that never moves past
 * the end of the buffer.  The files of the parser, top down:
 *
 *   hlo_parse.c   file, modules, computations, name resolution
 *   hlo_instr.c   one instruction: opcode, operands, attributes
 *   hlo_groups.c  replica groups and source-target pairs
 *   hlo_shape.c   shapes and element types
 *   hlo_lex.c     cursor, arena, tokens, skipping
 *
 * Cost: linear in the text, plus a hash table per computation to resolve
 * operand names and one per module for computation names.
 *
 *   text --> [skip ws / comments] --> header | stack frames | computation ...
 *                                       computation { instr ; instr ; ... }
 *                                       instr: [ROOT] name = [shape] opcode(operands), attr=value
 * ...
 *
 * Restrictions: inline computations given as attribute values (calls={...})
 * are skipped (counted); constants keep only a scalar integer value.
 */
#include "tpu/hlo.h"

#include "alloc.h"
#include "hlo_instr.h"
#include "hlo_lex.h"
#include "hlo_shape.h"

#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------- names */

static uint32_t hash_name(const char *s)
{
    uint32_t h = 2166136261u;

    for (; *s; s++) {
        h = (h ^ (unsigned char)*s) * 16777619u;
    }
    return h;
}

/* A table of 'n' names -> indices (open addressing); slots hold index + 1. */
typedef struct name_table {
    int32_t *slot;
    uint32_t mask;
} name_table_t;

static tpu_status_t table_build(parser_t *p, name_table_t *t, int n,
                                const char *(*name_at)(void *, int), void *arg)
{
    uint32_t size = 16;
    int i;

    while (size < (uint32_t)n * 2u + 1u) {
        size *= 2;
    }
    t->mask = size - 1;
    t->slot = tpu__hlo_arena_alloc(p->arena, size * sizeof(int32_t));
    if (t->slot == NULL) {
        return tpu__hlo_oom(p);
    }
    memset(t->slot, 0, size * sizeof(int32_t));
    for (i = 0; i < n; i++) {
        uint32_t h = hash_name(name_at(arg, i)) & t->mask;

        while (t->slot[h] != 0) {
            h = (h + 1) & t->mask;
        }
        t->slot[h] = i + 1;
    }
    return TPU_OK;
}

/* Find 'name': the last entry with that name (-1 when absent). */
static int table_find(const name_table_t *t, const char *name, const char *(*name_at)(void *, int),
                      void *arg)
{
    uint32_t h = hash_name(name) & t->mask;
    int best = -1;

    while (t->slot[h] != 0) {
        int i = t->slot[h] - 1;

        if (strcmp(name_at(arg, i), name) == 0 && i > best) {
            best = i;
        }
        h = (h + 1) & t->mask;
    }
    return best;
}

static const char *instr_name_at(void *arg, int i)
{
    return ((tpu_hlo_comp_t *)arg)->instrs[i].name;
}

static const char *comp_name_at(void *arg, int i)
{
    return ((tpu_hlo_module_t *)arg)->comps[i].name;
}

static tpu_status_t resolve_operands(parser_t *p, tpu_hlo_comp_t *c)
{
    name_table_t t;
    tpu_status_t status = table_build(p, &t, c->ninstrs, instr_name_at, c);
    int i, k;

    if (status != TPU_OK) {
        return status;
    }
    for (i = 0; i < c->ninstrs; i++) {
        tpu_hlo_instr_t *in = &c->instrs[i];

        for (k = 0; k < in->noperands; k++) {
            if (in->operand_names[k] != NULL) {
                in->operands[k] = table_find(&t, in->operand_names[k], instr_name_at, c);
            }
        }
    }
    return TPU_OK;
}

static tpu_status_t parse_computation(parser_t *p, tpu_hlo_comp_t *c)
{
    tpu_status_t status;
    int cap = 0, i;

    memset(c, 0, sizeof(*c));
    c->root = -1;
    c->line = p->line;
    status = tpu__hlo_take_word(p, "ENTRY", &c->is_entry);
    if (status == TPU_OK) {
        status = tpu__hlo_read_ident(p, "a computation name", &c->name);
    }
    if (status == TPU_OK) {
        status = tpu__hlo_skip_ws(p);
    }
    if (status != TPU_OK) {
        return status;
    }
    if (tpu__hlo_cur(p) == '(') {
        tpu_hlo_shape_t sh;

        status = tpu__hlo_skip_group(p);
        if (status == TPU_OK) {
            status = tpu__hlo_skip_ws(p);
        }
        if (status != TPU_OK) {
            return status;
        }
        if (!(tpu__hlo_cur(p) == '-' && tpu__hlo_at(p, 1) == '>')) {
            return tpu__hlo_fail(p, "expected '->' after the parameters of computation '%s'",
                                 c->name);
        }
        tpu__hlo_adv(p);
        tpu__hlo_adv(p);
        status = tpu__hlo_parse_shape(p, &sh, 1);
        if (status != TPU_OK) {
            return status;
        }
    }
    status = tpu__hlo_expect(p, '{', "opening a computation");
    while (status == TPU_OK) {
        status = tpu__hlo_skip_ws(p);
        if (status != TPU_OK) {
            return status;
        }
        if (tpu__hlo_cur(p) == '}') {
            tpu__hlo_adv(p);
            break;
        }
        if (tpu__hlo_at_end(p)) {
            return tpu__hlo_fail(p, "the file ends inside computation '%s' (missing '}')", c->name);
        }
        status = tpu__hlo_grow(p, (void **)&c->instrs, c->ninstrs, &cap, sizeof(tpu_hlo_instr_t));
        if (status == TPU_OK) {
            status = tpu__hlo_parse_instruction(p, &c->instrs[c->ninstrs]);
        }
        if (status == TPU_OK) {
            if (c->instrs[c->ninstrs].root && c->root < 0) {
                c->root = c->ninstrs;
            }
            c->ninstrs++;
        }
    }
    if (status != TPU_OK) {
        return status;
    }
    if (c->ninstrs == 0) {
        return tpu_err_set(p->err, TPU_ERR_INVALID, "%s:%d:1: computation '%s' is empty", p->file,
                           c->line, c->name);
    }
    if (c->root < 0) {
        c->root = c->ninstrs - 1;
    }
    for (i = 0; i < c->ninstrs; i++) {
        if (c->instrs[i].root && i != c->root) {
            return tpu_err_set(p->err, TPU_ERR_INVALID,
                               "%s:%d:%d: computation '%s' has two ROOT instructions", p->file,
                               c->instrs[i].line, c->instrs[i].col, c->name);
        }
    }
    status = tpu__hlo_skip_ws(p);
    if (status == TPU_OK && tpu__hlo_cur(p) == ',') {
        const char *key;

        tpu__hlo_adv(p);
        status = tpu__hlo_read_key(p, "an attribute of the computation",
                                   "after a computation attribute", &key);
        if (status == TPU_OK) {
            status = tpu__hlo_skip_value(p);
        }
    }
    if (status == TPU_OK) {
        status = resolve_operands(p, c);
    }
    return status;
}

/* ---------------------------------------------------------------- module */

/*
 * input_output_alias={ {0}: (0, {}, may-alias), {1}: (2, {1}, must-alias) }:
 * the pairs (first output index, -1 for {}; parameter number) of [s, s + n).
 */
static tpu_status_t read_io_alias(parser_t *p, tpu_hlo_module_t *m, const char *s, size_t n)
{
    int cap = 0;
    size_t i, j;

    if (m->nio_alias > 0) {
        return tpu__hlo_fail(p, "input_output_alias is given twice in the module's header");
    }
    for (i = 0; i < n; i++) {
        int64_t out = -1, param = 0;
        tpu_status_t status;

        if (s[i] != ':') {
            continue;
        }
        /* Each ':' follows an output index "{0}" or "{}", and precedes "(PARAM, ...". */
        for (j = i; j > 0 && s[j - 1] != '{'; j--) {
        }
        if (j < i && tpu__hlo_is_digit((unsigned char)s[j])) {
            for (out = 0; j < i && tpu__hlo_is_digit((unsigned char)s[j]) && out < 1 << 30; j++) {
                out = out * 10 + (s[j] - '0');
            }
        }
        for (j = i; j < n && !tpu__hlo_is_digit((unsigned char)s[j]); j++) {
        }
        for (; j < n && tpu__hlo_is_digit((unsigned char)s[j]) && param < 1 << 30; j++) {
            param = param * 10 + (s[j] - '0');
        }
        status = tpu__hlo_grow(p, (void **)&m->io_alias, m->nio_alias, &cap, 2 * sizeof(int64_t));
        if (status != TPU_OK) {
            return status;
        }
        m->io_alias[2 * m->nio_alias] = out;
        m->io_alias[2 * m->nio_alias + 1] = param;
        m->nio_alias++;
    }
    return TPU_OK;
}

static tpu_status_t parse_header(parser_t *p, tpu_hlo_module_t *m)
{
    tpu_status_t status;

    m->line = p->line;
    m->has_header = 1;
    tpu__hlo_skip_word(p, "HloModule");
    status = tpu__hlo_skip_ws(p);
    if (status == TPU_OK) {
        status = tpu__hlo_read_ident(p, "the module name", &m->name);
    }
    while (tpu__hlo_next_item(p, &status)) {
        const char *key;

        status = tpu__hlo_read_key(p, "a module attribute", "after a module attribute", &key);
        if (status != TPU_OK) {
            return status;
        }
        if (strcmp(key, "replica_count") == 0 || strcmp(key, "num_partitions") == 0) {
            int64_t v = 0;

            status = tpu__hlo_read_int(p, key, &v);
            if (status == TPU_OK && (v < 1 || v > TPU_HLO_MAX_IDS)) {
                return tpu__hlo_fail(p, "%s %lld is out of range (1 to %d)", key, (long long)v,
                                     TPU_HLO_MAX_IDS);
            }
            *(key[0] == 'r' ? &m->replica_count : &m->num_partitions) = v;
        } else if (strcmp(key, "is_scheduled") == 0) {
            status = tpu__hlo_read_bool(p, key, &m->is_scheduled);
        } else if (strcmp(key, "input_output_alias") == 0) {
            size_t start = p->pos;

            status = tpu__hlo_skip_value(p);
            if (status == TPU_OK) {
                status = read_io_alias(p, m, p->s + start, p->pos - start);
            }
        } else {
            status = tpu__hlo_skip_value(p);
        }
    }
    return status;
}

/* FileNames 1 "a.py" ... / FileLocations 1 {...} ... */
static tpu_status_t parse_stack_block(parser_t *p, tpu_hlo_module_t *m, const char *word)
{
    tpu_status_t status;
    int64_t id;

    tpu__hlo_skip_word(p, word);
    for (;;) {
        status = tpu__hlo_skip_ws(p);
        if (status != TPU_OK) {
            return status;
        }
        if (!tpu__hlo_is_digit(tpu__hlo_cur(p))) {
            return TPU_OK;
        }
        status = tpu__hlo_read_int(p, "a stack frame entry id", &id);
        if (status == TPU_OK) {
            status = tpu__hlo_skip_ws(p);
        }
        if (status != TPU_OK) {
            return status;
        }
        if (tpu__hlo_cur(p) == '"') {
            status = tpu__hlo_skip_string(p);
        } else if (tpu__hlo_cur(p) == '{') {
            status = tpu__hlo_skip_group(p);
        } else {
            return tpu__hlo_fail(p, "expected a string or {...} after %s entry %lld", word,
                                 (long long)id);
        }
        if (status != TPU_OK) {
            return status;
        }
        m->stack_frame_entries++;
    }
}

static tpu_status_t finish_module(parser_t *p, tpu_hlo_module_t *m)
{
    name_table_t t;
    tpu_status_t status;
    int c, i, k, nentry = 0;

    if (m->ncomps == 0) {
        return tpu_err_set(p->err, TPU_ERR_INVALID, "%s:%d:1: module '%s' has no computation",
                           p->file, m->line, m->name);
    }
    m->entry = m->ncomps - 1;
    for (c = 0; c < m->ncomps; c++) {
        if (m->comps[c].is_entry) {
            m->entry = c;
            if (++nentry > 1) {
                return tpu_err_set(p->err, TPU_ERR_INVALID,
                                   "%s:%d:1: module '%s' has a second ENTRY computation", p->file,
                                   m->comps[c].line, m->name);
            }
        }
    }
    status = table_build(p, &t, m->ncomps, comp_name_at, m);
    if (status != TPU_OK) {
        return status;
    }
    for (c = 0; c < m->ncomps; c++) {
        for (i = 0; i < m->comps[c].ninstrs; i++) {
            tpu_hlo_instr_t *in = &m->comps[c].instrs[i];
            const char *const names[] = {in->to_apply, in->calls,     in->condition,
                                         in->body,     in->true_comp, in->false_comp};
            int *const outs[] = {&in->to_apply_c, &in->calls_c, &in->condition_c,
                                 &in->body_c,     &in->true_c,  &in->false_c};

            for (k = 0; k < 6; k++) {
                if (names[k] != NULL) {
                    *outs[k] = table_find(&t, names[k], comp_name_at, m);
                    if (*outs[k] < 0) {
                        return tpu_err_set(p->err, TPU_ERR_INVALID,
                                           "%s:%d:%d: instruction '%s' calls computation '%s', "
                                           "which the module does not define",
                                           p->file, in->line, in->col, in->name, names[k]);
                    }
                }
            }
            if (in->nbranches > 0) {
                in->branches =
                    tpu__hlo_arena_alloc(p->arena, (size_t)in->nbranches * sizeof(int32_t));
                if (in->branches == NULL) {
                    return tpu__hlo_oom(p);
                }
                for (k = 0; k < in->nbranches; k++) {
                    in->branches[k] = table_find(&t, in->branch_names[k], comp_name_at, m);
                    if (in->branches[k] < 0) {
                        return tpu_err_set(p->err, TPU_ERR_INVALID,
                                           "%s:%d:%d: conditional '%s' names branch '%s', which "
                                           "the module does not define",
                                           p->file, in->line, in->col, in->name,
                                           in->branch_names[k]);
                    }
                }
            }
        }
    }
    return TPU_OK;
}

static tpu_status_t new_module(parser_t *p, tpu_hlo_file_t *f, int *cap)
{
    tpu_status_t status =
        tpu__hlo_grow(p, (void **)&f->modules, f->nmodules, cap, sizeof(tpu_hlo_module_t));

    if (status != TPU_OK) {
        return status;
    }
    p->mod = &f->modules[f->nmodules++];
    memset(p->mod, 0, sizeof(*p->mod));
    p->mod->file = p->file;
    p->mod->name = "";
    p->mod->max_device_id = -1;
    p->mod->line = p->line;
    return TPU_OK;
}

tpu_status_t tpu_hlo_parse(const char *text, size_t len, const char *filename,
                           tpu_hlo_file_t **file_p, tpu_err_t *err)
{
    parser_t p;
    arena_t *arena;
    tpu_hlo_file_t *f;
    tpu_status_t status;
    int mcap = 0, ccap = 0;

    if (text == NULL && len > 0) {
        return tpu_err_set(err, TPU_ERR_INVALID, "no HLO text");
    }
    arena = tpu__calloc(1, sizeof(*arena));
    if (arena == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory parsing HLO");
    }
    memset(&p, 0, sizeof(p));
    p.s = text;
    p.len = len;
    p.line = 1;
    p.file = filename != NULL ? filename : "<hlo>";
    p.arena = arena;
    p.err = err;
    f = tpu__hlo_arena_alloc(arena, sizeof(*f));
    if (f == NULL) {
        status = tpu__hlo_oom(&p);
        goto out_free;
    }
    memset(f, 0, sizeof(*f));
    f->arena = arena;
    p.file = tpu__hlo_dup_range(&p, p.file, strlen(p.file));
    if (p.file == NULL) {
        p.file = "<hlo>";
        status = tpu__hlo_oom(&p);
        goto out_free;
    }
    status = new_module(&p, f, &mcap);
    while (status == TPU_OK) {
        tpu_hlo_module_t *m = p.mod;
        int started = m->has_header || m->ncomps > 0;

        status = tpu__hlo_skip_ws(&p);
        if (status != TPU_OK) {
            break;
        }
        if (tpu__hlo_at_end(&p)) {
            break;
        }
        if ((p.separator && started) || (tpu__hlo_word_is(&p, "HloModule") && started)) {
            status = finish_module(&p, m);
            if (status == TPU_OK) {
                status = new_module(&p, f, &mcap);
            }
            ccap = 0;
            p.separator = 0;
            continue;
        }
        p.separator = 0;
        if (tpu__hlo_word_is(&p, "HloModule")) {
            status = parse_header(&p, m);
        } else if (tpu__hlo_word_is(&p, "FileNames") || tpu__hlo_word_is(&p, "FunctionNames") ||
                   tpu__hlo_word_is(&p, "FileLocations") || tpu__hlo_word_is(&p, "StackFrames")) {
            size_t skip, n = tpu__hlo_ident_len(&p, &skip);
            char word[16];

            snprintf(word, sizeof(word), "%.*s", (int)n, p.s + p.pos);
            status = parse_stack_block(&p, m, word);
        } else {
            if (!started) {
                m->line = p.line;
            }
            status =
                tpu__hlo_grow(&p, (void **)&m->comps, m->ncomps, &ccap, sizeof(tpu_hlo_comp_t));
            if (status == TPU_OK) {
                status = parse_computation(&p, &m->comps[m->ncomps]);
            }
            if (status == TPU_OK) {
                m->ncomps++;
            }
        }
    }
    if (status == TPU_OK) {
        tpu_hlo_module_t *m = p.mod;

        if (m->has_header || m->ncomps > 0) {
            status = finish_module(&p, m);
        } else if (f->nmodules > 1) {
            f->nmodules--; /* a trailing separator */
        } else {
            status = tpu_err_set(err, TPU_ERR_INVALID, "%s:%d:%d: no HLO module in the file",
                                 p.file, p.line, tpu__hlo_col_of(&p));
        }
    }
    if (status != TPU_OK) {
        goto out_free;
    }
    *file_p = f;
    return TPU_OK;
out_free:
    tpu__hlo_arena_free(arena);
    tpu__free(arena);
    return status;
}

void tpu_hlo_file_destroy(tpu_hlo_file_t *file)
{
    arena_t *arena;

    if (file == NULL) {
        return;
    }
    arena = file->arena;
    tpu__hlo_arena_free(arena);
    tpu__free(arena);
}

int tpu_hlo_module_find_comp(const tpu_hlo_module_t *mod, const char *name)
{
    int c;

    for (c = mod->ncomps - 1; c >= 0; c--) {
        if (strcmp(mod->comps[c].name, name) == 0) {
            return c;
        }
    }
    return -1;
}
