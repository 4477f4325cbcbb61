/* Status strings and the first-writer-wins error record. */
#include "tpu/status.h"

#include "alloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *tpu_status_str(tpu_status_t status)
{
    switch (status) {
#define X(name, value, msg) \
    case TPU_##name:        \
        return msg;
        TPU_STATUS_MAP(X)
#undef X
    }
    return "unknown status";
}

/* Values echoed in quotes longer than this are cut when the whole message would not fit. */
#define LONG_VALUE 64
/* Characters of a cut value that are kept. */
#define KEPT_CHARS 40

/* Append 'c' to 'out' (capacity 'cap', length '*n'), escaping control characters as \xNN. */
static void put_char(char *out, size_t cap, size_t *n, unsigned char c)
{
    char esc[8];
    size_t len, i;

    if (c < 0x20 || c == 0x7f) {
        len = (size_t)snprintf(esc, sizeof(esc), "\\x%02x", c);
    } else {
        esc[0] = (char)c;
        len = 1;
    }
    for (i = 0; i < len && *n + 1 < cap; i++) {
        out[(*n)++] = esc[i];
    }
    out[*n] = '\0';
}

/*
 * Copy 'text' into 'out' as one printable line: control characters become
 * \xNN, and when 'cut' is set a quoted value longer than LONG_VALUE keeps its
 * first KEPT_CHARS characters and says how long it was, so that the reason
 * after it still fits.  Returns the length the copy needed.
 */
static size_t sanitize(const char *text, char *out, size_t cap, int cut)
{
    size_t n = 0, need = 0, i;
    const char *p;

    out[0] = '\0';
    for (p = text; *p != '\0'; p++) {
        const char *close = *p == '\'' ? strchr(p + 1, '\'') : NULL;

        if (cut && close != NULL && (size_t)(close - p - 1) > LONG_VALUE) {
            char tail[48];

            put_char(out, cap, &n, '\'');
            for (i = 1; i <= KEPT_CHARS; i++) {
                put_char(out, cap, &n, (unsigned char)p[i]);
            }
            snprintf(tail, sizeof(tail), "...' (%zu characters)", (size_t)(close - p - 1));
            for (i = 0; tail[i] != '\0'; i++) {
                put_char(out, cap, &n, (unsigned char)tail[i]);
            }
            need += KEPT_CHARS + strlen(tail) + 1;
            p = close;
            continue;
        }
        put_char(out, cap, &n, (unsigned char)*p);
        need += ((unsigned char)*p < 0x20 || *p == 0x7f) ? 4 : 1;
    }
    return need;
}

tpu_status_t tpu_err_set(tpu_err_t *err, tpu_status_t status, const char *fmt, ...)
{
    char small[2048], *text = small;
    va_list ap, again;
    int len;

    if (err == NULL || err->status != TPU_OK || status == TPU_OK) {
        return status;
    }
    err->status = status;
    va_start(ap, fmt);
    va_copy(again, ap);
    len = vsnprintf(small, sizeof(small), fmt, ap);
    if (len >= (int)sizeof(small)) {
        text = tpu__malloc((size_t)len + 1);
        if (text != NULL) {
            vsnprintf(text, (size_t)len + 1, fmt, again);
        } else {
            text = small;
        }
    }
    va_end(again);
    va_end(ap);
    if (sanitize(text, err->msg, sizeof(err->msg), 0) >= sizeof(err->msg)) {
        sanitize(text, err->msg, sizeof(err->msg), 1);
    }
    if (text != small) {
        tpu__free(text);
    }
    return status;
}

void tpu_err_clear(tpu_err_t *err)
{
    if (err != NULL) {
        err->status = TPU_OK;
        err->msg[0] = '\0';
    }
}
