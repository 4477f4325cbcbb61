/*
 * The option parser of every command (see opt.h): one pass over argv against
 * typed rows, the number and list parsers the rows use, and the nearest word
 * for "did you mean".
 */
#include "opt.h"

#include "alloc.h"
#include "units.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIELD(opts, off, type) ((type *)(void *)((char *)(opts) + (off)))

/* Print a range bound without trailing zeros. */
static const char *num(double v, char *buf, size_t len)
{
    snprintf(buf, len, "%.10g", v);
    return buf;
}

static tpu_status_t parse_int(const app_opt_t *d, const char *v, int *out, tpu_err_t *err)
{
    char *end, lo[32], hi[32];
    long long x;

    errno = 0;
    x = strtoll(v, &end, 10);
    if (*v == '\0' || *end != '\0' || isspace((unsigned char)*v)) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "--%s takes a whole number from %s to %s, got '%s'", d->name,
                           num(d->lo, lo, sizeof(lo)), num(d->hi, hi, sizeof(hi)), v);
    }
    if (errno == ERANGE || x < (long long)d->lo || x > (long long)d->hi) {
        return tpu_err_set(err, TPU_ERR_INVALID, "--%s must be %s to %s, got %s", d->name,
                           num(d->lo, lo, sizeof(lo)), num(d->hi, hi, sizeof(hi)), v);
    }
    *out = (int)x;
    return TPU_OK;
}

/* A whole number of at least 'lo' (no upper bound but int64_t's). */
static tpu_status_t parse_i64(const app_opt_t *d, const char *v, int64_t *out, tpu_err_t *err)
{
    char *end;
    long long x;

    errno = 0;
    x = strtoll(v, &end, 10);
    if (*v == '\0' || *end != '\0' || errno != 0 || x < (long long)d->lo) {
        return tpu_err_set(err, TPU_ERR_INVALID, "--%s takes an integer of at least %lld, got '%s'",
                           d->name, (long long)d->lo, v);
    }
    *out = (int64_t)x;
    return TPU_OK;
}

/* A finite number in C syntax, at least 'lo' and at most 'hi' (opt.h). */
tpu_status_t app_parse_number(const char *name, const char *v, double lo, double hi, double *out,
                              tpu_err_t *err)
{
    char *end, a[32], b[32];
    double x;

    errno = 0;
    x = strtod(v, &end);
    if (*v == '\0' || *end != '\0' || isspace((unsigned char)*v) || isnan(x)) {
        return tpu_err_set(err, TPU_ERR_INVALID, "--%s takes a number from %s to %s, got '%s'",
                           name, num(lo, a, sizeof(a)), num(hi, b, sizeof(b)), v);
    }
    if (!(x >= lo && x <= hi)) {
        return tpu_err_set(err, TPU_ERR_INVALID, "--%s must be %s to %s, got %s", name,
                           num(lo, a, sizeof(a)), num(hi, b, sizeof(b)), v);
    }
    *out = x;
    return TPU_OK;
}

static tpu_status_t kv_grow(app_kv_t *l, tpu_err_t *err)
{
    int cap = l->cap ? 2 * l->cap : 16;
    char **names = tpu__realloc(l->names, (size_t)cap * sizeof(*names));
    double *values;
    int64_t *ivalues;

    if (names == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory");
    }
    l->names = names;
    values = tpu__realloc(l->values, (size_t)cap * sizeof(*values));
    if (values == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory");
    }
    l->values = values;
    ivalues = tpu__realloc(l->ivalues, (size_t)cap * sizeof(*ivalues));
    if (ivalues == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory");
    }
    l->ivalues = ivalues;
    l->cap = cap;
    return TPU_OK;
}

/* Is NAME (nlen bytes) the name of an item of the list in [text, upto)? */
static int kv_seen(const char *text, const char *upto, const char *name, size_t nlen)
{
    const char *p = text;

    while (p < upto) {
        size_t len = strcspn(p, ",="), item = strcspn(p, ",");

        if (len == nlen && memcmp(p, name, nlen) == 0) {
            return 1;
        }
        p += item + 1;
    }
    return 0;
}

/* Split "A=1,B=2" and append to 'l' (NULL: check only). */
tpu_status_t app_kv_parse(const app_opt_t *o, const char *text, app_kv_t *l, tpu_err_t *err)
{
    const char *p = text, *flag = o->name;
    int integer = (o->flags & APP_OPT_KV_INT) != 0, k = 1;

    for (; *p != '\0'; k++) {
        const char *comma = strchr(p, ','), *eq;
        size_t len = comma != NULL ? (size_t)(comma - p) : strlen(p);
        char item[256], *end;
        long long iv = 0;
        double dv = 0;

        if (len == 0) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "--%s '%s': item %d is empty (two commas, or one at the start); "
                               "expected NAME=VALUE[,...]",
                               flag, text, k);
        }
        if (len >= sizeof(item)) {
            return tpu_err_set(err, TPU_ERR_INVALID, "--%s '%s': expected NAME=VALUE[,...]", flag,
                               text);
        }
        memcpy(item, p, len);
        item[len] = '\0';
        eq = strchr(item, '=');
        if (eq == NULL || eq == item || eq[1] == '\0') {
            return tpu_err_set(err, TPU_ERR_INVALID, "--%s '%s': expected NAME=VALUE", flag, item);
        }
        if (kv_seen(text, p, item, (size_t)(eq - item))) {
            return tpu_err_set(err, TPU_ERR_INVALID, "--%s '%s': item %d names '%.*s' again", flag,
                               text, k, (int)(eq - item), item);
        }
        errno = 0;
        if (integer) {
            iv = strtoll(eq + 1, &end, 10);
            if (*end != '\0' || errno != 0 || iv < (long long)o->lo || iv > (long long)o->hi) {
                return tpu_err_set(err, TPU_ERR_INVALID, "--%s %s: %s", flag, item, o->valid);
            }
        } else {
            dv = strtod(eq + 1, &end);
            if (*end != '\0' || errno != 0 || !(dv >= o->lo) || dv > o->hi) {
                return tpu_err_set(err, TPU_ERR_INVALID, "--%s %s: %s", flag, item, o->valid);
            }
        }
        if (l != NULL) {
            if (l->n >= o->max) {
                return tpu_err_set(err, TPU_ERR_INVALID, "--%s: more than %d entries", flag,
                                   o->max);
            }
            if (l->n == l->cap && kv_grow(l, err) != TPU_OK) {
                return TPU_ERR_NO_MEMORY;
            }
            l->ivalues[l->n] = iv;
            l->values[l->n] = dv;
            l->names[l->n] = tpu__malloc((size_t)(eq - item) + 1);
            if (l->names[l->n] == NULL) {
                return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory");
            }
            memcpy(l->names[l->n], item, (size_t)(eq - item));
            l->names[l->n][eq - item] = '\0';
            l->n++;
        }
        p += len;
        if (*p == ',') {
            p++;
            if (*p == '\0') {
                return tpu_err_set(err, TPU_ERR_INVALID,
                                   "--%s '%s': item %d is empty (a trailing comma); expected "
                                   "NAME=VALUE[,...]",
                                   flag, text, k + 1);
            }
        }
    }
    return TPU_OK;
}

void app_kv_fini(app_kv_t *l)
{
    int i;

    for (i = 0; i < l->n; i++) {
        tpu__free(l->names[i]);
    }
    tpu__free(l->names);
    tpu__free(l->values);
    tpu__free(l->ivalues);
    memset(l, 0, sizeof(*l));
}

/* Edits from 'a' to 'b' (insertions, deletions, substitutions, adjacent swaps). */
static int distance(const char *a, const char *b)
{
    int la = (int)strlen(a), lb = (int)strlen(b), i, j;
    int d[34][34];

    if (la > 32 || lb > 32) {
        return 99;
    }
    for (i = 0; i <= la; i++) {
        d[i][0] = i;
    }
    for (j = 0; j <= lb; j++) {
        d[0][j] = j;
    }
    for (i = 1; i <= la; i++) {
        for (j = 1; j <= lb; j++) {
            int c = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);

            c = d[i - 1][j] + 1 < c ? d[i - 1][j] + 1 : c;
            c = d[i][j - 1] + 1 < c ? d[i][j - 1] + 1 : c;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < c) {
                c = d[i - 2][j - 2] + 1;
            }
            d[i][j] = c;
        }
    }
    return d[la][lb];
}

const char *app_opt_nearest(const char *word, const char *const *words, int n)
{
    const char *best = NULL;
    int i, bestd = 3;

    for (i = 0; i < n; i++) {
        int d = distance(word, words[i]);

        if (d < bestd && d < (int)strlen(word)) {
            bestd = d;
            best = words[i];
        }
    }
    return best;
}

/* The row named 'name', or (a one-letter 'name' after a single dash) the row of that short form. */
static const app_opt_t *find_row(const app_opt_set_t *sets, int nsets, const char *name)
{
    int s, k;

    for (s = 0; s < nsets; s++) {
        for (k = 0; k < sets[s].n; k++) {
            if (strcmp(sets[s].rows[k].name, name) == 0 ||
                (name[0] == '-' && name[1] != '\0' && name[2] == '\0' &&
                 APP_OPT_SHORT_OF(sets[s].rows[k].flags) == name[1])) {
                return &sets[s].rows[k];
            }
        }
    }
    return NULL;
}

/* "unknown option", with the nearest flag of the command when one is near. */
static tpu_status_t unknown(const app_opt_set_t *sets, int nsets, const char *name, const char *cmd,
                            const char *hint, tpu_err_t *err)
{
    const char *words[128], *near;
    int n = 0, s, k;

    for (s = 0; s < nsets; s++) {
        for (k = 0; k < sets[s].n && n < 128; k++) {
            words[n++] = sets[s].rows[k].name;
        }
    }
    near = app_opt_nearest(name, words, n);
    if (near != NULL) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "unknown option '--%s' for 'tpuemu %s'; did you mean --%s? (see "
                           "tpuemu %s --help)",
                           name, cmd, near, hint);
    }
    return tpu_err_set(err, TPU_ERR_INVALID,
                       "unknown option '--%s' for 'tpuemu %s' (see tpuemu %s --help)", name, cmd,
                       hint);
}

/* Store the value 'val' of row 'd'. */
static tpu_status_t store(const app_opt_t *d, const char *val, void *opts, tpu_err_t *err)
{
    unsigned long long bytes;
    int *count;

    /* An empty value: what to give, or (a number row without 'valid') its own message. */
    if (*val == '\0' && d->valid != NULL) {
        return tpu_err_set(err, TPU_ERR_INVALID, "--%s got an empty value; give %s", d->name,
                           d->valid);
    }
    switch (d->type) {
    case APP_OPT_STR:
        *FIELD(opts, d->off, const char *) = val;
        return TPU_OK;
    case APP_OPT_SIZE:
        if (app_units_parse_bytes(d->name, val, &bytes, err) != TPU_OK) {
            return TPU_ERR_INVALID;
        }
        *FIELD(opts, d->off, const char *) = val;
        return TPU_OK;
    case APP_OPT_INT:
        if (parse_int(d, val, FIELD(opts, d->off, int), err) != TPU_OK) {
            return TPU_ERR_INVALID;
        }
        if (d->aux != 0) {
            *FIELD(opts, d->aux, int) = 1;
        }
        return TPU_OK;
    case APP_OPT_I64:
        return parse_i64(d, val, FIELD(opts, d->off, int64_t), err);
    case APP_OPT_DBL:
        return app_parse_number(d->name, val, d->lo, d->hi, FIELD(opts, d->off, double), err);
    case APP_OPT_KV:
        return app_kv_parse(d, val, FIELD(opts, d->off, app_kv_t), err);
    case APP_OPT_LIST:
        count = FIELD(opts, d->aux, int);
        if (*count >= d->max) {
            return tpu_err_set(err, TPU_ERR_INVALID, "--%s is given more than %d times", d->name,
                               d->max);
        }
        FIELD(opts, d->off, const char *)[(*count)++] = val;
        return TPU_OK;
    default:
        return tpu_err_set(err, TPU_ERR_INTERNAL, "--%s: a flag row of no type", d->name);
    }
}

tpu_status_t app_opt_parse(int argc, char **argv, int from, const app_opt_set_t *sets, int nsets,
                           const app_operand_t *operand, const char *cmd, const char *hint,
                           void *opts, tpu_err_t *err)
{
    /* The value each row got (every row but a list's is given once). */
    const app_opt_t *seen[256];
    const char *seen_val[256];
    int nseen = 0, i, j;

    for (i = from; i < argc; i++) {
        const char *a = argv[i], *val = NULL;
        char name[64];
        const app_opt_t *d;

        if (strcmp(a, "-h") == 0) {
            a = "--help";
        }
        if (a[0] == '-' && a[1] != '-' && a[1] != '\0' && a[2] == '\0' &&
            (d = find_row(sets, nsets, a)) != NULL) {
            static char longname[64 + 2];

            snprintf(longname, sizeof(longname), "--%s", d->name); /* -b 8 = --min-bytes 8 */
            a = longname;
        }
        if (strncmp(a, "--", 2) != 0) {
            const char **path = operand != NULL && operand->arg != NULL
                                    ? FIELD(opts, operand->off, const char *)
                                    : NULL;

            if (path == NULL) {
                return tpu_err_set(err, TPU_ERR_INVALID,
                                   "unexpected argument '%s' (options start with --; see tpuemu "
                                   "%s --help)",
                                   a, hint);
            }
            if (*path != NULL) {
                return tpu_err_set(err, TPU_ERR_INVALID, "unexpected argument '%s' (one %s: '%s')",
                                   a, operand->what, *path);
            }
            *path = a;
            continue;
        }
        if (strcspn(a + 2, "=") >= sizeof(name)) {
            return tpu_err_set(err, TPU_ERR_INVALID, "unknown option '%s' (see tpuemu %s --help)",
                               a, hint);
        }
        snprintf(name, sizeof(name), "%s", a + 2);
        if (strchr(name, '=') != NULL) {
            *strchr(name, '=') = '\0';
            val = strchr(a, '=') + 1;
        }
        d = find_row(sets, nsets, name);
        if (d == NULL) {
            return unknown(sets, nsets, name, cmd, hint, err);
        }
        if (d->type == APP_OPT_FLAG) {
            if (val != NULL) {
                return tpu_err_set(err, TPU_ERR_INVALID, "--%s takes no value", name);
            }
            val = "";
        } else if (val == NULL) {
            if (i + 1 >= argc) {
                return tpu_err_set(err, TPU_ERR_INVALID, "--%s needs a value", name);
            }
            val = argv[++i];
        }
        for (j = 0; j < nseen && d->type != APP_OPT_LIST && d->type != APP_OPT_KV; j++) {
            if (seen[j] != d) {
                continue;
            }
            if (d->type == APP_OPT_FLAG) {
                return tpu_err_set(err, TPU_ERR_INVALID, "--%s is given twice: give it once", name);
            }
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "--%s is given twice ('%.40s', then '%.40s'): give it once", name,
                               seen_val[j], val);
        }
        if (nseen < 256 && d->type != APP_OPT_LIST && d->type != APP_OPT_KV) {
            seen[nseen] = d;
            seen_val[nseen++] = val;
        }
        if (d->type == APP_OPT_FLAG) {
            *FIELD(opts, d->off, int) = 1;
        } else if (store(d, val, opts, err) != TPU_OK) {
            return TPU_ERR_INVALID;
        }
    }
    return TPU_OK;
}

void app_opt_defaults(const app_opt_set_t *sets, int nsets, void *opts)
{
    int s, k;

    for (s = 0; s < nsets; s++) {
        for (k = 0; k < sets[s].n; k++) {
            const app_opt_t *d = &sets[s].rows[k];
            int given = (d->flags & APP_OPT_DEFAULT) != 0 && d->def != NULL;

            if (d->type == APP_OPT_INT && given) {
                *FIELD(opts, d->off, int) = atoi(d->def);
            } else if (d->type == APP_OPT_I64 && given) {
                *FIELD(opts, d->off, int64_t) = strtoll(d->def, NULL, 10);
            } else if (d->type == APP_OPT_DBL) {
                *FIELD(opts, d->off, double) = given ? strtod(d->def, NULL) : -1;
            }
        }
    }
}

const char *app_opt_value(const app_opt_t *o, const void *opts, char *buf, size_t len)
{
    const char *const *list;
    const app_kv_t *kv;
    size_t used = 0;
    int i, n;

    switch (o->type) {
    case APP_OPT_FLAG:
    case APP_OPT_INT:
        snprintf(buf, len, "%d", *FIELD(opts, o->off, const int));
        return buf;
    case APP_OPT_I64:
        snprintf(buf, len, "%lld", (long long)*FIELD(opts, o->off, const int64_t));
        return buf;
    case APP_OPT_DBL:
        snprintf(buf, len, "%.17g", *FIELD(opts, o->off, const double));
        return buf;
    case APP_OPT_KV:
        kv = FIELD(opts, o->off, const app_kv_t);
        buf[0] = '\0';
        for (i = 0; i < kv->n && used + 1 < len; i++) {
            if (o->flags & APP_OPT_KV_INT) {
                used += (size_t)snprintf(buf + used, len - used, "%s%s=%lld", i ? ";" : "",
                                         kv->names[i], (long long)kv->ivalues[i]);
            } else {
                used += (size_t)snprintf(buf + used, len - used, "%s%s=%.17g", i ? ";" : "",
                                         kv->names[i], kv->values[i]);
            }
        }
        return kv->n > 0 ? buf : NULL;
    case APP_OPT_LIST:
        /* Joined with ';' (a digest: only equality matters). */
        list = FIELD(opts, o->off, const char *const);
        n = *FIELD(opts, o->aux, const int);
        buf[0] = '\0';
        for (i = 0; i < n && used + 1 < len; i++) {
            used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ";" : "", list[i]);
        }
        return n > 0 ? buf : NULL;
    default:
        return *FIELD(opts, o->off, const char *const);
    }
}

void app_opt_free(const app_opt_set_t *sets, int nsets, void *opts)
{
    int s, k;

    for (s = 0; s < nsets; s++) {
        for (k = 0; k < sets[s].n; k++) {
            if (sets[s].rows[k].type == APP_OPT_KV) {
                app_kv_fini(FIELD(opts, sets[s].rows[k].off, app_kv_t));
            }
        }
    }
}
