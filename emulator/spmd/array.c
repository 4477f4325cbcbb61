/*
 * Sharded arrays (include/tpu/spmd.h): partition specs, shards in HBM,
 * place/gather, reshard, and the JAX collectives on shards.
 *
 * A shard is the row-major block of the global array that a chip holds: along
 * dimension d, sharded over the mesh axes spec[d] = (a1, ..., ak), chip c holds
 * block number idx_d(c) = row-major index of c's coordinates over (a1..ak), the
 * last fastest (JAX's NamedSharding), of local_shape[d] = shape[d] / prod(sizes).
 *
 * The collectives work on the shards with the flat collectives of spmd.c and
 * rearrange the bytes around them on the host: an all-gather along dimension d
 * interleaves the G received blocks along d; a psum_scatter along d first packs
 * the G chunks of d contiguously; an all-to-all packs along the split dimension
 * and unpacks along the concat dimension.  These copies are layout work XLA also
 * does on the chip; they are not in the modeled time.
 */
#include "tpu/dtype.h"

#include "alloc.h"
#include "spmd_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define MAXD TPU_ARRAY_MAX_DIMS
#define MAXA TPU_MESH_MAX_AXES

typedef struct spec {
    int n[MAXD];
    int ax[MAXD][MAXA]; /* mesh axes of each dimension, slowest first */
} spec_t;

struct tpu_array {
    tpu_spmd_t *spmd;
    int ndims;
    int64_t shape[MAXD];
    int64_t local_shape[MAXD];
    tpu_dtype_t dtype;
    spec_t spec;
    int64_t local_count;
    uint64_t local_bytes;
    void **data; /* per local chip; NULL entries without data */
    int reserved;
};

/* ---- specs ---- */

static int is_none(const char *s, size_t n)
{
    return n == 0 || (n == 4 && strncmp(s, "None", 4) == 0) || (n == 1 && (*s == '_' || *s == '-'));
}

static tpu_status_t parse_spec(const tpu_mesh_t *mesh, const char *text, int ndims, spec_t *sp,
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

static int spec_prod(const tpu_mesh_t *mesh, const spec_t *sp, int d)
{
    int i, prod = 1;

    for (i = 0; i < sp->n[d]; i++) {
        prod *= tpu_mesh_axis_size(mesh, sp->ax[d][i]);
    }
    return prod;
}

static void spec_entry_str(const tpu_mesh_t *mesh, const spec_t *sp, int d, char *buf, size_t len)
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
static void spec_remove(spec_t *sp, int ndims, const int *axes, int n)
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

static void spec_insert_dim(spec_t *sp, int ndims, int at)
{
    int d;

    for (d = ndims; d > at; d--) {
        sp->n[d] = sp->n[d - 1];
        memcpy(sp->ax[d], sp->ax[d - 1], sizeof(sp->ax[d]));
    }
    sp->n[at] = 0;
}

static void spec_delete_dim(spec_t *sp, int ndims, int at)
{
    int d;

    for (d = at; d < ndims - 1; d++) {
        sp->n[d] = sp->n[d + 1];
        memcpy(sp->ax[d], sp->ax[d + 1], sizeof(sp->ax[d]));
    }
    sp->n[ndims - 1] = 0;
}

/* The block index along dimension d of the shard chip 'chip' holds. */
static int64_t block_index(const tpu_mesh_t *mesh, const spec_t *sp, int d, int chip)
{
    int coords[MAXA], i;
    int64_t idx = 0;

    tpu_mesh_coords(mesh, chip, coords);
    for (i = 0; i < sp->n[d]; i++) {
        idx = idx * tpu_mesh_axis_size(mesh, sp->ax[d][i]) + coords[sp->ax[d][i]];
    }
    return idx;
}

/* ---- creation ---- */

/* An array of the given local shape and spec (global shape computed). */
static tpu_status_t array_new(tpu_spmd_t *s, int ndims, const int64_t *local_shape,
                              tpu_dtype_t dtype, const spec_t *sp, tpu_array_t **arr_p,
                              tpu_err_t *err)
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
        a->shape[d] = local_shape[d] * spec_prod(s->mesh, sp, d);
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
    if (parse_spec(s->mesh, spec, ndims, &sp, err) != TPU_OK) {
        return TPU_ERR_INVALID;
    }
    for (d = 0; d < ndims; d++) {
        int prod = spec_prod(s->mesh, &sp, d);

        if (shape[d] < 1) {
            return tpu_err_set(err, TPU_ERR_INVALID, "array dimension %d has size %lld", d,
                               (long long)shape[d]);
        }
        if (shape[d] % prod != 0) {
            char e[96];

            spec_entry_str(s->mesh, &sp, d, e, sizeof(e));
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "array dimension %d of size %lld does not divide over mesh axes "
                               "%s of size %d",
                               d, (long long)shape[d], e, prod);
        }
        local[d] = shape[d] / prod;
    }
    return array_new(s, ndims, local, dtype, &sp, arr_p, err);
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

        spec_entry_str(a->spmd->mesh, &a->spec, d, e, sizeof(e));
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
        off[d] = block_index(a->spmd->mesh, &a->spec, d, chip) * a->local_shape[d];
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

/* ---- collectives on shards ---- */

/*
 * out[o][g][r] = in[g][o][r] for o < outer, g < G, r < rbytes (bytes): the
 * interleave between "G blocks one after the other" and "G chunks along a dim".
 */
static void interleave(unsigned char *out, const unsigned char *in, int64_t outer, int G,
                       int64_t rbytes)
{
    int64_t o;
    int g;

    for (o = 0; o < outer; o++) {
        for (g = 0; g < G; g++) {
            memcpy(out + (o * G + g) * rbytes, in + (g * outer + o) * rbytes, (size_t)rbytes);
        }
    }
}

/* The inverse: out[g][o][r] = in[o][g][r]. */
static void deinterleave(unsigned char *out, const unsigned char *in, int64_t outer, int G,
                         int64_t rbytes)
{
    int64_t o;
    int g;

    for (o = 0; o < outer; o++) {
        for (g = 0; g < G; g++) {
            memcpy(out + (g * outer + o) * rbytes, in + (o * G + g) * rbytes, (size_t)rbytes);
        }
    }
}

static int64_t prod_range(const int64_t *v, int from, int to)
{
    int64_t p = 1;
    int i;

    for (i = from; i < to; i++) {
        p *= v[i];
    }
    return p;
}

/* Host scratch buffers, one per local chip (none without data). */
static void **scratch_new(const tpu_spmd_t *s, uint64_t bytes)
{
    void **b = tpu__calloc((size_t)s->nlocal, sizeof(void *));
    int i;

    if (b == NULL || !s->moves_data) {
        return b;
    }
    for (i = 0; i < s->nlocal; i++) {
        b[i] = tpu__malloc((size_t)(bytes > 0 ? bytes : 1));
        if (b[i] == NULL) {
            while (i-- > 0) {
                tpu__free(b[i]);
            }
            tpu__free(b);
            return NULL;
        }
    }
    return b;
}

static void scratch_free(const tpu_spmd_t *s, void **b)
{
    int i;

    for (i = 0; b != NULL && i < s->nlocal; i++) {
        tpu__free(b[i]);
    }
    tpu__free(b);
}

static tpu_status_t resolve(const tpu_array_t *a, const char *axes, int *idx, int *n_p, int *g_p,
                            tpu_err_t *err)
{
    const spmd_axes_t *ax;
    tpu_status_t status = tpu_mesh_parse_axes(a->spmd->mesh, axes, idx, n_p, err);

    if (status == TPU_OK) {
        status = tpu__spmd_axes(a->spmd, axes, &ax, err);
    }
    if (status == TPU_OK) {
        *g_p = ax->groups.size;
    }
    return status;
}

static tpu_status_t check_dim(const tpu_array_t *a, const char *what, int d, tpu_err_t *err)
{
    if (d < 0 || d >= a->ndims) {
        return tpu_err_set(err, TPU_ERR_INVALID, "%s: dimension %d of an array of %d dimensions",
                           what, d, a->ndims);
    }
    return TPU_OK;
}

tpu_status_t tpu_array_psum(const tpu_array_t *a, const char *axes, tpu_redop_t op,
                            tpu_array_t **out_p, tpu_err_t *err)
{
    static const char *const names[] = {"psum", "pmax", "pmin"};
    int idx[MAXA], n, G;
    spec_t sp = a->spec;
    tpu_array_t *o = NULL;
    tpu_status_t status = resolve(a, axes, idx, &n, &G, err);

    if (status != TPU_OK) {
        return status;
    }
    spec_remove(&sp, a->ndims, idx, n);
    status = array_new(a->spmd, a->ndims, a->local_shape, a->dtype, &sp, &o, err);
    if (status == TPU_OK) {
        status = tpu__spmd_coll(a->spmd, (int)op >= 0 && op < TPU_REDOP_COUNT ? names[op] : "psum",
                                TPU_COLL_PSUM, axes, a->dtype, op, a->local_bytes, NULL, 0, a->data,
                                o->data, err);
    }
    if (status != TPU_OK) {
        tpu_array_destroy(o);
        return status;
    }
    *out_p = o;
    return TPU_OK;
}

tpu_status_t tpu_array_pmean(const tpu_array_t *a, const char *axes, tpu_array_t **out_p,
                             tpu_err_t *err)
{
    tpu_array_t *o = NULL;
    tpu_status_t status;
    int idx[MAXA], n, G, i;
    int64_t j;

    if (a->dtype != TPU_DTYPE_F32 && a->dtype != TPU_DTYPE_BF16) {
        return tpu_err_set(err, TPU_ERR_INVALID, "pmean of %s: use f32 or bf16",
                           tpu_dtype_name(a->dtype));
    }
    status = resolve(a, axes, idx, &n, &G, err);
    if (status == TPU_OK) {
        status = tpu_array_psum(a, axes, TPU_REDOP_SUM, &o, err);
    }
    if (status != TPU_OK) {
        return status;
    }
    snprintf(a->spmd->calls[a->spmd->ncalls - 1].name, sizeof(a->spmd->calls[0].name), "pmean");
    for (i = 0; a->spmd->moves_data && i < a->spmd->nlocal; i++) {
        for (j = 0; j < o->local_count; j++) {
            if (a->dtype == TPU_DTYPE_F32) {
                ((float *)o->data[i])[j] /= (float)G;
            } else {
                uint16_t *p = (uint16_t *)o->data[i] + j;

                *p = tpu_dtype_f32_to_bf16(tpu_dtype_bf16_to_f32(*p) / (float)G);
            }
        }
    }
    *out_p = o;
    return TPU_OK;
}

tpu_status_t tpu_array_all_gather(const tpu_array_t *a, const char *axes, int axis, int tiled,
                                  tpu_array_t **out_p, tpu_err_t *err)
{
    tpu_spmd_t *s = a->spmd;
    int idx[MAXA], n, G, nd = a->ndims, i;
    int64_t ls[MAXD + 1], esz = tpu_dtype_size(a->dtype), outer, rbytes;
    spec_t sp = a->spec;
    tpu_array_t *o = NULL;
    void **recv = NULL;
    tpu_status_t status = resolve(a, axes, idx, &n, &G, err);

    if (status != TPU_OK) {
        return status;
    }
    if (tiled ? check_dim(a, "all_gather", axis, err) != TPU_OK : (axis < 0 || axis > nd)) {
        return tpu_err_set(err, TPU_ERR_INVALID, "all_gather: axis %d of an array of %d dimensions",
                           axis, nd);
    }
    if (!tiled && nd == MAXD) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "all_gather(tiled=False) would make %d dimensions (at most %d)", nd + 1,
                           MAXD);
    }
    spec_remove(&sp, nd, idx, n);
    memcpy(ls, a->local_shape, sizeof(a->local_shape));
    outer = prod_range(a->local_shape, 0, axis);
    rbytes = prod_range(a->local_shape, axis, nd) * esz;
    if (tiled) {
        ls[axis] *= G;
    } else {
        for (i = nd; i > axis; i--) {
            ls[i] = ls[i - 1];
        }
        ls[axis] = G;
        spec_insert_dim(&sp, nd, axis);
        nd++;
    }
    status = array_new(s, nd, ls, a->dtype, &sp, &o, err);
    if (status == TPU_OK) {
        recv = scratch_new(s, a->local_bytes * (uint64_t)G);
        if (recv == NULL) {
            status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for an all_gather");
        }
    }
    if (status == TPU_OK) {
        status = tpu__spmd_coll(s, "all_gather", TPU_COLL_ALL_GATHER, axes, a->dtype, TPU_REDOP_SUM,
                                a->local_bytes * (uint64_t)G, NULL, 0, a->data, recv, err);
    }
    for (i = 0; status == TPU_OK && s->moves_data && i < s->nlocal; i++) {
        interleave(o->data[i], recv[i], outer, G, rbytes);
    }
    scratch_free(s, recv);
    if (status != TPU_OK) {
        tpu_array_destroy(o);
        return status;
    }
    *out_p = o;
    return TPU_OK;
}

tpu_status_t tpu_array_psum_scatter(const tpu_array_t *a, const char *axes, int d, int tiled,
                                    tpu_array_t **out_p, tpu_err_t *err)
{
    tpu_spmd_t *s = a->spmd;
    int idx[MAXA], n, G, nd = a->ndims, i;
    int64_t ls[MAXD], esz = tpu_dtype_size(a->dtype), outer, rbytes;
    spec_t sp = a->spec;
    tpu_array_t *o = NULL;
    void **packed = NULL;
    tpu_status_t status = resolve(a, axes, idx, &n, &G, err);

    if (status == TPU_OK) {
        status = check_dim(a, "psum_scatter", d, err);
    }
    if (status != TPU_OK) {
        return status;
    }
    if (tiled && a->local_shape[d] % G != 0) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "psum_scatter over '%s': dimension %d of the shard has size %lld, "
                           "not divisible by the group size %d",
                           axes, d, (long long)a->local_shape[d], G);
    }
    if (!tiled && a->local_shape[d] != G) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "psum_scatter(tiled=False) over '%s': dimension %d of the shard has "
                           "size %lld, it must equal the group size %d",
                           axes, d, (long long)a->local_shape[d], G);
    }
    spec_remove(&sp, nd, idx, n);
    memcpy(ls, a->local_shape, sizeof(ls));
    ls[d] /= G;
    outer = prod_range(a->local_shape, 0, d);
    rbytes = prod_range(ls, d, nd) * esz;
    if (tiled) {
        for (i = 0; i < n; i++) {
            sp.ax[d][sp.n[d]++] = idx[i];
        }
    } else {
        if (nd == 1) {
            /* A scalar result: keep one dimension of size 1. */
            tiled = 1;
        } else {
            spec_delete_dim(&sp, nd, d);
            for (i = d; i < nd - 1; i++) {
                ls[i] = ls[i + 1];
            }
            nd--;
        }
    }
    status = array_new(s, nd, ls, a->dtype, &sp, &o, err);
    if (status == TPU_OK) {
        packed = scratch_new(s, a->local_bytes);
        if (packed == NULL) {
            status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for a psum_scatter");
        }
    }
    for (i = 0; status == TPU_OK && s->moves_data && i < s->nlocal; i++) {
        deinterleave(packed[i], a->data[i], outer, G, rbytes);
    }
    if (status == TPU_OK) {
        status = tpu__spmd_coll(s, "psum_scatter", TPU_COLL_REDUCE_SCATTER, axes, a->dtype,
                                TPU_REDOP_SUM, a->local_bytes, NULL, 0, packed, o->data, err);
    }
    scratch_free(s, packed);
    if (status != TPU_OK) {
        tpu_array_destroy(o);
        return status;
    }
    *out_p = o;
    return TPU_OK;
}

tpu_status_t tpu_array_all_to_all(const tpu_array_t *a, const char *axes, int split, int concat,
                                  int tiled, tpu_array_t **out_p, tpu_err_t *err)
{
    tpu_spmd_t *s = a->spmd;
    int idx[MAXA], n, G, nd = a->ndims, i, ne, sx, cx;
    int64_t e[MAXD + 1], esz = tpu_dtype_size(a->dtype);
    spec_t sp = a->spec;
    tpu_array_t *o = NULL;
    void **packed = NULL, **recv = NULL;
    tpu_status_t status = resolve(a, axes, idx, &n, &G, err);

    if (status == TPU_OK) {
        status = check_dim(a, "all_to_all split_axis", split, err);
    }
    if (status == TPU_OK) {
        status = check_dim(a, "all_to_all concat_axis", concat, err);
    }
    if (status != TPU_OK) {
        return status;
    }
    if (tiled && a->local_shape[split] % G != 0) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "all_to_all over '%s': split dimension %d of the shard has size %lld, "
                           "not divisible by the group size %d",
                           axes, split, (long long)a->local_shape[split], G);
    }
    if (!tiled && a->local_shape[split] != G) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "all_to_all(tiled=False) over '%s': split dimension %d of the shard has "
                           "size %lld, it must equal the group size %d",
                           axes, split, (long long)a->local_shape[split], G);
    }
    /*
     * The untiled form is the tiled one on the shape with a 1 inserted for the
     * new dimension, with the split dimension (then of size 1) squeezed out, as
     * jax.lax.all_to_all does: concat_axis counts positions after split_axis is
     * removed, so for split < concat the 1 goes at concat + 1; split == concat
     * needs neither.
     */
    memcpy(e, a->local_shape, sizeof(a->local_shape));
    ne = nd;
    sx = split;
    cx = concat;
    spec_remove(&sp, nd, idx, n);
    if (!tiled && split != concat) {
        if (split < concat) {
            cx = concat + 1;
        } else {
            sx = split + 1;
        }
        for (i = nd; i > cx; i--) {
            e[i] = e[i - 1];
        }
        e[cx] = 1;
        spec_insert_dim(&sp, nd, cx);
        ne = nd + 1;
    }
    {
        int64_t outer_s = prod_range(e, 0, sx), outer_c, r_s, r_c;
        int64_t chunk[MAXD + 1];

        memcpy(chunk, e, sizeof(chunk));
        chunk[sx] /= G;
        r_s = prod_range(chunk, sx, ne) * esz;
        outer_c = prod_range(chunk, 0, cx);
        r_c = prod_range(chunk, cx, ne) * esz;
        e[sx] /= G;
        e[cx] *= G;
        if (tiled) {
            for (i = 0; i < n; i++) {
                sp.ax[sx][sp.n[sx]++] = idx[i];
            }
        } else if (split != concat) {
            spec_delete_dim(&sp, ne, sx);
            for (i = sx; i < ne - 1; i++) {
                e[i] = e[i + 1];
            }
            ne--;
        }
        status = array_new(s, ne, e, a->dtype, &sp, &o, err);
        if (status == TPU_OK) {
            packed = scratch_new(s, a->local_bytes);
            recv = scratch_new(s, a->local_bytes);
            if (packed == NULL || recv == NULL) {
                status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for an all_to_all");
            }
        }
        for (i = 0; status == TPU_OK && s->moves_data && i < s->nlocal; i++) {
            deinterleave(packed[i], a->data[i], outer_s, G, r_s);
        }
        if (status == TPU_OK) {
            status = tpu__spmd_coll(s, "all_to_all", TPU_COLL_ALL_TO_ALL, axes, a->dtype,
                                    TPU_REDOP_SUM, a->local_bytes, NULL, 0, packed, recv, err);
        }
        for (i = 0; status == TPU_OK && s->moves_data && i < s->nlocal; i++) {
            interleave(o->data[i], recv[i], outer_c, G, r_c);
        }
    }
    scratch_free(s, packed);
    scratch_free(s, recv);
    if (status != TPU_OK) {
        tpu_array_destroy(o);
        return status;
    }
    *out_p = o;
    return TPU_OK;
}

tpu_status_t tpu_array_ppermute(const tpu_array_t *a, const char *axes, const int *perm, int npairs,
                                tpu_array_t **out_p, tpu_err_t *err)
{
    tpu_array_t *o = NULL;
    int idx[MAXA], n, G;
    tpu_status_t status = resolve(a, axes, idx, &n, &G, err);

    if (status == TPU_OK) {
        status = array_new(a->spmd, a->ndims, a->local_shape, a->dtype, &a->spec, &o, err);
    }
    if (status == TPU_OK) {
        status = tpu__spmd_coll(a->spmd, "ppermute", TPU_COLL_PPERMUTE, axes, a->dtype,
                                TPU_REDOP_SUM, a->local_bytes, perm, npairs, a->data, o->data, err);
    }
    if (status != TPU_OK) {
        tpu_array_destroy(o);
        return status;
    }
    *out_p = o;
    return TPU_OK;
}

/* ---- reshard ---- */

/* Slice every shard further along dim d by the mesh axes 'axes' (appended, fastest). */
static tpu_status_t slice_more(const tpu_array_t *a, int d, const int *axes, int n,
                               tpu_array_t **out_p, tpu_err_t *err)
{
    tpu_spmd_t *s = a->spmd;
    spec_t sp = a->spec;
    int64_t ls[MAXD], esz = tpu_dtype_size(a->dtype), outer, rbytes, o, f = 1;
    tpu_array_t *out = NULL;
    tpu_status_t status;
    int i;

    for (i = 0; i < n; i++) {
        f *= tpu_mesh_axis_size(s->mesh, axes[i]);
        sp.ax[d][sp.n[d]++] = axes[i];
    }
    if (a->local_shape[d] % f != 0) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "reshard: dimension %d of size %lld does not divide over %lld more "
                           "shards",
                           d, (long long)a->shape[d], (long long)f);
    }
    memcpy(ls, a->local_shape, sizeof(ls));
    ls[d] /= f;
    status = array_new(s, a->ndims, ls, a->dtype, &sp, &out, err);
    if (status != TPU_OK) {
        return status;
    }
    outer = prod_range(a->local_shape, 0, d);
    rbytes = prod_range(ls, d, a->ndims) * esz;
    for (i = 0; s->moves_data && i < s->nlocal; i++) {
        int coords[MAXA], k;
        int64_t j = 0;

        tpu_mesh_coords(s->mesh, s->local_chips[i], coords);
        for (k = 0; k < n; k++) {
            j = j * tpu_mesh_axis_size(s->mesh, axes[k]) + coords[axes[k]];
        }
        for (o = 0; o < outer; o++) {
            memcpy((unsigned char *)out->data[i] + o * rbytes,
                   (unsigned char *)a->data[i] + (o * f + j) * rbytes, (size_t)rbytes);
        }
    }
    *out_p = out;
    return TPU_OK;
}

tpu_status_t tpu_array_reshard(const tpu_array_t *a, const char *spec, tpu_array_t **out_p,
                               tpu_err_t *err)
{
    tpu_spmd_t *s = a->spmd;
    const tpu_mesh_t *mesh = s->mesh;
    spec_t want;
    tpu_array_t *cur = (tpu_array_t *)(uintptr_t)a, *next = NULL;
    tpu_status_t status;
    int d, i, keep[MAXD];

    status = parse_spec(mesh, spec, a->ndims, &want, err);
    if (status != TPU_OK) {
        return status;
    }
    for (d = 0; d < a->ndims; d++) {
        if (a->shape[d] % spec_prod(mesh, &want, d) != 0) {
            char e[96];

            spec_entry_str(mesh, &want, d, e, sizeof(e));
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "reshard: dimension %d of size %lld does not divide over mesh "
                               "axes %s of size %d",
                               d, (long long)a->shape[d], e, spec_prod(mesh, &want, d));
        }
    }
    /* The common prefix of each dimension's axes stays; the rest of the old axes
     * is gathered, then the rest of the new axes sliced. */
    for (d = 0; d < a->ndims; d++) {
        for (keep[d] = 0; keep[d] < a->spec.n[d] && keep[d] < want.n[d] &&
                          a->spec.ax[d][keep[d]] == want.ax[d][keep[d]];
             keep[d]++) {
        }
    }
    for (d = 0; d < a->ndims; d++) {
        char axes[MAXA * TPU_MESH_NAME_LEN];
        int used = 0;

        if (keep[d] == a->spec.n[d]) {
            continue;
        }
        axes[0] = '\0';
        for (i = keep[d]; i < a->spec.n[d]; i++) {
            used += snprintf(axes + used, sizeof(axes) - (size_t)used, "%s%s",
                             i > keep[d] ? "," : "", tpu_mesh_axis_name(mesh, a->spec.ax[d][i]));
        }
        status = tpu_array_all_gather(cur, axes, d, 1, &next, err);
        if (cur != a) {
            tpu_array_destroy(cur);
        }
        if (status != TPU_OK) {
            return status;
        }
        cur = next;
    }
    for (d = 0; d < a->ndims; d++) {
        if (keep[d] == want.n[d]) {
            continue;
        }
        status = slice_more(cur, d, want.ax[d] + keep[d], want.n[d] - keep[d], &next, err);
        if (cur != a) {
            tpu_array_destroy(cur);
        }
        if (status != TPU_OK) {
            return status;
        }
        cur = next;
    }
    if (cur == a) {
        /* The same spec: a copy. */
        status = array_new(s, a->ndims, a->local_shape, a->dtype, &a->spec, &next, err);
        if (status != TPU_OK) {
            return status;
        }
        for (i = 0; s->moves_data && i < s->nlocal; i++) {
            memcpy(next->data[i], a->data[i], (size_t)a->local_bytes);
        }
        cur = next;
    }
    *out_p = cur;
    return TPU_OK;
}
