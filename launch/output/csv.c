/* The CSV writer (see csv.h). */
#include "csv.h"

#include <math.h>
#include <string.h>

void tpu_csv_init(tpu_csv_t *c, FILE *out)
{
    c->out = out;
    c->col = 0;
}

static void sep(tpu_csv_t *c)
{
    if (c->col++ > 0) {
        fputc(',', c->out);
    }
}

void tpu_csv_str(tpu_csv_t *c, const char *s)
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

void tpu_csv_header(tpu_csv_t *c, const char *const *names, int n)
{
    int i;

    for (i = 0; i < n; i++) {
        tpu_csv_str(c, names[i]);
    }
    tpu_csv_end_row(c);
}

void tpu_csv_uint(tpu_csv_t *c, unsigned long long v)
{
    sep(c);
    fprintf(c->out, "%llu", v);
}

void tpu_csv_int(tpu_csv_t *c, long long v)
{
    sep(c);
    fprintf(c->out, "%lld", v);
}

void tpu_csv_fixed(tpu_csv_t *c, double v, int decimals)
{
    sep(c);
    if (isfinite(v)) {
        fprintf(c->out, "%.*f", decimals, v);
    }
}

void tpu_csv_empty(tpu_csv_t *c)
{
    sep(c);
}

void tpu_csv_end_row(tpu_csv_t *c)
{
    fputc('\n', c->out);
    c->col = 0;
}
