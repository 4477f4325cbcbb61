/*
 * The HLO parser's cursor and tokens (hlo_lex.h): the arena that holds everything
 * parsed, errors at the cursor, whitespace and comments, identifiers, words,
 * integers, strings, values skipped by bracket matching, growable arrays.
 *
 * Values the replay does not need are skipped by bracket matching (strings and
 * comments respected), so newer XLA attributes and opcodes pass through.
 * Everything lives in one arena that tpu_hlo_file_destroy() frees; arrays that
 * grow are copied into a block twice as large (at most twice the final memory).
 */
#include "hlo_lex.h"

#include "alloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define ARENA_BLOCK (64 * 1024)

/* ---------------------------------------------------------------- arena */

#define BLOCK_HDR ((sizeof(arena_block_t) + 15) & ~(size_t)15)

void *tpu__hlo_arena_alloc(arena_t *a, size_t size)
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

void tpu__hlo_arena_free(arena_t *a)
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

tpu_status_t tpu__hlo_fail(parser_t *p, const char *fmt, ...)
{
    char msg[TPU_ERR_MSG_LEN];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return tpu_err_set(p->err, TPU_ERR_INVALID, "%s:%d:%d: %s", p->file, p->line,
                       tpu__hlo_col_of(p), msg);
}

tpu_status_t tpu__hlo_oom(parser_t *p)
{
    return tpu_err_set(p->err, TPU_ERR_NO_MEMORY, "%s: out of memory parsing HLO", p->file);
}

/* What the cursor is at, for messages: "'abc'" or "the end of the file". */
const char *tpu__hlo_what(const parser_t *p, char *buf, size_t size)
{
    size_t i = 0;

    if (tpu__hlo_at_end(p)) {
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


/* Skip whitespace and comments; note "// -----" lines at the start of a line. */
tpu_status_t tpu__hlo_skip_ws(parser_t *p)
{
    for (;;) {
        int c = tpu__hlo_cur(p);

        if (tpu__hlo_is_space(c)) {
            tpu__hlo_adv(p);
        } else if (c == '/' && tpu__hlo_at(p, 1) == '/') {
            if (p->pos == p->line_start && p->pos + 8 <= p->len &&
                memcmp(p->s + p->pos, "// -----", 8) == 0) {
                p->separator = 1;
            }
            while (!tpu__hlo_at_end(p) && tpu__hlo_cur(p) != '\n') {
                tpu__hlo_adv(p);
            }
        } else if (c == '/' && tpu__hlo_at(p, 1) == '*') {
            int line = p->line, col = tpu__hlo_col_of(p);

            tpu__hlo_adv(p);
            tpu__hlo_adv(p);
            while (!tpu__hlo_at_end(p) && !(tpu__hlo_cur(p) == '*' && tpu__hlo_at(p, 1) == '/')) {
                tpu__hlo_adv(p);
            }
            if (tpu__hlo_at_end(p)) {
                return tpu_err_set(p->err, TPU_ERR_INVALID, "%s:%d:%d: unterminated /* comment",
                                   p->file, line, col);
            }
            tpu__hlo_adv(p);
            tpu__hlo_adv(p);
        } else {
            return TPU_OK;
        }
    }
}

/* Length of the identifier at the cursor (after an optional '%'), 0 if none. */
size_t tpu__hlo_ident_len(const parser_t *p, size_t *skip_p)
{
    size_t i = 0, n;

    if (tpu__hlo_cur(p) == '%') {
        i = 1;
    }
    *skip_p = i;
    if (!tpu__hlo_is_id_start(tpu__hlo_at(p, i))) {
        return 0;
    }
    n = i;
    while (p->pos + n < p->len && tpu__hlo_is_id_char((unsigned char)p->s[p->pos + n])) {
        n++;
    }
    return n - i;
}

char *tpu__hlo_dup_range(parser_t *p, const char *s, size_t n)
{
    char *d = tpu__hlo_arena_alloc(p->arena, n + 1);

    if (d != NULL) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

/* Read an identifier (with or without '%') into the arena. */
tpu_status_t tpu__hlo_read_ident(parser_t *p, const char *role, const char **out_p)
{
    size_t skip, n = tpu__hlo_ident_len(p, &skip), i;
    char buf[24];
    char *d;

    if (n == 0) {
        return tpu__hlo_fail(p, "expected %s, found %s", role, tpu__hlo_what(p, buf, sizeof(buf)));
    }
    d = tpu__hlo_dup_range(p, p->s + p->pos + skip, n);
    if (d == NULL) {
        return tpu__hlo_oom(p);
    }
    for (i = 0; i < skip + n; i++) {
        tpu__hlo_adv(p);
    }
    *out_p = d;
    return TPU_OK;
}

/* Is the word 'w' at the cursor, not followed by an identifier character? */
int tpu__hlo_word_is(const parser_t *p, const char *w)
{
    size_t n = strlen(w);

    return p->pos + n <= p->len && memcmp(p->s + p->pos, w, n) == 0 &&
           !tpu__hlo_is_id_char(tpu__hlo_at(p, n));
}

void tpu__hlo_skip_word(parser_t *p, const char *w)
{
    size_t n = strlen(w), i;

    for (i = 0; i < n; i++) {
        tpu__hlo_adv(p);
    }
}

/*
 * After a list item (with *status_p still TPU_OK): skip blanks; at a ',' step over
 * it and return 1, else return 0 (with *status_p the error, if any).
 */
int tpu__hlo_next_item(parser_t *p, tpu_status_t *status_p)
{
    if (*status_p == TPU_OK) {
        *status_p = tpu__hlo_skip_ws(p);
    }
    if (*status_p != TPU_OK || tpu__hlo_cur(p) != ',') {
        return 0;
    }
    tpu__hlo_adv(p);
    return 1;
}

/* An optional keyword 'w' at the cursor: step over it and the blanks after, set '*flag_p'. */
tpu_status_t tpu__hlo_take_word(parser_t *p, const char *w, int *flag_p)
{
    if (!tpu__hlo_word_is(p, w)) {
        return TPU_OK;
    }
    tpu__hlo_skip_word(p, w);
    *flag_p = 1;
    return tpu__hlo_skip_ws(p);
}

tpu_status_t tpu__hlo_expect(parser_t *p, int c, const char *context)
{
    char buf[24];
    tpu_status_t status = tpu__hlo_skip_ws(p);

    if (status != TPU_OK) {
        return status;
    }
    if (tpu__hlo_cur(p) != c || tpu__hlo_at_end(p)) {
        return tpu__hlo_fail(p, "expected '%c' %s, found %s", c, context,
                             tpu__hlo_what(p, buf, sizeof(buf)));
    }
    tpu__hlo_adv(p);
    return TPU_OK;
}

/* A decimal integer with an optional sign, bounded. */
tpu_status_t tpu__hlo_read_int(parser_t *p, const char *role, int64_t *v_p)
{
    int neg = 0;
    int64_t v = 0;
    char buf[24];
    tpu_status_t status = tpu__hlo_skip_ws(p);

    if (status != TPU_OK) {
        return status;
    }
    if (tpu__hlo_cur(p) == '-' || tpu__hlo_cur(p) == '+') {
        neg = tpu__hlo_cur(p) == '-';
        tpu__hlo_adv(p);
    }
    if (!tpu__hlo_is_digit(tpu__hlo_cur(p))) {
        return tpu__hlo_fail(p, "expected %s (an integer), found %s", role,
                             tpu__hlo_what(p, buf, sizeof(buf)));
    }
    while (tpu__hlo_is_digit(tpu__hlo_cur(p))) {
        if (v > (MAX_INT_VALUE - (tpu__hlo_cur(p) - '0')) / 10) {
            return tpu__hlo_fail(p, "%s is too large", role);
        }
        v = v * 10 + (tpu__hlo_cur(p) - '0');
        tpu__hlo_adv(p);
    }
    *v_p = neg ? -v : v;
    return TPU_OK;
}

/* Skip a quoted string ('"' or '\''), escapes respected. */
tpu_status_t tpu__hlo_skip_string(parser_t *p)
{
    int q = tpu__hlo_cur(p), line = p->line, col = tpu__hlo_col_of(p);

    tpu__hlo_adv(p);
    while (!tpu__hlo_at_end(p) && tpu__hlo_cur(p) != q) {
        if (tpu__hlo_cur(p) == '\\') {
            tpu__hlo_adv(p);
        }
        tpu__hlo_adv(p);
    }
    if (tpu__hlo_at_end(p)) {
        return tpu_err_set(p->err, TPU_ERR_INVALID, "%s:%d:%d: unterminated string", p->file, line,
                           col);
    }
    tpu__hlo_adv(p);
    return TPU_OK;
}

/* Read a "..." string (escapes kept as written) into the arena. */
tpu_status_t tpu__hlo_read_string(parser_t *p, const char **out_p)
{
    size_t start;
    tpu_status_t status;
    char buf[24];

    if (tpu__hlo_cur(p) != '"') {
        return tpu__hlo_fail(p, "expected a string, found %s", tpu__hlo_what(p, buf, sizeof(buf)));
    }
    start = p->pos + 1;
    status = tpu__hlo_skip_string(p);
    if (status != TPU_OK) {
        return status;
    }
    *out_p = tpu__hlo_dup_range(p, p->s + start, p->pos - 1 - start);
    return *out_p != NULL ? TPU_OK : tpu__hlo_oom(p);
}

/*
 * Skip balanced brackets, strings and comments: with 'value', one attribute value,
 * up to a ',' or a newline or a '//' comment or an unmatched closer at depth 0;
 * else one bracketed group starting at the opener at the cursor.
 */
static tpu_status_t skip_balanced(parser_t *p, int value)
{
    int depth = 0, line = p->line, col = tpu__hlo_col_of(p);
    tpu_status_t status;

    while (!tpu__hlo_at_end(p)) {
        int c = tpu__hlo_cur(p);

        if (value && depth == 0 &&
            (c == ',' || c == '\n' || c == ')' || c == '}' || c == ']' ||
             (c == '/' && tpu__hlo_at(p, 1) == '/'))) {
            return TPU_OK;
        }
        if (c == '"' || c == '\'' ||
            (c == '/' && (tpu__hlo_at(p, 1) == '*' || tpu__hlo_at(p, 1) == '/'))) {
            status = c == '/' ? tpu__hlo_skip_ws(p) : tpu__hlo_skip_string(p);
            if (status != TPU_OK) {
                return status;
            }
            continue;
        }
        if (c == '{' || c == '(' || c == '[') {
            if (++depth > MAX_DEPTH) {
                return tpu__hlo_fail(p, "brackets nested deeper than %d", MAX_DEPTH);
            }
        } else if (c == '}' || c == ')' || c == ']') {
            depth--;
        }
        tpu__hlo_adv(p);
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

tpu_status_t tpu__hlo_skip_value(parser_t *p)
{
    return skip_balanced(p, 1);
}

tpu_status_t tpu__hlo_skip_group(parser_t *p)
{
    return skip_balanced(p, 0);
}

tpu_status_t tpu__hlo_read_bool(parser_t *p, const char *key, int *v_p)
{
    if (tpu__hlo_word_is(p, "true")) {
        tpu__hlo_skip_word(p, "true");
        *v_p = 1;
        return TPU_OK;
    }
    if (tpu__hlo_word_is(p, "false")) {
        tpu__hlo_skip_word(p, "false");
        *v_p = 0;
        return TPU_OK;
    }
    return tpu__hlo_fail(p, "%s takes true or false", key);
}

/* Read 'key =' (blanks around): the key into '*key_p', the cursor on the value. */
tpu_status_t tpu__hlo_read_key(parser_t *p, const char *role, const char *context,
                               const char **key_p)
{
    tpu_status_t status = tpu__hlo_skip_ws(p);

    if (status == TPU_OK) {
        status = tpu__hlo_read_ident(p, role, key_p);
    }
    if (status == TPU_OK) {
        status = tpu__hlo_expect(p, '=', context);
    }
    return status == TPU_OK ? tpu__hlo_skip_ws(p) : status;
}

/* ---------------------------------------------------------------- growable arrays */

/* Make room for one more element of 'size' bytes in '*arr' ('*cap' elements). */
tpu_status_t tpu__hlo_grow(parser_t *p, void **arr, int n, int *cap, size_t size)
{
    void *na;
    int ncap;

    if (n < *cap) {
        return TPU_OK;
    }
    if (n >= (1 << 28)) {
        return tpu__hlo_fail(p, "too many elements in one list");
    }
    ncap = *cap ? *cap * 2 : 8;
    na = tpu__hlo_arena_alloc(p->arena, (size_t)ncap * size);
    if (na == NULL) {
        return tpu__hlo_oom(p);
    }
    if (n > 0) {
        memcpy(na, *arr, (size_t)n * size);
    }
    *arr = na;
    *cap = ncap;
    return TPU_OK;
}

/* {a, b, c} -> ints (may be empty). */
tpu_status_t tpu__hlo_read_int_list(parser_t *p, const char *role, tpu_hlo_ints_t *out)
{
    tpu_status_t status;
    int cap = 0;
    int64_t v;

    out->n = 0;
    out->v = NULL;
    status = tpu__hlo_expect(p, '{', role);
    if (status != TPU_OK) {
        return status;
    }
    status = tpu__hlo_skip_ws(p);
    if (status != TPU_OK) {
        return status;
    }
    if (tpu__hlo_cur(p) == '}') {
        tpu__hlo_adv(p);
        return TPU_OK;
    }
    for (;;) {
        status = tpu__hlo_read_int(p, role, &v);
        if (status == TPU_OK) {
            status = tpu__hlo_grow(p, (void **)&out->v, out->n, &cap, sizeof(int64_t));
        }
        if (status != TPU_OK) {
            return status;
        }
        out->v[out->n++] = v;
        status = tpu__hlo_skip_ws(p);
        if (status != TPU_OK) {
            return status;
        }
        if (tpu__hlo_cur(p) == ',') {
            tpu__hlo_adv(p);
            continue;
        }
        return tpu__hlo_expect(p, '}', role);
    }
}

tpu_status_t tpu__hlo_find_quoted(parser_t *p, const char *s, size_t n, const char *key,
                                  const char **out_p)
{
    size_t klen = strlen(key), i, j, k;
    char *d;

    *out_p = NULL;
    for (i = 0; i + klen + 2 <= n; i++) {
        if (memcmp(s + i, key, klen) != 0 || s[i + klen] != '=' || s[i + klen + 1] != '"' ||
            (i > 0 && tpu__hlo_is_id_char((unsigned char)s[i - 1]))) {
            continue;
        }
        i += klen + 2;
        for (j = i; j < n && s[j] != '"'; j++) {
            j += s[j] == '\\';
        }
        if (j > n) {
            j = n;
        }
        d = tpu__hlo_arena_alloc(p->arena, j - i + 1);
        if (d == NULL) {
            return tpu__hlo_oom(p);
        }
        for (k = 0; i < j; i++) {
            if (s[i] == '\\' && i + 1 < j) {
                i++;
            }
            d[k++] = s[i];
        }
        d[k] = '\0';
        *out_p = d;
        return TPU_OK;
    }
    return TPU_OK;
}
