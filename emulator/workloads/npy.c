/*
 * NumPy .npy reader and writer (see include/tpu/npy.h for the format and
 * what is refused).
 *
 * The header is parsed as the small Python literal numpy writes: a dict with
 * exactly the keys 'descr' (a quoted string), 'fortran_order' (True or False)
 * and 'shape' (a tuple of non-negative integers, "()" for a scalar, "(5,)" for
 * one dimension), in any order, single or double quotes, an optional trailing
 * comma, then spaces and a newline.  Anything else is "malformed header" with
 * the offending text quoted.  The data size is checked against the file size
 * before anything is read, so a truncated file costs no allocation.
 *
 * Cost: one pass over the file; the elements are read with one fread into the
 * result (and byte-swapped on a big-endian host, where the file's
 * little-endian data must be turned around).
 */
#include "tpu/npy.h"

#include "alloc.h"
#include "file.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define MAGIC     "\x93NUMPY"
#define MAGIC_LEN 6
/* numpy refuses headers above this size too (numpy.lib.format._MAX_HEADER_SIZE). */
#define MAX_HEADER 10000

static const struct {
    const char *descr;
    const char *name;
    int size;
} types[TPU_NPY_TYPE_COUNT] = {
    [TPU_NPY_F32] = {"<f4", "'<f4' (float32)", 4},
    [TPU_NPY_I32] = {"<i4", "'<i4' (int32)", 4},
    [TPU_NPY_I64] = {"<i8", "'<i8' (int64)", 8},
};

const char *tpu_npy_type_name(tpu_npy_type_t type)
{
    return (unsigned)type < TPU_NPY_TYPE_COUNT ? types[type].name : "?";
}

int tpu_npy_type_size(tpu_npy_type_t type)
{
    return (unsigned)type < TPU_NPY_TYPE_COUNT ? types[type].size : 0;
}

static int host_is_little(void)
{
    const uint16_t one = 1;
    unsigned char b;

    memcpy(&b, &one, 1);
    return b == 1;
}

static void swap_bytes(void *data, int64_t count, int size)
{
    unsigned char *p = data;
    int64_t i;
    int j;

    for (i = 0; i < count; i++, p += size) {
        for (j = 0; j < size / 2; j++) {
            unsigned char t = p[j];

            p[j] = p[size - 1 - j];
            p[size - 1 - j] = t;
        }
    }
}

/* The parse state of a header: the text and a cursor. */
typedef struct hdr {
    const char *path;
    const char *s;
    size_t i, n;
} hdr_t;

static void skip_ws(hdr_t *h)
{
    while (h->i < h->n && (h->s[h->i] == ' ' || h->s[h->i] == '\t')) {
        h->i++;
    }
}

/* A "malformed header" error quoting the text from the cursor on. */
static tpu_status_t malformed(hdr_t *h, const char *what, tpu_err_t *err)
{
    char near[40];
    size_t k, m = 0;

    for (k = h->i; k < h->n && m + 1 < sizeof(near); k++) {
        near[m++] = isprint((unsigned char)h->s[k]) ? h->s[k] : '?';
    }
    near[m] = '\0';
    return tpu_err_set(err, TPU_ERR_INVALID, "%s: malformed .npy header: %s at '%s'", h->path, what,
                       near);
}

static tpu_status_t parse_string(hdr_t *h, char *out, size_t len, tpu_err_t *err)
{
    char q;
    size_t m = 0;

    skip_ws(h);
    if (h->i >= h->n || (h->s[h->i] != '\'' && h->s[h->i] != '"')) {
        return malformed(h, "expected a quoted string", err);
    }
    q = h->s[h->i++];
    while (h->i < h->n && h->s[h->i] != q) {
        if (m + 1 >= len) {
            return malformed(h, "string too long", err);
        }
        out[m++] = h->s[h->i++];
    }
    if (h->i >= h->n) {
        return malformed(h, "unterminated string", err);
    }
    h->i++;
    out[m] = '\0';
    return TPU_OK;
}

static tpu_status_t parse_bool(hdr_t *h, int *v_p, tpu_err_t *err)
{
    skip_ws(h);
    if (h->n - h->i >= 4 && strncmp(h->s + h->i, "True", 4) == 0) {
        h->i += 4;
        *v_p = 1;
        return TPU_OK;
    }
    if (h->n - h->i >= 5 && strncmp(h->s + h->i, "False", 5) == 0) {
        h->i += 5;
        *v_p = 0;
        return TPU_OK;
    }
    return malformed(h, "expected True or False", err);
}

static tpu_status_t parse_shape(hdr_t *h, tpu_npy_t *a, tpu_err_t *err)
{
    skip_ws(h);
    if (h->i >= h->n || h->s[h->i] != '(') {
        return malformed(h, "expected a shape tuple", err);
    }
    h->i++;
    a->ndim = 0;
    for (;;) {
        int64_t v = 0;
        int digits = 0;

        skip_ws(h);
        if (h->i < h->n && h->s[h->i] == ')') {
            h->i++;
            return TPU_OK;
        }
        while (h->i < h->n && isdigit((unsigned char)h->s[h->i])) {
            if (v > (INT64_MAX - 9) / 10) {
                return malformed(h, "dimension too large", err);
            }
            v = v * 10 + (h->s[h->i++] - '0');
            digits++;
        }
        if (h->i < h->n && h->s[h->i] == 'L') {
            h->i++; /* Python 2 long suffix, written by old numpy */
        }
        if (digits == 0) {
            return malformed(h, "expected a non-negative dimension", err);
        }
        if (a->ndim == TPU_NPY_MAX_DIMS) {
            return tpu_err_set(err, TPU_ERR_INVALID, "%s: more than %d dimensions", h->path,
                               TPU_NPY_MAX_DIMS);
        }
        a->shape[a->ndim++] = v;
        skip_ws(h);
        if (h->i < h->n && h->s[h->i] == ',') {
            h->i++;
        } else if (h->i >= h->n || h->s[h->i] != ')') {
            return malformed(h, "expected ',' or ')' in the shape", err);
        }
    }
}

/* Parse the header dict into 'a'; checks the type and the order. */
static tpu_status_t parse_header(const char *path, const char *s, size_t n, tpu_npy_t *a,
                                 tpu_err_t *err)
{
    hdr_t h = {path, s, 0, n};
    char key[32], descr[32] = "";
    int have_descr = 0, have_order = 0, have_shape = 0, fortran = 0, t;
    tpu_status_t status;

    skip_ws(&h);
    if (h.i >= h.n || s[h.i] != '{') {
        return malformed(&h, "expected '{'", err);
    }
    h.i++;
    for (;;) {
        skip_ws(&h);
        if (h.i < h.n && s[h.i] == '}') {
            h.i++;
            break;
        }
        status = parse_string(&h, key, sizeof(key), err);
        if (status != TPU_OK) {
            return status;
        }
        skip_ws(&h);
        if (h.i >= h.n || s[h.i] != ':') {
            return malformed(&h, "expected ':'", err);
        }
        h.i++;
        if (strcmp(key, "descr") == 0 && !have_descr) {
            status = parse_string(&h, descr, sizeof(descr), err);
            have_descr = 1;
        } else if (strcmp(key, "fortran_order") == 0 && !have_order) {
            status = parse_bool(&h, &fortran, err);
            have_order = 1;
        } else if (strcmp(key, "shape") == 0 && !have_shape) {
            status = parse_shape(&h, a, err);
            have_shape = 1;
        } else {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "%s: malformed .npy header: unexpected or repeated key '%s'", path,
                               key);
        }
        if (status != TPU_OK) {
            return status;
        }
        skip_ws(&h);
        if (h.i < h.n && s[h.i] == ',') {
            h.i++;
        } else if (h.i >= h.n || s[h.i] != '}') {
            return malformed(&h, "expected ',' or '}'", err);
        }
    }
    while (h.i < h.n && (s[h.i] == ' ' || s[h.i] == '\n' || s[h.i] == '\t' || s[h.i] == '\0')) {
        h.i++;
    }
    if (h.i != h.n) {
        return malformed(&h, "text after the dict", err);
    }
    if (!have_descr || !have_order || !have_shape) {
        return tpu_err_set(err, TPU_ERR_INVALID, "%s: malformed .npy header: missing key '%s'",
                           path,
                           !have_descr   ? "descr"
                           : !have_order ? "fortran_order"
                                         : "shape");
    }
    if (descr[0] == '>') {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "%s: big-endian data ('%s') is not supported; save it little-endian "
                           "(e.g. x.astype('<f4'))",
                           path, descr);
    }
    for (t = 0; t < TPU_NPY_TYPE_COUNT; t++) {
        if (strcmp(descr, types[t].descr) == 0) {
            break;
        }
    }
    if (t == TPU_NPY_TYPE_COUNT) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "%s: element type '%s' is not supported (use '<f4' float32, '<i4' "
                           "int32 or '<i8' int64)",
                           path, descr);
    }
    if (fortran) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "%s: Fortran-order arrays are not supported; save it in C order "
                           "(np.ascontiguousarray)",
                           path);
    }
    a->type = (tpu_npy_type_t)t;
    return TPU_OK;
}

/* Read (map 0) or map (map 1) 'path'; see tpu_npy_read() and tpu_npy_map(). */
static tpu_status_t load(const char *path, int map, tpu_npy_t *arr_p, tpu_err_t *err)
{
    unsigned char pre[MAGIC_LEN + 2 + 4];
    char *header = NULL;
    size_t hlen, prelen;
    long fsize;
    int64_t count = 1, need;
    tpu_npy_t a;
    tpu_status_t status;
    FILE *f;
    int d;
    char why[96];

    if (path == NULL || arr_p == NULL) {
        return tpu_err_set(err, TPU_ERR_INVALID, "npy read: NULL argument");
    }
    memset(&a, 0, sizeof(a));
    f = tpu__fopen_regular(path, why, sizeof(why));
    if (f == NULL) {
        return tpu_err_set(err, TPU_ERR_INVALID, "%s: %s", path, why);
    }
    if (fread(pre, 1, MAGIC_LEN + 2, f) != MAGIC_LEN + 2 || memcmp(pre, MAGIC, MAGIC_LEN) != 0) {
        status = tpu_err_set(err, TPU_ERR_INVALID, "%s: not a .npy file (bad magic)", path);
        goto out_close;
    }
    if (pre[MAGIC_LEN] < 1 || pre[MAGIC_LEN] > 3) {
        status = tpu_err_set(err, TPU_ERR_INVALID,
                             "%s: .npy format version %d.%d is not supported (1.0 to 3.0)", path,
                             pre[MAGIC_LEN], pre[MAGIC_LEN + 1]);
        goto out_close;
    }
    if (pre[MAGIC_LEN] == 1) {
        prelen = MAGIC_LEN + 4;
        if (fread(pre + MAGIC_LEN + 2, 1, 2, f) != 2) {
            goto truncated_header;
        }
        hlen = (size_t)pre[MAGIC_LEN + 2] | (size_t)pre[MAGIC_LEN + 3] << 8;
    } else {
        prelen = MAGIC_LEN + 6;
        if (fread(pre + MAGIC_LEN + 2, 1, 4, f) != 4) {
            goto truncated_header;
        }
        hlen = (size_t)pre[MAGIC_LEN + 2] | (size_t)pre[MAGIC_LEN + 3] << 8 |
               (size_t)pre[MAGIC_LEN + 4] << 16 | (size_t)pre[MAGIC_LEN + 5] << 24;
    }
    if (hlen > MAX_HEADER) {
        status = tpu_err_set(err, TPU_ERR_INVALID, "%s: .npy header of %zu bytes is too large",
                             path, hlen);
        goto out_close;
    }
    header = tpu__malloc(hlen + 1);
    if (header == NULL) {
        status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "%s: no memory for the header", path);
        goto out_close;
    }
    if (fread(header, 1, hlen, f) != hlen) {
        goto truncated_header;
    }
    header[hlen] = '\0';
    status = parse_header(path, header, hlen, &a, err);
    if (status != TPU_OK) {
        goto out_free_header;
    }
    for (d = 0; d < a.ndim; d++) {
        if (a.shape[d] > 0 && count > INT64_MAX / 16 / a.shape[d]) {
            status = tpu_err_set(err, TPU_ERR_INVALID, "%s: shape too large", path);
            goto out_free_header;
        }
        count *= a.shape[d];
    }
    a.count = count;
    need = count * types[a.type].size;
    if (fseek(f, 0, SEEK_END) != 0 || (fsize = ftell(f)) < 0 ||
        fseek(f, (long)(prelen + hlen), SEEK_SET) != 0) {
        status = tpu_err_set(err, TPU_ERR_INVALID, "%s: cannot seek: %s", path, strerror(errno));
        goto out_free_header;
    }
    if ((int64_t)fsize - (int64_t)(prelen + hlen) != need) {
        int64_t have = (int64_t)fsize - (int64_t)(prelen + hlen);

        status = tpu_err_set(err, TPU_ERR_INVALID,
                             "%s: %s %lld bytes of data for %lld elements of %s (%lld bytes)", path,
                             have < need ? "truncated: only" : "too long:", (long long)have,
                             (long long)count, types[a.type].descr, (long long)need);
        goto out_free_header;
    }
    if (map && need > 0 && host_is_little() && (prelen + hlen) % (size_t)types[a.type].size == 0) {
        void *base = mmap(NULL, prelen + hlen + (size_t)need, PROT_READ, MAP_SHARED, fileno(f), 0);

        if (base != MAP_FAILED) {
            a.map = base;
            a.map_len = prelen + hlen + (size_t)need;
            a.data = (char *)base + prelen + hlen;
            *arr_p = a;
            status = TPU_OK;
            goto out_free_header;
        }
    }
    a.data = tpu__malloc(need > 0 ? (size_t)need : 1);
    if (a.data == NULL) {
        status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "%s: no memory for %lld bytes", path,
                             (long long)need);
        goto out_free_header;
    }
    if (need > 0 && fread(a.data, 1, (size_t)need, f) != (size_t)need) {
        tpu__free(a.data);
        status = tpu_err_set(err, TPU_ERR_INVALID, "%s: read error", path);
        goto out_free_header;
    }
    if (!host_is_little()) {
        swap_bytes(a.data, count, types[a.type].size);
    }
    *arr_p = a;
    status = TPU_OK;
    goto out_free_header;
truncated_header:
    status = tpu_err_set(err, TPU_ERR_INVALID, "%s: truncated .npy header", path);
out_free_header:
    tpu__free(header);
out_close:
    fclose(f);
    return status;
}

tpu_status_t tpu_npy_read(const char *path, tpu_npy_t *arr_p, tpu_err_t *err)
{
    return load(path, 0, arr_p, err);
}

tpu_status_t tpu_npy_map(const char *path, tpu_npy_t *arr_p, tpu_err_t *err)
{
    return load(path, 1, arr_p, err);
}

void tpu_npy_fini(tpu_npy_t *arr)
{
    if (arr != NULL) {
        if (arr->map != NULL) {
            munmap(arr->map, arr->map_len);
        } else {
            tpu__free(arr->data);
        }
        memset(arr, 0, sizeof(*arr));
    }
}

static void shape_str(int ndim, const int64_t *shape, char *buf, size_t len)
{
    size_t m = 0;
    int d;

    m += (size_t)snprintf(buf + m, len - m, "[");
    for (d = 0; d < ndim && m < len; d++) {
        if (shape[d] < 0) {
            m += (size_t)snprintf(buf + m, len - m, "%sN", d ? "," : "");
        } else {
            m += (size_t)snprintf(buf + m, len - m, "%s%lld", d ? "," : "", (long long)shape[d]);
        }
    }
    if (m < len) {
        snprintf(buf + m, len - m, "]");
    }
}

tpu_status_t tpu_npy_check_f32(const tpu_npy_t *a, const char *path, const char *what, int ndim,
                               int64_t *shape, tpu_err_t *err)
{
    char want[96], got[96];
    int d, ok;

    ok = a->ndim == ndim;
    for (d = 0; ok && d < ndim; d++) {
        ok = shape[d] < 0 || shape[d] == a->shape[d];
    }
    shape_str(ndim, shape, want, sizeof(want));
    shape_str(a->ndim, a->shape, got, sizeof(got));
    if (a->type != TPU_NPY_F32) {
        return tpu_err_set(err, TPU_ERR_INVALID, "%s: %s must be float32 '<f4' %s, got %s %s", path,
                           what, want, types[a->type].descr, got);
    }
    if (!ok) {
        return tpu_err_set(err, TPU_ERR_INVALID, "%s: %s must have shape %s, got %s", path, what,
                           want, got);
    }
    for (d = 0; d < ndim; d++) {
        shape[d] = a->shape[d];
    }
    return TPU_OK;
}

tpu_status_t tpu_npy_read_f32(const char *path, const char *what, int ndim, int64_t *shape,
                              float **data_p, tpu_err_t *err)
{
    tpu_npy_t a;
    tpu_status_t status;

    status = tpu_npy_read(path, &a, err);
    if (status != TPU_OK) {
        return status;
    }
    status = tpu_npy_check_f32(&a, path, what, ndim, shape, err);
    if (status != TPU_OK) {
        tpu_npy_fini(&a);
        return status;
    }
    *data_p = a.data;
    return TPU_OK;
}

tpu_status_t tpu_npy_write(const char *path, tpu_npy_type_t type, int ndim, const int64_t *shape,
                           const void *data, tpu_err_t *err)
{
    char header[512];
    unsigned char pre[MAGIC_LEN + 4];
    size_t m = 0, total, count = 1, size;
    void *swapped = NULL;
    const void *out = data;
    tpu_status_t status = TPU_OK;
    FILE *f;
    int d;

    if (path == NULL || (unsigned)type >= TPU_NPY_TYPE_COUNT || ndim < 0 ||
        ndim > TPU_NPY_MAX_DIMS || (ndim > 0 && shape == NULL)) {
        return tpu_err_set(err, TPU_ERR_INVALID, "npy write: bad arguments");
    }
    m += (size_t)snprintf(header, sizeof(header),
                          "{'descr': '%s', 'fortran_order': False, "
                          "'shape': (",
                          types[type].descr);
    for (d = 0; d < ndim; d++) {
        if (shape[d] < 0) {
            return tpu_err_set(err, TPU_ERR_INVALID, "npy write %s: negative dimension", path);
        }
        m += (size_t)snprintf(header + m, sizeof(header) - m, "%s%lld", d ? ", " : "",
                              (long long)shape[d]);
        count *= (size_t)shape[d];
    }
    /* "(5,)" for one dimension, as numpy writes it. */
    m += (size_t)snprintf(header + m, sizeof(header) - m, "%s), }", ndim == 1 ? "," : "");
    /* Pad with spaces so that magic + version + length + header is a multiple of 64. */
    total = MAGIC_LEN + 4 + m + 1;
    while (total % 64 != 0) {
        header[m++] = ' ';
        total++;
    }
    header[m++] = '\n';
    if (data == NULL && count > 0) {
        return tpu_err_set(err, TPU_ERR_INVALID, "npy write %s: no data", path);
    }
    size = count * (size_t)types[type].size;
    if (!host_is_little() && size > 0) {
        swapped = tpu__malloc(size);
        if (swapped == NULL) {
            return tpu_err_set(err, TPU_ERR_NO_MEMORY, "npy write %s: no memory", path);
        }
        memcpy(swapped, data, size);
        swap_bytes(swapped, (int64_t)count, types[type].size);
        out = swapped;
    }
    memcpy(pre, MAGIC, MAGIC_LEN);
    pre[MAGIC_LEN] = 1;
    pre[MAGIC_LEN + 1] = 0;
    pre[MAGIC_LEN + 2] = (unsigned char)(m & 0xff);
    pre[MAGIC_LEN + 3] = (unsigned char)(m >> 8);
    f = fopen(path, "wb");
    if (f == NULL) {
        status = tpu_err_set(err, TPU_ERR_INVALID, "%s: cannot write: %s", path, strerror(errno));
        goto out_free;
    }
    if (fwrite(pre, 1, sizeof(pre), f) != sizeof(pre) || fwrite(header, 1, m, f) != m ||
        (size > 0 && fwrite(out, 1, size, f) != size)) {
        status = tpu_err_set(err, TPU_ERR_INVALID, "%s: write error: %s", path, strerror(errno));
    }
    if (fclose(f) != 0 && status == TPU_OK) {
        status = tpu_err_set(err, TPU_ERR_INVALID, "%s: write error: %s", path, strerror(errno));
    }
out_free:
    tpu__free(swapped);
    return status;
}
