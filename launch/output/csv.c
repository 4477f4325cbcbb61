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

/* 's' as valid UTF-8: a byte that starts no valid sequence as its Latin-1 character. */
static void put_utf8(FILE *out, const char *s, int quote)
{
    for (; *s != '\0'; s++) {
        unsigned char b = (unsigned char)*s;
        int n = app_json_utf8_len(s);

        if (n == 0) {
            fputc(0xc0 | (b >> 6), out);
            fputc(0x80 | (b & 0x3f), out);
            continue;
        }
        if (quote && b == '"') {
            fputc('"', out);
        }
        fwrite(s, 1, (size_t)n, out);
        s += n - 1;
    }
}

void app_csv_str(app_csv_t *c, const char *s)
{
    int quote = strpbrk(s, ",\"\r\n") != NULL;

    sep(c);
    if (quote) {
        fputc('"', c->out);
    }
    put_utf8(c->out, s, quote);
    if (quote) {
        fputc('"', c->out);
    }
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
