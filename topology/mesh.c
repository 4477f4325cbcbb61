/*
 * Meshes of named logical axes over the chips of a pod (include/tpu/mesh.h):
 * parsing, the default device assignment, explicit device orders, coordinates
 * and the groups of a collective over a tuple of mesh axes.
 */
#include "tpu/mesh.h"

#include "alloc.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Physical axes: the slices, then x, y, z (those of size > 1). */
#define MAX_PHYS   (TPU_MAX_AXES + 1)
#define PHYS_SLICE (-1)
/* The most pieces one logical axis can take (each physical axis at most twice). */
#define MAX_PIECES (2 * MAX_PHYS)

typedef struct piece {
    int phys;   /* index into the physical axes */
    int stride; /* coordinate step of this piece on its physical axis */
    int f;      /* its size */
} piece_t;

struct tpu_mesh {
    tpu_topo_t topo;
    int naxes;
    char names[TPU_MESH_MAX_AXES][TPU_MESH_NAME_LEN];
    int sizes[TPU_MESH_MAX_AXES];
    int nchips;
    int32_t *pos_chip; /* position -> chip */
    int32_t *chip_pos; /* chip -> position */
    int explicit_order;
    /* The default assignment (for tpu_mesh_axis_layout). */
    int nphys;
    int phys_axis[MAX_PHYS]; /* PHYS_SLICE or a torus axis */
    int phys_size[MAX_PHYS];
    int npieces[TPU_MESH_MAX_AXES];
    piece_t pieces[TPU_MESH_MAX_AXES][MAX_PIECES]; /* fastest first */
};

static int valid_name(const char *s, size_t n)
{
    size_t i;

    if (n == 0 || n >= TPU_MESH_NAME_LEN || !(isalpha((unsigned char)s[0]) || s[0] == '_')) {
        return 0;
    }
    for (i = 1; i < n; i++) {
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_')) {
            return 0;
        }
    }
    return 1;
}

tpu_status_t tpu_mesh_parse(const char *spec, char names[][TPU_MESH_NAME_LEN], int *sizes,
                            int *naxes_p, tpu_err_t *err)
{
    const char *p = spec;
    int n = 0, i;

    if (spec == NULL || *spec == '\0') {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "empty mesh: give axes as name=size, e.g. data=4,model=4");
    }
    while (*p != '\0') {
        const char *eq = strchr(p, '='), *end = strchr(p, ',');
        char *num_end;
        long v;

        if (end == NULL) {
            end = p + strlen(p);
        }
        if (eq == NULL || eq > end) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "mesh axis '%.*s' in '%s' has no size: write name=size, e.g. "
                               "data=4",
                               (int)(end - p), p, spec);
        }
        if (!valid_name(p, (size_t)(eq - p))) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "bad mesh axis name '%.*s' in '%s': use letters, digits and _ "
                               "(at most %d characters, not starting with a digit)",
                               (int)(eq - p), p, spec, TPU_MESH_NAME_LEN - 1);
        }
        if (n == TPU_MESH_MAX_AXES) {
            return tpu_err_set(err, TPU_ERR_INVALID, "mesh '%s' has more than %d axes", spec,
                               TPU_MESH_MAX_AXES);
        }
        v = strtol(eq + 1, &num_end, 10);
        if (num_end != end || eq + 1 == end || !isdigit((unsigned char)eq[1]) || v < 1 ||
            v > TPU_MAX_CHIPS) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "bad size '%.*s' of mesh axis '%.*s': give an integer from 1 to %d",
                               (int)(end - eq - 1), eq + 1, (int)(eq - p), p, TPU_MAX_CHIPS);
        }
        memcpy(names[n], p, (size_t)(eq - p));
        names[n][eq - p] = '\0';
        for (i = 0; i < n; i++) {
            if (strcmp(names[i], names[n]) == 0) {
                return tpu_err_set(err, TPU_ERR_INVALID, "mesh axis '%s' is named twice in '%s'",
                                   names[n], spec);
            }
        }
        sizes[n++] = (int)v;
        p = *end == ',' ? end + 1 : end;
        if (*end == ',' && *p == '\0') {
            return tpu_err_set(err, TPU_ERR_INVALID, "mesh '%s' ends with a comma", spec);
        }
    }
    *naxes_p = n;
    return TPU_OK;
}

static int gcd(int a, int b)
{
    while (b != 0) {
        int t = a % b;

        a = b;
        b = t;
    }
    return a;
}

static void phys_name(const tpu_mesh_t *m, int p, char *buf, size_t len)
{
    snprintf(buf, len, "%s",
             m->phys_axis[p] == PHYS_SLICE ? "dcn" : tpu_topo_axis_name(m->phys_axis[p]));
}

/* "x: 2, y: 4" for the physical axes with something left. */
static void left_str(const tpu_mesh_t *m, const int *rem, char *buf, size_t len)
{
    size_t used = 0;
    int p, any = 0;

    buf[0] = '\0';
    for (p = 0; p < m->nphys && used < len; p++) {
        char name[8];

        if (rem[p] <= 1) {
            continue;
        }
        phys_name(m, p, name, sizeof(name));
        used += (size_t)snprintf(buf + used, len - used, "%s%s=%d", any ? ", " : "", name, rem[p]);
        any = 1;
    }
    if (!any) {
        snprintf(buf, len, "none");
    }
}

static void take(tpu_mesh_t *m, int l, int p, int f, int *rem, int *inner)
{
    piece_t *pc = &m->pieces[l][m->npieces[l]++];

    pc->phys = p;
    pc->stride = inner[p];
    pc->f = f;
    inner[p] *= f;
    rem[p] /= f;
}

/* Give logical axis 'l' its physical pieces (rules 1 to 4 of mesh.h). */
static tpu_status_t assign_axis(tpu_mesh_t *m, int l, int *rem, int *inner, tpu_err_t *err)
{
    int n = m->sizes[l], p, k, set, best = -1;

    if (n == 1) {
        return TPU_OK;
    }
    for (p = m->nphys - 1; p >= 0; p--) {
        if (rem[p] == n) {
            take(m, l, p, n, rem, inner);
            return TPU_OK;
        }
    }
    for (p = m->nphys - 1; p >= 0; p--) {
        if (rem[p] > 1 && rem[p] % n == 0) {
            take(m, l, p, n, rem, inner);
            return TPU_OK;
        }
    }
    /* Sets of whole remaining axes, fewest first, then the fastest (highest bits). */
    for (k = 2; k <= m->nphys && best < 0; k++) {
        for (set = (1 << m->nphys) - 1; set > 0; set--) {
            long prod = 1;
            int cnt = 0;

            for (p = 0; p < m->nphys; p++) {
                if (set & (1 << p)) {
                    cnt++;
                    prod *= rem[p];
                }
            }
            if (cnt != k || prod != n) {
                continue;
            }
            for (p = 0; p < m->nphys; p++) {
                if ((set & (1 << p)) && rem[p] < 2) {
                    break;
                }
            }
            if (p == m->nphys) {
                /* Highest physical axes first: compare sets by their bits, reversed. */
                if (best < 0) {
                    best = set;
                } else {
                    int q;

                    for (q = m->nphys - 1; q >= 0; q--) {
                        int a = (set >> q) & 1, b = (best >> q) & 1;

                        if (a != b) {
                            if (a) {
                                best = set;
                            }
                            break;
                        }
                    }
                }
            }
        }
    }
    if (best >= 0) {
        for (p = m->nphys - 1; p >= 0; p--) {
            if (best & (1 << p)) {
                take(m, l, p, rem[p], rem, inner);
            }
        }
        return TPU_OK;
    }
    {
        int left = n, save_rem[MAX_PHYS], save_inner[MAX_PHYS], save_np = m->npieces[l];

        memcpy(save_rem, rem, sizeof(save_rem));
        memcpy(save_inner, inner, sizeof(save_inner));
        for (p = m->nphys - 1; p >= 0 && left > 1; p--) {
            int f = gcd(rem[p], left);

            if (f > 1) {
                take(m, l, p, f, rem, inner);
                left /= f;
            }
        }
        if (left > 1) {
            char buf[96];

            memcpy(rem, save_rem, sizeof(save_rem));
            memcpy(inner, save_inner, sizeof(save_inner));
            m->npieces[l] = save_np;
            left_str(m, rem, buf, sizeof(buf));
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "mesh axis '%s' of size %d cannot be laid out on the chips left "
                               "on the physical axes (%s)",
                               m->names[l], n, buf);
        }
    }
    return TPU_OK;
}

static tpu_status_t default_order(tpu_mesh_t *m, tpu_err_t *err)
{
    const tpu_topo_t *topo = &m->topo;
    int rem[MAX_PHYS], inner[MAX_PHYS], a, l, pos, dcn = -1;
    tpu_status_t status;

    m->nphys = 0;
    if (topo->slices > 1) {
        m->phys_axis[m->nphys] = PHYS_SLICE;
        m->phys_size[m->nphys++] = topo->slices;
    }
    for (a = 0; a < topo->naxes; a++) {
        if (topo->dims[a] > 1) {
            m->phys_axis[m->nphys] = a;
            m->phys_size[m->nphys++] = topo->dims[a];
        }
    }
    for (a = 0; a < m->nphys; a++) {
        rem[a] = m->phys_size[a];
        inner[a] = 1;
    }
    for (l = 0; l < m->naxes; l++) {
        if (strcmp(m->names[l], "dcn") == 0) {
            dcn = l;
        }
    }
    if (dcn >= 0 && m->sizes[dcn] != topo->slices) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "mesh axis 'dcn' spans the slices: its size must be the number of "
                           "slices, %d, not %d",
                           topo->slices, m->sizes[dcn]);
    }
    if (dcn >= 0 && topo->slices > 1) {
        take(m, dcn, 0, topo->slices, rem, inner);
    }
    for (l = m->naxes - 1; l >= 0; l--) {
        if (l == dcn) {
            continue;
        }
        status = assign_axis(m, l, rem, inner, err);
        if (status != TPU_OK) {
            return status;
        }
    }
    for (pos = 0; pos < m->nchips; pos++) {
        int phys[MAX_PHYS] = {0}, coords[TPU_MAX_AXES] = {0, 0, 0}, slice = 0, rest = pos, chip;

        for (l = m->naxes - 1; l >= 0; l--) {
            int i = rest % m->sizes[l], k;

            rest /= m->sizes[l];
            for (k = 0; k < m->npieces[l]; k++) {
                const piece_t *pc = &m->pieces[l][k];

                phys[pc->phys] += (i % pc->f) * pc->stride;
                i /= pc->f;
            }
        }
        for (a = 0; a < m->nphys; a++) {
            if (m->phys_axis[a] == PHYS_SLICE) {
                slice = phys[a];
            } else {
                coords[m->phys_axis[a]] = phys[a];
            }
        }
        chip = tpu_topo_chip(topo, slice, coords);
        if (chip < 0 || m->chip_pos[chip] >= 0) {
            return tpu_err_set(err, TPU_ERR_INTERNAL, "mesh layout maps two positions to chip %d",
                               chip);
        }
        m->pos_chip[pos] = chip;
        m->chip_pos[chip] = pos;
    }
    return TPU_OK;
}

static tpu_status_t explicit_order(tpu_mesh_t *m, const int32_t *devices, int ndevices,
                                   tpu_err_t *err)
{
    int pos;

    if (ndevices != m->nchips) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "the device order lists %d chips, the mesh has %d positions", ndevices,
                           m->nchips);
    }
    for (pos = 0; pos < m->nchips; pos++) {
        int c = devices[pos];

        if (c < 0 || c >= m->nchips) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "device %d at mesh position %d is outside the pod of %d chips", c,
                               pos, m->nchips);
        }
        if (m->chip_pos[c] >= 0) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "the device order lists chip %d twice (positions %d and %d)", c,
                               (int)m->chip_pos[c], pos);
        }
        m->pos_chip[pos] = c;
        m->chip_pos[c] = pos;
    }
    m->explicit_order = 1;
    return TPU_OK;
}

tpu_status_t tpu_mesh_create(const tpu_topo_t *topo, const char *spec, const int32_t *devices,
                             int ndevices, tpu_mesh_t **mesh_p, tpu_err_t *err)
{
    tpu_mesh_t *m;
    tpu_status_t status;
    long prod = 1;
    int l, i;

    m = tpu__calloc(1, sizeof(*m));
    if (m == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for a mesh");
    }
    m->topo = *topo;
    m->nchips = topo->nchips;
    status = tpu_mesh_parse(spec, m->names, m->sizes, &m->naxes, err);
    if (status != TPU_OK) {
        goto err_free;
    }
    for (l = 0; l < m->naxes; l++) {
        prod *= m->sizes[l];
        if (prod > TPU_MAX_CHIPS) {
            break;
        }
    }
    if (prod != topo->nchips) {
        char shape[48];

        tpu_topo_shape_str(topo, shape, sizeof(shape));
        if (topo->slices > 1) {
            size_t n = strlen(shape);

            snprintf(shape + n, sizeof(shape) - n, " x %d slices", topo->slices);
        }
        status = tpu_err_set(err, TPU_ERR_INVALID,
                             "mesh %s has %ld positions, the topology %s has %d chips: the axis "
                             "sizes must multiply to the number of chips",
                             spec, prod > TPU_MAX_CHIPS ? (long)TPU_MAX_CHIPS + 1 : prod, shape,
                             topo->nchips);
        goto err_free;
    }
    m->pos_chip = tpu__malloc((size_t)m->nchips * sizeof(int32_t));
    m->chip_pos = tpu__malloc((size_t)m->nchips * sizeof(int32_t));
    if (m->pos_chip == NULL || m->chip_pos == NULL) {
        status =
            tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for a mesh of %d chips", m->nchips);
        goto err_free;
    }
    for (i = 0; i < m->nchips; i++) {
        m->chip_pos[i] = -1;
    }
    status = devices != NULL ? explicit_order(m, devices, ndevices, err) : default_order(m, err);
    if (status != TPU_OK) {
        goto err_free;
    }
    *mesh_p = m;
    return TPU_OK;
err_free:
    tpu_mesh_destroy(m);
    return status;
}

void tpu_mesh_destroy(tpu_mesh_t *mesh)
{
    if (mesh == NULL) {
        return;
    }
    tpu__free(mesh->pos_chip);
    tpu__free(mesh->chip_pos);
    tpu__free(mesh);
}

const tpu_topo_t *tpu_mesh_topo(const tpu_mesh_t *mesh)
{
    return &mesh->topo;
}

int tpu_mesh_naxes(const tpu_mesh_t *mesh)
{
    return mesh->naxes;
}

const char *tpu_mesh_axis_name(const tpu_mesh_t *mesh, int axis)
{
    return axis >= 0 && axis < mesh->naxes ? mesh->names[axis] : "?";
}

int tpu_mesh_axis_size(const tpu_mesh_t *mesh, int axis)
{
    return axis >= 0 && axis < mesh->naxes ? mesh->sizes[axis] : 0;
}

int tpu_mesh_axis_find(const tpu_mesh_t *mesh, const char *name)
{
    int l;

    for (l = 0; l < mesh->naxes; l++) {
        if (strcmp(mesh->names[l], name) == 0) {
            return l;
        }
    }
    return -1;
}

int tpu_mesh_size(const tpu_mesh_t *mesh)
{
    return mesh->nchips;
}

int tpu_mesh_chip(const tpu_mesh_t *mesh, int pos)
{
    return pos >= 0 && pos < mesh->nchips ? mesh->pos_chip[pos] : -1;
}

int tpu_mesh_position(const tpu_mesh_t *mesh, int chip)
{
    return chip >= 0 && chip < mesh->nchips ? mesh->chip_pos[chip] : -1;
}

int tpu_mesh_chip_at(const tpu_mesh_t *mesh, const int *coords)
{
    int pos = 0, l;

    for (l = 0; l < mesh->naxes; l++) {
        if (coords[l] < 0 || coords[l] >= mesh->sizes[l]) {
            return -1;
        }
        pos = pos * mesh->sizes[l] + coords[l];
    }
    return mesh->pos_chip[pos];
}

void tpu_mesh_coords(const tpu_mesh_t *mesh, int chip, int *coords)
{
    int pos = tpu_mesh_position(mesh, chip), l;

    for (l = mesh->naxes - 1; l >= 0; l--) {
        coords[l] = pos % mesh->sizes[l];
        pos /= mesh->sizes[l];
    }
}

int tpu_mesh_axis_index(const tpu_mesh_t *mesh, int chip, int axis)
{
    int coords[TPU_MESH_MAX_AXES];

    if (axis < 0 || axis >= mesh->naxes || chip < 0 || chip >= mesh->nchips) {
        return -1;
    }
    tpu_mesh_coords(mesh, chip, coords);
    return coords[axis];
}

void tpu_mesh_str(const tpu_mesh_t *mesh, char *buf, int len)
{
    int used = 0, l;

    if (len <= 0) {
        return;
    }
    buf[0] = '\0';
    for (l = 0; l < mesh->naxes && used < len; l++) {
        used += snprintf(buf + used, (size_t)(len - used), "%s%s=%d", l > 0 ? "," : "",
                         mesh->names[l], mesh->sizes[l]);
    }
}

void tpu_mesh_axis_layout(const tpu_mesh_t *mesh, int axis, char *buf, int len)
{
    int used = 0, k;

    if (len <= 0) {
        return;
    }
    buf[0] = '\0';
    if (axis < 0 || axis >= mesh->naxes) {
        return;
    }
    if (mesh->explicit_order) {
        snprintf(buf, (size_t)len, "explicit");
        return;
    }
    if (mesh->npieces[axis] == 0) {
        snprintf(buf, (size_t)len, "-");
        return;
    }
    for (k = mesh->npieces[axis] - 1; k >= 0 && used < len; k--) {
        const piece_t *pc = &mesh->pieces[axis][k];
        char name[8];

        phys_name(mesh, pc->phys, name, sizeof(name));
        if (pc->f == mesh->phys_size[pc->phys]) {
            used += snprintf(buf + used, (size_t)(len - used), "%s%s",
                             k < mesh->npieces[axis] - 1 ? "*" : "", name);
        } else {
            used += snprintf(buf + used, (size_t)(len - used), "%s%s[%d of %d]",
                             k < mesh->npieces[axis] - 1 ? "*" : "", name, pc->f,
                             mesh->phys_size[pc->phys]);
        }
    }
}

tpu_status_t tpu_mesh_parse_axes(const tpu_mesh_t *mesh, const char *axes, int *idx, int *n_p,
                                 tpu_err_t *err)
{
    const char *p = axes;
    size_t len;
    int n = 0, i;

    if (axes == NULL) {
        return tpu_err_set(err, TPU_ERR_INVALID, "no mesh axes given");
    }
    len = strlen(axes);
    if (len >= 2 && axes[0] == '(' && axes[len - 1] == ')') {
        p++;
        len -= 2;
    }
    if (len == 0) {
        return tpu_err_set(err, TPU_ERR_INVALID, "no mesh axes given (the mesh has %s%s)",
                           mesh->names[0], mesh->naxes > 1 ? ", ..." : "");
    }
    while (len > 0) {
        const char *end = memchr(p, ',', len);
        size_t k = end != NULL ? (size_t)(end - p) : len;
        char name[TPU_MESH_NAME_LEN];
        int a;

        while (k > 0 && (*p == ' ' || *p == '\'' || *p == '"')) {
            p++;
            k--;
            len--;
        }
        {
            size_t kk = k;

            while (kk > 0 && (p[kk - 1] == ' ' || p[kk - 1] == '\'' || p[kk - 1] == '"')) {
                kk--;
            }
            if (kk == 0 || kk >= sizeof(name)) {
                return tpu_err_set(err, TPU_ERR_INVALID, "bad mesh axes '%s'", axes);
            }
            memcpy(name, p, kk);
            name[kk] = '\0';
        }
        a = tpu_mesh_axis_find(mesh, name);
        if (a < 0) {
            char ms[128];

            tpu_mesh_str(mesh, ms, sizeof(ms));
            return tpu_err_set(err, TPU_ERR_INVALID, "unknown mesh axis '%s' (the mesh is %s)",
                               name, ms);
        }
        for (i = 0; i < n; i++) {
            if (idx[i] == a) {
                return tpu_err_set(err, TPU_ERR_INVALID, "mesh axis '%s' is named twice in '%s'",
                                   name, axes);
            }
        }
        idx[n++] = a;
        if (end == NULL) {
            break;
        }
        len -= k + 1;
        p = end + 1;
        if (len == 0) {
            return tpu_err_set(err, TPU_ERR_INVALID, "mesh axes '%s' end with a comma", axes);
        }
    }
    *n_p = n;
    return TPU_OK;
}

tpu_status_t tpu_mesh_axes_index(const tpu_mesh_t *mesh, const char *axes, int chip, int *index_p,
                                 int *size_p, tpu_err_t *err)
{
    int idx[TPU_MESH_MAX_AXES], n, i, coords[TPU_MESH_MAX_AXES], index = 0, size = 1;
    tpu_status_t status = tpu_mesh_parse_axes(mesh, axes, idx, &n, err);

    if (status != TPU_OK) {
        return status;
    }
    if (chip < 0 || chip >= mesh->nchips) {
        return tpu_err_set(err, TPU_ERR_INVALID, "chip %d is outside the mesh of %d chips", chip,
                           mesh->nchips);
    }
    tpu_mesh_coords(mesh, chip, coords);
    for (i = 0; i < n; i++) {
        index = index * mesh->sizes[idx[i]] + coords[idx[i]];
        size *= mesh->sizes[idx[i]];
    }
    if (index_p != NULL) {
        *index_p = index;
    }
    if (size_p != NULL) {
        *size_p = size;
    }
    return TPU_OK;
}

tpu_status_t tpu_mesh_groups_idx(const tpu_mesh_t *mesh, const int *idx, int n,
                                 tpu_groups_t *groups_p, tpu_err_t *err)
{
    int in_set[TPU_MESH_MAX_AXES] = {0}, rest[TPU_MESH_MAX_AXES], nrest = 0, size = 1, l, i;
    tpu_groups_t groups;
    tpu_status_t status;
    int g, m;

    for (i = 0; i < n; i++) {
        if (idx[i] < 0 || idx[i] >= mesh->naxes || in_set[idx[i]]) {
            return tpu_err_set(err, TPU_ERR_INVALID, "bad or repeated mesh axis index %d", idx[i]);
        }
        in_set[idx[i]] = 1;
        size *= mesh->sizes[idx[i]];
    }
    for (l = 0; l < mesh->naxes; l++) {
        if (!in_set[l]) {
            rest[nrest++] = l;
        }
    }
    status = tpu_groups_init(&groups, mesh->nchips / size, size, err);
    if (status != TPU_OK) {
        return status;
    }
    for (g = 0; g < groups.ngroups; g++) {
        int coords[TPU_MESH_MAX_AXES], r = g;

        for (i = nrest - 1; i >= 0; i--) {
            coords[rest[i]] = r % mesh->sizes[rest[i]];
            r /= mesh->sizes[rest[i]];
        }
        for (m = 0; m < size; m++) {
            int v = m;

            for (i = n - 1; i >= 0; i--) {
                coords[idx[i]] = v % mesh->sizes[idx[i]];
                v /= mesh->sizes[idx[i]];
            }
            groups.chips[(int64_t)g * size + m] = tpu_mesh_chip_at(mesh, coords);
        }
    }
    *groups_p = groups;
    return TPU_OK;
}

tpu_status_t tpu_mesh_groups(const tpu_mesh_t *mesh, const char *axes, tpu_groups_t *groups_p,
                             tpu_err_t *err)
{
    int idx[TPU_MESH_MAX_AXES], n;
    tpu_status_t status = tpu_mesh_parse_axes(mesh, axes, idx, &n, err);

    if (status != TPU_OK) {
        return status;
    }
    return tpu_mesh_groups_idx(mesh, idx, n, groups_p, err);
}

tpu_status_t tpu_mesh_groups_to_chips(const tpu_mesh_t *mesh, tpu_groups_t *groups, tpu_err_t *err)
{
    int64_t n = (int64_t)groups->ngroups * groups->size, i;

    for (i = 0; i < n; i++) {
        if (groups->chips[i] < 0 || groups->chips[i] >= mesh->nchips) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "device %d in group %lld is outside the mesh of %d devices",
                               (int)groups->chips[i], (long long)(i / groups->size), mesh->nchips);
        }
    }
    for (i = 0; i < n; i++) {
        groups->chips[i] = mesh->pos_chip[groups->chips[i]];
    }
    return TPU_OK;
}
