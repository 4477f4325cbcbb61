/*
 * The JSON writer (see json.h).  A value's separator depends on what came before
 * it at its depth: nothing for the first member, ", " after it, nothing after a
 * key (the key wrote ": ").
 */
#include "json.h"

#include <math.h>
#include <string.h>

void tpu_json_init(tpu_json_t *j, FILE *out)
{
    memset(j, 0, sizeof(*j));
    j->out = out;
}

/* The separator before a value or a key. */
static void sep(tpu_json_t *j)
{
    if (j->after_key) {
        j->after_key = 0;
        return;
    }
    if (j->count[j->depth]++ > 0) {
        fputs(", ", j->out);
    }
}

static void open_(tpu_json_t *j, int c)
{
    sep(j);
    fputc(c, j->out);
    if (j->depth + 1 < TPU_JSON_DEPTH) {
        j->depth++;
    } else {
        tpu_err_set(&j->err, TPU_ERR_INTERNAL, "JSON nested deeper than %d", TPU_JSON_DEPTH);
    }
    j->count[j->depth] = 0;
}

static void close_(tpu_json_t *j, int c)
{
    fputc(c, j->out);
    if (j->depth > 0) {
        j->depth--;
    }
}

void tpu_json_object(tpu_json_t *j)
{
    open_(j, '{');
}

void tpu_json_object_end(tpu_json_t *j)
{
    close_(j, '}');
}

void tpu_json_array(tpu_json_t *j)
{
    open_(j, '[');
}

void tpu_json_array_end(tpu_json_t *j)
{
    close_(j, ']');
}

void tpu_json_escape(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;

        if (c == '"' || c == '\\') {
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

void tpu_json_key(tpu_json_t *j, const char *key)
{
    sep(j);
    tpu_json_escape(j->out, key);
    fputs(": ", j->out);
    snprintf(j->key, sizeof(j->key), "%s", key);
    j->after_key = 1;
}

void tpu_json_str(tpu_json_t *j, const char *s)
{
    sep(j);
    tpu_json_escape(j->out, s != NULL ? s : "");
}

void tpu_json_int(tpu_json_t *j, long long v)
{
    sep(j);
    fprintf(j->out, "%lld", v);
}

void tpu_json_uint(tpu_json_t *j, unsigned long long v)
{
    sep(j);
    fprintf(j->out, "%llu", v);
}

void tpu_json_bool(tpu_json_t *j, int v)
{
    sep(j);
    fputs(v ? "true" : "false", j->out);
}

void tpu_json_null(tpu_json_t *j)
{
    sep(j);
    fputs("null", j->out);
}

/* inf and nan have no JSON form: keep the error, write null. */
static int refuse(tpu_json_t *j, double v)
{
    if (isfinite(v)) {
        return 0;
    }
    tpu_err_set(&j->err, TPU_ERR_INVALID, "cannot write %s as JSON for '%s'",
                isnan(v) ? "nan" : "inf", j->key);
    fputs("null", j->out);
    return 1;
}

void tpu_json_fixed(tpu_json_t *j, double v, int decimals)
{
    sep(j);
    if (!refuse(j, v)) {
        fprintf(j->out, "%.*f", decimals, v);
    }
}

void tpu_json_sig(tpu_json_t *j, double v, int digits)
{
    sep(j);
    if (!refuse(j, v)) {
        fprintf(j->out, "%.*g", digits, v);
    }
}

tpu_status_t tpu_json_end(tpu_json_t *j, tpu_err_t *err)
{
    fputc('\n', j->out);
    if (j->err.status != TPU_OK) {
        return tpu_err_set(err, j->err.status, "%s", j->err.msg);
    }
    return TPU_OK;
}

void tpu_json_kstr(tpu_json_t *j, const char *key, const char *s)
{
    tpu_json_key(j, key);
    tpu_json_str(j, s);
}

void tpu_json_kint(tpu_json_t *j, const char *key, long long v)
{
    tpu_json_key(j, key);
    tpu_json_int(j, v);
}

void tpu_json_kuint(tpu_json_t *j, const char *key, unsigned long long v)
{
    tpu_json_key(j, key);
    tpu_json_uint(j, v);
}

void tpu_json_kbool(tpu_json_t *j, const char *key, int v)
{
    tpu_json_key(j, key);
    tpu_json_bool(j, v);
}

void tpu_json_kfixed(tpu_json_t *j, const char *key, double v, int decimals)
{
    tpu_json_key(j, key);
    tpu_json_fixed(j, v, decimals);
}

void tpu_json_ksig(tpu_json_t *j, const char *key, double v, int digits)
{
    tpu_json_key(j, key);
    tpu_json_sig(j, v, digits);
}

void tpu_json_kobject(tpu_json_t *j, const char *key)
{
    tpu_json_key(j, key);
    tpu_json_object(j);
}

void tpu_json_karray(tpu_json_t *j, const char *key)
{
    tpu_json_key(j, key);
    tpu_json_array(j);
}
