/*
 * Aligned text tables: each column has a title, an optional unit line, a width,
 * an alignment and the spaces before it; cells are formatted by the caller.
 * Private to launch/.
 */
#ifndef APP_LAUNCH_OUTPUT_TABLE_H
#define APP_LAUNCH_OUTPUT_TABLE_H

#include <stdio.h>

typedef struct app_col {
    const char *title;
    const char *unit; /* second header line ("(GB/s)"); NULL or "" for none */
    int width;
    int left; /* 1: left-aligned */
    int gap;  /* spaces before the column */
} app_col_t;

/* The title line (and the unit line if any column has a unit), each after 'prefix'. */
void app_table_header(FILE *out, const char *prefix, const app_col_t *cols, int n);
/* One row of 'n' cells after 'prefix', without the spaces that would end it. */
void app_table_row(FILE *out, const char *prefix, const app_col_t *cols, int n,
                   const char *const *cells);

#endif /* APP_LAUNCH_OUTPUT_TABLE_H */
