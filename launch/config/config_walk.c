/*
 * The walk of the pod file's YAML node tree (see config_yaml.c): errors at a
 * node's position ("name:line:col: ..."), the typed getters (text, string,
 * number, byte count, count, index, dims), the generic fields of a key table, the
 * "did you mean" of an unknown key, and walk_map, which checks a mapping against
 * its table and hands each value to its getter or to the caller's handler.
 */
#include "config_walk.h"

#include "alloc.h"
#include "units.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The longest key the "did you mean" search compares. */
#define MAX_KEY_LEN 64


/* Format into 'small', or into a heap string when it does not fit (falling back to the
 * cut 'small' when out of memory).  The caller frees the result when it is not 'small'. */
static char *vformat(char *small, size_t cap, const char *fmt, va_list ap)
{
    char *msg = small;
    va_list again;
    int len;

    va_copy(again, ap);
    len = vsnprintf(small, cap, fmt, ap);
    if (len >= (int)cap && (msg = tpu__malloc((size_t)len + 1)) != NULL) {
        vsnprintf(msg, (size_t)len + 1, fmt, again);
    } else if (msg == NULL) {
        msg = small;
    }
    va_end(again);
    return msg;
}

/*
 * Record an error whose message is formatted from 'fmt'; tpu_err_set() writes
 * every control character as \xNN, so that text echoed from the file cannot
 * break the message into lines.
 */
tpu_status_t app_config_report(tpu_err_t *err, tpu_status_t status, const char *fmt, ...)
{
    char small[1024], *msg;
    va_list ap;

    /* Whole, so that tpu_err_set() can shorten a long echoed value and keep the reason. */
    va_start(ap, fmt);
    msg = vformat(small, sizeof(small), fmt, ap);
    va_end(ap);
    status = tpu_err_set(err, status, "%s", msg);
    if (msg != small) {
        tpu__free(msg);
    }
    return status;
}

/* Record TPU_ERR_CONFIG at the position of 'node': "name:line:col: <fmt>". */
tpu_status_t app_config_fail_at(load_ctx_t *c, const yaml_node_t *node, const char *fmt, ...)
{
    char small[1024], *msg;
    va_list ap;
    tpu_status_t status;

    va_start(ap, fmt);
    msg = vformat(small, sizeof(small), fmt, ap);
    va_end(ap);
    status = app_config_report(c->err, TPU_ERR_CONFIG, "%s:%zu:%zu: %s", c->name,
                               node->start_mark.line + 1, node->start_mark.column + 1, msg);
    if (msg != small) {
        tpu__free(msg);
    }
    return status;
}

const yaml_node_t *app_config_node_at(load_ctx_t *c, int index)
{
    return yaml_document_get_node(c->doc, index);
}

/* The text of a scalar node (NULL for a list or a mapping). */
const char *app_config_text_of(const yaml_node_t *n)
{
    return n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* How a node that is not what was expected is named in a message. */
const char *app_config_kind_name(const yaml_node_t *n)
{
    switch (n->type) {
    case YAML_SEQUENCE_NODE:
        return "a list";
    case YAML_MAPPING_NODE:
        return "a mapping";
    default:
        return "a scalar";
    }
}

/* Is 'n' YAML's null: an empty or '~'/'null' plain scalar? */
int app_config_is_null(const yaml_node_t *n)
{
    const char *s = app_config_text_of(n);

    return s != NULL && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
           (strcmp(s, "") == 0 || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 ||
            strcmp(s, "Null") == 0 || strcmp(s, "NULL") == 0);
}

/*
 * The text of the scalar 'val' of key 'key' into '*text_p'.  'what' names the
 * expected value for the message when 'val' is a list, a mapping or null.
 */
tpu_status_t app_config_get_text(load_ctx_t *c, const char *key, const yaml_node_t *val,
                                 const char *what, const char **text_p)
{
    const char *s = app_config_text_of(val);

    *text_p = ""; /* set on every path (the compiler cannot see fail_at's status) */
    if (s == NULL) {
        return app_config_fail_at(c, val, "'%s' takes %s, not %s", key, what,
                                  app_config_kind_name(val));
    }
    if (app_config_is_null(val)) {
        return app_config_fail_at(c, val, "'%s' has no value (it takes %s)", key, what);
    }
    if (strlen(s) != val->data.scalar.length) {
        return app_config_fail_at(c, val, "'%s' contains a NUL character", key);
    }
    *text_p = s;
    return TPU_OK;
}

/* The same for a number: a plain scalar, so that "2" (a string in YAML) is refused. */
tpu_status_t app_config_get_plain(load_ctx_t *c, const char *key, const yaml_node_t *val,
                                  const char *what, const char **text_p)
{
    tpu_status_t status = app_config_get_text(c, key, val, what, text_p);

    if (status == TPU_OK && val->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) {
        status = app_config_fail_at(c, val, "'%s' takes %s, not the quoted string '%s'", key, what,
                                    *text_p);
    }
    return status;
}

/* A string value that fits a APP_CONFIG_STR field. */
tpu_status_t app_config_get_string(load_ctx_t *c, const char *key, const yaml_node_t *val,
                                   const char *what, char out[APP_CONFIG_STR])
{
    const char *s;
    tpu_status_t status = app_config_get_text(c, key, val, what, &s);

    if (status != TPU_OK) {
        return status;
    }
    if (strlen(s) >= APP_CONFIG_STR) {
        return app_config_fail_at(c, val, "'%s' is too long (at most %d characters)", key,
                                  APP_CONFIG_STR - 1);
    }
    memcpy(out, s, strlen(s) + 1);
    return TPU_OK;
}

/*
 * The range a number key takes, the same as its flag's where it has one: the
 * model's products and quotients (bytes / bandwidth, hops x latency) stay finite
 * and above the smallest normal double.  Keys not listed are only positive.
 */
static tpu_status_t in_range(load_ctx_t *c, const char *key, const yaml_node_t *val,
                             field_kind_t kind, double x, const char *s)
{
    size_t len = strlen(key);
    double lo = 0, hi = 0;
    const char *unit = "";

    if ((len > 3 && strcmp(key + len - 3, "_bw") == 0) ||
        (len > 10 && strcmp(key + len - 10, "_bandwidth") == 0)) {
        lo = 1e3, hi = 1e15, unit = "bytes/s";
    } else if (kind == KIND_MICROS) {
        lo = 0, hi = 1e6, unit = "microseconds";
    } else if (strstr(key, "flops") != NULL || strstr(key, "_ops") != NULL) {
        lo = 1e3, hi = 1e18, unit = "operations/s";
    } else if (kind == KIND_BYTES) {
        lo = 1, hi = 0x1p50, unit = "bytes";
    }
    if (hi > 0 && (x < lo || x > hi)) {
        return app_config_fail_at(c, val, "'%s' must be %g to %g %s, got %s", key, lo, hi, unit, s);
    }
    return TPU_OK;
}

/*
 * A number of kind 'kind' (KIND_NUMBER, KIND_BYTES or KIND_MICROS): plain
 * decimal in strtod syntax (no hex, inf or nan), or for KIND_BYTES a size.
 */
tpu_status_t app_config_get_number(load_ctx_t *c, const char *key, const yaml_node_t *val,
                                   field_kind_t kind, double *out_p)
{
    const char *s;
    char *end;
    double x;
    tpu_status_t status;

    status = app_config_get_plain(c, key, val, "a number", &s);
    if (status != TPU_OK) {
        return status;
    }
    if (strspn(s, "0123456789.eE+-") != strlen(s)) {
        unsigned long long bytes;
        tpu_err_t e = {0};

        if (kind != KIND_BYTES) {
            return app_config_fail_at(c, val, "'%s' takes a number such as 9e10, got '%s'%s", key,
                                      s,
                                      strpbrk(s, "KMGkmg") != NULL && isdigit((unsigned char)s[0])
                                          ? " (K, M and G suffixes are for byte counts)"
                                          : "");
        }
        if (app_parse_size(s, &bytes, &e) != TPU_OK) {
            return app_config_fail_at(c, val, "'%s': %s", key, e.msg);
        }
        x = (double)bytes;
    } else {
        errno = 0;
        x = strtod(s, &end);
        if (end == s || *end != '\0') {
            return app_config_fail_at(c, val, "'%s' takes a number such as 9e10, got '%s'", key, s);
        }
        if (errno == ERANGE && fabs(x) > 1) {
            return app_config_fail_at(c, val, "'%s' is out of range: %s", key, s);
        }
    }
    if (kind == KIND_MICROS ? x < 0 : !(x > 0)) {
        return app_config_fail_at(c, val, "'%s' must be %s, got %s", key,
                                  kind == KIND_MICROS ? "zero or more" : "positive", s);
    }
    status = in_range(c, key, val, kind, x, s);
    if (status != TPU_OK) {
        return status;
    }
    *out_p = kind == KIND_MICROS ? x * 1e-6 : x;
    return TPU_OK;
}

/* A whole number in [1, 'max'] from the text 's' of 'val' (already a plain scalar). */
static tpu_status_t count_of(load_ctx_t *c, const char *key, const yaml_node_t *val, const char *s,
                             long max, int *out_p)
{
    const char *p = s + (*s == '+' || *s == '-');
    long v = 0;

    if (*p == '\0' || strspn(p, "0123456789") != strlen(p)) {
        return app_config_fail_at(c, val, "'%s' takes a whole number, got '%s'", key, s);
    }
    for (; *p != '\0'; p++) {
        if (v <= max) {
            v = v * 10 + (*p - '0');
        }
    }
    if (*s == '-' || v == 0) {
        return app_config_fail_at(c, val, "'%s' must be a positive whole number, got %s", key, s);
    }
    if (v > max) {
        return app_config_fail_at(c, val, "'%s' must be at most %ld, got %s", key, max, s);
    }
    *out_p = (int)v;
    return TPU_OK;
}

tpu_status_t app_config_get_count(load_ctx_t *c, const char *key, const yaml_node_t *val, long max,
                                  int *out_p)
{
    const char *s;
    tpu_status_t status = app_config_get_plain(c, key, val, "a whole number", &s);

    if (status != TPU_OK) {
        return status;
    }
    return count_of(c, key, val, s, max, out_p);
}

/* A list of 1 to TPU_MAX_AXES counts, such as [2, 2, 1]; missing entries are 1. */
static tpu_status_t get_dims(load_ctx_t *c, const char *key, const yaml_node_t *val, long max,
                             int dims[TPU_MAX_AXES])
{
    int out[TPU_MAX_AXES] = {1, 1, 1};
    yaml_node_item_t *it;
    int n = 0;
    tpu_status_t status;

    if (val->type != YAML_SEQUENCE_NODE) {
        return app_config_fail_at(c, val, "'%s' takes a list such as [2, 2, 1], not %s", key,
                                  app_config_is_null(val) ? "an empty value"
                                                          : app_config_kind_name(val));
    }
    for (it = val->data.sequence.items.start; it < val->data.sequence.items.top; it++) {
        const yaml_node_t *item = app_config_node_at(c, *it);

        if (n == TPU_MAX_AXES) {
            return app_config_fail_at(c, item, "'%s' has at most %d entries", key, TPU_MAX_AXES);
        }
        status = app_config_get_count(c, key, item, max, &out[n++]);
        if (status != TPU_OK) {
            return status;
        }
    }
    if (n == 0) {
        return app_config_fail_at(c, val, "'%s' is an empty list", key);
    }
    memcpy(dims, out, sizeof(out));
    return TPU_OK;
}

/* Fill the field 'f' of the struct at 'obj' from 'val' (every kind but KIND_OTHER). */
static tpu_status_t set_field(load_ctx_t *c, const field_t *f, const yaml_node_t *val, void *obj)
{
    char *dst = (char *)obj + f->offset;

    switch (f->kind) {
    case KIND_NUMBER:
    case KIND_BYTES:
    case KIND_MICROS:
        return app_config_get_number(c, f->key, val, f->kind, (double *)(void *)dst);
    case KIND_COUNT:
        return app_config_get_count(c, f->key, val, f->max, (int *)(void *)dst);
    case KIND_DIMS:
        return get_dims(c, f->key, val, f->max, (int *)(void *)dst);
    default:
        return app_config_fail_at(c, val, "'%s' has no handler", f->key);
    }
}

/* Levenshtein distance between 'a' and 'b' (MAX_KEY_LEN + 1 when either is longer). */
static int edit_distance(const char *a, const char *b)
{
    int row[MAX_KEY_LEN + 1];
    int la = (int)strlen(a), lb = (int)strlen(b), i, j;

    if (la > MAX_KEY_LEN || lb > MAX_KEY_LEN) {
        return MAX_KEY_LEN + 1;
    }
    for (j = 0; j <= lb; j++) {
        row[j] = j;
    }
    for (i = 1; i <= la; i++) {
        int diag = row[0];

        row[0] = i;
        for (j = 1; j <= lb; j++) {
            int up = row[j];
            int best = diag + (a[i - 1] != b[j - 1]);

            if (up + 1 < best) {
                best = up + 1;
            }
            if (row[j - 1] + 1 < best) {
                best = row[j - 1] + 1;
            }
            diag = up;
            row[j] = best;
        }
    }
    return row[lb];
}

/*
 * The error for the key 'k' (node 'key') that 'fields' does not know: the closest
 * known key within distance 2 as a suggestion, else the list of known keys.
 * 'where' is "" at the top level, else " in 'chip'".
 */
static tpu_status_t unknown_key(load_ctx_t *c, const yaml_node_t *key, const char *k,
                                const field_t *fields, const char *where)
{
    char known[TPU_ERR_MSG_LEN / 2];
    const char *best = NULL;
    int best_d = 3;
    size_t used = 0;
    int i;

    known[0] = '\0';
    for (i = 0; fields[i].key != NULL; i++) {
        int d = edit_distance(k, fields[i].key);

        if (d < best_d) {
            best_d = d;
            best = fields[i].key;
        }
        if (used < sizeof(known)) {
            used += (size_t)snprintf(known + used, sizeof(known) - used, "%s%s", i ? ", " : "",
                                     fields[i].key);
        }
    }
    if (best != NULL) {
        return app_config_fail_at(c, key, "unknown key '%s'%s (did you mean '%s'?)", k, where,
                                  best);
    }
    return app_config_fail_at(c, key, "unknown key '%s'%s (known keys: %s)", k, where, known);
}

/*
 * Walk the mapping 'map' whose keys must come from 'fields': each key known and
 * named once; values of the generic kinds are stored into 'obj', the others go
 * to 'fn'.  'what' names the mapping in messages ("the file", "'chip'").
 */
tpu_status_t app_config_walk_map(load_ctx_t *c, const yaml_node_t *map, const char *what,
                                 const field_t *fields, pair_fn_t fn, void *obj)
{
    const yaml_node_t *seen[32] = {NULL};
    char where[64] = "";
    yaml_node_pair_t *p;
    tpu_status_t status;

    if (map->type != YAML_MAPPING_NODE) {
        return app_config_fail_at(c, map, "%s must be a mapping of keys to values, not %s", what,
                                  app_config_is_null(map) ? "an empty value"
                                                          : app_config_kind_name(map));
    }
    if (fields != app_config_root_fields) {
        snprintf(where, sizeof(where), " in %s", what);
    }
    for (p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        const yaml_node_t *key = app_config_node_at(c, p->key);
        const yaml_node_t *val = app_config_node_at(c, p->value);
        const char *k = app_config_text_of(key);
        int i;

        if (k == NULL || strlen(k) != key->data.scalar.length) {
            return app_config_fail_at(c, key, "the keys of %s must be plain words, not %s", what,
                                      k == NULL ? app_config_kind_name(key)
                                                : "text with a NUL character");
        }
        for (i = 0; fields[i].key != NULL && strcmp(fields[i].key, k) != 0; i++) {
        }
        if (fields[i].key == NULL) {
            return unknown_key(c, key, k, fields, where);
        }
        if (seen[i] != NULL) {
            return app_config_fail_at(c, key, "duplicate key '%s'%s (first at line %zu)", k, where,
                                      seen[i]->start_mark.line + 1);
        }
        seen[i] = key;
        status = fields[i].kind == KIND_OTHER ? fn(c, &fields[i], key, val, obj)
                                              : set_field(c, &fields[i], val, obj);
        if (status != TPU_OK) {
            return status;
        }
    }
    return TPU_OK;
}

/* "name:line:col" of 'node' into 'out'. */
void app_config_mark(const load_ctx_t *c, const yaml_node_t *node, char *out, size_t len)
{
    snprintf(out, len, "%s:%zu:%zu", c->name, node->start_mark.line + 1,
             node->start_mark.column + 1);
}

/* A whole number from 0 to 'max' (a chip id, a coordinate, a host index). */
tpu_status_t app_config_get_index(load_ctx_t *c, const char *key, const yaml_node_t *val, long max,
                                  int *out_p)
{
    const char *s;
    long v = 0;
    tpu_status_t status = app_config_get_plain(c, key, val, "a whole number", &s);

    if (status != TPU_OK) {
        return status;
    }
    if (*s == '\0' || strspn(s, "0123456789") != strlen(s)) {
        return app_config_fail_at(c, val, "'%s' takes a whole number from 0, got '%s'", key, s);
    }
    for (; *s != '\0'; s++) {
        if (v <= max) {
            v = v * 10 + (*s - '0');
        }
    }
    if (v > max) {
        return app_config_fail_at(c, val, "'%s' must be at most %ld", key, max);
    }
    *out_p = (int)v;
    return TPU_OK;
}
