/*
 * The HLO parser's cursor, shared by the parser's files (hlo_lex.c, hlo_shape.c,
 * hlo_groups.c, hlo_instr.c, hlo_parse.c): the parser state, the arena that holds
 * everything parsed, and the token readers of hlo_lex.c.  Private to emulator/replay/.
 */
#ifndef TPU_HLO_LEX_H
#define TPU_HLO_LEX_H

#include "tpu/hlo.h"
#include "tpu/status.h"

#include <stddef.h>
#include <stdint.h>

#define MAX_DEPTH     64
#define MAX_INT_VALUE ((int64_t)1 << 62)

typedef struct arena_block {
    struct arena_block *next;
    size_t used, size;
    /* data follows, aligned */
} arena_block_t;

typedef struct arena {
    arena_block_t *head;
} arena_t;

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

/*
 * The cursor never moves past the end of the buffer: every read goes through
 * tpu__hlo_cur() and tpu__hlo_adv(), which return 0 at the end.
 */
static inline int tpu__hlo_cur(const parser_t *p)
{
    return p->pos < p->len ? (unsigned char)p->s[p->pos] : 0;
}

static inline int tpu__hlo_at(const parser_t *p, size_t off)
{
    return p->pos + off < p->len ? (unsigned char)p->s[p->pos + off] : 0;
}

static inline int tpu__hlo_at_end(const parser_t *p)
{
    return p->pos >= p->len;
}

static inline void tpu__hlo_adv(parser_t *p)
{
    if (p->pos < p->len) {
        if (p->s[p->pos] == '\n') {
            p->line++;
            p->line_start = p->pos + 1;
        }
        p->pos++;
    }
}

static inline int tpu__hlo_col_of(const parser_t *p)
{
    return (int)(p->pos - p->line_start) + 1;
}

static inline int tpu__hlo_is_space(int c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static inline int tpu__hlo_is_digit(int c)
{
    return c >= '0' && c <= '9';
}

static inline int tpu__hlo_is_id_start(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static inline int tpu__hlo_is_id_char(int c)
{
    return tpu__hlo_is_id_start(c) || tpu__hlo_is_digit(c) || c == '.' || c == '-';
}

/* Memory of the arena: 16-byte aligned, NULL when the host has none; freed all at once. */
void *tpu__hlo_arena_alloc(arena_t *a, size_t size);
void tpu__hlo_arena_free(arena_t *a);

/* A parse error at the cursor ("file:line:col: message"), TPU_ERR_INVALID. */
tpu_status_t tpu__hlo_fail(parser_t *p, const char *fmt, ...) TPU_PRINTF(2, 3);
/* Out of memory, TPU_ERR_NO_MEMORY. */
tpu_status_t tpu__hlo_oom(parser_t *p);
/* What the cursor is at, for messages: "'abc'" or "the end of the file". */
const char *tpu__hlo_what(const parser_t *p, char *buf, size_t size);

/* Skip whitespace and comments; note "// -----" lines at the start of a line. */
tpu_status_t tpu__hlo_skip_ws(parser_t *p);
/* Length of the identifier at the cursor (after an optional '%'), 0 if none. */
size_t tpu__hlo_ident_len(const parser_t *p, size_t *skip_p);
/* A copy of s[0..n) in the arena, NUL-terminated (NULL: out of memory). */
char *tpu__hlo_dup_range(parser_t *p, const char *s, size_t n);
/* Read an identifier (with or without '%') into the arena. */
tpu_status_t tpu__hlo_read_ident(parser_t *p, const char *role, const char **out_p);
/* Is the word 'w' at the cursor, not followed by an identifier character? */
int tpu__hlo_word_is(const parser_t *p, const char *w);
/* Step over the word 'w' (at the cursor). */
void tpu__hlo_skip_word(parser_t *p, const char *w);
/*
 * After a list item (with *status_p still TPU_OK): skip blanks; at a ',' step over
 * it and return 1, else return 0 (with *status_p the error, if any).
 */
int tpu__hlo_next_item(parser_t *p, tpu_status_t *status_p);
/* An optional keyword 'w' at the cursor: step over it and the blanks after, set '*flag_p'. */
tpu_status_t tpu__hlo_take_word(parser_t *p, const char *w, int *flag_p);
/* Skip blanks, then step over the character 'c' ('context' says where, for messages). */
tpu_status_t tpu__hlo_expect(parser_t *p, int c, const char *context);
/* A decimal integer with an optional sign, bounded. */
tpu_status_t tpu__hlo_read_int(parser_t *p, const char *role, int64_t *v_p);
/* Skip a quoted string ('"' or '\''), escapes respected. */
tpu_status_t tpu__hlo_skip_string(parser_t *p);
/* Read a "..." string (escapes kept as written) into the arena. */
tpu_status_t tpu__hlo_read_string(parser_t *p, const char **out_p);
/* true or false into '*v_p' ('key' names the attribute in messages). */
tpu_status_t tpu__hlo_read_bool(parser_t *p, const char *key, int *v_p);
/* Read 'key =' (blanks around): the key into '*key_p', the cursor on the value. */
tpu_status_t tpu__hlo_read_key(parser_t *p, const char *role, const char *context,
                               const char **key_p);
/*
 * Skip one attribute value (up to a ',' or a newline or a '//' comment or an
 * unmatched closer), or one bracketed group starting at the opener at the cursor;
 * strings and comments respected.
 */
tpu_status_t tpu__hlo_skip_value(parser_t *p);
tpu_status_t tpu__hlo_skip_group(parser_t *p);

/* Make room for one more element of 'size' bytes in '*arr' ('*cap' elements). */
tpu_status_t tpu__hlo_grow(parser_t *p, void **arr, int n, int *cap, size_t size);
/* {a, b, c} -> ints (may be empty). */
/*
 * The string value of 'key="..."' inside [s, s + n) (the text of an attribute
 * already skipped), unescaped into the arena; *out_p NULL when absent.
 */
tpu_status_t tpu__hlo_find_quoted(parser_t *p, const char *s, size_t n, const char *key,
                                  const char **out_p);
tpu_status_t tpu__hlo_read_int_list(parser_t *p, const char *role, tpu_hlo_ints_t *out);

#endif /* TPU_HLO_LEX_H */
