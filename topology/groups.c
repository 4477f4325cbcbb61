/*
 * Groups of chips (include/tpu/groups.h): construction, checks, and the test
 * that tells whole-torus-axes groups (torus algorithms) from any other set
 * (the general group algorithm).
 */
#include "tpu/groups.h"

#include "alloc.h"

#include <stdio.h>
#include <string.h>

tpu_status_t tpu_groups_init(tpu_groups_t *groups, int ngroups, int size, tpu_err_t *err)
{
    int64_t n = (int64_t)ngroups * size, i;

    if (ngroups < 1 || size < 1 || n > TPU_MAX_CHIPS) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "groups need at least one group of one chip and at most %d chips "
                           "(got %d groups of %d)",
                           TPU_MAX_CHIPS, ngroups, size);
    }
    groups->chips = tpu__malloc((size_t)n * sizeof(int32_t));
    if (groups->chips == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for %d groups of %d chips",
                           ngroups, size);
    }
    for (i = 0; i < n; i++) {
        groups->chips[i] = -1;
    }
    groups->ngroups = ngroups;
    groups->size = size;
    return TPU_OK;
}

void tpu_groups_fini(tpu_groups_t *groups)
{
    if (groups == NULL) {
        return;
    }
    tpu__free(groups->chips);
    memset(groups, 0, sizeof(*groups));
}

tpu_status_t tpu_groups_copy(tpu_groups_t *dst, const tpu_groups_t *src, tpu_err_t *err)
{
    tpu_groups_t g;
    tpu_status_t status = tpu_groups_init(&g, src->ngroups, src->size, err);

    if (status != TPU_OK) {
        return status;
    }
    memcpy(g.chips, src->chips, (size_t)src->ngroups * (size_t)src->size * sizeof(int32_t));
    *dst = g;
    return TPU_OK;
}

tpu_status_t tpu_groups_check(const tpu_groups_t *groups, int nchips, tpu_err_t *err)
{
    int32_t *where;
    int64_t n, i;
    tpu_status_t status = TPU_OK;

    if (groups == NULL || groups->chips == NULL || groups->ngroups < 1 || groups->size < 1) {
        return tpu_err_set(err, TPU_ERR_INVALID, "empty groups: give at least one group of a chip");
    }
    n = (int64_t)groups->ngroups * groups->size;
    where = tpu__malloc((size_t)(nchips > 0 ? nchips : 1) * sizeof(int32_t));
    if (where == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory checking groups");
    }
    for (i = 0; i < nchips; i++) {
        where[i] = -1;
    }
    for (i = 0; i < n; i++) {
        int32_t c = groups->chips[i];
        int g = (int)(i / groups->size);

        if (c < 0 || c >= nchips) {
            status = tpu_err_set(err, TPU_ERR_INVALID,
                                 "chip %d in group %d is outside the pod of %d chips", (int)c, g,
                                 nchips);
            goto out;
        }
        if (where[c] >= 0) {
            if (where[c] == g) {
                status =
                    tpu_err_set(err, TPU_ERR_INVALID, "chip %d is twice in group %d", (int)c, g);
            } else {
                status = tpu_err_set(err, TPU_ERR_INVALID, "chip %d is in group %d and group %d",
                                     (int)c, (int)where[c], g);
            }
            goto out;
        }
        where[c] = g;
    }
    for (i = 0; i < nchips; i++) {
        if (where[i] < 0) {
            status = tpu_err_set(err, TPU_ERR_INVALID,
                                 "chip %d is in no group (%d groups of %d chips cover %lld of "
                                 "the pod's %d chips)",
                                 (int)i, groups->ngroups, groups->size, (long long)n, nchips);
            goto out;
        }
    }
out:
    tpu__free(where);
    return status;
}

tpu_status_t tpu_groups_from_lists(const int32_t *ids, const int *sizes, int ngroups,
                                   tpu_groups_t *groups_p, tpu_err_t *err)
{
    tpu_groups_t g;
    tpu_status_t status;
    int i;

    if (ngroups < 1) {
        return tpu_err_set(err, TPU_ERR_INVALID, "no groups given");
    }
    for (i = 1; i < ngroups; i++) {
        if (sizes[i] != sizes[0]) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "groups of different sizes: group 0 has %d chips, group %d has %d "
                               "(every group of a collective must have the same size)",
                               sizes[0], i, sizes[i]);
        }
    }
    status = tpu_groups_init(&g, ngroups, sizes[0], err);
    if (status != TPU_OK) {
        return status;
    }
    memcpy(g.chips, ids, (size_t)ngroups * (size_t)sizes[0] * sizeof(int32_t));
    *groups_p = g;
    return TPU_OK;
}

tpu_status_t tpu_groups_of_axes(const tpu_topo_t *topo, unsigned mask, tpu_groups_t *groups_p,
                                tpu_err_t *err)
{
    int size = tpu_topo_group_size(topo, mask);
    int ngroups = topo->nchips / size, g = 0, c, i;
    tpu_groups_t groups;
    tpu_status_t status = tpu_groups_init(&groups, ngroups, size, err);

    if (status != TPU_OK) {
        return status;
    }
    for (c = 0; c < topo->nchips; c++) {
        if (tpu_topo_group_index(topo, mask, c) != 0) {
            continue;
        }
        for (i = 0; i < size; i++) {
            groups.chips[(int64_t)g * size + i] = tpu_topo_group_member(topo, mask, c, i);
        }
        g++;
    }
    *groups_p = groups;
    return TPU_OK;
}

int tpu_groups_axes_mask(const tpu_topo_t *topo, const tpu_groups_t *groups, unsigned *mask_p)
{
    unsigned mask = 0;
    int c0 = groups->chips[0], g, i, a;
    int k0[TPU_MAX_AXES];

    /* The axes along which the members of group 0 move away from its first chip. */
    tpu_topo_coords(topo, c0, k0);
    for (i = 1; i < groups->size; i++) {
        int c = groups->chips[i], k[TPU_MAX_AXES];

        tpu_topo_coords(topo, c, k);
        for (a = 0; a < TPU_MAX_AXES; a++) {
            if (k[a] != k0[a]) {
                mask |= 1u << a;
            }
        }
        if (tpu_topo_slice_of(topo, c) != tpu_topo_slice_of(topo, c0)) {
            mask |= TPU_AXIS_MASK_DCN;
        }
    }
    /* Axes of size 1 never move: leave them out, as the size check below would. */
    if (tpu_topo_group_size(topo, mask) != groups->size) {
        return 0;
    }
    for (g = 0; g < groups->ngroups; g++) {
        const int32_t *m = groups->chips + (int64_t)g * groups->size;

        if (tpu_topo_group_index(topo, mask, m[0]) != 0) {
            return 0;
        }
        for (i = 1; i < groups->size; i++) {
            if (tpu_topo_group_member(topo, mask, m[0], i) != m[i]) {
                return 0;
            }
        }
    }
    *mask_p = mask;
    return 1;
}

void tpu_groups_index(const tpu_groups_t *groups, int nchips, int32_t *group_of, int32_t *index_of)
{
    int64_t n = (int64_t)groups->ngroups * groups->size, i;

    for (i = 0; i < n; i++) {
        int32_t c = groups->chips[i];

        if (c < 0 || c >= nchips) {
            continue;
        }
        if (group_of != NULL) {
            group_of[c] = (int32_t)(i / groups->size);
        }
        if (index_of != NULL) {
            index_of[c] = (int32_t)(i % groups->size);
        }
    }
}

int tpu_groups_shift_maps(const tpu_topo_t *topo, const tpu_groups_t *groups,
                          const int32_t *group_of, const int32_t *index_of, int axis, int p,
                          int windowed)
{
    int G = groups->size, g, i;

    for (g = 0; g < groups->ngroups; g++) {
        const int32_t *m = groups->chips + (int64_t)g * G;
        int32_t g2 = -1, s = 0;
        int w = -1;

        for (i = 0; i < G; i++) {
            int c[TPU_MAX_AXES], t;

            tpu_topo_coords(topo, m[i], c);
            if (windowed && i == 0) {
                w = c[axis] / p;
            } else if (windowed && c[axis] / p != w) {
                return 0;
            }
            c[axis] = (c[axis] + p) % topo->dims[axis];
            t = tpu_topo_chip(topo, tpu_topo_slice_of(topo, m[i]), c);
            if (i == 0) {
                g2 = group_of[t];
                s = index_of[t];
            } else if (group_of[t] != g2 || index_of[t] != (i + s) % G) {
                return 0;
            }
        }
    }
    return 1;
}

int tpu_groups_period(const tpu_topo_t *topo, const tpu_groups_t *groups, int period[TPU_MAX_AXES])
{
    int32_t *group_of, *index_of;
    int a, p, count = 1;

    for (a = 0; a < TPU_MAX_AXES; a++) {
        period[a] = topo->dims[a];
    }
    if (topo->slices > 1) {
        return 1;
    }
    group_of = tpu__malloc((size_t)topo->nchips * sizeof(int32_t));
    index_of = tpu__malloc((size_t)topo->nchips * sizeof(int32_t));
    if (group_of == NULL || index_of == NULL) {
        tpu__free(group_of);
        tpu__free(index_of);
        return 1;
    }
    tpu_groups_index(groups, topo->nchips, group_of, index_of);
    for (a = 0; a < topo->naxes; a++) {
        int n = topo->dims[a];

        if (n < 2 || !topo->wrap[a]) {
            continue;
        }
        for (p = 1; p < n; p++) {
            if (n % p == 0 && tpu_groups_shift_maps(topo, groups, group_of, index_of, a, p, 0)) {
                period[a] = p;
                break;
            }
        }
        count *= n / period[a];
    }
    tpu__free(group_of);
    tpu__free(index_of);
    return count;
}

void tpu_groups_str(const tpu_groups_t *groups, char *buf, int len)
{
    int used = 0, g, i;

    if (len <= 0) {
        return;
    }
    buf[0] = '\0';
    for (g = 0; g < groups->ngroups; g++) {
        for (i = 0; i < groups->size; i++) {
            char item[24];
            int n;

            n = snprintf(item, sizeof(item), "%s%s%d%s", g > 0 && i == 0 ? " " : "",
                         i == 0 ? "{" : ",", (int)groups->chips[(int64_t)g * groups->size + i],
                         i == groups->size - 1 ? "}" : "");
            if (used + n + 4 >= len) {
                snprintf(buf + used, (size_t)(len - used), "...");
                return;
            }
            memcpy(buf + used, item, (size_t)n + 1);
            used += n;
        }
    }
}
