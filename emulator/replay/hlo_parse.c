/*
 * The HLO text parser (see include/tpu/hlo.h for what it reads).
 *
 * A recursive-descent reader over a cursor (position, line, start of line) that
 * never moves past the end of the buffer: every read goes through cur() and
 * adv(), which return 0 at the end.  Values the replay does not need are
 * skipped by bracket matching (strings and comments respected), so newer XLA
 * attributes and opcodes pass through.  Everything lives in one arena that
 * tpu_hlo_file_destroy() frees; arrays that grow are copied into a block twice
 * as large (at most twice the final memory).
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
#include "tpu/alloc.h"
#include "tpu/hlo.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define MAX_DEPTH     64
#define MAX_INT_VALUE ((int64_t)1 << 62)
#define ARENA_BLOCK   (64 * 1024)

/* ---------------------------------------------------------------- arena */

typedef struct arena_block {
    struct arena_block *next;
    size_t used, size;
    /* data follows, aligned */
} arena_block_t;

typedef struct arena {
    arena_block_t *head;
} arena_t;

#define BLOCK_HDR ((sizeof(arena_block_t) + 15) & ~(size_t)15)

static void *arena_alloc(arena_t *a, size_t size)
{
    arena_block_t *b = a->head;
    size_t need = (size + 15) & ~(size_t)15;

    if (need < size) {
        return NULL;
    }
    if (b == NULL || b->size - b->used < need) {
        size_t bsize = need > ARENA_BLOCK ? need : ARENA_BLOCK;

        if (bsize > ((size_t)1 << 40)) {
            return NULL;
        }
        b = tpu__malloc(BLOCK_HDR + bsize);
        if (b == NULL) {
            return NULL;
        }
        b->used = 0;
        b->size = bsize;
        b->next = a->head;
        a->head = b;
    }
    b->used += need;
    return (char *)b + BLOCK_HDR + b->used - need;
}

static void arena_free(arena_t *a)
{
    arena_block_t *b = a->head, *n;

    while (b != NULL) {
        n = b->next;
        tpu__free(b);
        b = n;
    }
    a->head = NULL;
}

/* ---------------------------------------------------------------- cursor */

typedef struct parser {
    const char *s;
    size_t len, pos;
    int line;
    size_t line_start;
    const char *file;
    arena_t *arena;
    tpu_err_t *err;
    int separator; /* a "// -----" line was passed */
    int depth;
    tpu_hlo_module_t *mod;
} parser_t;

static int cur(const parser_t *p)
{
    return p->pos < p->len ? (unsigned char)p->s[p->pos] : 0;
}

static int at(const parser_t *p, size_t off)
{
    return p->pos + off < p->len ? (unsigned char)p->s[p->pos + off] : 0;
}

static int at_end(const parser_t *p)
{
    return p->pos >= p->len;
}

static void adv(parser_t *p)
{
    if (p->pos < p->len) {
        if (p->s[p->pos] == '\n') {
            p->line++;
            p->line_start = p->pos + 1;
        }
        p->pos++;
    }
}

static int col_of(const parser_t *p)
{
    return (int)(p->pos - p->line_start) + 1;
}

static tpu_status_t fail(parser_t *p, const char *fmt, ...) TPU_PRINTF(2, 3);
static tpu_status_t fail(parser_t *p, const char *fmt, ...)
{
    char msg[TPU_ERR_MSG_LEN];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return tpu_err_set(p->err, TPU_ERR_INVALID, "%s:%d:%d: %s", p->file, p->line, col_of(p), msg);
}

static tpu_status_t oom(parser_t *p)
{
    return tpu_err_set(p->err, TPU_ERR_NO_MEMORY, "%s: out of memory parsing HLO", p->file);
}

/* What the cursor is at, for messages: "'abc'" or "the end of the file". */
static const char *what(const parser_t *p, char *buf, size_t size)
{
    size_t i = 0;

    if (at_end(p)) {
        return "the end of the file";
    }
    buf[i++] = '\'';
    while (i < size - 2 && i <= 16 && p->pos + i - 1 < p->len) {
        char c = p->s[p->pos + i - 1];

        if (c == '\n' || c == '\r') {
            break;
        }
        buf[i++] = (c >= 32 && c < 127) ? c : '?';
    }
    buf[i++] = '\'';
    buf[i] = '\0';
    return buf;
}

static int is_space(int c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static int is_digit(int c)
{
    return c >= '0' && c <= '9';
}

static int is_id_start(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_id_char(int c)
{
    return is_id_start(c) || is_digit(c) || c == '.' || c == '-';
}

/* Skip whitespace and comments; note "// -----" lines at the start of a line. */
static tpu_status_t skip_ws(parser_t *p)
{
    for (;;) {
        int c = cur(p);

        if (is_space(c)) {
            adv(p);
        } else if (c == '/' && at(p, 1) == '/') {
            if (p->pos == p->line_start && p->pos + 8 <= p->len &&
                memcmp(p->s + p->pos, "// -----", 8) == 0) {
                p->separator = 1;
            }
            while (!at_end(p) && cur(p) != '\n') {
                adv(p);
            }
        } else if (c == '/' && at(p, 1) == '*') {
            int line = p->line, col = col_of(p);

            adv(p);
            adv(p);
            while (!at_end(p) && !(cur(p) == '*' && at(p, 1) == '/')) {
                adv(p);
            }
            if (at_end(p)) {
                return tpu_err_set(p->err, TPU_ERR_INVALID, "%s:%d:%d: unterminated /* comment",
                                   p->file, line, col);
            }
            adv(p);
            adv(p);
        } else {
            return TPU_OK;
        }
    }
}

/* Length of the identifier at the cursor (after an optional '%'), 0 if none. */
static size_t ident_len(const parser_t *p, size_t *skip_p)
{
    size_t i = 0, n;

    if (cur(p) == '%') {
        i = 1;
    }
    *skip_p = i;
    if (!is_id_start(at(p, i))) {
        return 0;
    }
    n = i;
    while (p->pos + n < p->len && is_id_char((unsigned char)p->s[p->pos + n])) {
        n++;
    }
    return n - i;
}

static char *dup_range(parser_t *p, const char *s, size_t n)
{
    char *d = arena_alloc(p->arena, n + 1);

    if (d != NULL) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

/* Read an identifier (with or without '%') into the arena. */
static tpu_status_t read_ident(parser_t *p, const char *role, const char **out_p)
{
    size_t skip, n = ident_len(p, &skip), i;
    char buf[24];
    char *d;

    if (n == 0) {
        return fail(p, "expected %s, found %s", role, what(p, buf, sizeof(buf)));
    }
    d = dup_range(p, p->s + p->pos + skip, n);
    if (d == NULL) {
        return oom(p);
    }
    for (i = 0; i < skip + n; i++) {
        adv(p);
    }
    *out_p = d;
    return TPU_OK;
}

/* Is the word 'w' at the cursor, not followed by an identifier character? */
static int word_is(const parser_t *p, const char *w)
{
    size_t n = strlen(w);

    return p->pos + n <= p->len && memcmp(p->s + p->pos, w, n) == 0 && !is_id_char(at(p, n));
}

static void skip_word(parser_t *p, const char *w)
{
    size_t n = strlen(w), i;

    for (i = 0; i < n; i++) {
        adv(p);
    }
}

/*
 * After a list item (with *status_p still TPU_OK): skip blanks; at a ',' step over
 * it and return 1, else return 0 (with *status_p the error, if any).
 */
static int next_item(parser_t *p, tpu_status_t *status_p)
{
    if (*status_p == TPU_OK) {
        *status_p = skip_ws(p);
    }
    if (*status_p != TPU_OK || cur(p) != ',') {
        return 0;
    }
    adv(p);
    return 1;
}

/* An optional keyword 'w' at the cursor: step over it and the blanks after, set '*flag_p'. */
static tpu_status_t take_word(parser_t *p, const char *w, int *flag_p)
{
    if (!word_is(p, w)) {
        return TPU_OK;
    }
    skip_word(p, w);
    *flag_p = 1;
    return skip_ws(p);
}

static tpu_status_t expect(parser_t *p, int c, const char *context)
{
    char buf[24];
    tpu_status_t status = skip_ws(p);

    if (status != TPU_OK) {
        return status;
    }
    if (cur(p) != c || at_end(p)) {
        return fail(p, "expected '%c' %s, found %s", c, context, what(p, buf, sizeof(buf)));
    }
    adv(p);
    return TPU_OK;
}

/* A decimal integer with an optional sign, bounded. */
static tpu_status_t read_int(parser_t *p, const char *role, int64_t *v_p)
{
    int neg = 0;
    int64_t v = 0;
    char buf[24];
    tpu_status_t status = skip_ws(p);

    if (status != TPU_OK) {
        return status;
    }
    if (cur(p) == '-' || cur(p) == '+') {
        neg = cur(p) == '-';
        adv(p);
    }
    if (!is_digit(cur(p))) {
        return fail(p, "expected %s (an integer), found %s", role, what(p, buf, sizeof(buf)));
    }
    while (is_digit(cur(p))) {
        if (v > (MAX_INT_VALUE - (cur(p) - '0')) / 10) {
            return fail(p, "%s is too large", role);
        }
        v = v * 10 + (cur(p) - '0');
        adv(p);
    }
    *v_p = neg ? -v : v;
    return TPU_OK;
}

/* Skip a quoted string ('"' or '\''), escapes respected. */
static tpu_status_t skip_string(parser_t *p)
{
    int q = cur(p), line = p->line, col = col_of(p);

    adv(p);
    while (!at_end(p) && cur(p) != q) {
        if (cur(p) == '\\') {
            adv(p);
        }
        adv(p);
    }
    if (at_end(p)) {
        return tpu_err_set(p->err, TPU_ERR_INVALID, "%s:%d:%d: unterminated string", p->file, line,
                           col);
    }
    adv(p);
    return TPU_OK;
}

/* Read a "..." string (escapes kept as written) into the arena. */
static tpu_status_t read_string(parser_t *p, const char **out_p)
{
    size_t start;
    tpu_status_t status;
    char buf[24];

    if (cur(p) != '"') {
        return fail(p, "expected a string, found %s", what(p, buf, sizeof(buf)));
    }
    start = p->pos + 1;
    status = skip_string(p);
    if (status != TPU_OK) {
        return status;
    }
    *out_p = dup_range(p, p->s + start, p->pos - 1 - start);
    return *out_p != NULL ? TPU_OK : oom(p);
}

/*
 * Skip balanced brackets, strings and comments: with 'value', one attribute value,
 * up to a ',' or a newline or a '//' comment or an unmatched closer at depth 0;
 * else one bracketed group starting at the opener at the cursor.
 */
static tpu_status_t skip_balanced(parser_t *p, int value)
{
    int depth = 0, line = p->line, col = col_of(p);
    tpu_status_t status;

    while (!at_end(p)) {
        int c = cur(p);

        if (value && depth == 0 &&
            (c == ',' || c == '\n' || c == ')' || c == '}' || c == ']' ||
             (c == '/' && at(p, 1) == '/'))) {
            return TPU_OK;
        }
        if (c == '"' || c == '\'' || (c == '/' && (at(p, 1) == '*' || at(p, 1) == '/'))) {
            status = c == '/' ? skip_ws(p) : skip_string(p);
            if (status != TPU_OK) {
                return status;
            }
            continue;
        }
        if (c == '{' || c == '(' || c == '[') {
            if (++depth > MAX_DEPTH) {
                return fail(p, "brackets nested deeper than %d", MAX_DEPTH);
            }
        } else if (c == '}' || c == ')' || c == ']') {
            depth--;
        }
        adv(p);
        if (!value && depth == 0) {
            return TPU_OK;
        }
    }
    if (value && depth == 0) {
        return TPU_OK;
    }
    return tpu_err_set(p->err, TPU_ERR_INVALID,
                       "%s:%d:%d: unbalanced brackets: the file ends inside this %s", p->file, line,
                       col, value ? "value" : "group");
}

static tpu_status_t skip_value(parser_t *p)
{
    return skip_balanced(p, 1);
}

static tpu_status_t skip_group(parser_t *p)
{
    return skip_balanced(p, 0);
}

/* ---------------------------------------------------------------- growable arrays */

/* Make room for one more element of 'size' bytes in '*arr' ('*cap' elements). */
static tpu_status_t grow(parser_t *p, void **arr, int n, int *cap, size_t size)
{
    void *na;
    int ncap;

    if (n < *cap) {
        return TPU_OK;
    }
    if (n >= (1 << 28)) {
        return fail(p, "too many elements in one list");
    }
    ncap = *cap ? *cap * 2 : 8;
    na = arena_alloc(p->arena, (size_t)ncap * size);
    if (na == NULL) {
        return oom(p);
    }
    if (n > 0) {
        memcpy(na, *arr, (size_t)n * size);
    }
    *arr = na;
    *cap = ncap;
    return TPU_OK;
}

/* {a, b, c} -> ints (may be empty). */
static tpu_status_t read_int_list(parser_t *p, const char *role, tpu_hlo_ints_t *out)
{
    tpu_status_t status;
    int cap = 0;
    int64_t v;

    out->n = 0;
    out->v = NULL;
    status = expect(p, '{', role);
    if (status != TPU_OK) {
        return status;
    }
    status = skip_ws(p);
    if (status != TPU_OK) {
        return status;
    }
    if (cur(p) == '}') {
        adv(p);
        return TPU_OK;
    }
    for (;;) {
        status = read_int(p, role, &v);
        if (status == TPU_OK) {
            status = grow(p, (void **)&out->v, out->n, &cap, sizeof(int64_t));
        }
        if (status != TPU_OK) {
            return status;
        }
        out->v[out->n++] = v;
        status = skip_ws(p);
        if (status != TPU_OK) {
            return status;
        }
        if (cur(p) == ',') {
            adv(p);
            continue;
        }
        return expect(p, '}', role);
    }
}

/* ---------------------------------------------------------------- shapes */

static const struct {
    const char *name;
    int bits;
} types[TPU_HLO_TYPE_COUNT] = {{"tuple", 0},
#define X(name, str, bits) {str, bits},
                               TPU_HLO_TYPE_MAP(X)
#undef X
};

/*
 * The index (from 1) of s[0..n) among the names of a table of 'count' entries of
 * 'stride' bytes whose first member is the name; 0 when absent.
 */
static int name_lookup(const void *table, size_t stride, int count, const char *s, size_t n)
{
    int i;

    for (i = 1; i < count; i++) {
        const char *name = *(const char *const *)((const char *)table + (size_t)i * stride);

        if (strlen(name) == n && memcmp(name, s, n) == 0) {
            return i;
        }
    }
    return 0;
}

static tpu_hlo_type_t type_lookup(const char *s, size_t n)
{
    return (tpu_hlo_type_t)name_lookup(types, sizeof(types[0]), TPU_HLO_TYPE_COUNT, s, n);
}

/* Does a shape start at the cursor?  '(' (a tuple) or a word followed by '['. */
static int shape_here(const parser_t *p)
{
    size_t skip, n;

    if (cur(p) == '(') {
        return 1;
    }
    n = ident_len(p, &skip);
    return n > 0 && skip == 0 && at(p, n) == '[';
}

static tpu_status_t parse_shape(parser_t *p, tpu_hlo_shape_t *sh, int in_signature);

static tpu_status_t parse_tuple_shape(parser_t *p, tpu_hlo_shape_t *sh)
{
    tpu_status_t status;
    int cap = 0;

    adv(p); /* ( */
    if (++p->depth > MAX_DEPTH) {
        return fail(p, "shapes nested deeper than %d", MAX_DEPTH);
    }
    sh->type = TPU_HLO_TYPE_TUPLE;
    status = skip_ws(p);
    if (status != TPU_OK) {
        return status;
    }
    if (cur(p) != ')') {
        do {
            status = grow(p, (void **)&sh->tuple, sh->ntuple, &cap, sizeof(tpu_hlo_shape_t));
            if (status != TPU_OK) {
                return status;
            }
            memset(&sh->tuple[sh->ntuple], 0, sizeof(tpu_hlo_shape_t));
            status = parse_shape(p, &sh->tuple[sh->ntuple], 0);
            if (status != TPU_OK) {
                return status;
            }
            sh->ntuple++;
        } while (next_item(p, &status));
        if (status != TPU_OK) {
            return status;
        }
    }
    p->depth--;
    return expect(p, ')', "closing a tuple shape");
}

static tpu_status_t parse_shape(parser_t *p, tpu_hlo_shape_t *sh, int in_signature)
{
    tpu_status_t status;
    size_t skip, n, i;
    char buf[24];

    memset(sh, 0, sizeof(*sh));
    status = skip_ws(p);
    if (status != TPU_OK) {
        return status;
    }
    if (cur(p) == '(') {
        return parse_tuple_shape(p, sh);
    }
    n = ident_len(p, &skip);
    if (n == 0 || skip != 0) {
        return fail(p, "expected a shape, found %s", what(p, buf, sizeof(buf)));
    }
    sh->type = type_lookup(p->s + p->pos, n);
    if (sh->type == TPU_HLO_TYPE_TUPLE) {
        return fail(p, "unknown element type '%.*s'", (int)(n > 32 ? 32 : n), p->s + p->pos);
    }
    for (i = 0; i < n; i++) {
        adv(p);
    }
    if (cur(p) != '[') {
        return fail(p, "expected '[' after element type %s", types[sh->type].name);
    }
    adv(p);
    status = skip_ws(p);
    if (status != TPU_OK) {
        return status;
    }
    if (cur(p) != ']') {
        do {
            int64_t d = 1;

            status = skip_ws(p);
            if (status != TPU_OK) {
                return status;
            }
            if (cur(p) == '?') {
                adv(p);
            } else {
                if (cur(p) == '<' && at(p, 1) == '=') {
                    adv(p);
                    adv(p);
                }
                status = read_int(p, "a dimension", &d);
                if (status != TPU_OK) {
                    return status;
                }
                if (d < 0) {
                    return fail(p, "negative dimension %lld", (long long)d);
                }
            }
            if (sh->rank >= TPU_HLO_MAX_RANK) {
                return fail(p, "shape has more than %d dimensions", TPU_HLO_MAX_RANK);
            }
            sh->dims[sh->rank++] = d;
        } while (next_item(p, &status));
        if (status != TPU_OK) {
            return status;
        }
    }
    status = expect(p, ']', "closing the dimensions");
    if (status != TPU_OK) {
        return status;
    }
    /* A layout: '{' followed by a digit, ':' or '}' (not a computation body). */
    if (cur(p) == '{') {
        int c1 = at(p, 1);

        if (is_digit(c1) || c1 == ':' || (c1 == '}' && !in_signature)) {
            return skip_group(p);
        }
    }
    return TPU_OK;
}

/* ---------------------------------------------------------------- replica groups */

static void note_id(parser_t *p, int64_t id)
{
    if (id > p->mod->max_device_id) {
        p->mod->max_device_id = (int)id;
    }
}

/* {{0,1},{2,3}} or {} */
/* At a '}' (an empty list), step over it and say so. */
static int closes_empty(parser_t *p)
{
    if (cur(p) != '}') {
        return 0;
    }
    adv(p);
    return 1;
}

/*
 * Read '{a,b,...}' into 'one': device ids, each in [0, TPU_HLO_MAX_IDS) and noted;
 * with want > 0, exactly 'want' of them.  'what' names the list in messages.
 */
static tpu_status_t read_ids(parser_t *p, const char *role, const char *what, int want,
                             tpu_hlo_ints_t *one)
{
    tpu_status_t status = read_int_list(p, role, one);
    int i;

    if (status != TPU_OK) {
        return status;
    }
    if (want > 0 && one->n != want) {
        return fail(p, "a %s has %d ids, not %d", what, one->n, want);
    }
    for (i = 0; i < one->n; i++) {
        if (one->v[i] < 0 || one->v[i] >= TPU_HLO_MAX_IDS) {
            return fail(p, "%s names device %lld", what, (long long)one->v[i]);
        }
        note_id(p, one->v[i]);
    }
    return TPU_OK;
}

/* A list of id lists, '{{a,b,...},{c,...},...}' or '{}': replica groups, source-target pairs. */
typedef struct id_lists {
    const char *before, *closing; /* what the outer braces are, for messages */
    const char *role, *what;      /* an inner list, for read_ids() */
    int want;                     /* ids in each inner list; 0: any */
} id_lists_t;

/* What becomes of each inner list: 'add' appends it to what 'arg' builds. */
typedef tpu_status_t (*id_list_fn_t)(parser_t *p, const tpu_hlo_ints_t *one, void *arg);

/* Read the list of id lists at the cursor (its '{'), handing every inner list to 'add'. */
static tpu_status_t parse_id_lists(parser_t *p, const id_lists_t *kind, id_list_fn_t add, void *arg)
{
    tpu_status_t status;
    tpu_hlo_ints_t one;

    status = expect(p, '{', kind->before);
    if (status == TPU_OK) {
        status = skip_ws(p);
    }
    if (status != TPU_OK || closes_empty(p)) {
        return status;
    }
    do {
        status = read_ids(p, kind->role, kind->what, kind->want, &one);
        if (status == TPU_OK) {
            status = add(p, &one, arg);
        }
        if (status != TPU_OK) {
            return status;
        }
    } while (next_item(p, &status));
    return status == TPU_OK ? expect(p, '}', kind->closing) : status;
}

/* Replica groups as they are read: the ids so far and the capacities. */
typedef struct group_acc {
    tpu_hlo_groups_t *g;
    int cap_ids, cap_start, nids;
} group_acc_t;

static tpu_status_t add_group(parser_t *p, const tpu_hlo_ints_t *one, void *arg)
{
    group_acc_t *a = arg;
    tpu_hlo_groups_t *g = a->g;
    tpu_status_t status;
    int i;

    for (i = 0; i < one->n; i++) {
        status = grow(p, (void **)&g->ids, a->nids, &a->cap_ids, sizeof(int32_t));
        if (status != TPU_OK) {
            return status;
        }
        g->ids[a->nids++] = (int32_t)one->v[i];
    }
    status = grow(p, (void **)&g->start, g->ngroups + 1, &a->cap_start, sizeof(int32_t));
    if (status != TPU_OK) {
        return status;
    }
    g->start[++g->ngroups] = a->nids;
    return TPU_OK;
}

static tpu_status_t parse_group_list(parser_t *p, tpu_hlo_groups_t *g)
{
    static const id_lists_t groups = {"opening the replica groups", "closing the replica groups",
                                      "a replica group", "replica group", 0};
    group_acc_t a = {g, 0, 0, 0};
    tpu_status_t status;

    g->form = TPU_HLO_GROUPS_LIST;
    status = grow(p, (void **)&g->start, 0, &a.cap_start, sizeof(int32_t));
    if (status != TPU_OK) {
        return status;
    }
    g->start[0] = 0;
    return parse_id_lists(p, &groups, add_group, &a);
}

tpu_status_t tpu_hlo_iota_groups(int64_t ngroups, int64_t size, int ndims, const int64_t *dims,
                                 const int64_t *perm, int32_t *ids, tpu_err_t *err)
{
    int64_t total = 1, stride[TPU_HLO_MAX_RANK], tdims[TPU_HLO_MAX_RANK], idx[TPU_HLO_MAX_RANK];
    int used[TPU_HLO_MAX_RANK] = {0};
    int64_t i;
    int d;

    if (ndims < 1 || ndims > TPU_HLO_MAX_RANK) {
        return tpu_err_set(err, TPU_ERR_INVALID, "iota replica groups need 1 to %d reshape dims",
                           TPU_HLO_MAX_RANK);
    }
    for (d = 0; d < ndims; d++) {
        if (dims[d] < 1 || dims[d] > TPU_HLO_MAX_IDS) {
            return tpu_err_set(err, TPU_ERR_INVALID, "iota reshape dim %lld is out of range",
                               (long long)dims[d]);
        }
        total *= dims[d];
        if (total > TPU_HLO_MAX_IDS) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "iota replica groups name more than %d devices", TPU_HLO_MAX_IDS);
        }
        if (perm != NULL) {
            if (perm[d] < 0 || perm[d] >= ndims || used[perm[d]]) {
                return tpu_err_set(err, TPU_ERR_INVALID,
                                   "T(...) is not a permutation of the %d reshape dims", ndims);
            }
            used[perm[d]] = 1;
        }
    }
    if (ngroups < 1 || size < 1 || ngroups * size != total) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "iota replica groups [%lld,%lld] do not hold the %lld devices of the "
                           "reshape dims",
                           (long long)ngroups, (long long)size, (long long)total);
    }
    /* Row-major strides of the reshaped array; the transposed array's dim d is dim perm[d]. */
    stride[ndims - 1] = 1;
    for (d = ndims - 2; d >= 0; d--) {
        stride[d] = stride[d + 1] * dims[d + 1];
    }
    for (d = 0; d < ndims; d++) {
        tdims[d] = dims[perm != NULL ? perm[d] : d];
        idx[d] = 0;
    }
    for (i = 0; i < total; i++) {
        int64_t src = 0;

        for (d = 0; d < ndims; d++) {
            src += idx[d] * stride[perm != NULL ? perm[d] : d];
        }
        ids[i] = (int32_t)src;
        for (d = ndims - 1; d >= 0; d--) {
            if (++idx[d] < tdims[d]) {
                break;
            }
            idx[d] = 0;
        }
    }
    return TPU_OK;
}

/* Fill start[] for ngroups equal groups of 'size'. */
static tpu_status_t equal_starts(parser_t *p, tpu_hlo_groups_t *g, int64_t ngroups, int64_t size)
{
    int64_t i;

    g->ngroups = (int)ngroups;
    g->start = arena_alloc(p->arena, (size_t)(ngroups + 1) * sizeof(int32_t));
    if (g->start == NULL) {
        return oom(p);
    }
    for (i = 0; i <= ngroups; i++) {
        g->start[i] = (int32_t)(i * size);
    }
    return TPU_OK;
}

/*
 * Read 'a, b, ...' (at most TPU_HLO_MAX_RANK integers) into v[*n_p...]; too many
 * fails with "<head> TPU_HLO_MAX_RANK <tail>".
 */
static tpu_status_t read_rank_ints(parser_t *p, const char *role, const char *head,
                                   const char *tail, int64_t *v, int *n_p)
{
    tpu_status_t status;

    for (;;) {
        if (*n_p >= TPU_HLO_MAX_RANK) {
            return fail(p, "%s %d %s", head, TPU_HLO_MAX_RANK, tail);
        }
        status = read_int(p, role, &v[*n_p]);
        if (status != TPU_OK) {
            return status;
        }
        (*n_p)++;
        status = skip_ws(p);
        if (status != TPU_OK) {
            return status;
        }
        if (cur(p) != ',') {
            return TPU_OK;
        }
        adv(p);
    }
}

/* [G,S]<=[d0,d1,...]T(p0,p1,...) */
static tpu_status_t parse_group_iota(parser_t *p, tpu_hlo_groups_t *g)
{
    int64_t gs[2], dims[TPU_HLO_MAX_RANK], perm[TPU_HLO_MAX_RANK];
    int ndims = 0, nperm = 0, i, line = p->line, col = col_of(p);
    tpu_status_t status;
    int64_t total;

    g->form = TPU_HLO_GROUPS_IOTA;
    adv(p); /* [ */
    for (i = 0; i < 2; i++) {
        status = read_int(p, "the iota group count and size", &gs[i]);
        if (status == TPU_OK) {
            status = expect(p, i == 0 ? ',' : ']', "in iota replica groups [groups,size]");
        }
        if (status != TPU_OK) {
            return status;
        }
    }
    status = skip_ws(p);
    if (status != TPU_OK) {
        return status;
    }
    if (!(cur(p) == '<' && at(p, 1) == '=')) {
        return fail(p, "expected '<=' after iota replica groups [%lld,%lld]", (long long)gs[0],
                    (long long)gs[1]);
    }
    adv(p);
    adv(p);
    status = expect(p, '[', "after '<=' in iota replica groups");
    if (status == TPU_OK) {
        status = read_rank_ints(p, "an iota reshape dim", "iota replica groups have more than",
                                "reshape dims", dims, &ndims);
    }
    status = status == TPU_OK ? expect(p, ']', "closing the iota reshape dims") : status;
    if (status != TPU_OK) {
        return status;
    }
    if (cur(p) == 'T' && at(p, 1) == '(') {
        adv(p);
        adv(p);
        status = read_rank_ints(p, "an iota transpose entry", "iota transpose has more than",
                                "entries", perm, &nperm);
        status = status == TPU_OK ? expect(p, ')', "closing the iota transpose T(...)") : status;
        if (status != TPU_OK) {
            return status;
        }
        if (nperm != ndims) {
            return fail(p, "iota transpose T(...) has %d entries for %d reshape dims", nperm,
                        ndims);
        }
    } else if (ndims > 1) {
        return fail(p, "iota replica groups with %d reshape dims need a transpose T(...)", ndims);
    }
    total = gs[0] * gs[1];
    if (gs[0] < 1 || gs[1] < 1 || gs[0] > TPU_HLO_MAX_IDS || gs[1] > TPU_HLO_MAX_IDS ||
        total > TPU_HLO_MAX_IDS) {
        return tpu_err_set(p->err, TPU_ERR_INVALID,
                           "%s:%d:%d: iota replica groups [%lld,%lld] are out of range", p->file,
                           line, col, (long long)gs[0], (long long)gs[1]);
    }
    g->ids = arena_alloc(p->arena, (size_t)total * sizeof(int32_t));
    if (g->ids == NULL) {
        return oom(p);
    }
    {
        tpu_err_t e = {0};

        if (tpu_hlo_iota_groups(gs[0], gs[1], ndims, dims, nperm ? perm : NULL, g->ids, &e) !=
            TPU_OK) {
            return tpu_err_set(p->err, TPU_ERR_INVALID, "%s:%d:%d: %s", p->file, line, col, e.msg);
        }
    }
    note_id(p, total - 1);
    return equal_starts(p, g, gs[0], gs[1]);
}

/* 'name' or name */
static tpu_status_t read_axis_name(parser_t *p, char *name, size_t size)
{
    size_t n = 0, skip;
    tpu_status_t status = skip_ws(p);
    char buf[24];

    if (status != TPU_OK) {
        return status;
    }
    if (cur(p) == '\'' || cur(p) == '"') {
        int q = cur(p);

        adv(p);
        while (!at_end(p) && cur(p) != q && cur(p) != '\n') {
            if (n + 1 < size) {
                name[n++] = (char)cur(p);
            }
            adv(p);
        }
        if (cur(p) != q) {
            return fail(p, "unterminated mesh axis name");
        }
        adv(p);
    } else {
        size_t len = ident_len(p, &skip), i;

        if (len == 0) {
            return fail(p, "expected a mesh axis name, found %s", what(p, buf, sizeof(buf)));
        }
        for (i = 0; i < skip + len; i++) {
            if (i >= skip && n + 1 < size) {
                name[n++] = (char)cur(p);
            }
            adv(p);
        }
    }
    name[n] = '\0';
    return TPU_OK;
}

/*
 * mesh['a'=2,'b'=4] {'b'}, with optional ", device_ids=(...)" after the mesh and
 * sub-axes 'a':(pre)size.  Groups are the devices that differ only in the listed
 * axes, ordered row-major over them in the order listed.
 */
static tpu_status_t parse_group_mesh(parser_t *p, tpu_hlo_groups_t *g)
{
    char names[TPU_HLO_MAX_RANK][32];
    int64_t sizes[TPU_HLO_MAX_RANK], total = 1;
    int naxes = 0, i, j;
    /* Factor dims: each mesh axis cut at the sub-axis boundaries named. */
    int64_t fdims[TPU_HLO_MAX_RANK], perm[TPU_HLO_MAX_RANK];
    int faxis[TPU_HLO_MAX_RANK], nf = 0, nsel = 0, sel_f[TPU_HLO_MAX_RANK], nperm = 0;
    struct {
        int axis;
        int64_t pre, size;
    } refs[TPU_HLO_MAX_RANK];
    int nrefs = 0;
    int32_t *device_ids = NULL;
    int ndevice_ids = 0, cap = 0;
    tpu_status_t status;
    int64_t gsize = 1;

    g->form = TPU_HLO_GROUPS_MESH;
    skip_word(p, "mesh");
    status = expect(p, '[', "after 'mesh'");
    while (status == TPU_OK) {
        if (naxes >= TPU_HLO_MAX_RANK) {
            return fail(p, "a mesh with more than %d axes", TPU_HLO_MAX_RANK);
        }
        status = read_axis_name(p, names[naxes], sizeof(names[0]));
        if (status == TPU_OK) {
            status = expect(p, '=', "after a mesh axis name");
        }
        if (status == TPU_OK) {
            status = read_int(p, "a mesh axis size", &sizes[naxes]);
        }
        if (status != TPU_OK) {
            return status;
        }
        if (sizes[naxes] < 1 || sizes[naxes] > TPU_HLO_MAX_IDS) {
            return fail(p, "mesh axis '%s' has size %lld", names[naxes], (long long)sizes[naxes]);
        }
        total *= sizes[naxes];
        if (total > TPU_HLO_MAX_IDS) {
            return fail(p, "a mesh of more than %d devices", TPU_HLO_MAX_IDS);
        }
        naxes++;
        status = skip_ws(p);
        if (status != TPU_OK || cur(p) != ',') {
            break;
        }
        adv(p);
    }
    status = status == TPU_OK ? expect(p, ']', "closing the mesh") : status;
    if (status == TPU_OK) {
        status = skip_ws(p);
    }
    if (status != TPU_OK) {
        return status;
    }
    if (cur(p) == ',') {
        adv(p);
        status = skip_ws(p);
        if (status != TPU_OK) {
            return status;
        }
        if (!word_is(p, "device_ids")) {
            return fail(p, "expected device_ids= after the mesh");
        }
        skip_word(p, "device_ids");
        status = expect(p, '=', "after device_ids");
        if (status == TPU_OK) {
            status = skip_ws(p);
        }
        if (status != TPU_OK) {
            return status;
        }
        if (cur(p) != '(' && cur(p) != '[' && cur(p) != '{') {
            return fail(p, "expected a list of device ids after device_ids=");
        }
        adv(p);
        do {
            int64_t v;

            status = read_int(p, "a device id", &v);
            if (status == TPU_OK) {
                status = grow(p, (void **)&device_ids, ndevice_ids, &cap, sizeof(int32_t));
            }
            if (status != TPU_OK) {
                return status;
            }
            if (v < 0 || v >= TPU_HLO_MAX_IDS) {
                return fail(p, "mesh device id %lld is out of range", (long long)v);
            }
            device_ids[ndevice_ids++] = (int32_t)v;
        } while (next_item(p, &status));
        if (status != TPU_OK) {
            return status;
        }
        if (cur(p) != ')' && cur(p) != ']' && cur(p) != '}') {
            return fail(p, "expected the end of the device_ids list");
        }
        adv(p);
        if (ndevice_ids != total) {
            return fail(p, "device_ids lists %d devices for a mesh of %lld", ndevice_ids,
                        (long long)total);
        }
    }
    status = expect(p, '{', "before the mesh axes of the groups");
    if (status == TPU_OK) {
        status = skip_ws(p);
    }
    while (status == TPU_OK && cur(p) != '}') {
        char name[32];

        if (nrefs >= TPU_HLO_MAX_RANK) {
            return fail(p, "more than %d mesh axes in the groups", TPU_HLO_MAX_RANK);
        }
        status = read_axis_name(p, name, sizeof(name));
        if (status != TPU_OK) {
            return status;
        }
        for (i = 0; i < naxes && strcmp(names[i], name) != 0; i++) {
        }
        if (i == naxes) {
            return fail(p, "the mesh has no axis '%s'", name);
        }
        refs[nrefs].axis = i;
        refs[nrefs].pre = 1;
        refs[nrefs].size = sizes[i];
        status = skip_ws(p);
        if (status == TPU_OK && cur(p) == ':') {
            adv(p);
            status = expect(p, '(', "before a sub-axis pre-size");
            if (status == TPU_OK) {
                status = read_int(p, "a sub-axis pre-size", &refs[nrefs].pre);
            }
            if (status == TPU_OK) {
                status = expect(p, ')', "after a sub-axis pre-size");
            }
            if (status == TPU_OK) {
                status = read_int(p, "a sub-axis size", &refs[nrefs].size);
            }
            if (status == TPU_OK && (refs[nrefs].pre < 1 || refs[nrefs].size < 1 ||
                                     refs[nrefs].pre * refs[nrefs].size > sizes[i] ||
                                     sizes[i] % (refs[nrefs].pre * refs[nrefs].size) != 0)) {
                return fail(p, "sub-axis '%s':(%lld)%lld does not divide the axis of %lld", name,
                            (long long)refs[nrefs].pre, (long long)refs[nrefs].size,
                            (long long)sizes[i]);
            }
        }
        if (status != TPU_OK) {
            return status;
        }
        nrefs++;
        status = skip_ws(p);
        if (status == TPU_OK && cur(p) == ',') {
            adv(p);
            status = skip_ws(p);
        }
    }
    if (status != TPU_OK) {
        return status;
    }
    adv(p); /* } */
    /* Factor each axis: [pre, size, rest] major to minor for every sub-axis (one per axis). */
    for (i = 0; i < naxes; i++) {
        int64_t pre = 1, size = sizes[i];

        for (j = 0; j < nrefs; j++) {
            if (refs[j].axis == i) {
                pre = refs[j].pre;
                size = refs[j].size;
            }
        }
        if (nf + 3 > TPU_HLO_MAX_RANK) {
            return fail(p, "mesh groups too complex (more than %d factors)", TPU_HLO_MAX_RANK);
        }
        if (pre > 1) {
            fdims[nf] = pre;
            faxis[nf++] = -1;
        }
        fdims[nf] = size;
        faxis[nf++] = i;
        if (sizes[i] / (pre * size) > 1) {
            fdims[nf] = sizes[i] / (pre * size);
            faxis[nf++] = -1;
        }
    }
    for (j = 0; j < nrefs; j++) {
        for (i = 0; i < nf && faxis[i] != refs[j].axis; i++) {
        }
        sel_f[nsel++] = i;
        gsize *= fdims[i];
    }
    for (i = 0; i < nf; i++) {
        for (j = 0; j < nsel && sel_f[j] != i; j++) {
        }
        if (j == nsel) {
            perm[nperm++] = i;
        }
    }
    for (j = 0; j < nsel; j++) {
        perm[nperm++] = sel_f[j];
    }
    g->ids = arena_alloc(p->arena, (size_t)total * sizeof(int32_t));
    if (g->ids == NULL) {
        return oom(p);
    }
    {
        tpu_err_t e = {0};

        if (tpu_hlo_iota_groups(total / gsize, gsize, nf, fdims, perm, g->ids, &e) != TPU_OK) {
            return fail(p, "%s", e.msg);
        }
    }
    for (i = 0; i < total; i++) {
        if (device_ids != NULL) {
            g->ids[i] = device_ids[g->ids[i]];
        }
        note_id(p, g->ids[i]);
    }
    return equal_starts(p, g, total / gsize, gsize);
}

static tpu_status_t parse_groups(parser_t *p, tpu_hlo_groups_t *g)
{
    size_t start = p->pos;
    tpu_status_t status;
    char buf[24];

    if (cur(p) == '{') {
        status = parse_group_list(p, g);
    } else if (cur(p) == '[') {
        status = parse_group_iota(p, g);
    } else if (word_is(p, "mesh")) {
        status = parse_group_mesh(p, g);
    } else {
        return fail(p,
                    "unknown replica_groups spelling %s (expected {{...}}, [G,S]<=[dims] or "
                    "mesh[...] {axes})",
                    what(p, buf, sizeof(buf)));
    }
    if (status != TPU_OK) {
        return status;
    }
    g->text = dup_range(p, p->s + start, p->pos - start);
    return g->text != NULL ? TPU_OK : oom(p);
}

/* Source-target pairs as they are read: out->n pairs in out->v, room for 'cap' ids. */
typedef struct pair_acc {
    tpu_hlo_ints_t *out;
    int cap;
} pair_acc_t;

static tpu_status_t add_pair(parser_t *p, const tpu_hlo_ints_t *one, void *arg)
{
    pair_acc_t *a = arg;
    tpu_status_t status;
    int i;

    for (i = 0; i < 2; i++) {
        status = grow(p, (void **)&a->out->v, 2 * a->out->n + i, &a->cap, sizeof(int64_t));
        if (status != TPU_OK) {
            return status;
        }
        a->out->v[2 * a->out->n + i] = one->v[i];
    }
    a->out->n++;
    return TPU_OK;
}

/* {{s,t},{s,t}} */
static tpu_status_t parse_pairs(parser_t *p, tpu_hlo_ints_t *out)
{
    static const id_lists_t pairs = {"before source_target_pairs", "closing source_target_pairs",
                                     "a source-target pair", "source-target pair", 2};
    pair_acc_t a = {out, 0};

    out->n = 0;
    out->v = NULL;
    return parse_id_lists(p, &pairs, add_pair, &a);
}

/* ---------------------------------------------------------------- instructions */

static const struct {
    const char *name;
    tpu_hlo_class_t cls;
} ops[TPU_HLO_OP_COUNT] = {{NULL, TPU_HLO_CLASS_UNKNOWN},
#define X(name, str, cls) {str, TPU_HLO_CLASS_##cls},
                           TPU_HLO_OP_MAP(X)
#undef X
};

static tpu_hlo_op_t op_lookup(const char *s, size_t n)
{
    return (tpu_hlo_op_t)name_lookup(ops, sizeof(ops[0]), TPU_HLO_OP_COUNT, s, n);
}

static void classify_opcode(tpu_hlo_instr_t *in)
{
    static const struct {
        const char *suffix;
        tpu_hlo_async_t kind;
    } sfx[] = {{"-start", TPU_HLO_START}, {"-update", TPU_HLO_UPDATE}, {"-done", TPU_HLO_DONE}};
    size_t n = strlen(in->opcode), k;

    in->op = op_lookup(in->opcode, n);
    in->async = TPU_HLO_SYNC;
    if (in->op != TPU_HLO_OP_UNKNOWN) {
        return;
    }
    for (k = 0; k < sizeof(sfx) / sizeof(sfx[0]); k++) {
        size_t m = strlen(sfx[k].suffix);

        if (n > m && strcmp(in->opcode + n - m, sfx[k].suffix) == 0) {
            in->op = op_lookup(in->opcode, n - m);
            if (in->op != TPU_HLO_OP_UNKNOWN) {
                in->async = sfx[k].kind;
            }
            return;
        }
    }
}

/* The number in backend_config's "known_trip_count":{"n":"K"} (escaped or not); -1. */
static int64_t find_trip_count(const char *cfg)
{
    const char *k = strstr(cfg, "known_trip_count"), *q;
    int64_t v = 0;

    if (k == NULL) {
        return -1;
    }
    q = strstr(k, "\"n\"");
    if (q == NULL) {
        q = strstr(k, "\\\"n\\\"");
    }
    if (q == NULL || q - k > 40) {
        return -1;
    }
    while (*q != '\0' && !is_digit((unsigned char)*q)) {
        if (*q == '}') {
            return -1;
        }
        q++;
    }
    if (!is_digit((unsigned char)*q)) {
        return -1;
    }
    while (is_digit((unsigned char)*q) && v < MAX_INT_VALUE / 10) {
        v = v * 10 + (*q++ - '0');
    }
    return v;
}

/* A computation name (or an inline computation, skipped: NULL). */
static tpu_status_t read_comp_ref(parser_t *p, const char **name_p)
{
    *name_p = NULL;
    if (cur(p) == '{') {
        p->mod->skipped_attributes++;
        return skip_group(p);
    }
    return read_ident(p, "a computation name", name_p);
}

/* Operands: "[shape] name", nested "[shape] opcode(...)", or literals (skipped). */
static tpu_status_t parse_operands(parser_t *p, tpu_hlo_instr_t *in)
{
    tpu_status_t status;
    int cap = 0, cap2 = 0;
    char buf[24];

    status = skip_ws(p);
    if (status != TPU_OK) {
        return status;
    }
    if (in->op == TPU_HLO_OP_CONSTANT || in->op == TPU_HLO_OP_PARAMETER) {
        /* A plain integer literal: "constant(10)", "parameter(0)". */
        size_t i = cur(p) == '-' ? 1 : 0, j;
        int64_t v = 0;

        for (j = i; p->pos + j < p->len && is_digit(at(p, j)) && v < MAX_INT_VALUE / 10; j++) {
            v = v * 10 + (at(p, j) - '0');
        }
        if (j > i && at(p, j) == ')') {
            for (; j > 0; j--) {
                adv(p);
            }
            adv(p);
            if (in->op == TPU_HLO_OP_PARAMETER) {
                in->parameter_number = v;
            } else {
                in->has_int_value = 1;
                in->int_value = i ? -v : v;
            }
            return TPU_OK;
        }
        /* Any other literal: skip it whole. */
        while (!at_end(p) && cur(p) != ')') {
            int c = cur(p);

            if (c == '{' || c == '(' || c == '[' || c == '"' || c == '\'') {
                status = c == '"' || c == '\'' ? skip_string(p) : skip_group(p);
            } else if (c == '/' && (at(p, 1) == '/' || at(p, 1) == '*')) {
                status = skip_ws(p);
            } else {
                adv(p);
                status = TPU_OK;
            }
            if (status != TPU_OK) {
                return status;
            }
        }
        return expect(p, ')', "closing the constant");
    }
    if (cur(p) == ')') {
        adv(p);
        return TPU_OK;
    }
    for (;;) {
        const char *name = NULL;
        size_t skip;

        status = skip_ws(p);
        if (status != TPU_OK) {
            return status;
        }
        if (shape_here(p)) {
            tpu_hlo_shape_t sh;

            status = parse_shape(p, &sh, 0);
            if (status == TPU_OK) {
                status = skip_ws(p);
            }
            if (status != TPU_OK) {
                return status;
            }
        }
        if (ident_len(p, &skip) > 0) {
            status = read_ident(p, "an operand", &name);
            if (status == TPU_OK) {
                status = skip_ws(p);
            }
            if (status != TPU_OK) {
                return status;
            }
            if (cur(p) == '(') {
                /* A nested instruction (tests write these): skip it, and any attributes. */
                p->mod->nested_operands++;
                name = NULL;
                status = skip_group(p);
                if (status != TPU_OK) {
                    return status;
                }
            }
        } else if (cur(p) != ',' && cur(p) != ')') {
            /* A literal operand: skip it. */
            if (at_end(p)) {
                return fail(p, "the file ends inside the operands of '%s'", in->name);
            }
            status = skip_value(p);
            if (status != TPU_OK) {
                return status;
            }
        } else {
            return fail(p, "expected an operand of '%s', found %s", in->name,
                        what(p, buf, sizeof(buf)));
        }
        status = grow(p, (void **)&in->operand_names, in->noperands, &cap, sizeof(char *));
        if (status == TPU_OK) {
            status = grow(p, (void **)&in->operands, in->noperands, &cap2, sizeof(int32_t));
        }
        if (status != TPU_OK) {
            return status;
        }
        in->operand_names[in->noperands] = name;
        in->operands[in->noperands++] = -1;
        status = skip_ws(p);
        if (status != TPU_OK) {
            return status;
        }
        if (cur(p) == ',') {
            adv(p);
            continue;
        }
        if (cur(p) == ')') {
            adv(p);
            return TPU_OK;
        }
        return fail(p, "expected ',' or ')' in the operands of '%s', found %s", in->name,
                    what(p, buf, sizeof(buf)));
    }
}

/* Attributes whose values are skipped without counting them as unknown. */
static int known_skipped(const char *key)
{
    static const char *const names[] = {"metadata",
                                        "sharding",
                                        "frontend_attributes",
                                        "statistics",
                                        "control-predecessors",
                                        "parameter_replication",
                                        "origin",
                                        "window",
                                        "padding",
                                        "slice",
                                        "dynamic_slice_sizes",
                                        "slice_sizes",
                                        "fft_type",
                                        "operand_precision",
                                        "algorithm",
                                        "constrain_layout",
                                        "mode",
                                        "async_execution_thread",
                                        "is_stable",
                                        "called_computations",
                                        "api_version",
                                        "output_to_operand_aliasing",
                                        "schedule",
                                        "custom_call_has_side_effect",
                                        "operand_layout_constraints",
                                        "exponent_bits",
                                        "mantissa_bits",
                                        "distribution",
                                        "rng_algorithm",
                                        "indices_are_sorted",
                                        "unique_indices",
                                        "offset_dims",
                                        "collapsed_slice_dims",
                                        "start_index_map",
                                        "index_vector_dim",
                                        "slice_sizes",
                                        "update_window_dims",
                                        "inserted_window_dims",
                                        "scatter_dims_to_operand_dims",
                                        "has_dynamic_root",
                                        "iota_dimension",
                                        "lhs_ragged_dims",
                                        "rhs_group_dims",
                                        "sparsity",
                                        "result_accuracy",
                                        "custom_call_schedule",
                                        "literal",
                                        "comparison_type",
                                        "is_host_transfer",
                                        "infeed_config",
                                        "outfeed_config",
                                        "outfeed_shape",
                                        "largest",
                                        "to_apply_c",
                                        "execution_thread",
                                        "select",
                                        "scatter",
                                        "split_dimension",
                                        "split_count",
                                        "concat_dimension",
                                        "channel_handle",
                                        "precision_config"};
    size_t i;

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcmp(names[i], key) == 0) {
            return 1;
        }
    }
    return 0;
}

static tpu_status_t read_bool(parser_t *p, const char *key, int *v_p)
{
    if (word_is(p, "true")) {
        skip_word(p, "true");
        *v_p = 1;
        return TPU_OK;
    }
    if (word_is(p, "false")) {
        skip_word(p, "false");
        *v_p = 0;
        return TPU_OK;
    }
    return fail(p, "%s takes true or false", key);
}

/* Read 'key =' (blanks around): the key into '*key_p', the cursor on the value. */
static tpu_status_t read_key(parser_t *p, const char *role, const char *context, const char **key_p)
{
    tpu_status_t status = skip_ws(p);

    if (status == TPU_OK) {
        status = read_ident(p, role, key_p);
    }
    if (status == TPU_OK) {
        status = expect(p, '=', context);
    }
    return status == TPU_OK ? skip_ws(p) : status;
}

/* The attributes that name one computation, and where each goes. */
static const struct {
    const char *key;
    size_t off;
} comp_refs[] = {
    {"to_apply", offsetof(tpu_hlo_instr_t, to_apply)},
    {"calls", offsetof(tpu_hlo_instr_t, calls)},
    {"condition", offsetof(tpu_hlo_instr_t, condition)},
    {"body", offsetof(tpu_hlo_instr_t, body)},
    {"true_computation", offsetof(tpu_hlo_instr_t, true_comp)},
    {"false_computation", offsetof(tpu_hlo_instr_t, false_comp)},
};

static tpu_status_t parse_attribute(parser_t *p, tpu_hlo_instr_t *in)
{
    size_t r;
    const char *key = NULL;
    tpu_status_t status;
    int64_t v = 0;

    status = read_key(p, "an attribute name", "after an attribute name", &key);
    if (status != TPU_OK) {
        return status;
    }
    if (strcmp(key, "replica_groups") == 0) {
        return parse_groups(p, &in->groups);
    }
    if (strcmp(key, "source_target_pairs") == 0) {
        return parse_pairs(p, &in->pairs);
    }
    if (strcmp(key, "dimensions") == 0) {
        return read_int_list(p, "dimensions", &in->dimensions);
    }
    if (strcmp(key, "lhs_batch_dims") == 0) {
        return read_int_list(p, key, &in->lhs_batch);
    }
    if (strcmp(key, "lhs_contracting_dims") == 0) {
        return read_int_list(p, key, &in->lhs_contracting);
    }
    if (strcmp(key, "rhs_batch_dims") == 0) {
        return read_int_list(p, key, &in->rhs_batch);
    }
    if (strcmp(key, "rhs_contracting_dims") == 0) {
        return read_int_list(p, key, &in->rhs_contracting);
    }
    if (strcmp(key, "fft_length") == 0) {
        tpu_hlo_ints_t l;
        int i;

        status = read_int_list(p, key, &l);
        in->fft_length = 1;
        for (i = 0; status == TPU_OK && i < l.n; i++) {
            if (l.v[i] < 1 || l.v[i] > TPU_HLO_MAX_IDS) {
                return fail(p, "fft_length %lld is out of range", (long long)l.v[i]);
            }
            in->fft_length *= l.v[i];
            if (in->fft_length > MAX_INT_VALUE / TPU_HLO_MAX_IDS) {
                return fail(p, "fft_length is out of range");
            }
        }
        return status;
    }
    if (strcmp(key, "channel_id") == 0) {
        status = read_int(p, key, &v);
        in->channel_id = v;
        return status;
    }
    if (strcmp(key, "index") == 0) {
        status = read_int(p, key, &v);
        in->index = v;
        return status;
    }
    if (strcmp(key, "feature_group_count") == 0 || strcmp(key, "batch_group_count") == 0) {
        status = read_int(p, key, &v);
        if (status == TPU_OK && v < 1) {
            return fail(p, "%s must be positive, got %lld", key, (long long)v);
        }
        *(key[0] == 'f' ? &in->feature_group_count : &in->batch_group_count) = v;
        return status;
    }
    if (strcmp(key, "use_global_device_ids") == 0) {
        return read_bool(p, key, &in->use_global_device_ids);
    }
    for (r = 0; r < sizeof(comp_refs) / sizeof(comp_refs[0]); r++) {
        if (strcmp(key, comp_refs[r].key) == 0) {
            return read_comp_ref(p, (const char **)((char *)in + comp_refs[r].off));
        }
    }
    if (strcmp(key, "branch_computations") == 0) {
        int cap = 0;

        status = expect(p, '{', "before branch_computations");
        while (status == TPU_OK) {
            status = skip_ws(p);
            if (status != TPU_OK || cur(p) == '}') {
                break;
            }
            status = grow(p, (void **)&in->branch_names, in->nbranches, &cap, sizeof(char *));
            if (status == TPU_OK) {
                status = read_ident(p, "a branch computation", &in->branch_names[in->nbranches]);
            }
            if (status != TPU_OK) {
                return status;
            }
            in->nbranches++;
            status = skip_ws(p);
            if (status == TPU_OK && cur(p) == ',') {
                adv(p);
            }
        }
        return status == TPU_OK ? expect(p, '}', "closing branch_computations") : status;
    }
    if (strcmp(key, "custom_call_target") == 0) {
        return read_string(p, &in->custom_call_target);
    }
    if (strcmp(key, "kind") == 0) {
        return read_ident(p, "a fusion kind", &in->fusion_kind);
    }
    if (strcmp(key, "direction") == 0) {
        return read_ident(p, "a comparison direction", &in->direction);
    }
    if (strcmp(key, "dim_labels") == 0) {
        size_t start = p->pos;

        while (!at_end(p) && (is_id_char(cur(p)) || cur(p) == '>' || cur(p) == '?')) {
            adv(p);
        }
        in->dim_labels = dup_range(p, p->s + start, p->pos - start);
        return in->dim_labels != NULL ? TPU_OK : oom(p);
    }
    if (strcmp(key, "backend_config") == 0) {
        size_t start = p->pos;

        status = cur(p) == '"' ? skip_string(p) : skip_value(p);
        if (status != TPU_OK) {
            return status;
        }
        in->backend_config = dup_range(p, p->s + start, p->pos - start);
        if (in->backend_config == NULL) {
            return oom(p);
        }
        in->known_trip_count = find_trip_count(in->backend_config);
        return TPU_OK;
    }
    if (!known_skipped(key)) {
        p->mod->skipped_attributes++;
    }
    return skip_value(p);
}

static tpu_status_t parse_instruction(parser_t *p, tpu_hlo_instr_t *in)
{
    tpu_status_t status;
    char buf[24];

    memset(in, 0, sizeof(*in));
    in->channel_id = -1;
    in->use_global_device_ids = -1;
    in->known_trip_count = -1;
    in->index = -1;
    in->parameter_number = -1;
    in->feature_group_count = 1;
    in->batch_group_count = 1;
    in->to_apply_c = in->calls_c = in->condition_c = in->body_c = in->true_c = in->false_c = -1;
    in->shape.type = TPU_HLO_TYPE_TUPLE;
    in->line = p->line;
    in->col = col_of(p);
    status = take_word(p, "ROOT", &in->root);
    if (status == TPU_OK) {
        status = read_ident(p, "an instruction name", &in->name);
    }
    if (status == TPU_OK) {
        status = expect(p, '=', "after the instruction name");
    }
    if (status == TPU_OK) {
        status = skip_ws(p);
    }
    if (status != TPU_OK) {
        return status;
    }
    if (shape_here(p)) {
        status = parse_shape(p, &in->shape, 0);
        if (status == TPU_OK) {
            status = skip_ws(p);
        }
        if (status != TPU_OK) {
            return status;
        }
        in->has_shape = 1;
    }
    status = read_ident(p, "an opcode", &in->opcode);
    if (status != TPU_OK) {
        return status;
    }
    classify_opcode(in);
    if (in->op == TPU_HLO_OP_UNKNOWN) {
        p->mod->unknown_opcodes++;
    }
    status = skip_ws(p);
    if (status != TPU_OK) {
        return status;
    }
    if (cur(p) != '(') {
        return fail(p, "expected '(' after opcode '%s', found %s", in->opcode,
                    what(p, buf, sizeof(buf)));
    }
    adv(p);
    status = parse_operands(p, in);
    while (next_item(p, &status)) {
        status = parse_attribute(p, in);
    }
    return status;
}

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
    t->slot = arena_alloc(p->arena, size * sizeof(int32_t));
    if (t->slot == NULL) {
        return oom(p);
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
    status = take_word(p, "ENTRY", &c->is_entry);
    if (status == TPU_OK) {
        status = read_ident(p, "a computation name", &c->name);
    }
    if (status == TPU_OK) {
        status = skip_ws(p);
    }
    if (status != TPU_OK) {
        return status;
    }
    if (cur(p) == '(') {
        tpu_hlo_shape_t sh;

        status = skip_group(p);
        if (status == TPU_OK) {
            status = skip_ws(p);
        }
        if (status != TPU_OK) {
            return status;
        }
        if (!(cur(p) == '-' && at(p, 1) == '>')) {
            return fail(p, "expected '->' after the parameters of computation '%s'", c->name);
        }
        adv(p);
        adv(p);
        status = parse_shape(p, &sh, 1);
        if (status != TPU_OK) {
            return status;
        }
    }
    status = expect(p, '{', "opening a computation");
    while (status == TPU_OK) {
        status = skip_ws(p);
        if (status != TPU_OK) {
            return status;
        }
        if (cur(p) == '}') {
            adv(p);
            break;
        }
        if (at_end(p)) {
            return fail(p, "the file ends inside computation '%s' (missing '}')", c->name);
        }
        status = grow(p, (void **)&c->instrs, c->ninstrs, &cap, sizeof(tpu_hlo_instr_t));
        if (status == TPU_OK) {
            status = parse_instruction(p, &c->instrs[c->ninstrs]);
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
    status = skip_ws(p);
    if (status == TPU_OK && cur(p) == ',') {
        const char *key;

        adv(p);
        status =
            read_key(p, "an attribute of the computation", "after a computation attribute", &key);
        if (status == TPU_OK) {
            status = skip_value(p);
        }
    }
    if (status == TPU_OK) {
        status = resolve_operands(p, c);
    }
    return status;
}

/* ---------------------------------------------------------------- module */

static tpu_status_t parse_header(parser_t *p, tpu_hlo_module_t *m)
{
    tpu_status_t status;

    m->line = p->line;
    m->has_header = 1;
    skip_word(p, "HloModule");
    status = skip_ws(p);
    if (status == TPU_OK) {
        status = read_ident(p, "the module name", &m->name);
    }
    while (next_item(p, &status)) {
        const char *key;

        status = read_key(p, "a module attribute", "after a module attribute", &key);
        if (status != TPU_OK) {
            return status;
        }
        if (strcmp(key, "replica_count") == 0 || strcmp(key, "num_partitions") == 0) {
            int64_t v = 0;

            status = read_int(p, key, &v);
            if (status == TPU_OK && (v < 1 || v > TPU_HLO_MAX_IDS)) {
                return fail(p, "%s %lld is out of range (1 to %d)", key, (long long)v,
                            TPU_HLO_MAX_IDS);
            }
            *(key[0] == 'r' ? &m->replica_count : &m->num_partitions) = v;
        } else if (strcmp(key, "is_scheduled") == 0) {
            status = read_bool(p, key, &m->is_scheduled);
        } else {
            status = skip_value(p);
        }
    }
    return status;
}

/* FileNames 1 "a.py" ... / FileLocations 1 {...} ... */
static tpu_status_t parse_stack_block(parser_t *p, tpu_hlo_module_t *m, const char *word)
{
    tpu_status_t status;
    int64_t id;

    skip_word(p, word);
    for (;;) {
        status = skip_ws(p);
        if (status != TPU_OK) {
            return status;
        }
        if (!is_digit(cur(p))) {
            return TPU_OK;
        }
        status = read_int(p, "a stack frame entry id", &id);
        if (status == TPU_OK) {
            status = skip_ws(p);
        }
        if (status != TPU_OK) {
            return status;
        }
        if (cur(p) == '"') {
            status = skip_string(p);
        } else if (cur(p) == '{') {
            status = skip_group(p);
        } else {
            return fail(p, "expected a string or {...} after %s entry %lld", word, (long long)id);
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
                in->branches = arena_alloc(p->arena, (size_t)in->nbranches * sizeof(int32_t));
                if (in->branches == NULL) {
                    return oom(p);
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
    tpu_status_t status = grow(p, (void **)&f->modules, f->nmodules, cap, sizeof(tpu_hlo_module_t));

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
    f = arena_alloc(arena, sizeof(*f));
    if (f == NULL) {
        status = oom(&p);
        goto out_free;
    }
    memset(f, 0, sizeof(*f));
    f->arena = arena;
    p.file = dup_range(&p, p.file, strlen(p.file));
    if (p.file == NULL) {
        p.file = "<hlo>";
        status = oom(&p);
        goto out_free;
    }
    status = new_module(&p, f, &mcap);
    while (status == TPU_OK) {
        tpu_hlo_module_t *m = p.mod;
        int started = m->has_header || m->ncomps > 0;

        status = skip_ws(&p);
        if (status != TPU_OK) {
            break;
        }
        if (at_end(&p)) {
            break;
        }
        if ((p.separator && started) || (word_is(&p, "HloModule") && started)) {
            status = finish_module(&p, m);
            if (status == TPU_OK) {
                status = new_module(&p, f, &mcap);
            }
            ccap = 0;
            p.separator = 0;
            continue;
        }
        p.separator = 0;
        if (word_is(&p, "HloModule")) {
            status = parse_header(&p, m);
        } else if (word_is(&p, "FileNames") || word_is(&p, "FunctionNames") ||
                   word_is(&p, "FileLocations") || word_is(&p, "StackFrames")) {
            size_t skip, n = ident_len(&p, &skip);
            char word[16];

            snprintf(word, sizeof(word), "%.*s", (int)n, p.s + p.pos);
            status = parse_stack_block(&p, m, word);
        } else {
            if (!started) {
                m->line = p.line;
            }
            status = grow(&p, (void **)&m->comps, m->ncomps, &ccap, sizeof(tpu_hlo_comp_t));
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
                                 p.file, p.line, col_of(&p));
        }
    }
    if (status != TPU_OK) {
        goto out_free;
    }
    *file_p = f;
    return TPU_OK;
out_free:
    arena_free(arena);
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
    arena_free(arena);
    tpu__free(arena);
}

const char *tpu_hlo_op_name(tpu_hlo_op_t op)
{
    return op > TPU_HLO_OP_UNKNOWN && op < TPU_HLO_OP_COUNT ? ops[op].name : NULL;
}

tpu_hlo_class_t tpu_hlo_op_class(tpu_hlo_op_t op)
{
    return op > TPU_HLO_OP_UNKNOWN && op < TPU_HLO_OP_COUNT ? ops[op].cls : TPU_HLO_CLASS_UNKNOWN;
}

const char *tpu_hlo_type_name(tpu_hlo_type_t type)
{
    return type >= 0 && type < TPU_HLO_TYPE_COUNT ? types[type].name : "?";
}

int tpu_hlo_type_bits(tpu_hlo_type_t type)
{
    return type > 0 && type < TPU_HLO_TYPE_COUNT ? types[type].bits : 0;
}

int64_t tpu_hlo_shape_elements(const tpu_hlo_shape_t *sh)
{
    int64_t n = 1;
    int d;

    if (sh->type == TPU_HLO_TYPE_TUPLE || tpu_hlo_type_bits(sh->type) == 0) {
        return 0;
    }
    for (d = 0; d < sh->rank; d++) {
        if (sh->dims[d] > 0 && n > INT64_MAX / 16 / sh->dims[d]) {
            return INT64_MAX / 16;
        }
        n *= sh->dims[d];
    }
    return n;
}

uint64_t tpu_hlo_shape_bytes(const tpu_hlo_shape_t *sh)
{
    uint64_t b = 0;
    int i;

    if (sh->type == TPU_HLO_TYPE_TUPLE) {
        for (i = 0; i < sh->ntuple; i++) {
            b += tpu_hlo_shape_bytes(&sh->tuple[i]);
        }
        return b;
    }
    return ((uint64_t)tpu_hlo_shape_elements(sh) * (uint64_t)tpu_hlo_type_bits(sh->type) + 7) / 8;
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
