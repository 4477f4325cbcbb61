/* Aligned text tables (see table.h). */
#include "table.h"

void app_table_row(FILE *out, const char *prefix, const app_col_t *cols, int n,
                   const char *const *cells)
{
    int i;

    fputs(prefix, out);
    for (i = 0; i < n; i++) {
        fprintf(out, "%*s", cols[i].gap, "");
        fprintf(out, cols[i].left ? "%-*s" : "%*s", cols[i].width, cells[i]);
    }
    fputc('\n', out);
}

void app_table_header(FILE *out, const char *prefix, const app_col_t *cols, int n)
{
    const char *cells[64] = {NULL};
    int i, units = 0;

    for (i = 0; i < n && i < 64; i++) {
        cells[i] = cols[i].title;
        units |= cols[i].unit != NULL && cols[i].unit[0] != '\0';
    }
    app_table_row(out, prefix, cols, i, cells);
    if (units) {
        for (i = 0; i < n && i < 64; i++) {
            cells[i] = cols[i].unit != NULL ? cols[i].unit : "";
        }
        app_table_row(out, prefix, cols, i, cells);
    }
}
