/*
 * HLO shapes: the element types (names and bits), 'f32[8,128]{1,0}' and tuple
 * shapes at the parser's cursor, and the shape queries of tpu/hlo.h
 * (tpu_hlo_type_name(), tpu_hlo_shape_bytes(), ...).  Layouts are skipped.
 */
#include "hlo_shape.h"

#include "hlo_lex.h"

#include <string.h>

/* ---------------------------------------------------------------- shapes */

static const struct {
    const char *name;
    int bits;
} types[TPU_HLO_TYPE_COUNT] = {{"tuple", 0},
#define X(name, str, bits) {str, bits},
                               TPU_HLO_TYPE_MAP(X)
#undef X
};

/*
 * The index (from 1) of s[0..n) among the names of a table of 'count' entries of
 * 'stride' bytes whose first member is the name; 0 when absent.
 */
int tpu__hlo_name_lookup(const void *table, size_t stride, int count, const char *s, size_t n)
{
    int i;

    for (i = 1; i < count; i++) {
        const char *name = *(const char *const *)((const char *)table + (size_t)i * stride);

        if (strlen(name) == n && memcmp(name, s, n) == 0) {
            return i;
        }
    }
    return 0;
}

static tpu_hlo_type_t type_lookup(const char *s, size_t n)
{
    return (tpu_hlo_type_t)tpu__hlo_name_lookup(types, sizeof(types[0]), TPU_HLO_TYPE_COUNT, s, n);
}

/* Does a shape start at the cursor?  '(' (a tuple) or a word followed by '['. */
int tpu__hlo_shape_here(const parser_t *p)
{
    size_t skip, n;

    if (tpu__hlo_cur(p) == '(') {
        return 1;
    }
    n = tpu__hlo_ident_len(p, &skip);
    return n > 0 && skip == 0 && tpu__hlo_at(p, n) == '[';
}

tpu_status_t tpu__hlo_parse_shape(parser_t *p, tpu_hlo_shape_t *sh, int in_signature);

static tpu_status_t parse_tuple_shape(parser_t *p, tpu_hlo_shape_t *sh)
{
    tpu_status_t status;
    int cap = 0;

    tpu__hlo_adv(p); /* ( */
    if (++p->depth > MAX_DEPTH) {
        return tpu__hlo_fail(p, "shapes nested deeper than %d", MAX_DEPTH);
    }
    sh->type = TPU_HLO_TYPE_TUPLE;
    status = tpu__hlo_skip_ws(p);
    if (status != TPU_OK) {
        return status;
    }
    if (tpu__hlo_cur(p) != ')') {
        do {
            status =
                tpu__hlo_grow(p, (void **)&sh->tuple, sh->ntuple, &cap, sizeof(tpu_hlo_shape_t));
            if (status != TPU_OK) {
                return status;
            }
            memset(&sh->tuple[sh->ntuple], 0, sizeof(tpu_hlo_shape_t));
            status = tpu__hlo_parse_shape(p, &sh->tuple[sh->ntuple], 0);
            if (status != TPU_OK) {
                return status;
            }
            sh->ntuple++;
        } while (tpu__hlo_next_item(p, &status));
        if (status != TPU_OK) {
            return status;
        }
    }
    p->depth--;
    return tpu__hlo_expect(p, ')', "closing a tuple shape");
}

tpu_status_t tpu__hlo_parse_shape(parser_t *p, tpu_hlo_shape_t *sh, int in_signature)
{
    tpu_status_t status;
    size_t skip, n, i;
    char buf[24];

    memset(sh, 0, sizeof(*sh));
    status = tpu__hlo_skip_ws(p);
    if (status != TPU_OK) {
        return status;
    }
    if (tpu__hlo_cur(p) == '(') {
        return parse_tuple_shape(p, sh);
    }
    n = tpu__hlo_ident_len(p, &skip);
    if (n == 0 || skip != 0) {
        return tpu__hlo_fail(p, "expected a shape, found %s", tpu__hlo_what(p, buf, sizeof(buf)));
    }
    sh->type = type_lookup(p->s + p->pos, n);
    if (sh->type == TPU_HLO_TYPE_TUPLE) {
        return tpu__hlo_fail(p, "unknown element type '%.*s'", (int)(n > 32 ? 32 : n),
                             p->s + p->pos);
    }
    for (i = 0; i < n; i++) {
        tpu__hlo_adv(p);
    }
    if (tpu__hlo_cur(p) != '[') {
        return tpu__hlo_fail(p, "expected '[' after element type %s", types[sh->type].name);
    }
    tpu__hlo_adv(p);
    status = tpu__hlo_skip_ws(p);
    if (status != TPU_OK) {
        return status;
    }
    if (tpu__hlo_cur(p) != ']') {
        do {
            int64_t d = 1;

            status = tpu__hlo_skip_ws(p);
            if (status != TPU_OK) {
                return status;
            }
            if (tpu__hlo_cur(p) == '?') {
                tpu__hlo_adv(p);
            } else {
                if (tpu__hlo_cur(p) == '<' && tpu__hlo_at(p, 1) == '=') {
                    tpu__hlo_adv(p);
                    tpu__hlo_adv(p);
                }
                status = tpu__hlo_read_int(p, "a dimension", &d);
                if (status != TPU_OK) {
                    return status;
                }
                if (d < 0) {
                    return tpu__hlo_fail(p, "negative dimension %lld", (long long)d);
                }
            }
            if (sh->rank >= TPU_HLO_MAX_RANK) {
                return tpu__hlo_fail(p, "shape has more than %d dimensions", TPU_HLO_MAX_RANK);
            }
            sh->dims[sh->rank++] = d;
        } while (tpu__hlo_next_item(p, &status));
        if (status != TPU_OK) {
            return status;
        }
    }
    status = tpu__hlo_expect(p, ']', "closing the dimensions");
    if (status != TPU_OK) {
        return status;
    }
    /* A layout: '{' followed by a digit, ':' or '}' (not a computation body). */
    if (tpu__hlo_cur(p) == '{') {
        int c1 = tpu__hlo_at(p, 1);

        if (tpu__hlo_is_digit(c1) || c1 == ':' || (c1 == '}' && !in_signature)) {
            size_t start = p->pos, q;
            int64_t want = sh->rank - 1, v = -1;

            status = tpu__hlo_skip_group(p);
            /* Minor-to-major {rank-1,...,0} is the default; anything else, or a tiling. */
            for (q = start + 1; q < p->pos && status == TPU_OK; q++) {
                int ch = (unsigned char)p->s[q];

                if (tpu__hlo_is_digit(ch)) {
                    /* Saturated: an index past any rank is simply not the default order. */
                    v = v < 0 ? ch - '0' : v < INT32_MAX ? v * 10 + (ch - '0') : v;
                    continue;
                }
                if (v >= 0 && v != want--) {
                    sh->layout_other = 1;
                }
                v = -1;
                if (ch == ':') {
                    sh->layout_other |= p->s[q + 1] == 'T' || p->s[q + 1] == 'S';
                    if (p->mod != NULL && p->s[q + 1] == 'T') {
                        p->mod->tiled_layouts++;
                    }
                    break;
                }
            }
            return status;
        }
    }
    return TPU_OK;
}


const char *tpu_hlo_type_name(tpu_hlo_type_t type)
{
    return type >= 0 && type < TPU_HLO_TYPE_COUNT ? types[type].name : "?";
}

int tpu_hlo_type_bits(tpu_hlo_type_t type)
{
    return type > 0 && type < TPU_HLO_TYPE_COUNT ? types[type].bits : 0;
}

int64_t tpu_hlo_shape_elements(const tpu_hlo_shape_t *sh)
{
    int64_t n = 1;
    int d;

    if (sh->type == TPU_HLO_TYPE_TUPLE || tpu_hlo_type_bits(sh->type) == 0) {
        return 0;
    }
    for (d = 0; d < sh->rank; d++) {
        if (sh->dims[d] > 0 && n > INT64_MAX / 16 / sh->dims[d]) {
            return INT64_MAX / 16;
        }
        n *= sh->dims[d];
    }
    return n;
}

uint64_t tpu_hlo_shape_bytes(const tpu_hlo_shape_t *sh)
{
    uint64_t b = 0;
    int i;

    if (sh->type == TPU_HLO_TYPE_TUPLE) {
        for (i = 0; i < sh->ntuple; i++) {
            b += tpu_hlo_shape_bytes(&sh->tuple[i]);
        }
        return b;
    }
    return ((uint64_t)tpu_hlo_shape_elements(sh) * (uint64_t)tpu_hlo_type_bits(sh->type) + 7) / 8;
}
