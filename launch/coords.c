/*
 * A chip named on the command line (--src, --dst): coordinates "1,2" (slice first
 * when the pod has several slices) or a chip id.  Kept apart from cli.c so that
 * the fuzz target (tests/fuzz) builds it with the topology alone.
 */
#include "coords.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>

tpu_status_t app_parse_coords(const tpu_topo_t *t, const char *shape, const char *text,
                              const char *what, int *chip_p, tpu_err_t *err)
{
    int vals[TPU_MAX_AXES + 1], n = 0, c[TPU_MAX_AXES] = {0, 0, 0}, slice = 0, i, chip;
    const char *p = text;

    for (;;) {
        char *end;
        long v;

        errno = 0;
        v = strtol(p, &end, 10);
        if (n > TPU_MAX_AXES) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "--%s '%s': at most %d coordinates (slice first), or a chip id",
                               what, text, TPU_MAX_AXES + 1);
        }
        if (end == p || !isdigit((unsigned char)*p)) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "--%s '%s': expected coordinates like 1,2 or a chip id", what, text);
        }
        if (errno == ERANGE || v > TPU_MAX_CHIPS) {
            return tpu_err_set(err, TPU_ERR_INVALID, "--%s '%s': %.*s is outside the %d-chip pod",
                               what, text, (int)(end - p), p, t->nchips);
        }
        vals[n++] = (int)v;
        if (*end == '\0') {
            break;
        }
        if (*end != ',') {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "--%s '%s': expected coordinates like 1,2 or a chip id", what, text);
        }
        p = end + 1;
    }
    if (n == 1) {
        if (vals[0] >= t->nchips) {
            return tpu_err_set(err, TPU_ERR_INVALID, "--%s chip %d is outside the %d-chip pod",
                               what, vals[0], t->nchips);
        }
        *chip_p = vals[0];
        return TPU_OK;
    }
    if (n != t->naxes + (t->slices > 1)) {
        return tpu_err_set(err, TPU_ERR_INVALID, "--%s '%s': give %d coordinates for topology %s%s",
                           what, text, t->naxes + (t->slices > 1), shape,
                           t->slices > 1 ? " (slice first)" : "");
    }
    i = 0;
    if (t->slices > 1) {
        slice = vals[i++];
    }
    for (; i < n; i++) {
        c[i - (t->slices > 1)] = vals[i];
    }
    chip = tpu_topo_chip(t, slice, c);
    if (chip < 0) {
        return tpu_err_set(err, TPU_ERR_INVALID, "--%s '%s' is outside topology %s", what, text,
                           shape);
    }
    *chip_p = chip;
    return TPU_OK;
}
