/*
 * Sharded arrays (include/tpu/spmd.h): creating them, their shards in HBM, and
 * place/gather between the host and the shards.  Partition specs are
 * array_spec.c's; the JAX collectives on shards and reshard are array_coll.c's.
 *
 * A shard is the row-major block of the global array that a chip holds: along
 * dimension d, sharded over the mesh axes spec[d] = (a1, ..., ak), chip c holds
 * block number idx_d(c) = row-major index of c's coordinates over (a1..ak), the
 * last fastest (JAX's NamedSharding), of local_shape[d] = shape[d] / prod(sizes).
 */
#include "array.h"

#include "tpu/dtype.h"

#include "alloc.h"
#include "array_spec.h"
#include "spmd_internal.h"

#include <stdio.h>
#include <string.h>

/* ---- creation ---- */

/* An array of the given local shape and spec (global shape computed). */
tpu_status_t tpu__array_new(tpu_spmd_t *s, int ndims, const int64_t *local_shape, tpu_dtype_t dtype,
                            const spec_t *sp, tpu_array_t **arr_p, tpu_err_t *err)
{
    tpu_array_t *a;
    tpu_status_t status = TPU_OK;
    int d, i;

    if (ndims < 1 || ndims > MAXD) {
        return tpu_err_set(err, TPU_ERR_INVALID, "arrays have 1 to %d dimensions, not %d", MAXD,
                           ndims);
    }
    a = tpu__calloc(1, sizeof(*a));
    if (a == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for an array");
    }
    a->spmd = s;
    a->ndims = ndims;
    a->dtype = dtype;
    a->spec = *sp;
    a->local_count = 1;
    for (d = 0; d < ndims; d++) {
        a->local_shape[d] = local_shape[d];
        a->shape[d] = local_shape[d] * tpu__array_spec_prod(s->mesh, sp, d);
        a->local_count *= local_shape[d];
    }
    a->local_bytes = (uint64_t)a->local_count * (uint64_t)tpu_dtype_size(dtype);
    a->data = tpu__calloc((size_t)s->nlocal, sizeof(void *));
    if (a->data == NULL) {
        tpu__free(a);
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for an array");
    }
    a->reserved = !s->moves_data;
    for (i = 0; i < s->nlocal && status == TPU_OK; i++) {
        if (a->reserved) {
            status = tpu_hbm_reserve(s->hbm[i], a->local_bytes, err);
            if (status != TPU_OK) {
                /* Give back what the chips before took. */
                while (i-- > 0) {
                    tpu_hbm_unreserve(s->hbm[i], a->local_bytes);
                }
                a->reserved = 0;
                break;
            }
        } else {
            status = tpu_hbm_alloc(s->hbm[i], a->local_bytes, &a->data[i], err);
        }
    }
    if (status != TPU_OK) {
        tpu_array_destroy(a);
        return status;
    }
    *arr_p = a;
    return TPU_OK;
}

tpu_status_t tpu_array_create(tpu_spmd_t *s, int ndims, const int64_t *shape, tpu_dtype_t dtype,
                              const char *spec, tpu_array_t **arr_p, tpu_err_t *err)
{
    int64_t local[MAXD];
    spec_t sp;
    int d;

    if (ndims < 1 || ndims > MAXD) {
        return tpu_err_set(err, TPU_ERR_INVALID, "arrays have 1 to %d dimensions, not %d", MAXD,
                           ndims);
    }
    if ((int)dtype < 0 || dtype >= TPU_DTYPE_COUNT) {
        return tpu_err_set(err, TPU_ERR_INVALID, "unknown dtype %d", (int)dtype);
    }
    if (tpu__array_spec_parse(s->mesh, spec, ndims, &sp, err) != TPU_OK) {
        return TPU_ERR_INVALID;
    }
    for (d = 0; d < ndims; d++) {
        int prod = tpu__array_spec_prod(s->mesh, &sp, d);

        if (shape[d] < 1) {
            return tpu_err_set(err, TPU_ERR_INVALID, "array dimension %d has size %lld", d,
                               (long long)shape[d]);
        }
        if (shape[d] % prod != 0) {
            char e[96];

            tpu__array_spec_entry_str(s->mesh, &sp, d, e, sizeof(e));
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "array dimension %d of size %lld does not divide over mesh axes "
                               "%s of size %d",
                               d, (long long)shape[d], e, prod);
        }
        local[d] = shape[d] / prod;
    }
    return tpu__array_new(s, ndims, local, dtype, &sp, arr_p, err);
}

void tpu_array_destroy(tpu_array_t *a)
{
    int i;

    if (a == NULL) {
        return;
    }
    for (i = 0; i < a->spmd->nlocal && a->data != NULL; i++) {
        if (a->reserved) {
            tpu_hbm_unreserve(a->spmd->hbm[i], a->local_bytes);
        } else if (a->data[i] != NULL) {
            tpu_hbm_free(a->spmd->hbm[i], a->data[i]);
        }
    }
    tpu__free(a->data);
    tpu__free(a);
}

int tpu_array_ndims(const tpu_array_t *a)
{
    return a->ndims;
}

tpu_dtype_t tpu_array_dtype(const tpu_array_t *a)
{
    return a->dtype;
}

void tpu_array_shape(const tpu_array_t *a, int64_t *shape)
{
    memcpy(shape, a->shape, (size_t)a->ndims * sizeof(int64_t));
}

void tpu_array_local_shape(const tpu_array_t *a, int64_t *shape)
{
    memcpy(shape, a->local_shape, (size_t)a->ndims * sizeof(int64_t));
}

int64_t tpu_array_local_count(const tpu_array_t *a)
{
    return a->local_count;
}

uint64_t tpu_array_local_bytes(const tpu_array_t *a)
{
    return a->local_bytes;
}

void tpu_array_spec_str(const tpu_array_t *a, char *buf, int len)
{
    int used = 0, d;

    if (len <= 0) {
        return;
    }
    buf[0] = '\0';
    for (d = 0; d < a->ndims && used < len; d++) {
        char e[96];

        tpu__array_spec_entry_str(a->spmd->mesh, &a->spec, d, e, sizeof(e));
        used += snprintf(buf + used, (size_t)(len - used), "%s%s", d > 0 ? "," : "", e);
    }
}

void *tpu_array_local(const tpu_array_t *a, int i)
{
    return i >= 0 && i < a->spmd->nlocal ? a->data[i] : NULL;
}

/* ---- host <-> shards ---- */

/*
 * Copy between a global row-major array and one block of it: the block of
 * 'local' shape at element offsets 'off' (to_block: global -> block).
 */
static void copy_block(const tpu_array_t *a, unsigned char *global, unsigned char *block,
                       const int64_t *off, int to_block)
{
    int64_t esz = tpu_dtype_size(a->dtype), idx[MAXD] = {0}, rows = 1, r;
    int nd = a->ndims, d;
    size_t row_bytes = (size_t)(a->local_shape[nd - 1] * esz);

    for (d = 0; d < nd - 1; d++) {
        rows *= a->local_shape[d];
    }
    for (r = 0; r < rows; r++) {
        int64_t g = 0;

        for (d = 0; d < nd; d++) {
            g = g * a->shape[d] + off[d] + (d < nd - 1 ? idx[d] : 0);
        }
        if (to_block) {
            memcpy(block + (size_t)r * row_bytes, global + g * esz, row_bytes);
        } else {
            memcpy(global + g * esz, block + (size_t)r * row_bytes, row_bytes);
        }
        for (d = nd - 2; d >= 0; d--) {
            if (++idx[d] < a->local_shape[d]) {
                break;
            }
            idx[d] = 0;
        }
    }
}

static void block_offsets(const tpu_array_t *a, int chip, int64_t *off)
{
    int d;

    for (d = 0; d < a->ndims; d++) {
        off[d] = tpu__array_block_index(a->spmd->mesh, &a->spec, d, chip) * a->local_shape[d];
    }
}

tpu_status_t tpu_array_place(tpu_array_t *a, const void *host, tpu_err_t *err)
{
    int i;

    if (!a->spmd->moves_data) {
        return TPU_OK;
    }
    if (host == NULL) {
        return tpu_err_set(err, TPU_ERR_INVALID, "place: no host array given");
    }
    for (i = 0; i < a->spmd->nlocal; i++) {
        int64_t off[MAXD];

        block_offsets(a, a->spmd->local_chips[i], off);
        copy_block(a, (unsigned char *)(uintptr_t)host, a->data[i], off, 1);
    }
    return TPU_OK;
}

/* Does 'chip' hold the canonical copy of its block (coordinate 0 off the spec)? */
static int canonical(const tpu_array_t *a, int chip)
{
    const tpu_mesh_t *mesh = a->spmd->mesh;
    int coords[MAXA], in_spec[MAXA] = {0}, d, i;

    for (d = 0; d < a->ndims; d++) {
        for (i = 0; i < a->spec.n[d]; i++) {
            in_spec[a->spec.ax[d][i]] = 1;
        }
    }
    tpu_mesh_coords(mesh, chip, coords);
    for (i = 0; i < tpu_mesh_naxes(mesh); i++) {
        if (!in_spec[i] && coords[i] != 0) {
            return 0;
        }
    }
    return 1;
}

tpu_status_t tpu_array_gather(const tpu_array_t *a, void *host, tpu_err_t *err)
{
    tpu_spmd_t *s = a->spmd;
    const tpu_mesh_t *mesh = s->mesh;
    unsigned char *all = NULL;
    tpu_status_t status;
    char axes[TPU_MESH_MAX_AXES * TPU_MESH_NAME_LEN];
    int i, used = 0;

    if (!s->moves_data) {
        return tpu_err_set(err, TPU_ERR_UNSUPPORTED,
                           "gather: a model-only run has no data to gather");
    }
    if (s->nlocal == s->topo.nchips) {
        for (i = 0; i < s->nlocal; i++) {
            int64_t off[MAXD];

            if (!canonical(a, s->local_chips[i])) {
                continue;
            }
            block_offsets(a, s->local_chips[i], off);
            copy_block(a, host, a->data[i], off, 0);
        }
        return TPU_OK;
    }
    /* Chips in other processes: an all-gather over every mesh axis (member =
     * mesh position), outside the modeled time, then the canonical blocks. */
    all = tpu__malloc((size_t)a->local_bytes * (size_t)s->topo.nchips);
    if (all == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory gathering an array");
    }
    axes[0] = '\0';
    for (i = 0; i < tpu_mesh_naxes(mesh); i++) {
        used += snprintf(axes + used, sizeof(axes) - (size_t)used, "%s%s", i > 0 ? "," : "",
                         tpu_mesh_axis_name(mesh, i));
    }
    {
        void *in[1], *out[1];

        if (s->nlocal != 1) {
            tpu__free(all);
            return tpu_err_set(err, TPU_ERR_UNSUPPORTED,
                               "gather: %d local chips of %d; a process hosts one or all",
                               s->nlocal, s->topo.nchips);
        }
        in[0] = a->data[0];
        out[0] = all;
        status = tpu__spmd_coll(s, NULL, TPU_COLL_ALL_GATHER, axes, a->dtype, TPU_REDOP_SUM,
                                a->local_bytes * (uint64_t)s->topo.nchips, NULL, 0, in, out, err);
    }
    if (status == TPU_OK) {
        for (i = 0; i < s->topo.nchips; i++) {
            int chip = tpu_mesh_chip(mesh, i);
            int64_t off[MAXD];

            if (!canonical(a, chip)) {
                continue;
            }
            block_offsets(a, chip, off);
            copy_block(a, host, all + (size_t)i * a->local_bytes, off, 0);
        }
    }
    tpu__free(all);
    return status;
}
