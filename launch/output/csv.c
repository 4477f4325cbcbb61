/* The CSV writer (see csv.h). */
#include "csv.h"

#include "json.h"

#include <math.h>
#include <string.h>

void app_csv_init(app_csv_t *c, FILE *out)
{
    c->out = out;
    c->col = 0;
}

static void sep(app_csv_t *c)
{
    if (c->col++ > 0) {
        fputc(',', c->out);
    }
}

void app_csv_str(app_csv_t *c, const char *s)
{
    sep(c);
    if (strpbrk(s, ",\"\r\n") == NULL) {
        fputs(s, c->out);
        return;
    }
    fputc('"', c->out);
    for (; *s != '\0'; s++) {
        if (*s == '"') {
            fputc('"', c->out);
        }
        fputc(*s, c->out);
    }
    fputc('"', c->out);
}

void app_csv_header(app_csv_t *c, const char *const *names, int n)
{
    int i;

    for (i = 0; i < n; i++) {
        app_csv_str(c, names[i]);
    }
    app_csv_end_row(c);
}

void app_csv_uint(app_csv_t *c, unsigned long long v)
{
    sep(c);
    fprintf(c->out, "%llu", v);
}

void app_csv_int(app_csv_t *c, long long v)
{
    sep(c);
    fprintf(c->out, "%lld", v);
}

void app_csv_fixed(app_csv_t *c, double v, int decimals)
{
    char buf[40];

    (void)decimals; /* numbers as in the JSON: whole ones as integers, others round-trip */
    sep(c);
    if (isfinite(v)) {
        app_json_number_text(v, buf, sizeof(buf));
        fputs(buf, c->out);
    }
}

void app_csv_empty(app_csv_t *c)
{
    sep(c);
}

void app_csv_end_row(app_csv_t *c)
{
    fputc('\n', c->out);
    c->col = 0;
}
