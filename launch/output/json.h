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

#include <stddef.h>
#include <stdio.h>

#define APP_JSON_DEPTH 16
/* The version of the documents' vocabulary (docs/output.md), the first member of each. */
#define APP_JSON_SCHEMA_VERSION 2

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
/* A number: an integer when whole, else the shortest text that reads back as 'v'. */
void app_json_num(app_json_t *j, double v);
/* The same (the precision arguments of the callers are kept for the text tables only). */
void app_json_fixed(app_json_t *j, double v, int decimals);
void app_json_sig(app_json_t *j, double v, int digits);
/* Open a document: '{', "schema_version", "command". */
void app_json_document(app_json_t *j, const char *command);
/* End the document (a newline); the first refused value as an error, if any. */
tpu_status_t app_json_end(app_json_t *j, tpu_err_t *err);

/* "key": value in one call. */
void app_json_kstr(app_json_t *j, const char *key, const char *s);
void app_json_kint(app_json_t *j, const char *key, long long v);
void app_json_kuint(app_json_t *j, const char *key, unsigned long long v);
void app_json_kbool(app_json_t *j, const char *key, int v);
void app_json_kfixed(app_json_t *j, const char *key, double v, int decimals);
void app_json_knum(app_json_t *j, const char *key, double v);
void app_json_ksig(app_json_t *j, const char *key, double v, int digits);
void app_json_kobject(app_json_t *j, const char *key);
void app_json_karray(app_json_t *j, const char *key);

/*
 * The length of the valid UTF-8 sequence at 's' (1 to 4; 1 for an ASCII byte), or 0
 * when it is not one (a Latin-1 byte, a cut sequence): the writers of JSON, CSV and SVG
 * write such a byte as the Latin-1 character of its value.
 */
int app_json_utf8_len(const char *s);
/* The text of a number as app_json_num writes it ('len' of 40 is enough). */
void app_json_number_text(double v, char *buf, size_t len);
/* Write 's' as a JSON string (with quotes; valid UTF-8) to 'out'. */
void app_json_escape(FILE *out, const char *s);

#endif /* APP_LAUNCH_OUTPUT_JSON_H */
