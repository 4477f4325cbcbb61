/*
 * Partition specs of sharded arrays (see array.c): parsing "('data', None)" over a
 * mesh, printing, the block a chip holds along a dimension, and the edits reshard
 * and the collectives make to a spec (remove axes, insert or delete a dimension).
 */
#include "array_spec.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* ---- specs ---- */

static int is_none(const char *s, size_t n)
{
    return n == 0 || (n == 4 && strncmp(s, "None", 4) == 0) || (n == 1 && (*s == '_' || *s == '-'));
}

tpu_status_t tpu__array_spec_parse(const tpu_mesh_t *mesh, const char *text, int ndims, spec_t *sp,
                                   tpu_err_t *err)
{
    const char *p = text != NULL ? text : "";
    int d = 0, used[MAXA], i;

    memset(sp, 0, sizeof(*sp));
    for (i = 0; i < MAXA; i++) {
        used[i] = -1;
    }
    while (*p != '\0' || d == 0) {
        const char *start, *end;
        int depth = 0;

        while (*p == ' ') {
            p++;
        }
        start = p;
        while (*p != '\0' && (depth > 0 || *p != ',')) {
            depth += *p == '(' ? 1 : (*p == ')' ? -1 : 0);
            p++;
        }
        end = p;
        while (end > start && end[-1] == ' ') {
            end--;
        }
        if (d == ndims) {
            if (end == start && *p == '\0') {
                break;
            }
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "partition spec '%s' has more entries than the array's %d "
                               "dimensions",
                               text, ndims);
        }
        if (!is_none(start, (size_t)(end - start))) {
            char buf[256];
            char *q;
            size_t n = (size_t)(end - start);

            if (start[0] == '(' && end[-1] == ')') {
                start++;
                n -= 2;
            }
            if (n >= sizeof(buf)) {
                return tpu_err_set(err, TPU_ERR_INVALID, "partition spec '%s' is too long", text);
            }
            memcpy(buf, start, n);
            buf[n] = '\0';
            for (q = buf; *q != '\0'; q++) {
                if (*q == '+') {
                    *q = ',';
                }
            }
            if (tpu_mesh_parse_axes(mesh, buf, sp->ax[d], &sp->n[d], err) != TPU_OK) {
                return TPU_ERR_INVALID;
            }
            for (i = 0; i < sp->n[d]; i++) {
                int a = sp->ax[d][i];

                if (used[a] >= 0) {
                    return tpu_err_set(err, TPU_ERR_INVALID,
                                       "partition spec '%s' uses mesh axis '%s' for dimensions "
                                       "%d and %d",
                                       text, tpu_mesh_axis_name(mesh, a), used[a], d);
                }
                used[a] = d;
            }
        }
        d++;
        if (*p == ',') {
            p++;
            if (*p == '\0' && d < ndims) {
                continue; /* "data," : the next entry is empty */
            }
        }
        if (*p == '\0') {
            break;
        }
    }
    return TPU_OK;
}

int tpu__array_spec_prod(const tpu_mesh_t *mesh, const spec_t *sp, int d)
{
    int i, prod = 1;

    for (i = 0; i < sp->n[d]; i++) {
        prod *= tpu_mesh_axis_size(mesh, sp->ax[d][i]);
    }
    return prod;
}

void tpu__array_spec_entry_str(const tpu_mesh_t *mesh, const spec_t *sp, int d, char *buf,
                               size_t len)
{
    size_t used = 0;
    int i;

    if (sp->n[d] == 0) {
        snprintf(buf, len, "None");
        return;
    }
    buf[0] = '\0';
    if (sp->n[d] > 1) {
        used += (size_t)snprintf(buf, len, "(");
    }
    for (i = 0; i < sp->n[d] && used < len; i++) {
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i > 0 ? "," : "",
                                 tpu_mesh_axis_name(mesh, sp->ax[d][i]));
    }
    if (sp->n[d] > 1 && used < len) {
        snprintf(buf + used, len - used, ")");
    }
}

/* Remove the mesh axes 'axes' (n of them) from every dimension of 'sp'. */
void tpu__array_spec_remove(spec_t *sp, int ndims, const int *axes, int n)
{
    int d, i, j, k;

    for (d = 0; d < ndims; d++) {
        for (i = 0, k = 0; i < sp->n[d]; i++) {
            int drop = 0;

            for (j = 0; j < n; j++) {
                drop |= sp->ax[d][i] == axes[j];
            }
            if (!drop) {
                sp->ax[d][k++] = sp->ax[d][i];
            }
        }
        sp->n[d] = k;
    }
}

void tpu__array_spec_insert_dim(spec_t *sp, int ndims, int at)
{
    int d;

    for (d = ndims; d > at; d--) {
        sp->n[d] = sp->n[d - 1];
        memcpy(sp->ax[d], sp->ax[d - 1], sizeof(sp->ax[d]));
    }
    sp->n[at] = 0;
}

void tpu__array_spec_delete_dim(spec_t *sp, int ndims, int at)
{
    int d;

    for (d = at; d < ndims - 1; d++) {
        sp->n[d] = sp->n[d + 1];
        memcpy(sp->ax[d], sp->ax[d + 1], sizeof(sp->ax[d]));
    }
    sp->n[ndims - 1] = 0;
}

/* The block index along dimension d of the shard chip 'chip' holds. */
int64_t tpu__array_block_index(const tpu_mesh_t *mesh, const spec_t *sp, int d, int chip)
{
    int coords[MAXA], i;
    int64_t idx = 0;

    tpu_mesh_coords(mesh, chip, coords);
    for (i = 0; i < sp->n[d]; i++) {
        idx = idx * tpu_mesh_axis_size(mesh, sp->ax[d][i]) + coords[sp->ax[d][i]];
    }
    return idx;
}
