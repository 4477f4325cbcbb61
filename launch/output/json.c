/*
 * The JSON writer (see json.h).  A value's separator depends on what came before
 * it at its depth: nothing for the first member, ", " after it, nothing after a
 * key (the key wrote ": ").  Numbers are written as integers when they are whole
 * (below 2^53), else with the fewest significant digits (15 to 17) that read back
 * as the same double; strings are valid UTF-8 (a byte that starts no valid UTF-8
 * sequence is written as the Latin-1 character of the same value, \u00XX).
 */
#include "json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void app_json_init(app_json_t *j, FILE *out)
{
    memset(j, 0, sizeof(*j));
    j->out = out;
}

/* The separator before a value or a key. */
static void sep(app_json_t *j)
{
    if (j->after_key) {
        j->after_key = 0;
        return;
    }
    if (j->count[j->depth]++ > 0) {
        fputs(", ", j->out);
    }
}

static void open_(app_json_t *j, int c)
{
    sep(j);
    fputc(c, j->out);
    if (j->depth + 1 < APP_JSON_DEPTH) {
        j->depth++;
    } else {
        tpu_err_set(&j->err, TPU_ERR_INTERNAL, "JSON nested deeper than %d", APP_JSON_DEPTH);
    }
    j->count[j->depth] = 0;
}

static void close_(app_json_t *j, int c)
{
    fputc(c, j->out);
    if (j->depth > 0) {
        j->depth--;
    }
}

void app_json_object(app_json_t *j)
{
    open_(j, '{');
}

void app_json_object_end(app_json_t *j)
{
    close_(j, '}');
}

void app_json_array(app_json_t *j)
{
    open_(j, '[');
}

void app_json_array_end(app_json_t *j)
{
    close_(j, ']');
}

void app_json_number_text(double v, char *buf, size_t len)
{
    int digits;

    if (v == floor(v) && fabs(v) < 9007199254740992.0) {
        snprintf(buf, len, "%.0f", v == 0.0 ? 0.0 : v); /* no "-0" */
        return;
    }
    for (digits = 15; digits < 17; digits++) {
        snprintf(buf, len, "%.*g", digits, v);
        if (strtod(buf, NULL) == v) {
            return;
        }
    }
    snprintf(buf, len, "%.17g", v);
}

int app_json_utf8_len(const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    int n, i;

    if (s[0] < 0x80) {
        return 1;
    }
    if (s[0] >= 0xc2 && s[0] <= 0xdf) {
        n = 2;
    } else if (s[0] >= 0xe0 && s[0] <= 0xef) {
        n = 3;
    } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
        n = 4;
    } else {
        return 0;
    }
    for (i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) {
            return 0;
        }
    }
    /* overlong forms, surrogates and code points above U+10FFFF */
    if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0) ||
        (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90)) {
        return 0;
    }
    return n;
}

void app_json_escape(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        int n = app_json_utf8_len(s);

        if (n > 1) {
            fwrite(s, 1, (size_t)n, out);
            s += n - 1;
        } else if (n == 0) {
            fprintf(out, "\\u%04x", (unsigned)c); /* the Latin-1 character of the byte */
        } else if (c == '"' || c == '\\') {
            fputc('\\', out);
            fputc(c, out);
        } else if (c == '\n') {
            fputs("\\n", out);
        } else if (c == '\t') {
            fputs("\\t", out);
        } else if (c < 0x20 || c == 0x7f) {
            fprintf(out, "\\u%04x", (unsigned)c);
        } else {
            fputc(c, out);
        }
    }
    fputc('"', out);
}

void app_json_key(app_json_t *j, const char *key)
{
    sep(j);
    app_json_escape(j->out, key);
    fputs(": ", j->out);
    snprintf(j->key, sizeof(j->key), "%s", key);
    j->after_key = 1;
}

void app_json_str(app_json_t *j, const char *s)
{
    sep(j);
    app_json_escape(j->out, s != NULL ? s : "");
}

void app_json_int(app_json_t *j, long long v)
{
    sep(j);
    fprintf(j->out, "%lld", v);
}

void app_json_uint(app_json_t *j, unsigned long long v)
{
    sep(j);
    fprintf(j->out, "%llu", v);
}

void app_json_bool(app_json_t *j, int v)
{
    sep(j);
    fputs(v ? "true" : "false", j->out);
}

void app_json_null(app_json_t *j)
{
    sep(j);
    fputs("null", j->out);
}

/* inf and nan have no JSON form: keep the error, write null. */
static int refuse(app_json_t *j, double v)
{
    if (isfinite(v)) {
        return 0;
    }
    tpu_err_set(&j->err, TPU_ERR_INVALID, "cannot write %s as JSON for '%s'",
                isnan(v) ? "nan" : "inf", j->key);
    fputs("null", j->out);
    return 1;
}

void app_json_num(app_json_t *j, double v)
{
    char buf[40];

    sep(j);
    if (!refuse(j, v)) {
        app_json_number_text(v, buf, sizeof(buf));
        fputs(buf, j->out);
    }
}

void app_json_fixed(app_json_t *j, double v, int decimals)
{
    (void)decimals; /* every number round-trips (see the opening comment) */
    app_json_num(j, v);
}

void app_json_sig(app_json_t *j, double v, int digits)
{
    (void)digits;
    app_json_num(j, v);
}

void app_json_document(app_json_t *j, const char *command)
{
    app_json_object(j);
    app_json_kint(j, "schema_version", APP_JSON_SCHEMA_VERSION);
    app_json_kstr(j, "command", command);
}

tpu_status_t app_json_end(app_json_t *j, tpu_err_t *err)
{
    fputc('\n', j->out);
    if (j->err.status != TPU_OK) {
        return tpu_err_set(err, j->err.status, "%s", j->err.msg);
    }
    return TPU_OK;
}

void app_json_kstr(app_json_t *j, const char *key, const char *s)
{
    app_json_key(j, key);
    app_json_str(j, s);
}

void app_json_kint(app_json_t *j, const char *key, long long v)
{
    app_json_key(j, key);
    app_json_int(j, v);
}

void app_json_kuint(app_json_t *j, const char *key, unsigned long long v)
{
    app_json_key(j, key);
    app_json_uint(j, v);
}

void app_json_kbool(app_json_t *j, const char *key, int v)
{
    app_json_key(j, key);
    app_json_bool(j, v);
}

void app_json_kfixed(app_json_t *j, const char *key, double v, int decimals)
{
    app_json_key(j, key);
    app_json_fixed(j, v, decimals);
}

void app_json_knum(app_json_t *j, const char *key, double v)
{
    app_json_key(j, key);
    app_json_num(j, v);
}

void app_json_ksig(app_json_t *j, const char *key, double v, int digits)
{
    app_json_key(j, key);
    app_json_sig(j, v, digits);
}

void app_json_kobject(app_json_t *j, const char *key)
{
    app_json_key(j, key);
    app_json_object(j);
}

void app_json_karray(app_json_t *j, const char *key)
{
    app_json_key(j, key);
    app_json_array(j);
}
