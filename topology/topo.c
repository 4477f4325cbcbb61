/*
 * Torus geometry: shapes, wraparound, ids, links and routes.  See tpu/topo.h.
 *
 * Link numbering.  In each slice the directed links are grouped by (axis, dir),
 * axis-major, '+' before '-'.  Inside a group a link is numbered row-major over
 * the grid of chips it leaves, where the axis of the link spans n positions on a
 * wrapped axis and n-1 on an open one ('+' links leave coordinates 0..n-2, '-'
 * links leave 1..n-1).  Slices follow each other.  The ids are therefore dense,
 * and both directions of the mapping are arithmetic.
 *
 * A wrapped axis of 2 chips has two links each way between the pair: the '+'
 * link and the wraparound '-' link.  No source describes such an axis (the TPU
 * slice rules of --wrap auto never wrap one); we assume the wraparound cable
 * that --wrap asks for is there, as on a longer ring, so the pair has twice an
 * open axis' bandwidth and f = 1, as the formula (collectives/ideal.c) counts it.
 */
#include "tpu/topo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const axis_names[] = {"x", "y", "z", "dcn"};

int tpu_topo_axis_of_name(char c)
{
    switch (c) {
    case 'x':
        return 0;
    case 'y':
        return 1;
    case 'z':
        return 2;
    default:
        return -1;
    }
}

const char *tpu_topo_axis_name(int axis)
{
    return (axis >= 0 && axis <= TPU_AXIS_DCN) ? axis_names[axis] : "?";
}

tpu_status_t tpu_topo_parse_shape(const char *text, int dims[TPU_MAX_AXES], int *naxes_p,
                                  tpu_err_t *err)
{
    int out[TPU_MAX_AXES] = {1, 1, 1};
    int n = 0;
    long total = 1;
    const char *p = text;

    if (text == NULL || *text == '\0') {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "topology is empty: give a shape like 16, 4x4 or 4x4x4");
    }
    for (;;) {
        long v = 0;
        const char *start = p;

        if (n == TPU_MAX_AXES) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "bad topology '%s': more than %d axes (a TPU torus has 1 to 3)",
                               text, TPU_MAX_AXES);
        }
        while (*p >= '0' && *p <= '9') {
            if (v <= TPU_MAX_DIM) {
                v = v * 10 + (*p - '0');
            }
            p++;
        }
        if (p == start) {
            if (*p == '\0' || *p == 'x') {
                return tpu_err_set(err, TPU_ERR_INVALID,
                                   "bad topology '%s': axis %d is empty (expected a shape like "
                                   "4x4 or 4x4x4)",
                                   text, n + 1);
            }
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "bad topology '%s': unexpected '%s' (expected a shape like 4x4 or "
                               "4x4x4 of positive integers)",
                               text, p);
        }
        if (v < 1 || v > TPU_MAX_DIM) {
            /* Echo the digits as written: the value stopped growing past the limit. */
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "bad topology '%s': axis %d has %.*s chips, must be 1 to %d", text,
                               n + 1, (int)(p - start), start, TPU_MAX_DIM);
        }
        out[n++] = (int)v;
        total *= v;
        if (*p == '\0') {
            break;
        }
        if (*p != 'x') {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "bad topology '%s': unexpected '%s' after axis %d (expected 'x' "
                               "or the end)",
                               text, p, n);
        }
        p++;
    }
    if (total > TPU_MAX_CHIPS) {
        return tpu_err_set(err, TPU_ERR_INVALID, "bad topology '%s': %ld chips, at most %d", text,
                           total, TPU_MAX_CHIPS);
    }
    memcpy(dims, out, sizeof(out));
    *naxes_p = n;
    return TPU_OK;
}

tpu_status_t tpu_topo_parse_wrap(const char *text, int naxes, int wrap[TPU_MAX_AXES],
                                 int *is_auto_p, tpu_err_t *err)
{
    int out[TPU_MAX_AXES] = {0, 0, 0};
    const char *p = text;
    int a;

    if (text == NULL || *text == '\0') {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "wrap is empty: give auto, all, none or a list of axes like x,z");
    }
    if (strcmp(text, "auto") == 0) {
        *is_auto_p = 1;
        return TPU_OK;
    }
    if (strcmp(text, "all") == 0 || strcmp(text, "none") == 0) {
        for (a = 0; a < TPU_MAX_AXES; a++) {
            wrap[a] = (text[1] == 'l' && a < naxes);
        }
        *is_auto_p = 0;
        return TPU_OK;
    }
    for (;;) {
        a = tpu_topo_axis_of_name(*p);
        if (a < 0 || (p[1] != ',' && p[1] != '\0')) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "bad wrap '%s': expected auto, all, none or axis names like x,z",
                               text);
        }
        if (a >= naxes) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "bad wrap '%s': axis '%s' is not in a %d-axis topology", text,
                               axis_names[a], naxes);
        }
        if (out[a]) {
            return tpu_err_set(err, TPU_ERR_INVALID, "bad wrap '%s': axis '%s' named twice", text,
                               axis_names[a]);
        }
        out[a] = 1;
        if (p[1] == '\0') {
            break;
        }
        p += 2;
    }
    memcpy(wrap, out, sizeof(out));
    *is_auto_p = 0;
    return TPU_OK;
}

void tpu_topo_wrap_auto(tpu_wrap_rule_t rule, int naxes, const int dims[TPU_MAX_AXES],
                        int wrap[TPU_MAX_AXES])
{
    int cubes = 1;
    int a;

    for (a = 0; a < naxes; a++) {
        if (dims[a] % 4 != 0) {
            cubes = 0;
        }
    }
    for (a = 0; a < TPU_MAX_AXES; a++) {
        if (a >= naxes || dims[a] < 2) {
            wrap[a] = 0;
        } else if (rule == TPU_WRAP_RULE_FULL_AXIS) {
            wrap[a] = dims[a] == 16;
        } else {
            wrap[a] = (naxes == 3 && cubes) || dims[a] >= 16;
        }
    }
}

/* The number of positions a link of (axis, dir) can leave from along 'axis'. */
static int link_positions(const tpu_topo_t *topo, int axis)
{
    int n = topo->dims[axis];

    if (n < 2) {
        return 0;
    }
    return topo->wrap[axis] ? n : n - 1;
}

tpu_status_t tpu_topo_init(tpu_topo_t *topo, int naxes, const int dims[TPU_MAX_AXES],
                           const int wrap[TPU_MAX_AXES], int slices, tpu_err_t *err)
{
    tpu_topo_t t;
    long chips = 1;
    int a, b, d, base = 0;

    if (naxes < 1 || naxes > TPU_MAX_AXES) {
        return tpu_err_set(err, TPU_ERR_INVALID, "a topology has 1 to 3 axes, not %d", naxes);
    }
    if (slices < 1 || slices > TPU_MAX_SLICES) {
        return tpu_err_set(err, TPU_ERR_INVALID, "slices must be 1 to %d, got %d", TPU_MAX_SLICES,
                           slices);
    }
    memset(&t, 0, sizeof(t));
    t.naxes = naxes;
    for (a = 0; a < TPU_MAX_AXES; a++) {
        t.dims[a] = a < naxes ? dims[a] : 1;
        if (t.dims[a] < 1 || t.dims[a] > TPU_MAX_DIM) {
            return tpu_err_set(err, TPU_ERR_INVALID, "axis %s has %d chips, must be 1 to %d",
                               axis_names[a], t.dims[a], TPU_MAX_DIM);
        }
        t.wrap[a] = a < naxes && wrap != NULL && wrap[a] && t.dims[a] >= 2;
        chips *= t.dims[a];
    }
    if (chips * slices > TPU_MAX_CHIPS) {
        return tpu_err_set(err, TPU_ERR_INVALID, "%ld chips in %d slices, at most %d in a pod",
                           chips * slices, slices, TPU_MAX_CHIPS);
    }
    t.slices = slices;
    t.chips_per_slice = (int)chips;
    t.nchips = (int)chips * slices;
    for (a = 0; a < TPU_MAX_AXES; a++) {
        for (d = 0; d < 2; d++) {
            int count = 1;

            for (b = 0; b < TPU_MAX_AXES; b++) {
                t.link_span[a][d][b] = b == a ? link_positions(&t, a) : t.dims[b];
                count *= t.link_span[a][d][b];
            }
            t.link_base[a][d] = base;
            base += count;
        }
    }
    t.links_per_slice = base;
    t.nlinks = base * slices;
    *topo = t;
    return TPU_OK;
}

int tpu_topo_slice_of(const tpu_topo_t *topo, int chip)
{
    return chip / topo->chips_per_slice;
}

void tpu_topo_coords(const tpu_topo_t *topo, int chip, int coords[TPU_MAX_AXES])
{
    int local = chip % topo->chips_per_slice;

    coords[2] = local % topo->dims[2];
    local /= topo->dims[2];
    coords[1] = local % topo->dims[1];
    coords[0] = local / topo->dims[1];
}

int tpu_topo_chip(const tpu_topo_t *topo, int slice, const int coords[TPU_MAX_AXES])
{
    int a;

    if (slice < 0 || slice >= topo->slices) {
        return -1;
    }
    for (a = 0; a < TPU_MAX_AXES; a++) {
        if (coords[a] < 0 || coords[a] >= topo->dims[a]) {
            return -1;
        }
    }
    return slice * topo->chips_per_slice + (coords[0] * topo->dims[1] + coords[1]) * topo->dims[2] +
           coords[2];
}

int tpu_topo_neighbor(const tpu_topo_t *topo, int chip, int axis, int dir)
{
    int c[TPU_MAX_AXES];
    int n = topo->dims[axis];

    if (n < 2) {
        return -1;
    }
    tpu_topo_coords(topo, chip, c);
    c[axis] += dir;
    if (c[axis] < 0 || c[axis] >= n) {
        if (!topo->wrap[axis]) {
            return -1;
        }
        c[axis] = (c[axis] + n) % n;
    }
    return tpu_topo_chip(topo, tpu_topo_slice_of(topo, chip), c);
}

int tpu_topo_link(const tpu_topo_t *topo, int chip, int axis, int dir)
{
    int c[TPU_MAX_AXES];
    const int *span;
    int d = dir > 0 ? 0 : 1;
    int idx;

    if (tpu_topo_neighbor(topo, chip, axis, dir) < 0) {
        return -1;
    }
    tpu_topo_coords(topo, chip, c);
    if (d == 1 && !topo->wrap[axis]) {
        c[axis] -= 1;
    }
    span = topo->link_span[axis][d];
    idx = (c[0] * span[1] + c[1]) * span[2] + c[2];
    return tpu_topo_slice_of(topo, chip) * topo->links_per_slice + topo->link_base[axis][d] + idx;
}

void tpu_topo_link_ends(const tpu_topo_t *topo, int link, int *src_p, int *axis_p, int *dir_p,
                        int *dst_p)
{
    int slice = link / topo->links_per_slice;
    int local = link % topo->links_per_slice;
    int a = 0, d = 0, g, c[TPU_MAX_AXES];
    const int *span;

    for (g = 0; g < 2 * TPU_MAX_AXES; g++) {
        int ga = g / 2, gd = g % 2;
        int next = (g + 1 < 2 * TPU_MAX_AXES) ? topo->link_base[(g + 1) / 2][(g + 1) % 2]
                                              : topo->links_per_slice;

        if (local >= topo->link_base[ga][gd] && local < next) {
            a = ga;
            d = gd;
            break;
        }
    }
    span = topo->link_span[a][d];
    local -= topo->link_base[a][d];
    c[2] = local % span[2];
    local /= span[2];
    c[1] = local % span[1];
    c[0] = local / span[1];
    if (d == 1 && !topo->wrap[a]) {
        c[a] += 1;
    }
    *src_p = tpu_topo_chip(topo, slice, c);
    *axis_p = a;
    *dir_p = d == 0 ? 1 : -1;
    *dst_p = tpu_topo_neighbor(topo, *src_p, a, *dir_p);
}

int tpu_topo_axis_move(const tpu_topo_t *topo, int axis, int from, int to, int *dir_p)
{
    int n = topo->dims[axis];
    int fwd = to - from;

    if (!topo->wrap[axis]) {
        *dir_p = fwd >= 0 ? 1 : -1;
        return abs(fwd);
    }
    fwd = ((fwd % n) + n) % n;
    if (fwd <= n - fwd) {
        *dir_p = 1;
        return fwd;
    }
    *dir_p = -1;
    return n - fwd;
}

int tpu_topo_hops(const tpu_topo_t *topo, int a, int b)
{
    int ca[TPU_MAX_AXES], cb[TPU_MAX_AXES];
    int ax, dir, hops = 0;

    tpu_topo_coords(topo, a, ca);
    tpu_topo_coords(topo, b, cb);
    for (ax = 0; ax < TPU_MAX_AXES; ax++) {
        hops += tpu_topo_axis_move(topo, ax, ca[ax], cb[ax], &dir);
    }
    return hops;
}

int tpu_topo_diameter(const tpu_topo_t *topo, unsigned mask)
{
    int a, d = 0;

    for (a = 0; a < TPU_MAX_AXES; a++) {
        if (mask & (1u << a)) {
            d += topo->wrap[a] ? topo->dims[a] / 2 : topo->dims[a] - 1;
        }
    }
    return d;
}

/* Is 'axis' at the tie distance n/2 of a wrapped axis of even size, from 'from' to 'to'? */
static int is_tie(const tpu_topo_t *topo, int axis, int from, int to)
{
    int n = topo->dims[axis];

    return topo->wrap[axis] && n % 2 == 0 && n >= 2 && ((to - from + n) % n) == n / 2;
}

void tpu_topo_route(const tpu_topo_t *topo, int src, int dst, const int *order, int tie_dir,
                    tpu_route_t *route)
{
    static const int default_order[TPU_MAX_AXES] = {0, 1, 2};
    int cs[TPU_MAX_AXES], cd[TPU_MAX_AXES];
    int i;

    if (order == NULL) {
        order = default_order;
    }
    tpu_topo_coords(topo, src, cs);
    tpu_topo_coords(topo, dst, cd);
    route->src = src;
    route->dst = dst;
    route->nseg = 0;
    route->nhops = 0;
    for (i = 0; i < TPU_MAX_AXES; i++) {
        int a = order[i], dir;
        int hops;

        if (a < 0 || a >= topo->naxes) {
            continue;
        }
        hops = tpu_topo_axis_move(topo, a, cs[a], cd[a], &dir);

        if (hops == 0) {
            continue;
        }
        if (is_tie(topo, a, cs[a], cd[a])) {
            dir = tie_dir < 0 ? -1 : 1;
        }
        route->seg[route->nseg].axis = (int8_t)a;
        route->seg[route->nseg].dir = (int8_t)dir;
        route->seg[route->nseg].hops = (int16_t)hops;
        route->nseg++;
        route->nhops += hops;
    }
}

int tpu_topo_route_links(const tpu_topo_t *topo, const tpu_route_t *route, int *links, int max)
{
    int chip = route->src;
    int s, h, count = 0;

    for (s = 0; s < route->nseg; s++) {
        const tpu_route_seg_t *seg = &route->seg[s];

        for (h = 0; h < seg->hops; h++) {
            if (count < max) {
                links[count] = tpu_topo_link(topo, chip, seg->axis, seg->dir);
            }
            count++;
            chip = tpu_topo_neighbor(topo, chip, seg->axis, seg->dir);
        }
    }
    return count;
}

/*
 * Do two straight runs share a directed link?  Runs are given by their start
 * coordinates and segment.  They can only meet on the same line (same axis, same
 * direction, same other coordinates); then compare the positions they leave from.
 */
static int runs_meet(const tpu_topo_t *topo, const int *c1, const tpu_route_seg_t *s1,
                     const int *c2, const tpu_route_seg_t *s2)
{
    int a = s1->axis, b, i;
    int n = topo->dims[a];

    if (s1->axis != s2->axis || s1->dir != s2->dir) {
        return 0;
    }
    for (b = 0; b < TPU_MAX_AXES; b++) {
        if (b != a && c1[b] != c2[b]) {
            return 0;
        }
    }
    for (i = 0; i < s1->hops; i++) {
        int pos = ((c1[a] + s1->dir * i) % n + n) % n;
        int off = (((pos - c2[a]) * s2->dir) % n + n) % n;

        if (off < s2->hops) {
            return 1;
        }
    }
    return 0;
}

/* Start coordinates of each segment of 'r'. */
static void seg_starts(const tpu_topo_t *topo, const tpu_route_t *r, int starts[][TPU_MAX_AXES])
{
    int c[TPU_MAX_AXES], s;

    tpu_topo_coords(topo, r->src, c);
    for (s = 0; s < r->nseg; s++) {
        int a = r->seg[s].axis, n = topo->dims[a];

        memcpy(starts[s], c, sizeof(c));
        c[a] = ((c[a] + r->seg[s].dir * r->seg[s].hops) % n + n) % n;
    }
}

static int routes_meet(const tpu_topo_t *topo, const tpu_route_t *r1, const tpu_route_t *r2)
{
    int st1[TPU_ROUTE_MAX_SEGS][TPU_MAX_AXES], st2[TPU_ROUTE_MAX_SEGS][TPU_MAX_AXES];
    int i, j;

    seg_starts(topo, r1, st1);
    seg_starts(topo, r2, st2);
    for (i = 0; i < r1->nseg; i++) {
        for (j = 0; j < r2->nseg; j++) {
            if (runs_meet(topo, st1[i], &r1->seg[i], st2[j], &r2->seg[j])) {
                return 1;
            }
        }
    }
    return 0;
}

int tpu_topo_routes_disjoint(const tpu_topo_t *topo, int src, int dst,
                             tpu_route_t routes[TPU_MAX_ROUTES])
{
    int cs[TPU_MAX_AXES], cd[TPU_MAX_AXES];
    int axes[TPU_MAX_AXES], k = 0, ties = 0;
    int a, t, r, i, count = 0;

    tpu_topo_coords(topo, src, cs);
    tpu_topo_coords(topo, dst, cd);
    for (a = 0; a < topo->naxes; a++) {
        if (cs[a] != cd[a]) {
            axes[k++] = a;
            ties |= is_tie(topo, a, cs[a], cd[a]);
        }
    }
    if (k == 0) {
        tpu_topo_route(topo, src, dst, NULL, 1, &routes[0]);
        return 1;
    }
    for (t = 0; t < (ties ? 2 : 1); t++) {
        for (r = 0; r < k; r++) {
            int order[TPU_MAX_AXES];
            tpu_route_t cand;
            int ok = 1;

            for (i = 0; i < k; i++) {
                order[i] = axes[(r + i) % k];
            }
            for (i = k, a = 0; a < TPU_MAX_AXES; a++) {
                if (a >= topo->naxes || cs[a] == cd[a]) {
                    order[i++] = a;
                }
            }
            tpu_topo_route(topo, src, dst, order, t == 0 ? 1 : -1, &cand);
            for (i = 0; i < count && ok; i++) {
                ok = !routes_meet(topo, &routes[i], &cand);
            }
            if (ok && count < TPU_MAX_ROUTES) {
                routes[count++] = cand;
            }
        }
    }
    return count;
}

tpu_status_t tpu_topo_check(const tpu_topo_t *topo, tpu_err_t *err)
{
    int chip, a, d;
    long seen = 0;

    for (chip = 0; chip < topo->nchips; chip++) {
        for (a = 0; a < TPU_MAX_AXES; a++) {
            for (d = -1; d <= 1; d += 2) {
                int link = tpu_topo_link(topo, chip, a, d);
                int s, ax, dir, dst;

                if (link < 0) {
                    continue;
                }
                if (link >= topo->nlinks) {
                    return tpu_err_set(err, TPU_ERR_INTERNAL, "link id %d out of range %d", link,
                                       topo->nlinks);
                }
                tpu_topo_link_ends(topo, link, &s, &ax, &dir, &dst);
                if (s != chip || ax != a || dir != d ||
                    dst != tpu_topo_neighbor(topo, chip, a, d)) {
                    return tpu_err_set(err, TPU_ERR_INTERNAL,
                                       "link %d does not decode to chip %d axis %d dir %d", link,
                                       chip, a, d);
                }
                seen++;
            }
        }
    }
    if (seen != topo->nlinks) {
        return tpu_err_set(err, TPU_ERR_INTERNAL, "%ld links found, %d numbered", seen,
                           topo->nlinks);
    }
    return TPU_OK;
}

tpu_status_t tpu_topo_parse_axes(const tpu_topo_t *topo, const char *text, unsigned *mask_p,
                                 tpu_err_t *err)
{
    unsigned mask = 0;
    const char *p = text;

    if (text == NULL || *text == '\0') {
        return tpu_err_set(err, TPU_ERR_INVALID, "axes are empty: give axis names like x or x,y");
    }
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
        int a;

        if (len == 3 && strncmp(p, "dcn", 3) == 0) {
            a = TPU_AXIS_DCN;
            if (topo->slices < 2) {
                return tpu_err_set(err, TPU_ERR_INVALID,
                                   "axes '%s': 'dcn' spans slices, and this job has 1 slice "
                                   "(use --slices N)",
                                   text);
            }
        } else if (len == 1 && tpu_topo_axis_of_name(*p) >= 0) {
            a = tpu_topo_axis_of_name(*p);
            if (a >= topo->naxes) {
                return tpu_err_set(err, TPU_ERR_INVALID,
                                   "axes '%s': axis '%s' is not in a %d-axis topology", text,
                                   axis_names[a], topo->naxes);
            }
        } else {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "axes '%s': unknown axis '%.*s' (axes are x, y, z and dcn)", text,
                               (int)len, p);
        }
        if (mask & (1u << a)) {
            return tpu_err_set(err, TPU_ERR_INVALID, "axes '%s': axis '%s' named twice", text,
                               axis_names[a]);
        }
        mask |= 1u << a;
        if (end == NULL) {
            break;
        }
        p = end + 1;
    }
    *mask_p = mask;
    return TPU_OK;
}

void tpu_topo_axes_str(unsigned mask, char *buf, int len)
{
    static const int print_order[] = {TPU_AXIS_DCN, 0, 1, 2};
    int i, used = 0;

    buf[0] = '\0';
    for (i = 0; i < 4; i++) {
        if (mask & (1u << print_order[i])) {
            used += snprintf(buf + used, (size_t)(len > used ? len - used : 0), "%s%s",
                             used ? "," : "", axis_names[print_order[i]]);
        }
    }
}

void tpu_topo_shape_str(const tpu_topo_t *topo, char *buf, int len)
{
    int a, used = 0;

    buf[0] = '\0';
    for (a = 0; a < topo->naxes; a++) {
        used += snprintf(buf + used, (size_t)(len > used ? len - used : 0), "%s%d", a ? "x" : "",
                         topo->dims[a]);
    }
}

void tpu_topo_wrap_str(const tpu_topo_t *topo, char *buf, int len)
{
    unsigned mask = 0, all = 0;
    int a;

    for (a = 0; a < topo->naxes; a++) {
        if (topo->dims[a] >= 2) {
            all |= 1u << a;
        }
        if (topo->wrap[a]) {
            mask |= 1u << a;
        }
    }
    if (mask == 0) {
        snprintf(buf, (size_t)len, "none");
    } else if (mask == all) {
        snprintf(buf, (size_t)len, "all");
    } else {
        tpu_topo_axes_str(mask, buf, len);
    }
}

int tpu_topo_group_size(const tpu_topo_t *topo, unsigned mask)
{
    int a, size = (mask & TPU_AXIS_MASK_DCN) ? topo->slices : 1;

    for (a = 0; a < TPU_MAX_AXES; a++) {
        if (mask & (1u << a)) {
            size *= topo->dims[a];
        }
    }
    return size;
}

int tpu_topo_group_index(const tpu_topo_t *topo, unsigned mask, int chip)
{
    int c[TPU_MAX_AXES], a;
    int idx = (mask & TPU_AXIS_MASK_DCN) ? tpu_topo_slice_of(topo, chip) : 0;

    tpu_topo_coords(topo, chip, c);
    for (a = 0; a < TPU_MAX_AXES; a++) {
        if (mask & (1u << a)) {
            idx = idx * topo->dims[a] + c[a];
        }
    }
    return idx;
}

int tpu_topo_group_member(const tpu_topo_t *topo, unsigned mask, int chip, int index)
{
    int c[TPU_MAX_AXES], a;
    int slice = tpu_topo_slice_of(topo, chip);

    tpu_topo_coords(topo, chip, c);
    for (a = TPU_MAX_AXES - 1; a >= 0; a--) {
        if (mask & (1u << a)) {
            c[a] = index % topo->dims[a];
            index /= topo->dims[a];
        }
    }
    if (mask & TPU_AXIS_MASK_DCN) {
        slice = index;
    }
    return tpu_topo_chip(topo, slice, c);
}

int tpu_topo_host_count(const tpu_topo_t *topo, const int host_dims[TPU_MAX_AXES])
{
    int a, count = topo->slices;

    for (a = 0; a < TPU_MAX_AXES; a++) {
        int hd = host_dims[a] < 1 ? 1 : host_dims[a];

        count *= (topo->dims[a] + hd - 1) / hd;
    }
    return count;
}

int tpu_topo_host_of(const tpu_topo_t *topo, const int host_dims[TPU_MAX_AXES], int chip)
{
    int c[TPU_MAX_AXES], a;
    int idx = tpu_topo_slice_of(topo, chip);

    tpu_topo_coords(topo, chip, c);
    for (a = 0; a < TPU_MAX_AXES; a++) {
        int hd = host_dims[a] < 1 ? 1 : host_dims[a];

        idx = idx * ((topo->dims[a] + hd - 1) / hd) + c[a] / hd;
    }
    return idx;
}
