/*
 * HLO device groups: replica_groups in their three spellings (lists of ids,
 * iota '[G,S]<=[dims]T(perm)', mesh axes) expanded into explicit id lists,
 * tpu_hlo_iota_groups(), and source_target_pairs.  Every id is checked and
 * noted in the module's max_device_id.
 */
#include "hlo_groups.h"

#include "hlo_lex.h"

#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------- replica groups */

static void note_id(parser_t *p, int64_t id)
{
    if (id > p->mod->max_device_id) {
        p->mod->max_device_id = (int)id;
    }
}

/* {{0,1},{2,3}} or {} */
/* At a '}' (an empty list), step over it and say so. */
static int closes_empty(parser_t *p)
{
    if (tpu__hlo_cur(p) != '}') {
        return 0;
    }
    tpu__hlo_adv(p);
    return 1;
}

/*
 * Read '{a,b,...}' into 'one': device ids, each in [0, TPU_HLO_MAX_IDS) and noted;
 * with want > 0, exactly 'want' of them.  'what' names the list in messages.
 */
static tpu_status_t read_ids(parser_t *p, const char *role, const char *what, int want,
                             tpu_hlo_ints_t *one)
{
    tpu_status_t status = tpu__hlo_read_int_list(p, role, one);
    int i;

    if (status != TPU_OK) {
        return status;
    }
    if (want > 0 && one->n != want) {
        return tpu__hlo_fail(p, "a %s has %d ids, not %d", what, one->n, want);
    }
    for (i = 0; i < one->n; i++) {
        if (one->v[i] < 0 || one->v[i] >= TPU_HLO_MAX_IDS) {
            return tpu__hlo_fail(p, "%s names device %lld", what, (long long)one->v[i]);
        }
        note_id(p, one->v[i]);
    }
    return TPU_OK;
}

/* A list of id lists, '{{a,b,...},{c,...},...}' or '{}': replica groups, source-target pairs. */
typedef struct id_lists {
    const char *before, *closing; /* what the outer braces are, for messages */
    const char *role, *what;      /* an inner list, for read_ids() */
    int want;                     /* ids in each inner list; 0: any */
} id_lists_t;

/* What becomes of each inner list: 'add' appends it to what 'arg' builds. */
typedef tpu_status_t (*id_list_fn_t)(parser_t *p, const tpu_hlo_ints_t *one, void *arg);

/* Read the list of id lists at the cursor (its '{'), handing every inner list to 'add'. */
static tpu_status_t parse_id_lists(parser_t *p, const id_lists_t *kind, id_list_fn_t add, void *arg)
{
    tpu_status_t status;
    tpu_hlo_ints_t one;

    status = tpu__hlo_expect(p, '{', kind->before);
    if (status == TPU_OK) {
        status = tpu__hlo_skip_ws(p);
    }
    if (status != TPU_OK || closes_empty(p)) {
        return status;
    }
    do {
        status = read_ids(p, kind->role, kind->what, kind->want, &one);
        if (status == TPU_OK) {
            status = add(p, &one, arg);
        }
        if (status != TPU_OK) {
            return status;
        }
    } while (tpu__hlo_next_item(p, &status));
    return status == TPU_OK ? tpu__hlo_expect(p, '}', kind->closing) : status;
}

/* Replica groups as they are read: the ids so far and the capacities. */
typedef struct group_acc {
    tpu_hlo_groups_t *g;
    int cap_ids, cap_start, nids;
} group_acc_t;

static tpu_status_t add_group(parser_t *p, const tpu_hlo_ints_t *one, void *arg)
{
    group_acc_t *a = arg;
    tpu_hlo_groups_t *g = a->g;
    tpu_status_t status;
    int i;

    for (i = 0; i < one->n; i++) {
        status = tpu__hlo_grow(p, (void **)&g->ids, a->nids, &a->cap_ids, sizeof(int32_t));
        if (status != TPU_OK) {
            return status;
        }
        g->ids[a->nids++] = (int32_t)one->v[i];
    }
    status = tpu__hlo_grow(p, (void **)&g->start, g->ngroups + 1, &a->cap_start, sizeof(int32_t));
    if (status != TPU_OK) {
        return status;
    }
    g->start[++g->ngroups] = a->nids;
    return TPU_OK;
}

static tpu_status_t parse_group_list(parser_t *p, tpu_hlo_groups_t *g)
{
    static const id_lists_t groups = {"opening the replica groups", "closing the replica groups",
                                      "a replica group", "replica group", 0};
    group_acc_t a = {g, 0, 0, 0};
    tpu_status_t status;

    g->form = TPU_HLO_GROUPS_LIST;
    status = tpu__hlo_grow(p, (void **)&g->start, 0, &a.cap_start, sizeof(int32_t));
    if (status != TPU_OK) {
        return status;
    }
    g->start[0] = 0;
    return parse_id_lists(p, &groups, add_group, &a);
}

tpu_status_t tpu_hlo_iota_groups(int64_t ngroups, int64_t size, int ndims, const int64_t *dims,
                                 const int64_t *perm, int32_t *ids, tpu_err_t *err)
{
    int64_t total = 1, stride[TPU_HLO_MAX_RANK], tdims[TPU_HLO_MAX_RANK], idx[TPU_HLO_MAX_RANK];
    int used[TPU_HLO_MAX_RANK] = {0};
    int64_t i;
    int d;

    if (ndims < 1 || ndims > TPU_HLO_MAX_RANK) {
        return tpu_err_set(err, TPU_ERR_INVALID, "iota replica groups need 1 to %d reshape dims",
                           TPU_HLO_MAX_RANK);
    }
    for (d = 0; d < ndims; d++) {
        if (dims[d] < 1 || dims[d] > TPU_HLO_MAX_IDS) {
            return tpu_err_set(err, TPU_ERR_INVALID, "iota reshape dim %lld is out of range",
                               (long long)dims[d]);
        }
        total *= dims[d];
        if (total > TPU_HLO_MAX_IDS) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "iota replica groups name more than %d devices", TPU_HLO_MAX_IDS);
        }
        if (perm != NULL) {
            if (perm[d] < 0 || perm[d] >= ndims || used[perm[d]]) {
                return tpu_err_set(err, TPU_ERR_INVALID,
                                   "T(...) is not a permutation of the %d reshape dims", ndims);
            }
            used[perm[d]] = 1;
        }
    }
    if (ngroups < 1 || size < 1 || ngroups * size != total) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "iota replica groups [%lld,%lld] do not hold the %lld devices of the "
                           "reshape dims",
                           (long long)ngroups, (long long)size, (long long)total);
    }
    /* Row-major strides of the reshaped array; the transposed array's dim d is dim perm[d]. */
    stride[ndims - 1] = 1;
    for (d = ndims - 2; d >= 0; d--) {
        stride[d] = stride[d + 1] * dims[d + 1];
    }
    for (d = 0; d < ndims; d++) {
        tdims[d] = dims[perm != NULL ? perm[d] : d];
        idx[d] = 0;
    }
    for (i = 0; i < total; i++) {
        int64_t src = 0;

        for (d = 0; d < ndims; d++) {
            src += idx[d] * stride[perm != NULL ? perm[d] : d];
        }
        ids[i] = (int32_t)src;
        for (d = ndims - 1; d >= 0; d--) {
            if (++idx[d] < tdims[d]) {
                break;
            }
            idx[d] = 0;
        }
    }
    return TPU_OK;
}

/* Fill start[] for ngroups equal groups of 'size'. */
static tpu_status_t equal_starts(parser_t *p, tpu_hlo_groups_t *g, int64_t ngroups, int64_t size)
{
    int64_t i;

    g->ngroups = (int)ngroups;
    g->start = tpu__hlo_arena_alloc(p->arena, (size_t)(ngroups + 1) * sizeof(int32_t));
    if (g->start == NULL) {
        return tpu__hlo_oom(p);
    }
    for (i = 0; i <= ngroups; i++) {
        g->start[i] = (int32_t)(i * size);
    }
    return TPU_OK;
}

/*
 * Read 'a, b, ...' (at most TPU_HLO_MAX_RANK integers) into v[*n_p...]; too many
 * fails with "<head> TPU_HLO_MAX_RANK <tail>".
 */
static tpu_status_t read_rank_ints(parser_t *p, const char *role, const char *head,
                                   const char *tail, int64_t *v, int *n_p)
{
    tpu_status_t status;

    for (;;) {
        if (*n_p >= TPU_HLO_MAX_RANK) {
            return tpu__hlo_fail(p, "%s %d %s", head, TPU_HLO_MAX_RANK, tail);
        }
        status = tpu__hlo_read_int(p, role, &v[*n_p]);
        if (status != TPU_OK) {
            return status;
        }
        (*n_p)++;
        status = tpu__hlo_skip_ws(p);
        if (status != TPU_OK) {
            return status;
        }
        if (tpu__hlo_cur(p) != ',') {
            return TPU_OK;
        }
        tpu__hlo_adv(p);
    }
}

/* [G,S]<=[d0,d1,...]T(p0,p1,...) */
static tpu_status_t parse_group_iota(parser_t *p, tpu_hlo_groups_t *g)
{
    int64_t gs[2], dims[TPU_HLO_MAX_RANK], perm[TPU_HLO_MAX_RANK];
    int ndims = 0, nperm = 0, i, line = p->line, col = tpu__hlo_col_of(p);
    tpu_status_t status;
    int64_t total;

    g->form = TPU_HLO_GROUPS_IOTA;
    tpu__hlo_adv(p); /* [ */
    for (i = 0; i < 2; i++) {
        status = tpu__hlo_read_int(p, "the iota group count and size", &gs[i]);
        if (status == TPU_OK) {
            status = tpu__hlo_expect(p, i == 0 ? ',' : ']', "in iota replica groups [groups,size]");
        }
        if (status != TPU_OK) {
            return status;
        }
    }
    status = tpu__hlo_skip_ws(p);
    if (status != TPU_OK) {
        return status;
    }
    if (!(tpu__hlo_cur(p) == '<' && tpu__hlo_at(p, 1) == '=')) {
        return tpu__hlo_fail(p, "expected '<=' after iota replica groups [%lld,%lld]",
                             (long long)gs[0], (long long)gs[1]);
    }
    tpu__hlo_adv(p);
    tpu__hlo_adv(p);
    status = tpu__hlo_expect(p, '[', "after '<=' in iota replica groups");
    if (status == TPU_OK) {
        status = read_rank_ints(p, "an iota reshape dim", "iota replica groups have more than",
                                "reshape dims", dims, &ndims);
    }
    status = status == TPU_OK ? tpu__hlo_expect(p, ']', "closing the iota reshape dims") : status;
    if (status != TPU_OK) {
        return status;
    }
    if (tpu__hlo_cur(p) == 'T' && tpu__hlo_at(p, 1) == '(') {
        tpu__hlo_adv(p);
        tpu__hlo_adv(p);
        status = read_rank_ints(p, "an iota transpose entry", "iota transpose has more than",
                                "entries", perm, &nperm);
        status = status == TPU_OK ? tpu__hlo_expect(p, ')', "closing the iota transpose T(...)")
                                  : status;
        if (status != TPU_OK) {
            return status;
        }
        if (nperm != ndims) {
            return tpu__hlo_fail(p, "iota transpose T(...) has %d entries for %d reshape dims",
                                 nperm, ndims);
        }
    } else if (ndims > 1) {
        return tpu__hlo_fail(p, "iota replica groups with %d reshape dims need a transpose T(...)",
                             ndims);
    }
    total = gs[0] * gs[1];
    if (gs[0] < 1 || gs[1] < 1 || gs[0] > TPU_HLO_MAX_IDS || gs[1] > TPU_HLO_MAX_IDS ||
        total > TPU_HLO_MAX_IDS) {
        return tpu_err_set(p->err, TPU_ERR_INVALID,
                           "%s:%d:%d: iota replica groups [%lld,%lld] are out of range", p->file,
                           line, col, (long long)gs[0], (long long)gs[1]);
    }
    g->ids = tpu__hlo_arena_alloc(p->arena, (size_t)total * sizeof(int32_t));
    if (g->ids == NULL) {
        return tpu__hlo_oom(p);
    }
    {
        tpu_err_t e = {0};

        if (tpu_hlo_iota_groups(gs[0], gs[1], ndims, dims, nperm ? perm : NULL, g->ids, &e) !=
            TPU_OK) {
            return tpu_err_set(p->err, TPU_ERR_INVALID, "%s:%d:%d: %s", p->file, line, col, e.msg);
        }
    }
    note_id(p, total - 1);
    return equal_starts(p, g, gs[0], gs[1]);
}

/* 'name' or name */
static tpu_status_t read_axis_name(parser_t *p, char *name, size_t size)
{
    size_t n = 0, skip;
    tpu_status_t status = tpu__hlo_skip_ws(p);
    char buf[24];

    if (status != TPU_OK) {
        return status;
    }
    if (tpu__hlo_cur(p) == '\'' || tpu__hlo_cur(p) == '"') {
        int q = tpu__hlo_cur(p);

        tpu__hlo_adv(p);
        while (!tpu__hlo_at_end(p) && tpu__hlo_cur(p) != q && tpu__hlo_cur(p) != '\n') {
            if (n + 1 < size) {
                name[n++] = (char)tpu__hlo_cur(p);
            }
            tpu__hlo_adv(p);
        }
        if (tpu__hlo_cur(p) != q) {
            return tpu__hlo_fail(p, "unterminated mesh axis name");
        }
        tpu__hlo_adv(p);
    } else {
        size_t len = tpu__hlo_ident_len(p, &skip), i;

        if (len == 0) {
            return tpu__hlo_fail(p, "expected a mesh axis name, found %s",
                                 tpu__hlo_what(p, buf, sizeof(buf)));
        }
        for (i = 0; i < skip + len; i++) {
            if (i >= skip && n + 1 < size) {
                name[n++] = (char)tpu__hlo_cur(p);
            }
            tpu__hlo_adv(p);
        }
    }
    name[n] = '\0';
    return TPU_OK;
}

/*
 * mesh['a'=2,'b'=4] {'b'}, with optional ", device_ids=(...)" after the mesh and
 * sub-axes 'a':(pre)size.  Groups are the devices that differ only in the listed
 * axes, ordered row-major over them in the order listed.
 */
static tpu_status_t parse_group_mesh(parser_t *p, tpu_hlo_groups_t *g)
{
    char names[TPU_HLO_MAX_RANK][32];
    int64_t sizes[TPU_HLO_MAX_RANK], total = 1;
    int naxes = 0, i, j;
    /* Factor dims: each mesh axis cut at the sub-axis boundaries named. */
    int64_t fdims[TPU_HLO_MAX_RANK], perm[TPU_HLO_MAX_RANK];
    int faxis[TPU_HLO_MAX_RANK], nf = 0, nsel = 0, sel_f[TPU_HLO_MAX_RANK], nperm = 0;
    struct {
        int axis;
        int64_t pre, size;
    } refs[TPU_HLO_MAX_RANK];
    int nrefs = 0;
    int32_t *device_ids = NULL;
    int ndevice_ids = 0, cap = 0;
    tpu_status_t status;
    int64_t gsize = 1;

    g->form = TPU_HLO_GROUPS_MESH;
    tpu__hlo_skip_word(p, "mesh");
    status = tpu__hlo_expect(p, '[', "after 'mesh'");
    while (status == TPU_OK) {
        if (naxes >= TPU_HLO_MAX_RANK) {
            return tpu__hlo_fail(p, "a mesh with more than %d axes", TPU_HLO_MAX_RANK);
        }
        status = read_axis_name(p, names[naxes], sizeof(names[0]));
        if (status == TPU_OK) {
            status = tpu__hlo_expect(p, '=', "after a mesh axis name");
        }
        if (status == TPU_OK) {
            status = tpu__hlo_read_int(p, "a mesh axis size", &sizes[naxes]);
        }
        if (status != TPU_OK) {
            return status;
        }
        if (sizes[naxes] < 1 || sizes[naxes] > TPU_HLO_MAX_IDS) {
            return tpu__hlo_fail(p, "mesh axis '%s' has size %lld", names[naxes],
                                 (long long)sizes[naxes]);
        }
        total *= sizes[naxes];
        if (total > TPU_HLO_MAX_IDS) {
            return tpu__hlo_fail(p, "a mesh of more than %d devices", TPU_HLO_MAX_IDS);
        }
        naxes++;
        status = tpu__hlo_skip_ws(p);
        if (status != TPU_OK || tpu__hlo_cur(p) != ',') {
            break;
        }
        tpu__hlo_adv(p);
    }
    status = status == TPU_OK ? tpu__hlo_expect(p, ']', "closing the mesh") : status;
    if (status == TPU_OK) {
        status = tpu__hlo_skip_ws(p);
    }
    if (status != TPU_OK) {
        return status;
    }
    if (tpu__hlo_cur(p) == ',') {
        tpu__hlo_adv(p);
        status = tpu__hlo_skip_ws(p);
        if (status != TPU_OK) {
            return status;
        }
        if (!tpu__hlo_word_is(p, "device_ids")) {
            return tpu__hlo_fail(p, "expected device_ids= after the mesh");
        }
        tpu__hlo_skip_word(p, "device_ids");
        status = tpu__hlo_expect(p, '=', "after device_ids");
        if (status == TPU_OK) {
            status = tpu__hlo_skip_ws(p);
        }
        if (status != TPU_OK) {
            return status;
        }
        if (tpu__hlo_cur(p) != '(' && tpu__hlo_cur(p) != '[' && tpu__hlo_cur(p) != '{') {
            return tpu__hlo_fail(p, "expected a list of device ids after device_ids=");
        }
        tpu__hlo_adv(p);
        do {
            int64_t v;

            status = tpu__hlo_read_int(p, "a device id", &v);
            if (status == TPU_OK) {
                status = tpu__hlo_grow(p, (void **)&device_ids, ndevice_ids, &cap, sizeof(int32_t));
            }
            if (status != TPU_OK) {
                return status;
            }
            if (v < 0 || v >= TPU_HLO_MAX_IDS) {
                return tpu__hlo_fail(p, "mesh device id %lld is out of range", (long long)v);
            }
            device_ids[ndevice_ids++] = (int32_t)v;
        } while (tpu__hlo_next_item(p, &status));
        if (status != TPU_OK) {
            return status;
        }
        if (tpu__hlo_cur(p) != ')' && tpu__hlo_cur(p) != ']' && tpu__hlo_cur(p) != '}') {
            return tpu__hlo_fail(p, "expected the end of the device_ids list");
        }
        tpu__hlo_adv(p);
        if (ndevice_ids != total) {
            return tpu__hlo_fail(p, "device_ids lists %d devices for a mesh of %lld", ndevice_ids,
                                 (long long)total);
        }
    }
    status = tpu__hlo_expect(p, '{', "before the mesh axes of the groups");
    if (status == TPU_OK) {
        status = tpu__hlo_skip_ws(p);
    }
    while (status == TPU_OK && tpu__hlo_cur(p) != '}') {
        char name[32];

        if (nrefs >= TPU_HLO_MAX_RANK) {
            return tpu__hlo_fail(p, "more than %d mesh axes in the groups", TPU_HLO_MAX_RANK);
        }
        status = read_axis_name(p, name, sizeof(name));
        if (status != TPU_OK) {
            return status;
        }
        for (i = 0; i < naxes && strcmp(names[i], name) != 0; i++) {
        }
        if (i == naxes) {
            return tpu__hlo_fail(p, "the mesh has no axis '%s'", name);
        }
        refs[nrefs].axis = i;
        refs[nrefs].pre = 1;
        refs[nrefs].size = sizes[i];
        status = tpu__hlo_skip_ws(p);
        if (status == TPU_OK && tpu__hlo_cur(p) == ':') {
            tpu__hlo_adv(p);
            status = tpu__hlo_expect(p, '(', "before a sub-axis pre-size");
            if (status == TPU_OK) {
                status = tpu__hlo_read_int(p, "a sub-axis pre-size", &refs[nrefs].pre);
            }
            if (status == TPU_OK) {
                status = tpu__hlo_expect(p, ')', "after a sub-axis pre-size");
            }
            if (status == TPU_OK) {
                status = tpu__hlo_read_int(p, "a sub-axis size", &refs[nrefs].size);
            }
            if (status == TPU_OK && (refs[nrefs].pre < 1 || refs[nrefs].size < 1 ||
                                     refs[nrefs].pre * refs[nrefs].size > sizes[i] ||
                                     sizes[i] % (refs[nrefs].pre * refs[nrefs].size) != 0)) {
                return tpu__hlo_fail(p, "sub-axis '%s':(%lld)%lld does not divide the axis of %lld",
                                     name, (long long)refs[nrefs].pre, (long long)refs[nrefs].size,
                                     (long long)sizes[i]);
            }
        }
        if (status != TPU_OK) {
            return status;
        }
        nrefs++;
        status = tpu__hlo_skip_ws(p);
        if (status == TPU_OK && tpu__hlo_cur(p) == ',') {
            tpu__hlo_adv(p);
            status = tpu__hlo_skip_ws(p);
        }
    }
    if (status != TPU_OK) {
        return status;
    }
    tpu__hlo_adv(p); /* } */
    /* Factor each axis: [pre, size, rest] major to minor for every sub-axis (one per axis). */
    for (i = 0; i < naxes; i++) {
        int64_t pre = 1, size = sizes[i];

        for (j = 0; j < nrefs; j++) {
            if (refs[j].axis == i) {
                pre = refs[j].pre;
                size = refs[j].size;
            }
        }
        if (nf + 3 > TPU_HLO_MAX_RANK) {
            return tpu__hlo_fail(p, "mesh groups too complex (more than %d factors)",
                                 TPU_HLO_MAX_RANK);
        }
        if (pre > 1) {
            fdims[nf] = pre;
            faxis[nf++] = -1;
        }
        fdims[nf] = size;
        faxis[nf++] = i;
        if (sizes[i] / (pre * size) > 1) {
            fdims[nf] = sizes[i] / (pre * size);
            faxis[nf++] = -1;
        }
    }
    for (j = 0; j < nrefs; j++) {
        for (i = 0; i < nf && faxis[i] != refs[j].axis; i++) {
        }
        sel_f[nsel++] = i;
        gsize *= fdims[i];
    }
    for (i = 0; i < nf; i++) {
        for (j = 0; j < nsel && sel_f[j] != i; j++) {
        }
        if (j == nsel) {
            perm[nperm++] = i;
        }
    }
    for (j = 0; j < nsel; j++) {
        perm[nperm++] = sel_f[j];
    }
    g->ids = tpu__hlo_arena_alloc(p->arena, (size_t)total * sizeof(int32_t));
    if (g->ids == NULL) {
        return tpu__hlo_oom(p);
    }
    {
        tpu_err_t e = {0};

        if (tpu_hlo_iota_groups(total / gsize, gsize, nf, fdims, perm, g->ids, &e) != TPU_OK) {
            return tpu__hlo_fail(p, "%s", e.msg);
        }
    }
    for (i = 0; i < total; i++) {
        if (device_ids != NULL) {
            g->ids[i] = device_ids[g->ids[i]];
        }
        note_id(p, g->ids[i]);
    }
    return equal_starts(p, g, total / gsize, gsize);
}

tpu_status_t tpu__hlo_parse_groups(parser_t *p, tpu_hlo_groups_t *g)
{
    size_t start = p->pos;
    tpu_status_t status;
    char buf[24];

    if (tpu__hlo_cur(p) == '{') {
        status = parse_group_list(p, g);
    } else if (tpu__hlo_cur(p) == '[') {
        status = parse_group_iota(p, g);
    } else if (tpu__hlo_word_is(p, "mesh")) {
        status = parse_group_mesh(p, g);
    } else {
        return tpu__hlo_fail(
            p,
            "unknown replica_groups spelling %s (expected {{...}}, [G,S]<=[dims] or "
            "mesh[...] {axes})",
            tpu__hlo_what(p, buf, sizeof(buf)));
    }
    if (status != TPU_OK) {
        return status;
    }
    g->text = tpu__hlo_dup_range(p, p->s + start, p->pos - start);
    return g->text != NULL ? TPU_OK : tpu__hlo_oom(p);
}

/* Source-target pairs as they are read: out->n pairs in out->v, room for 'cap' ids. */
typedef struct pair_acc {
    tpu_hlo_ints_t *out;
    int cap;
} pair_acc_t;

static tpu_status_t add_pair(parser_t *p, const tpu_hlo_ints_t *one, void *arg)
{
    pair_acc_t *a = arg;
    tpu_status_t status;
    int i;

    for (i = 0; i < 2; i++) {
        status = tpu__hlo_grow(p, (void **)&a->out->v, 2 * a->out->n + i, &a->cap, sizeof(int64_t));
        if (status != TPU_OK) {
            return status;
        }
        a->out->v[2 * a->out->n + i] = one->v[i];
    }
    a->out->n++;
    return TPU_OK;
}

/* {{s,t},{s,t}} */
tpu_status_t tpu__hlo_parse_pairs(parser_t *p, tpu_hlo_ints_t *out)
{
    static const id_lists_t pairs = {"before source_target_pairs", "closing source_target_pairs",
                                     "a source-target pair", "source-target pair", 2};
    pair_acc_t a = {out, 0};

    out->n = 0;
    out->v = NULL;
    return parse_id_lists(p, &pairs, add_pair, &a);
}
