/*
 * A CSV writer (RFC 4180): a header line, then rows; a cell with a comma, a
 * quote or a line break is quoted, its quotes doubled; text is valid UTF-8 (a
 * byte that starts no valid sequence as its Latin-1 character); numbers as in
 * the JSON (whole ones as integers, others round-trip).  Private to launch/.
 */
#ifndef APP_LAUNCH_OUTPUT_CSV_H
#define APP_LAUNCH_OUTPUT_CSV_H

#include <stdio.h>

typedef struct app_csv {
    FILE *out;
    int col; /* cells written in the current row */
} app_csv_t;

void app_csv_init(app_csv_t *c, FILE *out);
/* The header line from 'n' column names. */
void app_csv_header(app_csv_t *c, const char *const *names, int n);
void app_csv_str(app_csv_t *c, const char *s);
void app_csv_uint(app_csv_t *c, unsigned long long v);
void app_csv_int(app_csv_t *c, long long v);
void app_csv_fixed(app_csv_t *c, double v, int decimals);
/* An empty cell (no value). */
void app_csv_empty(app_csv_t *c);
void app_csv_end_row(app_csv_t *c);

#endif /* APP_LAUNCH_OUTPUT_CSV_H */
