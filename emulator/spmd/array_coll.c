/*
 * The JAX collectives on sharded arrays (see array.c and include/tpu/spmd.h):
 * psum, pmean, all_gather, psum_scatter, all_to_all and ppermute on shards, and
 * reshard, built from them.
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
#include "array.h"
#include "array_spec.h"
#include "spmd_internal.h"

#include <stdio.h>
#include <string.h>

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
    tpu__array_spec_remove(&sp, a->ndims, idx, n);
    status = tpu__array_new(a->spmd, a->ndims, a->local_shape, a->dtype, &sp, &o, err);
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
    tpu__array_spec_remove(&sp, nd, idx, n);
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
        tpu__array_spec_insert_dim(&sp, nd, axis);
        nd++;
    }
    status = tpu__array_new(s, nd, ls, a->dtype, &sp, &o, err);
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
    tpu__array_spec_remove(&sp, nd, idx, n);
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
            tpu__array_spec_delete_dim(&sp, nd, d);
            for (i = d; i < nd - 1; i++) {
                ls[i] = ls[i + 1];
            }
            nd--;
        }
    }
    status = tpu__array_new(s, nd, ls, a->dtype, &sp, &o, err);
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
    tpu__array_spec_remove(&sp, nd, idx, n);
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
        tpu__array_spec_insert_dim(&sp, nd, cx);
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
            tpu__array_spec_delete_dim(&sp, ne, sx);
            for (i = sx; i < ne - 1; i++) {
                e[i] = e[i + 1];
            }
            ne--;
        }
        status = tpu__array_new(s, ne, e, a->dtype, &sp, &o, err);
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
        status = tpu__array_new(a->spmd, a->ndims, a->local_shape, a->dtype, &a->spec, &o, err);
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
    status = tpu__array_new(s, a->ndims, ls, a->dtype, &sp, &out, err);
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

    status = tpu__array_spec_parse(mesh, spec, a->ndims, &want, err);
    if (status != TPU_OK) {
        return status;
    }
    for (d = 0; d < a->ndims; d++) {
        if (a->shape[d] % tpu__array_spec_prod(mesh, &want, d) != 0) {
            char e[96];

            tpu__array_spec_entry_str(mesh, &want, d, e, sizeof(e));
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "reshard: dimension %d of size %lld does not divide over mesh "
                               "axes %s of size %d",
                               d, (long long)a->shape[d], e, tpu__array_spec_prod(mesh, &want, d));
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
        status = tpu__array_new(s, a->ndims, a->local_shape, a->dtype, &a->spec, &next, err);
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
