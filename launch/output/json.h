/*
 * A small streaming JSON writer: objects, arrays, keys, escaped strings (quotes,
 * backslashes, every control character), integers, and numbers that refuse inf
 * and nan (the first refused value is kept as an error naming its key; null is
 * written in its place so the document still parses).  Style: one line,
 * "key": value, ", " between members.  Private to launch/.
 */
#ifndef APP_LAUNCH_OUTPUT_JSON_H
#define APP_LAUNCH_OUTPUT_JSON_H

#include "tpu/status.h"

#include <stdio.h>

#define APP_JSON_DEPTH 16

typedef struct app_json {
    FILE *out;
    int depth;
    int count[APP_JSON_DEPTH]; /* members written so far at each depth */
    int after_key;             /* a key was written; its value comes next */
    char key[64];              /* the last key, for the error message */
    tpu_err_t err;             /* the first refused value */
} app_json_t;

void app_json_init(app_json_t *j, FILE *out);
void app_json_object(app_json_t *j);
void app_json_object_end(app_json_t *j);
void app_json_array(app_json_t *j);
void app_json_array_end(app_json_t *j);
void app_json_key(app_json_t *j, const char *key);
void app_json_str(app_json_t *j, const char *s);
void app_json_int(app_json_t *j, long long v);
void app_json_uint(app_json_t *j, unsigned long long v);
void app_json_bool(app_json_t *j, int v);
void app_json_null(app_json_t *j);
/* A number with 'decimals' digits after the point ("%.*f"). */
void app_json_fixed(app_json_t *j, double v, int decimals);
/* A number with 'digits' significant digits ("%.*g"). */
void app_json_sig(app_json_t *j, double v, int digits);
/* End the document (a newline); the first refused value as an error, if any. */
tpu_status_t app_json_end(app_json_t *j, tpu_err_t *err);

/* "key": value in one call. */
void app_json_kstr(app_json_t *j, const char *key, const char *s);
void app_json_kint(app_json_t *j, const char *key, long long v);
void app_json_kuint(app_json_t *j, const char *key, unsigned long long v);
void app_json_kbool(app_json_t *j, const char *key, int v);
void app_json_kfixed(app_json_t *j, const char *key, double v, int decimals);
void app_json_ksig(app_json_t *j, const char *key, double v, int digits);
void app_json_kobject(app_json_t *j, const char *key);
void app_json_karray(app_json_t *j, const char *key);

/* Write 's' as a JSON string (with quotes) to 'out'. */
void app_json_escape(FILE *out, const char *s);

#endif /* APP_LAUNCH_OUTPUT_JSON_H */
