/*
 * A small streaming JSON writer: objects, arrays, keys, escaped strings (quotes,
 * backslashes, every control character), integers, and numbers that refuse inf
 * and nan (the first refused value is kept as an error naming its key; null is
 * written in its place so the document still parses).  Style: one line,
 * "key": value, ", " between members.  Private to launch/.
 */
#ifndef TPU_LAUNCH_OUTPUT_JSON_H
#define TPU_LAUNCH_OUTPUT_JSON_H

#include "tpu/status.h"

#include <stdio.h>

#define TPU_JSON_DEPTH 16

typedef struct tpu_json {
    FILE *out;
    int depth;
    int count[TPU_JSON_DEPTH]; /* members written so far at each depth */
    int after_key;             /* a key was written; its value comes next */
    char key[64];              /* the last key, for the error message */
    tpu_err_t err;             /* the first refused value */
} tpu_json_t;

void tpu_json_init(tpu_json_t *j, FILE *out);
void tpu_json_object(tpu_json_t *j);
void tpu_json_object_end(tpu_json_t *j);
void tpu_json_array(tpu_json_t *j);
void tpu_json_array_end(tpu_json_t *j);
void tpu_json_key(tpu_json_t *j, const char *key);
void tpu_json_str(tpu_json_t *j, const char *s);
void tpu_json_int(tpu_json_t *j, long long v);
void tpu_json_uint(tpu_json_t *j, unsigned long long v);
void tpu_json_bool(tpu_json_t *j, int v);
void tpu_json_null(tpu_json_t *j);
/* A number with 'decimals' digits after the point ("%.*f"). */
void tpu_json_fixed(tpu_json_t *j, double v, int decimals);
/* A number with 'digits' significant digits ("%.*g"). */
void tpu_json_sig(tpu_json_t *j, double v, int digits);
/* End the document (a newline); the first refused value as an error, if any. */
tpu_status_t tpu_json_end(tpu_json_t *j, tpu_err_t *err);

/* "key": value in one call. */
void tpu_json_kstr(tpu_json_t *j, const char *key, const char *s);
void tpu_json_kint(tpu_json_t *j, const char *key, long long v);
void tpu_json_kuint(tpu_json_t *j, const char *key, unsigned long long v);
void tpu_json_kbool(tpu_json_t *j, const char *key, int v);
void tpu_json_kfixed(tpu_json_t *j, const char *key, double v, int decimals);
void tpu_json_ksig(tpu_json_t *j, const char *key, double v, int digits);
void tpu_json_kobject(tpu_json_t *j, const char *key);
void tpu_json_karray(tpu_json_t *j, const char *key);

/* Write 's' as a JSON string (with quotes) to 'out'. */
void tpu_json_escape(FILE *out, const char *s);

#endif /* TPU_LAUNCH_OUTPUT_JSON_H */
