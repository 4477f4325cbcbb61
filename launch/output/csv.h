/*
 * A CSV writer (RFC 4180): a header line, then rows; a cell with a comma, a
 * quote or a line break is quoted, its quotes doubled.  Private to launch/.
 */
#ifndef TPU_LAUNCH_OUTPUT_CSV_H
#define TPU_LAUNCH_OUTPUT_CSV_H

#include <stdio.h>

typedef struct tpu_csv {
    FILE *out;
    int col; /* cells written in the current row */
} tpu_csv_t;

void tpu_csv_init(tpu_csv_t *c, FILE *out);
/* The header line from 'n' column names. */
void tpu_csv_header(tpu_csv_t *c, const char *const *names, int n);
void tpu_csv_str(tpu_csv_t *c, const char *s);
void tpu_csv_uint(tpu_csv_t *c, unsigned long long v);
void tpu_csv_int(tpu_csv_t *c, long long v);
void tpu_csv_fixed(tpu_csv_t *c, double v, int decimals);
/* An empty cell (no value). */
void tpu_csv_empty(tpu_csv_t *c);
void tpu_csv_end_row(tpu_csv_t *c);

#endif /* TPU_LAUNCH_OUTPUT_CSV_H */
