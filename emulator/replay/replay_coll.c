/*
 * The replay's collectives: one HLO collective -> an engine request (type,
 * bytes, reduction, axes, groups or pairs), timed by the engine's plan once per
 * distinct request (the memo), and its collective row of the report.
 *
 * Restrictions: a collective-broadcast is timed as an all-gather of the same
 * output (a pipelined broadcast moves the same bytes per link); uneven groups
 * and groups that leave chips out are listed, not timed; variadic collectives
 * move the sum of their operands as one.
 */
#include "replay_coll.h"

#include "alloc.h"
#include "replay_groups.h"
#include "replay_state.h"

#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------- collectives */

static tpu_redop_t redop_of(const tpu_hlo_module_t *mod, const tpu_hlo_instr_t *in)
{
    const tpu_hlo_comp_t *c;
    tpu_hlo_op_t op;

    if (in->to_apply_c < 0) {
        return TPU_REDOP_SUM;
    }
    c = &mod->comps[in->to_apply_c];
    op = c->instrs[c->root].op;
    return op == TPU_HLO_OP_MAXIMUM   ? TPU_REDOP_MAX
           : op == TPU_HLO_OP_MINIMUM ? TPU_REDOP_MIN
                                      : TPU_REDOP_SUM;
}

/* The output shape of a collective (element 1 of a -start's tuple). */
static const tpu_hlo_shape_t *coll_output(const tpu_hlo_instr_t *in, int is_start)
{
    if (is_start && in->shape.type == TPU_HLO_TYPE_TUPLE && in->shape.ntuple >= 2 &&
        in->op != TPU_HLO_OP_ALL_REDUCE) {
        return &in->shape.tuple[1];
    }
    return &in->shape;
}

/* The first array leaf's element type. */
tpu_hlo_type_t tpu__replay_leaf_type(const tpu_hlo_shape_t *sh)
{
    while (sh->type == TPU_HLO_TYPE_TUPLE && sh->ntuple > 0) {
        sh = &sh->tuple[0];
    }
    return sh->type;
}

/* A collective-permute as one shift along one axis: sets axes and shift. */
static int pairs_as_shift(const walker_t *w, const tpu_hlo_instr_t *in, tpu_coll_desc_t *d)
{
    const tpu_topo_t *t = w->topo;
    int k, axis = -1, shift = 0;

    if (in->pairs.n != t->nchips || t->slices > 1 || (w->R > 1 && w->P > 1)) {
        return 0; /* pairs of partition ids repeated per replica: not read yet */
    }
    for (k = 0; k < in->pairs.n; k++) {
        int64_t s = in->pairs.v[2 * k], tt = in->pairs.v[2 * k + 1];
        int cs[TPU_MAX_AXES], ct[TPU_MAX_AXES], a, diff = 0, da = -1, sh;

        if (s >= w->ndev || tt >= w->ndev) {
            return 0;
        }
        tpu_topo_coords(t, w->dev2chip[s], cs);
        tpu_topo_coords(t, w->dev2chip[tt], ct);
        for (a = 0; a < t->naxes; a++) {
            if (cs[a] != ct[a]) {
                diff++;
                da = a;
            }
        }
        if (diff != 1) {
            return 0;
        }
        sh = ((ct[da] - cs[da]) % t->dims[da] + t->dims[da]) % t->dims[da];
        if (k == 0) {
            axis = da;
            shift = sh;
        } else if (da != axis || sh != shift) {
            return 0;
        }
    }
    if (axis < 0) {
        return 0;
    }
    d->axes = 1u << axis;
    d->shift = shift;
    return 1;
}

/*
 * Fill row 'row' for collective 'in' (the instruction with the attributes) and
 * time it.  Problems the engine cannot run yet leave row->supported 0.
 */
static tpu_status_t coll_row(walker_t *w, const tpu_hlo_instr_t *in, int is_start,
                             tpu_replay_coll_t *row)
{
    const tpu_topo_t *t = w->topo;
    tpu_coll_desc_t *d = &row->desc;
    const tpu_hlo_shape_t *out = coll_output(in, is_start);
    int32_t *chips = NULL, *tmp = NULL, *pos = NULL;
    tpu_coll_plan_t *plan = NULL;
    tpu_coll_result_t res;
    tpu_status_t status = TPU_OK;
    tpu_err_t e = {0};
    int ng = 0, size = 0, bits, elem;
    uint64_t bytes, unit;
    unsigned mask, found = 0;
    tpu_groups_t groups;

    tpu_coll_desc_init(d);
    row->groups = in->groups.text != NULL ? in->groups.text : "";
    bytes = tpu_hlo_shape_bytes(out);
    bits = tpu_hlo_type_bits(tpu__replay_leaf_type(out));
    switch (in->op) {
    case TPU_HLO_OP_ALL_REDUCE:
    case TPU_HLO_OP_COLLECTIVE_REDUCE:
        d->kind = TPU_COLL_PSUM;
        d->op = redop_of(w->mod, in);
        break;
    case TPU_HLO_OP_ALL_GATHER:
    case TPU_HLO_OP_COLLECTIVE_BROADCAST:
        d->kind = TPU_COLL_ALL_GATHER;
        break;
    case TPU_HLO_OP_REDUCE_SCATTER:
        d->kind = TPU_COLL_REDUCE_SCATTER;
        d->op = redop_of(w->mod, in);
        break;
    case TPU_HLO_OP_ALL_TO_ALL:
    case TPU_HLO_OP_RAGGED_ALL_TO_ALL:
        d->kind = TPU_COLL_ALL_TO_ALL;
        break;
    default:
        d->kind = TPU_COLL_PPERMUTE;
        break;
    }
    d->dtype = bits == 16 ? TPU_DTYPE_BF16 : TPU_DTYPE_F32;
    if (bits < 16 && bytes % 4 != 0) {
        d->dtype = TPU_DTYPE_BF16;
    }
    elem = tpu_dtype_size(d->dtype);
    chips = tpu__malloc((size_t)(w->ndev > t->nchips ? w->ndev : t->nchips) * 3 * sizeof(int32_t));
    if (chips == NULL) {
        return tpu__replay_oom(w);
    }
    tmp = chips + (w->ndev > t->nchips ? w->ndev : t->nchips);
    pos = tmp + (w->ndev > t->nchips ? w->ndev : t->nchips);
    if (d->kind == TPU_COLL_PPERMUTE) {
        row->groups = "source_target_pairs";
        ng = 1;
        size = in->pairs.n;
        for (int k = 0; k < 2 * in->pairs.n; k++) {
            if (in->pairs.v[k] >= w->ndev) {
                status = tpu_err_set(w->err, TPU_ERR_INVALID,
                                     "%s:%d:%d: source_target_pairs of '%s' name device %lld, and "
                                     "the module has %d devices",
                                     w->mod->file, in->line, in->col, in->name,
                                     (long long)in->pairs.v[k], w->ndev);
                goto out;
            }
        }
        if (in->pairs.n == 0) {
            snprintf(row->note, sizeof(row->note), "no source-target pairs: nothing moves");
            row->supported = 1;
            goto out;
        }
        if (pairs_as_shift(w, in, d)) {
            size = t->dims[__builtin_ctz(d->axes)];
            ng = t->nchips / size;
        } else {
            /* Any other pairs: the engine's ppermute over explicit pairs of chips. */
            int k;

            row->pairs = tpu__malloc((size_t)in->pairs.n * 2 * sizeof(int32_t));
            if (row->pairs == NULL) {
                status = tpu__replay_oom(w);
                goto out;
            }
            for (k = 0; k < 2 * in->pairs.n; k++) {
                row->pairs[k] = w->dev2chip[in->pairs.v[k]];
            }
            row->npairs = in->pairs.n;
            d->pairs = row->pairs;
            d->npairs = row->npairs;
            d->axes = 0;
            ng = in->pairs.n;
            size = 2;
        }
        found = 1;
    } else {
        status = tpu_replay_groups_get(w->mod, in, w->dev2chip, chips, &ng, &size, &e);
        if (status == TPU_ERR_UNSUPPORTED) {
            snprintf(row->note, sizeof(row->note),
                     "unsupported group: %.70s (the engine takes equal groups)", e.msg);
            status = TPU_OK;
            goto out;
        }
        if (status != TPU_OK) {
            tpu_err_set(w->err, status, "%s", e.msg);
            goto out;
        }
        if (d->kind == TPU_COLL_REDUCE_SCATTER) {
            bytes *= (uint64_t)size;
        }
        if (size == 1) {
            snprintf(row->note, sizeof(row->note), "groups of one chip: nothing moves");
            row->supported = 1;
            goto out;
        }
        if (ng * size != t->nchips) {
            snprintf(row->note, sizeof(row->note),
                     "unsupported group: the groups cover %d of %d chips (a collective's groups "
                     "hold every chip once)",
                     ng * size, t->nchips);
            goto out;
        }
        for (mask = 1; mask < (1u << (TPU_MAX_AXES + 1)) && !found; mask++) {
            if ((mask & TPU_AXIS_MASK_DCN) && t->slices < 2) {
                continue;
            }
            if ((mask & 7u) >> t->naxes) {
                continue;
            }
            if (tpu__replay_groups_match(t, mask, chips, ng, size, d->kind == TPU_COLL_PSUM, tmp,
                                         pos)) {
                d->axes = mask;
                found = 1;
            }
        }
        if (!found) {
            /* Not whole torus axes: the engine's collectives over any groups. */
            row->chips = tpu__malloc((size_t)ng * (size_t)size * sizeof(int32_t));
            if (row->chips == NULL) {
                status = tpu__replay_oom(w);
                goto out;
            }
            memcpy(row->chips, chips, (size_t)ng * (size_t)size * sizeof(int32_t));
            groups.ngroups = ng;
            groups.size = size;
            groups.chips = row->chips;
            d->groups = &groups;
            d->axes = 0;
            found = 1;
        }
    }
    row->hlo_bytes = bytes;
    unit = d->kind == TPU_COLL_PSUM || d->kind == TPU_COLL_PPERMUTE ? (uint64_t)elem
                                                                    : (uint64_t)size * elem;
    if (bytes == 0) {
        bytes = unit;
    }
    if (bytes % unit != 0) {
        bytes = (bytes / unit + 1) * unit;
        snprintf(row->note, sizeof(row->note), "%llu bytes padded to %llu (whole blocks)",
                 (unsigned long long)row->hlo_bytes, (unsigned long long)bytes);
    }
    d->bytes = bytes;
    {
        /* The same request timed before: the same plan, the same time. */
        int same = d->groups == NULL && d->pairs == NULL ? tpu__replay_memo_find(w, d) : -1;

        if (same >= 0) {
            const tpu_replay_coll_t *prev = &w->rep->colls[same];

            row->supported = 1;
            row->modeled_us = prev->modeled_us;
            memcpy(row->algorithm, prev->algorithm, sizeof(row->algorithm));
            if (in->op == TPU_HLO_OP_COLLECTIVE_BROADCAST) {
                snprintf(row->note, sizeof(row->note), "timed as an all-gather of the same output");
            }
            goto out;
        }
    }
    status = tpu_coll_plan_create(t, w->link, d, &plan, &e);
    if (status == TPU_OK) {
        status = tpu_coll_plan_model(plan, &res, &e);
    }
    if (status == TPU_ERR_NO_MEMORY) {
        tpu_err_set(w->err, status, "%s", e.msg);
        goto out;
    }
    if (status != TPU_OK) {
        snprintf(row->note, sizeof(row->note), "not timed: %.100s", e.msg);
        status = TPU_OK;
        goto out;
    }
    row->supported = 1;
    row->modeled_us = res.modeled_us;
    snprintf(row->algorithm, sizeof(row->algorithm), "%s", res.algorithm);
    if (d->groups == NULL && d->pairs == NULL) {
        status = tpu__replay_memo_add(w, (int)(row - w->rep->colls));
        if (status != TPU_OK) {
            goto out;
        }
    }
    if (in->op == TPU_HLO_OP_COLLECTIVE_BROADCAST) {
        snprintf(row->note, sizeof(row->note), "timed as an all-gather of the same output");
    }
out:
    row->ngroups = ng;
    row->group_size = size;
    row->bytes = d->bytes;
    if (row->hlo_bytes == 0) {
        row->hlo_bytes = bytes;
    }
    tpu_topo_axes_str(d->axes, row->axes, sizeof(row->axes));
    if (d->groups != NULL || d->pairs != NULL) {
        snprintf(row->axes, sizeof(row->axes), "%s", d->groups != NULL ? "groups" : "pairs");
    }
    /* The row keeps the chips; tpu_replay_coll_desc() points a request at them. */
    d->groups = NULL;
    d->pairs = NULL;
    tpu_coll_plan_destroy(plan);
    tpu__free(chips);
    return status;
}

/* The row of collective instruction 'i' of 'c' ('attrs': the one with the attributes). */
tpu_status_t tpu__replay_coll_at(walker_t *w, const tpu_hlo_comp_t *c, int i,
                                 const tpu_hlo_instr_t *attrs, int is_start, int64_t mult,
                                 tpu_replay_coll_t **row_p)
{
    int *slot = tpu__replay_rowslot(w, c, i);
    tpu_replay_coll_t *row;
    tpu_status_t status;

    if (slot == NULL) {
        return tpu__replay_oom(w);
    }
    if (*slot < 0) {
        row = tpu__replay_new_coll(w);
        if (row == NULL) {
            return tpu__replay_oom(w);
        }
        row->name = c->instrs[i].name;
        row->source = c->instrs[i].op_name;
        row->opcode = c->instrs[i].opcode;
        row->line = c->instrs[i].line;
        row->async = is_start;
        status = coll_row(w, attrs, is_start, row);
        if (status != TPU_OK) {
            return status;
        }
        *slot = w->rep->ncolls - 1;
        if (!row->supported) {
            w->rep->unsupported++;
            status = tpu__replay_warn(w, "%s:%d: %s '%s': %s", w->mod->file, row->line, row->opcode,
                                      row->name, row->note);
            if (status != TPU_OK) {
                return status;
            }
        }
    }
    row = &w->rep->colls[*slot];
    if (w->record) {
        row->executions += mult;
    }
    *row_p = row;
    return TPU_OK;
}
