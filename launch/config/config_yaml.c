/*
 * The pod description in YAML (see config.h), and the size parser.
 *
 * The file is read whole and handed to libyaml's document API, which builds the
 * node tree of the one document the file must hold.  The tree is then walked
 * against three key tables (the top level, a custom 'chip:' and 'links:'), so
 * the schema lives in one place per mapping.  The walk is strict:
 *
 *   - every key must be in the table (an unknown key gets the closest known one,
 *     within an edit distance of 2, as a suggestion) and appear once;
 *   - every value must have its type: a number is a plain (unquoted) scalar in C
 *     strtod syntax, a byte count also takes K, M, G suffixes (tpu_parse_size),
 *     a count is a positive whole number, a string is any scalar, and a list or
 *     a mapping where a scalar belongs is an error; null values are errors;
 *   - topology, wrap and mesh strings are checked here already, so that their
 *     errors carry the file position.
 *
 * Every error is TPU_ERR_CONFIG (TPU_ERR_NO_MEMORY when libyaml or the reader
 * runs out of memory) with one message "name:line:col: what is wrong", where
 * line and col are 1-based and point at the key or the value at fault; control
 * characters echoed from the file are escaped as \xNN and a long value is cut
 * (tpu_err_set), so the message stays one line and keeps its reason.  'cfg' is written only when
 * the whole file is good.
 *
 * Aliases are allowed (libyaml shares the node); the walk never descends more
 * than four levels (top, faults, a fault, its chip coordinates), so no document
 * makes it expensive.
 */
#include "tpu/topo.h"

#include "alloc.h"
#include "config.h"
#include "file.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <yaml.h>

/* A config file is a few hundred bytes; anything past this is not one. */
#define MAX_FILE_BYTES (1u << 20)
/* Deepest nesting of flow collections ([ ] and { }) a file may have; a config needs 3. */
#define MAX_FLOW_DEPTH 64
/* The longest key the "did you mean" search compares. */
#define MAX_KEY_LEN 64
/* Upper bound for counts without a natural one (mxu_dim, tensorcores, ...). */
#define MAX_COUNT 1000000

typedef enum {
    KIND_NUMBER, /* double > 0 */
    KIND_BYTES,  /* double > 0, or a size with a K, M or G suffix */
    KIND_MICROS, /* double >= 0 given in microseconds, stored in seconds */
    KIND_COUNT,  /* int in [1, max] */
    KIND_DIMS,   /* int[TPU_MAX_AXES] from a list of 1 to 3 entries in [1, max]; the rest 1 */
    KIND_OTHER   /* handled by the caller */
} field_kind_t;

/* One key of a mapping: its name, its type and where its value goes. */
typedef struct field {
    const char *key;
    field_kind_t kind;
    size_t offset; /* into the struct the mapping fills (not for KIND_OTHER) */
    long max;      /* KIND_COUNT and KIND_DIMS */
} field_t;

typedef struct load_ctx {
    yaml_document_t *doc;
    const char *name; /* the path, for messages */
    tpu_err_t *err;
} load_ctx_t;

/* The handler of a key the generic code does not fill: 'obj' is the struct being filled. */
typedef tpu_status_t (*pair_fn_t)(load_ctx_t *c, const field_t *f, const yaml_node_t *key,
                                  const yaml_node_t *val, void *obj);

/* The top level fills a root_state_t, not a struct the offsets could name: all KIND_OTHER. */
static const field_t root_fields[] = {
    {"chip", KIND_OTHER, 0, 0},   {"topology", KIND_OTHER, 0, 0},
    {"wrap", KIND_OTHER, 0, 0},   {"slices", KIND_OTHER, 0, TPU_MAX_SLICES},
    {"mesh", KIND_OTHER, 0, 0},   {"links", KIND_OTHER, 0, 0},
    {"faults", KIND_OTHER, 0, 0}, {NULL, KIND_OTHER, 0, 0},
};

/* One item of 'faults:'; which keys a kind takes is tpu_fault_key_use()'s. */
static const field_t fault_fields[] = {
    {"kind", KIND_OTHER, 0, 0}, {"chip", KIND_OTHER, 0, 0},   {"dir", KIND_OTHER, 0, 0},
    {"both", KIND_OTHER, 0, 0}, {"factor", KIND_OTHER, 0, 0}, {"host", KIND_OTHER, 0, 0},
    {NULL, KIND_OTHER, 0, 0},
};

static const field_t chip_fields[] = {
    {"base", KIND_OTHER, 0, 0},
    {"name", KIND_OTHER, 0, 0},
    {"bf16_flops", KIND_NUMBER, offsetof(tpu_chip_spec_t, bf16_flops), 0},
    {"int8_ops", KIND_NUMBER, offsetof(tpu_chip_spec_t, int8_ops), 0},
    {"f32_flops", KIND_NUMBER, offsetof(tpu_chip_spec_t, f32_flops), 0},
    {"vpu_flops", KIND_NUMBER, offsetof(tpu_chip_spec_t, vpu_flops), 0},
    {"hbm_bytes", KIND_BYTES, offsetof(tpu_chip_spec_t, hbm_bytes), 0},
    {"hbm_bw", KIND_NUMBER, offsetof(tpu_chip_spec_t, hbm_bw), 0},
    {"vmem_bytes", KIND_BYTES, offsetof(tpu_chip_spec_t, vmem_bytes), 0},
    {"mxu_dim", KIND_COUNT, offsetof(tpu_chip_spec_t, mxu_dim), MAX_COUNT},
    {"mxu_count", KIND_COUNT, offsetof(tpu_chip_spec_t, mxu_count), MAX_COUNT},
    {"tensorcores", KIND_COUNT, offsetof(tpu_chip_spec_t, tensorcores), MAX_COUNT},
    {"ici_bw", KIND_NUMBER, offsetof(tpu_chip_spec_t, ici_bw), 0},
    {"ici_latency_us", KIND_MICROS, offsetof(tpu_chip_spec_t, ici_latency), 0},
    {"ici_axes", KIND_COUNT, offsetof(tpu_chip_spec_t, ici_axes), TPU_MAX_AXES},
    {"max_pod", KIND_DIMS, offsetof(tpu_chip_spec_t, max_pod), TPU_MAX_DIM},
    {"host_dims", KIND_DIMS, offsetof(tpu_chip_spec_t, host_dims), TPU_MAX_DIM},
    {"dcn_bw", KIND_NUMBER, offsetof(tpu_chip_spec_t, dcn_bw), 0},
    {"dcn_latency_us", KIND_MICROS, offsetof(tpu_chip_spec_t, dcn_latency), 0},
    {"msg_cost_us", KIND_MICROS, offsetof(tpu_chip_spec_t, msg_cost), 0},
    {"pcie_bw", KIND_NUMBER, offsetof(tpu_chip_spec_t, pcie_bw), 0},
    {"nic_bw", KIND_NUMBER, offsetof(tpu_chip_spec_t, nic_bw), 0},
    {"reduce_bw", KIND_NUMBER, offsetof(tpu_chip_spec_t, reduce_bw), 0},
    {"wrap_rule", KIND_OTHER, 0, 0},
    {NULL, KIND_OTHER, 0, 0},
};

static const field_t link_fields[] = {
    {"ici_bandwidth", KIND_NUMBER, offsetof(tpu_config_t, ici_bw), 0},
    {"ici_latency_us", KIND_MICROS, offsetof(tpu_config_t, ici_latency), 0},
    {"dcn_bandwidth", KIND_NUMBER, offsetof(tpu_config_t, dcn_bw), 0},
    {"dcn_latency_us", KIND_MICROS, offsetof(tpu_config_t, dcn_latency), 0},
    {NULL, KIND_OTHER, 0, 0},
};

/*
 * Record an error whose message is formatted from 'fmt', with every control
 * character replaced by '?' so that text echoed from the file cannot break the
 * message into lines.
 */
static tpu_status_t report(tpu_err_t *err, tpu_status_t status, const char *fmt, ...)
    TPU_PRINTF(3, 4);

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

static tpu_status_t report(tpu_err_t *err, tpu_status_t status, const char *fmt, ...)
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
static tpu_status_t fail_at(load_ctx_t *c, const yaml_node_t *node, const char *fmt, ...)
    TPU_PRINTF(3, 4);

static tpu_status_t fail_at(load_ctx_t *c, const yaml_node_t *node, const char *fmt, ...)
{
    char small[1024], *msg;
    va_list ap;
    tpu_status_t status;

    va_start(ap, fmt);
    msg = vformat(small, sizeof(small), fmt, ap);
    va_end(ap);
    status = report(c->err, TPU_ERR_CONFIG, "%s:%zu:%zu: %s", c->name, node->start_mark.line + 1,
                    node->start_mark.column + 1, msg);
    if (msg != small) {
        tpu__free(msg);
    }
    return status;
}

static const yaml_node_t *node_at(load_ctx_t *c, int index)
{
    return yaml_document_get_node(c->doc, index);
}

/* The text of a scalar node (NULL for a list or a mapping). */
static const char *text_of(const yaml_node_t *n)
{
    return n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* How a node that is not what was expected is named in a message. */
static const char *kind_name(const yaml_node_t *n)
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
static int is_null(const yaml_node_t *n)
{
    const char *s = text_of(n);

    return s != NULL && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
           (strcmp(s, "") == 0 || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 ||
            strcmp(s, "Null") == 0 || strcmp(s, "NULL") == 0);
}

/*
 * The text of the scalar 'val' of key 'key' into '*text_p'.  'what' names the
 * expected value for the message when 'val' is a list, a mapping or null.
 */
static tpu_status_t get_text(load_ctx_t *c, const char *key, const yaml_node_t *val,
                             const char *what, const char **text_p)
{
    const char *s = text_of(val);

    *text_p = ""; /* set on every path (the compiler cannot see fail_at's status) */
    if (s == NULL) {
        return fail_at(c, val, "'%s' takes %s, not %s", key, what, kind_name(val));
    }
    if (is_null(val)) {
        return fail_at(c, val, "'%s' has no value (it takes %s)", key, what);
    }
    if (strlen(s) != val->data.scalar.length) {
        return fail_at(c, val, "'%s' contains a NUL character", key);
    }
    *text_p = s;
    return TPU_OK;
}

/* The same for a number: a plain scalar, so that "2" (a string in YAML) is refused. */
static tpu_status_t get_plain(load_ctx_t *c, const char *key, const yaml_node_t *val,
                              const char *what, const char **text_p)
{
    tpu_status_t status = get_text(c, key, val, what, text_p);

    if (status == TPU_OK && val->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) {
        status = fail_at(c, val, "'%s' takes %s, not the quoted string '%s'", key, what, *text_p);
    }
    return status;
}

/* A string value that fits a TPU_CONFIG_STR field. */
static tpu_status_t get_string(load_ctx_t *c, const char *key, const yaml_node_t *val,
                               const char *what, char out[TPU_CONFIG_STR])
{
    const char *s;
    tpu_status_t status = get_text(c, key, val, what, &s);

    if (status != TPU_OK) {
        return status;
    }
    if (strlen(s) >= TPU_CONFIG_STR) {
        return fail_at(c, val, "'%s' is too long (at most %d characters)", key, TPU_CONFIG_STR - 1);
    }
    memcpy(out, s, strlen(s) + 1);
    return TPU_OK;
}

/*
 * A number of kind 'kind' (KIND_NUMBER, KIND_BYTES or KIND_MICROS): plain
 * decimal in strtod syntax (no hex, inf or nan), or for KIND_BYTES a size.
 */
static tpu_status_t get_number(load_ctx_t *c, const char *key, const yaml_node_t *val,
                               field_kind_t kind, double *out_p)
{
    const char *s;
    char *end;
    double x;
    tpu_status_t status;

    status = get_plain(c, key, val, "a number", &s);
    if (status != TPU_OK) {
        return status;
    }
    if (strspn(s, "0123456789.eE+-") != strlen(s)) {
        unsigned long long bytes;
        tpu_err_t e = {0};

        if (kind != KIND_BYTES) {
            return fail_at(c, val, "'%s' takes a number such as 9e10, got '%s'%s", key, s,
                           strpbrk(s, "KMGkmg") != NULL && isdigit((unsigned char)s[0])
                               ? " (K, M and G suffixes are for byte counts)"
                               : "");
        }
        if (tpu_parse_size(s, &bytes, &e) != TPU_OK) {
            return fail_at(c, val, "'%s': %s", key, e.msg);
        }
        x = (double)bytes;
    } else {
        errno = 0;
        x = strtod(s, &end);
        if (end == s || *end != '\0') {
            return fail_at(c, val, "'%s' takes a number such as 9e10, got '%s'", key, s);
        }
        if (errno == ERANGE && fabs(x) > 1) {
            return fail_at(c, val, "'%s' is out of range: %s", key, s);
        }
    }
    if (kind == KIND_MICROS ? x < 0 : !(x > 0)) {
        return fail_at(c, val, "'%s' must be %s, got %s", key,
                       kind == KIND_MICROS ? "zero or more" : "positive", s);
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
        return fail_at(c, val, "'%s' takes a whole number, got '%s'", key, s);
    }
    for (; *p != '\0'; p++) {
        if (v <= max) {
            v = v * 10 + (*p - '0');
        }
    }
    if (*s == '-' || v == 0) {
        return fail_at(c, val, "'%s' must be a positive whole number, got %s", key, s);
    }
    if (v > max) {
        return fail_at(c, val, "'%s' must be at most %ld, got %s", key, max, s);
    }
    *out_p = (int)v;
    return TPU_OK;
}

static tpu_status_t get_count(load_ctx_t *c, const char *key, const yaml_node_t *val, long max,
                              int *out_p)
{
    const char *s;
    tpu_status_t status = get_plain(c, key, val, "a whole number", &s);

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
        return fail_at(c, val, "'%s' takes a list such as [2, 2, 1], not %s", key,
                       is_null(val) ? "an empty value" : kind_name(val));
    }
    for (it = val->data.sequence.items.start; it < val->data.sequence.items.top; it++) {
        const yaml_node_t *item = node_at(c, *it);

        if (n == TPU_MAX_AXES) {
            return fail_at(c, item, "'%s' has at most %d entries", key, TPU_MAX_AXES);
        }
        status = get_count(c, key, item, max, &out[n++]);
        if (status != TPU_OK) {
            return status;
        }
    }
    if (n == 0) {
        return fail_at(c, val, "'%s' is an empty list", key);
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
        return get_number(c, f->key, val, f->kind, (double *)(void *)dst);
    case KIND_COUNT:
        return get_count(c, f->key, val, f->max, (int *)(void *)dst);
    case KIND_DIMS:
        return get_dims(c, f->key, val, f->max, (int *)(void *)dst);
    default:
        return fail_at(c, val, "'%s' has no handler", f->key);
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
        return fail_at(c, key, "unknown key '%s'%s (did you mean '%s'?)", k, where, best);
    }
    return fail_at(c, key, "unknown key '%s'%s (known keys: %s)", k, where, known);
}

/*
 * Walk the mapping 'map' whose keys must come from 'fields': each key known and
 * named once; values of the generic kinds are stored into 'obj', the others go
 * to 'fn'.  'what' names the mapping in messages ("the file", "'chip'").
 */
static tpu_status_t walk_map(load_ctx_t *c, const yaml_node_t *map, const char *what,
                             const field_t *fields, pair_fn_t fn, void *obj)
{
    const yaml_node_t *seen[32] = {NULL};
    char where[64] = "";
    yaml_node_pair_t *p;
    tpu_status_t status;

    if (map->type != YAML_MAPPING_NODE) {
        return fail_at(c, map, "%s must be a mapping of keys to values, not %s", what,
                       is_null(map) ? "an empty value" : kind_name(map));
    }
    if (fields != root_fields) {
        snprintf(where, sizeof(where), " in %s", what);
    }
    for (p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        const yaml_node_t *key = node_at(c, p->key);
        const yaml_node_t *val = node_at(c, p->value);
        const char *k = text_of(key);
        int i;

        if (k == NULL || strlen(k) != key->data.scalar.length) {
            return fail_at(c, key, "the keys of %s must be plain words, not %s", what,
                           k == NULL ? kind_name(key) : "text with a NUL character");
        }
        for (i = 0; fields[i].key != NULL && strcmp(fields[i].key, k) != 0; i++) {
        }
        if (fields[i].key == NULL) {
            return unknown_key(c, key, k, fields, where);
        }
        if (seen[i] != NULL) {
            return fail_at(c, key, "duplicate key '%s'%s (first at line %zu)", k, where,
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

/* The keys of a custom chip that set_field() does not fill: base, name, wrap_rule. */
static tpu_status_t chip_pair(load_ctx_t *c, const field_t *f, const yaml_node_t *key,
                              const yaml_node_t *val, void *obj)
{
    tpu_chip_spec_t *spec = obj;
    const char *s;
    tpu_status_t status;

    (void)key;
    if (strcmp(f->key, "base") == 0) {
        return TPU_OK; /* read before the walk */
    }
    if (strcmp(f->key, "name") == 0) {
        status = get_text(c, f->key, val, "a display name", &s);
        if (status != TPU_OK) {
            return status;
        }
        if (strlen(s) >= sizeof(spec->name)) {
            return fail_at(c, val, "'name' is too long (at most %d characters)",
                           (int)sizeof(spec->name) - 1);
        }
        memcpy(spec->name, s, strlen(s) + 1);
        return TPU_OK;
    }
    status = get_text(c, f->key, val, "cubes or full_axis", &s);
    if (status != TPU_OK) {
        return status;
    }
    if (strcmp(s, "cubes") == 0) {
        spec->wrap_rule = TPU_WRAP_RULE_CUBES;
    } else if (strcmp(s, "full_axis") == 0) {
        spec->wrap_rule = TPU_WRAP_RULE_FULL_AXIS;
    } else {
        return fail_at(c, val, "'wrap_rule' takes cubes or full_axis, got '%s'", s);
    }
    return TPU_OK;
}

/* "name:line:col" of 'node' into 'out'. */
static void mark(const load_ctx_t *c, const yaml_node_t *node, char *out, size_t len)
{
    snprintf(out, len, "%s:%zu:%zu", c->name, node->start_mark.line + 1,
             node->start_mark.column + 1);
}

/* 'chip:': a preset name, or a mapping with 'base:' and the fields it overrides. */
static tpu_status_t parse_chip(load_ctx_t *c, const yaml_node_t *key, const yaml_node_t *val,
                               tpu_config_t *cfg)
{
    const yaml_node_t *base = NULL;
    yaml_node_pair_t *p;
    tpu_chip_spec_t spec;
    tpu_err_t e = {0};
    const char *s;
    tpu_status_t status;

    if (val->type != YAML_MAPPING_NODE) {
        status = get_string(c, "chip", val, "a preset name (v4, v5e, v5p, v6e, v7) or a mapping",
                            cfg->chip);
        if (status != TPU_OK) {
            return status;
        }
        if (tpu_chip_preset(cfg->chip, &spec, &e) != TPU_OK) {
            return fail_at(c, val, "%s", e.msg);
        }
        cfg->chip_custom = 0;
        return TPU_OK;
    }
    for (p = val->data.mapping.pairs.start; p < val->data.mapping.pairs.top && base == NULL; p++) {
        const char *k = text_of(node_at(c, p->key));

        if (k != NULL && strcmp(k, "base") == 0) {
            base = node_at(c, p->value);
        }
    }
    if (base == NULL) {
        return fail_at(c, key,
                       "a custom 'chip' needs 'base:', the preset its other fields start from "
                       "(v4, v5e, v5p, v6e, v7)");
    }
    status = get_text(c, "base", base, "a preset name (v4, v5e, v5p, v6e, v7)", &s);
    if (status != TPU_OK) {
        return status;
    }
    if (tpu_chip_preset(s, &spec, &e) != TPU_OK) {
        return fail_at(c, base, "%s", e.msg);
    }
    snprintf(spec.name, sizeof(spec.name), "%.20s-custom", s);
    status = walk_map(c, val, "'chip'", chip_fields, chip_pair, &spec);
    if (status != TPU_OK) {
        return status;
    }
    if (tpu_chip_check(&spec, &e) != TPU_OK) {
        return fail_at(c, key, "%s", e.msg);
    }
    for (p = val->data.mapping.pairs.start; p < val->data.mapping.pairs.top; p++) {
        const char *k = text_of(node_at(c, p->key));

        if (k != NULL && strcmp(k, "host_dims") == 0) {
            mark(c, node_at(c, p->value), cfg->host_dims_at, sizeof(cfg->host_dims_at));
        }
    }
    cfg->custom = spec;
    cfg->chip_custom = 1;
    cfg->chip[0] = '\0';
    return TPU_OK;
}

/* Is 's' (up to 'len' bytes) a mesh axis name: a letter or '_', then letters, digits, '_'? */
static int is_axis_name(const char *s, size_t len)
{
    size_t i;

    if (len == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_')) {
        return 0;
    }
    for (i = 1; i < len; i++) {
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_')) {
            return 0;
        }
    }
    return 1;
}

/*
 * Check a mesh string "data=4,model=4": name=size pairs, names distinct, sizes
 * positive whole numbers.  Errors are reported at 'val'.
 */
static tpu_status_t check_mesh(load_ctx_t *c, const yaml_node_t *val, const char *mesh)
{
    const char *part = mesh;

    for (;;) {
        size_t len = strcspn(part, ","), name_len = strcspn(part, "=,");
        const char *q;
        long v = 0;
        size_t i;

        if (name_len >= len || !is_axis_name(part, name_len) || name_len + 1 == len ||
            strspn(part + name_len + 1, "0123456789") != len - name_len - 1) {
            return fail_at(c, val,
                           "bad mesh '%s': '%.*s' is not name=size (expected a mesh such as "
                           "data=4,model=4)",
                           mesh, (int)len, part);
        }
        for (i = name_len + 1; i < len; i++) {
            if (v <= TPU_MAX_CHIPS) {
                v = v * 10 + (part[i] - '0');
            }
        }
        if (v < 1 || v > TPU_MAX_CHIPS) {
            return fail_at(c, val, "bad mesh '%s': axis '%.*s' must have 1 to %d chips", mesh,
                           (int)name_len, part, TPU_MAX_CHIPS);
        }
        for (q = mesh; q < part; q += strcspn(q, ",") + 1) {
            if (strcspn(q, "=") == name_len && strncmp(q, part, name_len) == 0) {
                return fail_at(c, val, "bad mesh '%s': axis '%.*s' named twice", mesh,
                               (int)name_len, part);
            }
        }
        if (part[len] == '\0') {
            return TPU_OK;
        }
        part += len + 1;
    }
}

/* 'mesh:': a string "data=4,model=4" or a mapping {data: 4, model: 4}, kept in file order. */
static tpu_status_t parse_mesh(load_ctx_t *c, const yaml_node_t *val, tpu_config_t *cfg)
{
    char mesh[TPU_CONFIG_STR];
    yaml_node_pair_t *p, *q;
    size_t used = 0;
    tpu_status_t status;

    if (val->type != YAML_MAPPING_NODE) {
        status = get_string(c, "mesh", val, "a mesh such as data=4,model=4", mesh);
        if (status == TPU_OK) {
            status = check_mesh(c, val, mesh);
        }
        if (status == TPU_OK) {
            memcpy(cfg->mesh, mesh, sizeof(mesh));
        }
        return status;
    }
    if (val->data.mapping.pairs.start == val->data.mapping.pairs.top) {
        return fail_at(c, val, "'mesh' is an empty mapping (expected axes such as data: 4)");
    }
    mesh[0] = '\0';
    for (p = val->data.mapping.pairs.start; p < val->data.mapping.pairs.top; p++) {
        const yaml_node_t *key = node_at(c, p->key);
        const char *k = text_of(key);
        int n;

        if (k == NULL || !is_axis_name(k, key->data.scalar.length)) {
            return fail_at(c, key, "mesh axis names are words such as data or model, not %s%s%s",
                           k == NULL ? kind_name(key) : "'", k == NULL ? "" : k,
                           k == NULL ? "" : "'");
        }
        for (q = val->data.mapping.pairs.start; q < p; q++) {
            if (strcmp(text_of(node_at(c, q->key)), k) == 0) {
                return fail_at(c, key, "duplicate key '%s' in 'mesh' (first at line %zu)", k,
                               node_at(c, q->key)->start_mark.line + 1);
            }
        }
        status = get_count(c, k, node_at(c, p->value), TPU_MAX_CHIPS, &n);
        if (status != TPU_OK) {
            return status;
        }
        if (used < sizeof(mesh)) {
            used += (size_t)snprintf(mesh + used, sizeof(mesh) - used, "%s%s=%d", used ? "," : "",
                                     k, n);
        }
    }
    if (used >= sizeof(mesh)) {
        return fail_at(c, val, "'mesh' is too long (at most %d characters as a string)",
                       TPU_CONFIG_STR - 1);
    }
    memcpy(cfg->mesh, mesh, sizeof(mesh));
    return TPU_OK;
}

/* A whole number from 0 to 'max' (a chip id, a coordinate, a host index). */
static tpu_status_t get_index(load_ctx_t *c, const char *key, const yaml_node_t *val, long max,
                              int *out_p)
{
    const char *s;
    long v = 0;
    tpu_status_t status = get_plain(c, key, val, "a whole number", &s);

    if (status != TPU_OK) {
        return status;
    }
    if (*s == '\0' || strspn(s, "0123456789") != strlen(s)) {
        return fail_at(c, val, "'%s' takes a whole number from 0, got '%s'", key, s);
    }
    for (; *s != '\0'; s++) {
        if (v <= max) {
            v = v * 10 + (*s - '0');
        }
    }
    if (v > max) {
        return fail_at(c, val, "'%s' must be at most %ld", key, max);
    }
    *out_p = (int)v;
    return TPU_OK;
}

/* A fault item: the fault and the keys seen. */
typedef struct fault_state {
    tpu_fault_t f;
    unsigned seen; /* bit i: fault_fields[i] */
} fault_state_t;

static tpu_status_t fault_pair(load_ctx_t *c, const field_t *f, const yaml_node_t *key,
                               const yaml_node_t *val, void *obj)
{
    fault_state_t *st = obj;
    tpu_err_t e = {0};
    const char *s;
    tpu_status_t status;

    st->seen |= 1u << (f - fault_fields);
    if (strcmp(f->key, "kind") == 0) {
        return TPU_OK; /* read before the walk */
    }
    if (tpu_fault_key_use(st->f.kind, f->key) == 0) {
        return fail_at(c, key, "'%s' does not apply to a %s fault (%s)", f->key,
                       tpu_fault_kind_name(st->f.kind), tpu_fault_usage(st->f.kind));
    }
    if (strcmp(f->key, "chip") == 0) {
        yaml_node_item_t *it;

        if (val->type != YAML_SEQUENCE_NODE) {
            st->f.ncoords = 0;
            return get_index(c, "chip", val, TPU_MAX_CHIPS - 1, &st->f.chip);
        }
        st->f.chip = -1;
        st->f.ncoords = 0;
        for (it = val->data.sequence.items.start; it < val->data.sequence.items.top; it++) {
            if (st->f.ncoords == TPU_MAX_AXES + 1) {
                return fail_at(c, node_at(c, *it),
                               "'chip' has at most %d coordinates (the slice first)",
                               TPU_MAX_AXES + 1);
            }
            status =
                get_index(c, "chip", node_at(c, *it), TPU_MAX_DIM, &st->f.coords[st->f.ncoords++]);
            if (status != TPU_OK) {
                return status;
            }
        }
        if (st->f.ncoords == 0) {
            return fail_at(c, val,
                           "'chip' is an empty list (give an id such as 5 or "
                           "coordinates such as [1, 2])");
        }
        return TPU_OK;
    }
    if (strcmp(f->key, "dir") == 0) {
        status = get_text(c, "dir", val, "a link direction such as +x", &s);
        if (status == TPU_OK && tpu_fault_dir_parse(s, &st->f.axis, &st->f.dir, &e) != TPU_OK) {
            status = fail_at(c, val, "'dir': %s", e.msg);
        }
        return status;
    }
    if (strcmp(f->key, "both") == 0) {
        status = get_plain(c, "both", val, "yes or no", &s);
        if (status != TPU_OK) {
            return status;
        }
        if (strcmp(s, "yes") == 0 || strcmp(s, "true") == 0) {
            st->f.both = 1;
        } else if (strcmp(s, "no") == 0 || strcmp(s, "false") == 0) {
            st->f.both = 0;
        } else {
            return fail_at(c, val, "'both' takes yes or no, got '%s'", s);
        }
        return TPU_OK;
    }
    if (strcmp(f->key, "factor") == 0) {
        status = get_number(c, "factor", val, KIND_NUMBER, &st->f.factor);
        if (status == TPU_OK && st->f.factor > 1) {
            status = fail_at(c, val,
                             "'factor' must be above 0 and at most 1 (0.5: half the speed), got %s",
                             text_of(val));
        }
        return status;
    }
    return get_index(c, "host", val, TPU_MAX_CHIPS - 1, &st->f.host);
}

/* 'faults:': a list of mappings, each a fault with its 'kind' and the keys it takes. */
static tpu_status_t parse_faults(load_ctx_t *c, const yaml_node_t *val, tpu_config_t *cfg)
{
    yaml_node_item_t *it;
    tpu_status_t status;
    int n = 0, i;

    if (val->type != YAML_SEQUENCE_NODE) {
        return fail_at(c, val,
                       "'faults' takes a list of faults such as - {kind: link-down, chip: 1, "
                       "dir: +x}, not %s",
                       is_null(val) ? "an empty value" : kind_name(val));
    }
    for (it = val->data.sequence.items.start; it < val->data.sequence.items.top; it++) {
        const yaml_node_t *item = node_at(c, *it), *kind = NULL;
        fault_state_t st;
        yaml_node_pair_t *p;
        tpu_err_t e = {0};
        const char *s;

        if (n == TPU_MAX_FAULTS) {
            return fail_at(c, item, "'faults' has more than %d items", TPU_MAX_FAULTS);
        }
        for (p = item->type == YAML_MAPPING_NODE ? item->data.mapping.pairs.start : NULL;
             p != NULL && p < item->data.mapping.pairs.top && kind == NULL; p++) {
            const char *k = text_of(node_at(c, p->key));

            if (k != NULL && strcmp(k, "kind") == 0) {
                kind = node_at(c, p->value);
            }
        }
        if (item->type == YAML_MAPPING_NODE && kind == NULL) {
            return fail_at(c, item,
                           "a fault needs 'kind:' (slow-link, link-down, slow-chip or slow-nic)");
        }
        memset(&st, 0, sizeof(st));
        tpu_fault_init(&st.f, TPU_FAULT_SLOW_LINK);
        if (kind != NULL) {
            status = get_text(c, "kind", kind, "slow-link, link-down, slow-chip or slow-nic", &s);
            if (status == TPU_OK && tpu_fault_kind_parse(s, &st.f.kind, &e) != TPU_OK) {
                status = fail_at(c, kind, "%s", e.msg);
            }
            if (status != TPU_OK) {
                return status;
            }
        }
        status = walk_map(c, item, "a fault", fault_fields, fault_pair, &st);
        if (status != TPU_OK) {
            return status;
        }
        for (i = 1; fault_fields[i].key != NULL; i++) {
            if (tpu_fault_key_use(st.f.kind, fault_fields[i].key) == 2 && !((st.seen >> i) & 1)) {
                return fail_at(c, item, "a %s fault needs '%s' (%s)",
                               tpu_fault_kind_name(st.f.kind), fault_fields[i].key,
                               tpu_fault_usage(st.f.kind));
            }
        }
        cfg->faults[n] = st.f;
        mark(c, item, cfg->fault_at[n], sizeof(cfg->fault_at[n]));
        n++;
    }
    cfg->nfaults = n;
    return TPU_OK;
}

/* What the top level keeps for the checks that need two keys. */
typedef struct root_state {
    tpu_config_t *cfg;
    const yaml_node_t *topology; /* the value nodes, when the file names them */
    const yaml_node_t *wrap;
    int naxes;
} root_state_t;

static tpu_status_t root_pair(load_ctx_t *c, const field_t *f, const yaml_node_t *key,
                              const yaml_node_t *val, void *obj)
{
    root_state_t *st = obj;
    tpu_config_t *cfg = st->cfg;
    int dims[TPU_MAX_AXES], wrap[TPU_MAX_AXES], is_auto;
    tpu_err_t e = {0};
    tpu_status_t status;

    if (strcmp(f->key, "chip") == 0) {
        mark(c, val, cfg->chip_at, sizeof(cfg->chip_at));
        return parse_chip(c, key, val, cfg);
    }
    if (strcmp(f->key, "topology") == 0) {
        status = get_string(c, f->key, val, "a shape such as 4x4", cfg->topology);
        if (status == TPU_OK &&
            tpu_topo_parse_shape(cfg->topology, dims, &st->naxes, &e) != TPU_OK) {
            status = fail_at(c, val, "%s", e.msg);
        }
        st->topology = val;
        mark(c, val, cfg->topology_at, sizeof(cfg->topology_at));
        return status;
    }
    if (strcmp(f->key, "wrap") == 0) {
        status = get_string(c, f->key, val, "auto, all, none or axes such as x,z", cfg->wrap);
        if (status == TPU_OK &&
            tpu_topo_parse_wrap(cfg->wrap, TPU_MAX_AXES, wrap, &is_auto, &e) != TPU_OK) {
            status = fail_at(c, val, "%s", e.msg);
        }
        st->wrap = val;
        mark(c, val, cfg->wrap_at, sizeof(cfg->wrap_at));
        return status;
    }
    if (strcmp(f->key, "slices") == 0) {
        return get_count(c, f->key, val, f->max, &cfg->slices);
    }
    if (strcmp(f->key, "mesh") == 0) {
        return parse_mesh(c, val, cfg);
    }
    if (strcmp(f->key, "faults") == 0) {
        return parse_faults(c, val, cfg);
    }
    return walk_map(c, val, "'links'", link_fields, NULL, cfg);
}

static tpu_status_t parse_root(load_ctx_t *c, const yaml_node_t *root, tpu_config_t *cfg)
{
    root_state_t st = {cfg, NULL, NULL, 0};
    int wrap[TPU_MAX_AXES], is_auto;
    tpu_err_t e = {0};
    tpu_status_t status;

    if (root->type != YAML_MAPPING_NODE) {
        return fail_at(c, root, "a config is a mapping of keys such as 'chip: v5e', not %s",
                       kind_name(root));
    }
    status = walk_map(c, root, "the file", root_fields, root_pair, &st);
    if (status != TPU_OK) {
        return status;
    }
    /* A wrap the file's own topology lacks an axis for. */
    if (st.topology != NULL && st.wrap != NULL &&
        tpu_topo_parse_wrap(cfg->wrap, st.naxes, wrap, &is_auto, &e) != TPU_OK) {
        return fail_at(c, st.wrap, "%s (topology %s)", e.msg, cfg->topology);
    }
    return TPU_OK;
}

/* The line and column of byte 'offset' of 'text', counted as libyaml counts marks. */
static yaml_mark_t mark_of_offset(const char *text, size_t len, size_t offset)
{
    yaml_mark_t mark = {0, 0, 0};
    size_t i;

    for (i = 0; i < offset && i < len; i++) {
        unsigned char ch = (unsigned char)text[i];

        if (ch == '\n' || (ch == '\r' && (i + 1 >= len || text[i + 1] != '\n'))) {
            mark.line++;
            mark.column = 0;
        } else if ((ch & 0xc0) != 0x80 && ch != '\r') {
            mark.column++;
        }
    }
    mark.index = offset;
    return mark;
}

/* The error for a document libyaml refused: its problem text at its position. */
static tpu_status_t yaml_error(const yaml_parser_t *parser, const char *text, size_t len,
                               const char *name, tpu_err_t *err)
{
    yaml_mark_t mark = parser->problem_mark;
    const char *problem = parser->problem != NULL ? parser->problem : "unknown problem";
    char extra[96] = "";

    /* libyaml fails some allocations (a tag, an anchor, a scalar's copy) without
     * setting an error or a problem: that is memory too, not malformed text. */
    if (parser->error == YAML_MEMORY_ERROR ||
        (parser->error == YAML_NO_ERROR && parser->problem == NULL)) {
        return report(err, TPU_ERR_NO_MEMORY, "%s: out of memory while parsing YAML", name);
    }
    if (parser->error == YAML_READER_ERROR) {
        /* The reader gives a byte offset, not a mark. */
        mark = mark_of_offset(text, len, parser->problem_offset);
        if (parser->problem_value != -1) {
            snprintf(extra, sizeof(extra), " (byte 0x%02x)", (unsigned)parser->problem_value);
        }
    } else if (parser->context != NULL) {
        snprintf(extra, sizeof(extra), " (%s at %zu:%zu)", parser->context,
                 parser->context_mark.line + 1, parser->context_mark.column + 1);
    }
    return report(err, TPU_ERR_CONFIG, "%s:%zu:%zu: malformed YAML: %s%s", name, mark.line + 1,
                  mark.column + 1, problem, extra);
}

/*
 * The offset of the first '[' or '{' that opens a flow collection deeper than
 * MAX_FLOW_DEPTH, or 'len' when there is none.  libyaml's scanner does work in
 * proportion to the flow depth for every token, so a file nested 500,000 deep
 * would take minutes: this linear pass refuses it first.  Quoted scalars and
 * comments are skipped; brackets inside a plain scalar count, which can only
 * refuse a file with 64 of them, not accept a deep one.
 */
static size_t too_deep(const char *text, size_t len)
{
    size_t i, depth = 0;
    char quote = 0;
    int comment = 0;

    for (i = 0; i < len; i++) {
        char ch = text[i];

        if (comment) {
            comment = ch != '\n' && ch != '\r';
        } else if (quote == '\'') {
            quote = ch == '\'' ? (i + 1 < len && text[i + 1] == '\'' ? (i++, quote) : 0) : quote;
        } else if (quote == '"') {
            if (ch == '\\') {
                i++;
            } else if (ch == '"') {
                quote = 0;
            }
        } else if (ch == '\'' || ch == '"') {
            quote = ch;
        } else if (ch == '#' && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\t' ||
                                 text[i - 1] == '\n' || text[i - 1] == '\r')) {
            comment = 1;
        } else if (ch == '[' || ch == '{') {
            if (++depth > MAX_FLOW_DEPTH) {
                return i;
            }
        } else if ((ch == ']' || ch == '}') && depth > 0) {
            depth--;
        }
    }
    return len;
}

void tpu_config_init(tpu_config_t *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->ici_bw = -1;
    cfg->ici_latency = -1;
    cfg->dcn_bw = -1;
    cfg->dcn_latency = -1;
}

tpu_status_t tpu_config_load_string(const char *text, size_t len, const char *name,
                                    tpu_config_t *cfg, tpu_err_t *err)
{
    yaml_parser_t parser;
    yaml_document_t doc, extra;
    const yaml_node_t *root;
    tpu_config_t tmp;
    load_ctx_t c;
    size_t deep;
    tpu_status_t status;

    if (name == NULL) {
        name = "<config>";
    }
    if (text == NULL) {
        text = "";
        len = 0;
    }
    if (!yaml_parser_initialize(&parser)) {
        status = report(err, TPU_ERR_NO_MEMORY, "%s: out of memory for the YAML parser", name);
        goto out;
    }
    deep = too_deep(text, len);
    if (deep < len) {
        yaml_mark_t m = mark_of_offset(text, len, deep);

        status = report(err, TPU_ERR_CONFIG,
                        "%s:%zu:%zu: lists and mappings nested deeper than %d levels (a config "
                        "nests at most 3)",
                        name, m.line + 1, m.column + 1, MAX_FLOW_DEPTH);
        goto out_delete_parser;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        status = yaml_error(&parser, text, len, name, err);
        goto out_delete_parser;
    }
    root = yaml_document_get_root_node(&doc);
    if (root == NULL || is_null(root)) {
        status =
            report(err, TPU_ERR_CONFIG,
                   "%s:%zu:%zu: the file is empty (expected a mapping such as 'chip: v5e')", name,
                   root ? root->start_mark.line + 1 : 1, root ? root->start_mark.column + 1 : 1);
        goto out_delete_doc;
    }
    if (!yaml_parser_load(&parser, &extra)) {
        status = yaml_error(&parser, text, len, name, err);
        goto out_delete_doc;
    }
    if (yaml_document_get_root_node(&extra) != NULL) {
        status = report(err, TPU_ERR_CONFIG,
                        "%s:%zu:%zu: a second YAML document (a config file holds one)", name,
                        extra.start_mark.line + 1, extra.start_mark.column + 1);
        goto out_delete_extra;
    }
    tmp = *cfg;
    c.doc = &doc;
    c.name = name;
    c.err = err;
    status = parse_root(&c, root, &tmp);
    if (status == TPU_OK) {
        *cfg = tmp;
    }
out_delete_extra:
    yaml_document_delete(&extra);
out_delete_doc:
    yaml_document_delete(&doc);
out_delete_parser:
    yaml_parser_delete(&parser);
out:
    return status;
}

tpu_status_t tpu_config_load(const char *path, tpu_config_t *cfg, tpu_err_t *err)
{
    struct stat st;
    size_t len = 0, cap = 0;
    char *buf = NULL;
    char why[128];
    FILE *f;
    tpu_status_t status;

    memset(&st, 0, sizeof(st));
    if (path == NULL) {
        status = report(err, TPU_ERR_INVALID, "no config file named");
        goto out;
    }
    if (path[0] == '\0') {
        status = report(err, TPU_ERR_CONFIG, "--config got an empty file name; give a YAML file");
        goto out;
    }
    /* Opened without blocking, so that a FIFO cannot stall the open (common/file.c). */
    f = tpu__fopen_regular(path, why, sizeof(why));
    if (f == NULL) {
        status = report(err, TPU_ERR_CONFIG, "%s: %s%s", path, why,
                        strncmp(why, "not a", 5) == 0 ? "; give a YAML file" : "");
        goto out;
    }
    if (fstat(fileno(f), &st) == 0 && st.st_size > MAX_FILE_BYTES) {
        status = report(err, TPU_ERR_CONFIG, "%s: larger than %u bytes; not a config file", path,
                        MAX_FILE_BYTES);
        fclose(f);
        goto out;
    }
    for (;;) {
        size_t n;

        if (len == cap) {
            char *grown;

            if (cap > MAX_FILE_BYTES) {
                break;
            }
            cap = cap ? 2 * cap : 4096;
            grown = tpu__realloc(buf, cap);
            if (grown == NULL) {
                status = report(err, TPU_ERR_NO_MEMORY, "%s: out of memory reading the file", path);
                goto out_free;
            }
            buf = grown;
        }
        n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0) {
            break;
        }
    }
    if (ferror(f)) {
        status = report(err, TPU_ERR_CONFIG, "%s: cannot read: %s", path, strerror(errno));
        goto out_free;
    }
    if (len > MAX_FILE_BYTES) {
        status = report(err, TPU_ERR_CONFIG, "%s: larger than %u bytes; not a config file", path,
                        MAX_FILE_BYTES);
        goto out_free;
    }
    status = tpu_config_load_string(buf, len, path, cfg, err);
out_free:
    tpu__free(buf);
    fclose(f);
out:
    return status;
}

tpu_status_t tpu_parse_size(const char *text, unsigned long long *bytes_p, tpu_err_t *err)
{
    const char *p = text;
    unsigned long long value = 0;
    int shift = 0;

    if (text == NULL || *text == '\0') {
        return report(err, TPU_ERR_INVALID,
                      "bad size '': expected bytes or a number with K, M or G");
    }
    if (*p == '-' && isdigit((unsigned char)p[1])) {
        return report(err, TPU_ERR_INVALID, "bad size '%s': a size cannot be negative", text);
    }
    if (!isdigit((unsigned char)*p)) {
        goto bad;
    }
    for (; isdigit((unsigned char)*p); p++) {
        unsigned long long digit = (unsigned long long)(*p - '0');

        if (value > (ULLONG_MAX - digit) / 10) {
            goto too_large;
        }
        value = value * 10 + digit;
    }
    if (*p == '.' && isdigit((unsigned char)p[1])) {
        return report(err, TPU_ERR_INVALID,
                      "bad size '%s': fractions are not allowed (write a whole number of a "
                      "smaller unit: 1536M, not 1.5G)",
                      text);
    }
    switch (*p) {
    case 'K':
    case 'k':
        shift = 10;
        break;
    case 'M':
    case 'm':
        shift = 20;
        break;
    case 'G':
    case 'g':
        shift = 30;
        break;
    default:
        break;
    }
    if (shift != 0) {
        p++;
    }
    /* "B" after any number, "iB" after a suffix ("64KiB", "16MB", "1024B"). */
    if (strcmp(p, "B") == 0 || (shift != 0 && strcmp(p, "iB") == 0)) {
        p += strlen(p);
    }
    if (*p != '\0') {
        goto bad;
    }
    if (value > (ULLONG_MAX >> shift)) {
        goto too_large;
    }
    *bytes_p = value << shift;
    return TPU_OK;
bad:
    return report(err, TPU_ERR_INVALID, "bad size '%s': expected bytes or a number with K, M or G",
                  text);
too_large:
    return report(err, TPU_ERR_INVALID, "bad size '%s': too large", text);
}
