/* Aligned text tables (see table.h); no line ends in spaces. */
#include "table.h"

#include <string.h>

void app_table_row(FILE *out, const char *prefix, const app_col_t *cols, int n,
                   const char *const *cells)
{
    int i, pending = 0; /* spaces owed before the next text: none end a line */

    fputs(prefix, out);
    for (i = 0; i < n; i++) {
        int len = (int)strlen(cells[i]), pad = cols[i].width > len ? cols[i].width - len : 0;

        pending += cols[i].gap + (cols[i].left ? 0 : pad);
        if (len > 0) {
            fprintf(out, "%*s%s", pending, "", cells[i]);
            pending = 0;
        }
        pending += cols[i].left ? pad : 0;
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
