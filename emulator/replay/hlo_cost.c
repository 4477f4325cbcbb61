/*
 * The replay's cost walk: an HLO module -> step time, compute, communication
 * and exposed communication, per collective and per op (include/tpu/replay.h).
 *
 * Cost model.  Two streams per chip, walked in text order:
 *
 *   compute stream  |--dot--|--fusion--|        |--fusion--|
 *   comm stream             |=====all-gather (async)=====|
 *                   start ^                       done ^  (waits if not finished)
 *
 * - A compute op advances the clock by its roofline time: dot and convolution
 *   as matmuls (tpu_roofline_matmul, batch dims as repeated matmuls; complex
 *   types as 4 real ones), elementwise ops and reductions max(VPU time of
 *   their elements, HBM bytes / bandwidth), fusions max(MXU time of the dots
 *   inside, VPU time of the rest, operand + result bytes / bandwidth).
 * - A collective takes the modeled time of the engine's plan for it.  The
 *   communication stream runs one collective at a time: a collective starts at
 *   max(now, the end of the previous one).  A synchronous one blocks the
 *   clock until it ends; a -start lets the clock run on, and its -done waits
 *   for the end.  Exposed communication is the waiting.
 * - while: body and condition times the trip count (--trip-count NAME=K, else
 *   backend_config known_trip_count, else the counted-loop pattern, else 1 with
 *   a warning); call: the callee inline; conditional: the most expensive
 *   branch, with a warning naming it.
 *
 * Groups -> chips.  Device ids follow XLA's group modes (no channel_id:
 * replica ids; channel_id with use_global_device_ids=true: flattened ids;
 * channel_id on an op without that attribute: partition ids; channel_id with
 * use_global_device_ids=false: replicas across every partition); device d =
 * replica * partitions + partition, and --device-order maps d to a chip.  A
 * group set is run on the torus axes whose groups it equals (same members in
 * the same order; any order for an all-reduce); any other set of equal groups
 * that holds every chip once on the engine's group collectives (desc.groups,
 * tpu/groups.h).  A collective-permute that is one shift along one torus axis
 * is that ppermute; any other runs on its explicit pairs (desc.pairs).
 *
 * Restrictions: a collective-broadcast is timed as an all-gather of the same
 * output (a pipelined broadcast moves the same bytes per link); uneven groups
 * and groups that leave chips out are listed, not timed; variadic collectives
 * move the sum of their operands as one.
 */
#include "tpu/mxu.h"
#include "tpu/replay.h"
#include "tpu/roofline.h"
#include "tpu/vpu.h"

#include "alloc.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MAX_CALL_DEPTH 64

typedef struct times {
    double clock, compute, comm, exposed;
} times_t;

typedef struct walker {
    const tpu_hlo_module_t *mod;
    const tpu_topo_t *topo;
    const tpu_link_model_t *link;
    const tpu_chip_spec_t *chip;
    const tpu_replay_opts_t *opts;
    tpu_replay_report_t *rep;
    int32_t *dev2chip; /* device -> chip */
    int ndev, R, P;
    int **rowmap; /* [comp][instr] -> row (colls: >= 0; ops: -(row + 2)); -1 none */
    int collcap, opcap, warncap;
    int64_t seqcap;
    int64_t tlcap;
    double base;   /* the timeline: when the computation being walked started */
    int32_t *memo; /* rows already timed, by their engine request (open addressing, index + 1) */
    uint32_t memo_mask;
    int memo_n;
    int record; /* record rows (0 while sizing conditional branches) */
    int depth;
    tpu_err_t *err;
} walker_t;

static tpu_status_t oom(walker_t *w)
{
    return tpu_err_set(w->err, TPU_ERR_NO_MEMORY, "out of memory replaying module '%s'",
                       w->mod->name);
}

static tpu_status_t warn(walker_t *w, const char *fmt, ...) TPU_PRINTF(2, 3);
static tpu_status_t warn(walker_t *w, const char *fmt, ...)
{
    tpu_replay_report_t *r = w->rep;
    va_list ap;

    char msg[TPU_REPLAY_WARNING_LEN];
    int k;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    for (k = 0; k < r->nwarnings; k++) {
        if (strcmp(r->warnings[k], msg) == 0) {
            return TPU_OK;
        }
    }
    if (r->nwarnings == w->warncap) {
        int ncap = w->warncap ? w->warncap * 2 : 8;
        void *n = tpu__realloc(r->warnings, (size_t)ncap * TPU_REPLAY_WARNING_LEN);

        if (n == NULL) {
            return oom(w);
        }
        r->warnings = n;
        w->warncap = ncap;
    }
    memcpy(r->warnings[r->nwarnings], msg, sizeof(msg));
    r->nwarnings++;
    return TPU_OK;
}

static const tpu_hlo_instr_t *operand(const tpu_hlo_comp_t *c, const tpu_hlo_instr_t *in, int k)
{
    if (k >= in->noperands || in->operands[k] < 0 || in->operands[k] >= c->ninstrs) {
        return NULL;
    }
    return &c->instrs[in->operands[k]];
}

static double operand_bytes(const tpu_hlo_comp_t *c, const tpu_hlo_instr_t *in)
{
    double b = 0;
    int k;

    for (k = 0; k < in->noperands; k++) {
        const tpu_hlo_instr_t *o = operand(c, in, k);

        if (o != NULL) {
            b += (double)tpu_hlo_shape_bytes(&o->shape);
        }
    }
    return b;
}

/* ---------------------------------------------------------------- groups */

int tpu_replay_device_count(const tpu_hlo_module_t *mod)
{
    if (mod->replica_count > 0 || mod->num_partitions > 0) {
        int64_t r = mod->replica_count > 0 ? mod->replica_count : 1;
        int64_t p = mod->num_partitions > 0 ? mod->num_partitions : 1;

        return r * p > TPU_HLO_MAX_IDS ? TPU_HLO_MAX_IDS : (int)(r * p);
    }
    return mod->max_device_id + 1 > 1 ? mod->max_device_id + 1 : 1;
}

/* Ops with a use_global_device_ids attribute. */
static int has_ugdi(tpu_hlo_op_t op)
{
    return op == TPU_HLO_OP_ALL_REDUCE || op == TPU_HLO_OP_ALL_GATHER ||
           op == TPU_HLO_OP_REDUCE_SCATTER;
}

tpu_status_t tpu_replay_groups_get(const tpu_hlo_module_t *mod, const tpu_hlo_instr_t *in,
                                   const int32_t *device_order, int32_t *chips, int *ngroups_p,
                                   int *size_p, tpu_err_t *err)
{
    const tpu_hlo_groups_t *g = &in->groups;
    int ndev = tpu_replay_device_count(mod);
    int R = mod->replica_count > 0 ? (int)mod->replica_count : 1;
    int P = mod->num_partitions > 0 ? (int)mod->num_partitions : 1;
    int flat = R == 1 || P == 1;
    int ng = g->ngroups, gi, k, n = 0, size, outer, o;
    /* The id space of the groups: devices (flat), replicas, partitions. */
    enum {
        FLAT,
        CROSS_REPLICA,
        CROSS_PARTITION,
        REPLICA_AND_PARTITION
    } mode = FLAT;
    int ids_space;
    static const char *const space_name[] = {"device", "replica", "partition", "replica"};

    if (in->use_global_device_ids == 1 && in->channel_id < 0) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "%s:%d:%d: '%s' has use_global_device_ids=true without a channel_id",
                           mod->file, in->line, in->col, in->name);
    }
    if (!flat) {
        if (in->channel_id < 0) {
            mode = CROSS_REPLICA;
        } else if (!has_ugdi(in->op)) {
            mode = CROSS_PARTITION;
        } else if (in->use_global_device_ids == 1) {
            mode = FLAT;
        } else {
            mode = REPLICA_AND_PARTITION;
        }
    }
    ids_space = mode == FLAT ? ndev : mode == CROSS_PARTITION ? P : R;
    /* Check the ids, then the sizes. */
    for (k = 0; ng > 0 && k < g->start[ng]; k++) {
        if (g->ids[k] < 0 || g->ids[k] >= ids_space) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "%s:%d:%d: replica group of '%s' names %s %d, outside the module's "
                               "%d %ss (0 to %d)",
                               mod->file, in->line, in->col, in->name, space_name[mode], g->ids[k],
                               ids_space, space_name[mode], ids_space - 1);
        }
    }
    size = ng > 0 ? g->start[1] - g->start[0] : ids_space;
    for (gi = 0; gi < ng; gi++) {
        if (g->start[gi + 1] - g->start[gi] != size) {
            return tpu_err_set(err, TPU_ERR_UNSUPPORTED, "uneven groups (%d and %d devices)", size,
                               g->start[gi + 1] - g->start[gi]);
        }
    }
    if (size < 1) {
        return tpu_err_set(err, TPU_ERR_UNSUPPORTED, "empty replica group");
    }
    /* Expand: for each outer index (partition or replica the groups repeat over). */
    outer = mode == CROSS_REPLICA ? P : mode == CROSS_PARTITION ? R : 1;
    for (o = 0; o < outer; o++) {
        for (gi = 0; gi < (ng > 0 ? ng : 1); gi++) {
            if (mode == REPLICA_AND_PARTITION) {
                int p;

                for (k = 0; k < size; k++) {
                    for (p = 0; p < P; p++) {
                        int r = ng > 0 ? g->ids[g->start[gi] + k] : k;

                        chips[n++] = r * P + p;
                    }
                }
                continue;
            }
            for (k = 0; k < size; k++) {
                int id = ng > 0 ? g->ids[g->start[gi] + k] : k;

                chips[n++] = mode == CROSS_REPLICA     ? id * P + o
                             : mode == CROSS_PARTITION ? o * P + id
                                                       : id;
            }
        }
    }
    if (mode == REPLICA_AND_PARTITION) {
        size *= P;
    }
    for (k = 0; k < n; k++) {
        if (device_order != NULL) {
            chips[k] = device_order[chips[k]];
        }
    }
    *ngroups_p = size > 0 ? n / size : 0;
    *size_p = size;
    return TPU_OK;
}

/* The groups of the torus axes in 'mask', in the same layout (tpu_topo_group_member order). */
static void axis_groups(const tpu_topo_t *t, unsigned mask, int32_t *chips, int *ngroups_p,
                        int *size_p)
{
    int size = tpu_topo_group_size(t, mask), n = 0, chip, k;

    for (chip = 0; chip < t->nchips; chip++) {
        if (tpu_topo_group_index(t, mask, chip) != 0) {
            continue;
        }
        for (k = 0; k < size; k++) {
            chips[n++] = tpu_topo_group_member(t, mask, chip, k);
        }
    }
    *ngroups_p = size > 0 ? n / size : 0;
    *size_p = size;
}

/*
 * Does the group set 'chips' (ng groups of 'size') equal the groups of the axes
 * in 'mask'?  'any_order': members may come in any order (all-reduce).
 * 'tmp' and 'pos' have room for nchips.
 */
static int groups_match(const tpu_topo_t *t, unsigned mask, const int32_t *chips, int ng, int size,
                        int any_order, int32_t *tmp, int32_t *pos)
{
    int ang, asize, g, k;

    if (tpu_topo_group_size(t, mask) != size) {
        return 0;
    }
    axis_groups(t, mask, tmp, &ang, &asize);
    if (ang != ng || asize != size) {
        return 0;
    }
    /* pos[chip] = index of its axis group and its place in it. */
    for (g = 0; g < ng; g++) {
        for (k = 0; k < size; k++) {
            pos[tmp[g * size + k]] = g * size + k;
        }
    }
    for (g = 0; g < ng; g++) {
        int base = pos[chips[g * size]] / size * size;

        for (k = 0; k < size; k++) {
            int p = pos[chips[g * size + k]];

            if (p / size * size != base) {
                return 0;
            }
            if (!any_order && p != base + k) {
                return 0;
            }
        }
    }
    return 1;
}

/* ---------------------------------------------------------------- rows */

static int *rowslot(walker_t *w, const tpu_hlo_comp_t *c, int i)
{
    int ci = (int)(c - w->mod->comps);

    if (w->rowmap[ci] == NULL) {
        int k;

        w->rowmap[ci] = tpu__malloc((size_t)c->ninstrs * sizeof(int));
        if (w->rowmap[ci] == NULL) {
            return NULL;
        }
        for (k = 0; k < c->ninstrs; k++) {
            w->rowmap[ci][k] = -1;
        }
    }
    return &w->rowmap[ci][i];
}

static tpu_replay_coll_t *new_coll(walker_t *w)
{
    tpu_replay_report_t *r = w->rep;

    if (r->ncolls == w->collcap) {
        int ncap = w->collcap ? w->collcap * 2 : 16;
        void *n = tpu__realloc(r->colls, (size_t)ncap * sizeof(*r->colls));

        if (n == NULL) {
            return NULL;
        }
        r->colls = n;
        w->collcap = ncap;
    }
    memset(&r->colls[r->ncolls], 0, sizeof(r->colls[0]));
    return &r->colls[r->ncolls++];
}

static tpu_replay_op_t *new_op(walker_t *w)
{
    tpu_replay_report_t *r = w->rep;

    if (r->nops == w->opcap) {
        int ncap = w->opcap ? w->opcap * 2 : 16;
        void *n = tpu__realloc(r->ops, (size_t)ncap * sizeof(*r->ops));

        if (n == NULL) {
            return NULL;
        }
        r->ops = n;
        w->opcap = ncap;
    }
    memset(&r->ops[r->nops], 0, sizeof(r->ops[0]));
    return &r->ops[r->nops++];
}

static uint32_t desc_hash(const tpu_coll_desc_t *d)
{
    uint64_t h = 1469598103934665603ULL;
    uint64_t v[6];
    int i;

    v[0] = (uint64_t)d->kind;
    v[1] = d->axes;
    v[2] = d->bytes;
    v[3] = (uint64_t)d->dtype;
    v[4] = (uint64_t)d->op;
    v[5] = (uint64_t)(int64_t)d->shift;
    for (i = 0; i < 6; i++) {
        h = (h ^ v[i]) * 1099511628211ULL;
    }
    return (uint32_t)(h ^ (h >> 32));
}

static int desc_same(const tpu_coll_desc_t *a, const tpu_coll_desc_t *b)
{
    return a->kind == b->kind && a->axes == b->axes && a->bytes == b->bytes &&
           a->dtype == b->dtype && a->op == b->op && a->shift == b->shift;
}

/* A row timed before for the same request; -1 when none. */
static int memo_find(const walker_t *w, const tpu_coll_desc_t *d)
{
    uint32_t h;

    if (w->memo == NULL) {
        return -1;
    }
    for (h = desc_hash(d) & w->memo_mask; w->memo[h] != 0; h = (h + 1) & w->memo_mask) {
        if (desc_same(&w->rep->colls[w->memo[h] - 1].desc, d)) {
            return w->memo[h] - 1;
        }
    }
    return -1;
}

static tpu_status_t memo_add(walker_t *w, int row)
{
    uint32_t h;

    if (w->memo == NULL || (uint32_t)(w->memo_n + 1) * 2 > w->memo_mask + 1) {
        uint32_t size = w->memo ? (w->memo_mask + 1) * 2 : 256, k;
        int32_t *old = w->memo, *nm = tpu__calloc(size, sizeof(int32_t));
        uint32_t old_size = w->memo ? w->memo_mask + 1 : 0;

        if (nm == NULL) {
            return oom(w);
        }
        w->memo = nm;
        w->memo_mask = size - 1;
        for (k = 0; k < old_size; k++) {
            if (old[k] != 0) {
                for (h = desc_hash(&w->rep->colls[old[k] - 1].desc) & w->memo_mask; w->memo[h] != 0;
                     h = (h + 1) & w->memo_mask) {
                }
                w->memo[h] = old[k];
            }
        }
        tpu__free(old);
    }
    for (h = desc_hash(&w->rep->colls[row].desc) & w->memo_mask; w->memo[h] != 0;
         h = (h + 1) & w->memo_mask) {
    }
    w->memo[h] = row + 1;
    w->memo_n++;
    return TPU_OK;
}

/* Append 'n' entries to the execution sequence: a copy of seq[from, from + n), or 'row' when from <
 * 0. */
static tpu_status_t seq_append(walker_t *w, int64_t from, int64_t n, int32_t row)
{
    tpu_replay_report_t *r = w->rep;
    int64_t k;

    if (!w->record || r->seq_truncated) {
        return TPU_OK;
    }
    if (r->nseq + n > TPU_REPLAY_MAX_SEQ) {
        r->seq_truncated = 1;
        return TPU_OK;
    }
    if (r->nseq + n > w->seqcap) {
        int64_t ncap = w->seqcap ? w->seqcap : 64;
        void *nb;

        while (ncap < r->nseq + n) {
            ncap *= 2;
        }
        nb = tpu__realloc(r->seq, (size_t)ncap * sizeof(int32_t));
        if (nb == NULL) {
            return oom(w);
        }
        r->seq = nb;
        w->seqcap = ncap;
    }
    for (k = 0; k < n; k++) {
        r->seq[r->nseq + k] = from >= 0 ? r->seq[from + k] : row;
    }
    r->nseq += n;
    return TPU_OK;
}

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
static tpu_hlo_type_t leaf_type(const tpu_hlo_shape_t *sh)
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
    bits = tpu_hlo_type_bits(leaf_type(out));
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
        return oom(w);
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
                status = oom(w);
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
            if (groups_match(t, mask, chips, ng, size, d->kind == TPU_COLL_PSUM, tmp, pos)) {
                d->axes = mask;
                found = 1;
            }
        }
        if (!found) {
            /* Not whole torus axes: the engine's collectives over any groups. */
            row->chips = tpu__malloc((size_t)ng * (size_t)size * sizeof(int32_t));
            if (row->chips == NULL) {
                status = oom(w);
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
        int same = d->groups == NULL && d->pairs == NULL ? memo_find(w, d) : -1;

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
        status = memo_add(w, (int)(row - w->rep->colls));
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
static tpu_status_t coll_at(walker_t *w, const tpu_hlo_comp_t *c, int i,
                            const tpu_hlo_instr_t *attrs, int is_start, int64_t mult,
                            tpu_replay_coll_t **row_p)
{
    int *slot = rowslot(w, c, i);
    tpu_replay_coll_t *row;
    tpu_status_t status;

    if (slot == NULL) {
        return oom(w);
    }
    if (*slot < 0) {
        row = new_coll(w);
        if (row == NULL) {
            return oom(w);
        }
        row->name = c->instrs[i].name;
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
            status = warn(w, "%s:%d: %s '%s': %s", w->mod->file, row->line, row->opcode, row->name,
                          row->note);
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

/* ---------------------------------------------------------------- compute */

typedef struct cost {
    double flops, bytes, mxu_us, vpu_us;
} cost_t;

static tpu_dtype_t elem_of(tpu_hlo_type_t t, int *complex_p)
{
    *complex_p = t == TPU_HLO_TYPE_C64 || t == TPU_HLO_TYPE_C128;
    switch (t) {
    case TPU_HLO_TYPE_BF16:
    case TPU_HLO_TYPE_F16:
        return TPU_DTYPE_BF16;
    case TPU_HLO_TYPE_F32:
    case TPU_HLO_TYPE_F64:
    case TPU_HLO_TYPE_C64:
    case TPU_HLO_TYPE_C128:
    case TPU_HLO_TYPE_S32:
    case TPU_HLO_TYPE_U32:
    case TPU_HLO_TYPE_S64:
    case TPU_HLO_TYPE_U64:
    case TPU_HLO_TYPE_S16:
    case TPU_HLO_TYPE_U16:
        return TPU_DTYPE_F32;
    default:
        return TPU_DTYPE_I8;
    }
}

static int in_list(const tpu_hlo_ints_t *l, int d)
{
    int k;

    for (k = 0; k < l->n; k++) {
        if (l->v[k] == d) {
            return 1;
        }
    }
    return 0;
}

/* A dot: B batched matmuls of M x K x N through the roofline. */
static void dot_cost(walker_t *w, const tpu_hlo_comp_t *c, const tpu_hlo_instr_t *in, cost_t *k)
{
    const tpu_hlo_instr_t *lo = operand(c, in, 0), *ro = operand(c, in, 1);
    int64_t B = 1, M = 1, K = 1, N = 1;
    tpu_mxu_desc_t desc;
    tpu_roofline_t rl;
    int d, cplx, cplx2;
    tpu_dtype_t inel, outel;
    double mult;

    if (lo == NULL || ro == NULL || lo->shape.type == TPU_HLO_TYPE_TUPLE ||
        ro->shape.type == TPU_HLO_TYPE_TUPLE) {
        return;
    }
    for (d = 0; d < lo->shape.rank; d++) {
        if (in_list(&in->lhs_batch, d)) {
            B *= lo->shape.dims[d];
        } else if (in_list(&in->lhs_contracting, d)) {
            K *= lo->shape.dims[d];
        } else {
            M *= lo->shape.dims[d];
        }
    }
    for (d = 0; d < ro->shape.rank; d++) {
        if (!in_list(&in->rhs_batch, d) && !in_list(&in->rhs_contracting, d)) {
            N *= ro->shape.dims[d];
        }
    }
    if (B < 1 || M < 1 || K < 1 || N < 1) {
        return;
    }
    inel = elem_of(lo->shape.type, &cplx);
    outel = elem_of(leaf_type(&in->shape), &cplx2);
    tpu_mxu_desc_init(&desc, M, K, N, inel);
    if (inel == TPU_DTYPE_BF16 && outel == TPU_DTYPE_F32) {
        desc.out = TPU_DTYPE_F32;
    }
    if (tpu_mxu_roofline(w->chip, &desc, &rl, NULL) != TPU_OK) {
        return;
    }
    mult = (double)B * (cplx ? 4 : 1);
    k->flops += mult * rl.flops;
    k->bytes += (double)B * rl.hbm_bytes * (cplx ? 2 : 1);
    k->mxu_us += mult * rl.compute_us;
}

/* A convolution: output positions x (kernel window x input features) x output features. */
static void conv_cost(walker_t *w, const tpu_hlo_comp_t *c, const tpu_hlo_instr_t *in, cost_t *k)
{
    const tpu_hlo_instr_t *lo = operand(c, in, 0), *ro = operand(c, in, 1);
    const char *lab = in->dim_labels, *rl_start, *arrow;
    int64_t out_e = tpu_hlo_shape_elements(&in->shape), ifeat = 1, ofeat = 1, win = 1, m;
    tpu_mxu_desc_t desc;
    tpu_roofline_t rl;
    int d, cplx;

    if (lo == NULL || ro == NULL || lab == NULL || ro->shape.type == TPU_HLO_TYPE_TUPLE) {
        return;
    }
    rl_start = strchr(lab, '_');
    arrow = strstr(lab, "->");
    if (rl_start == NULL || arrow == NULL || arrow < rl_start ||
        arrow - rl_start - 1 != ro->shape.rank) {
        return;
    }
    for (d = 0; d < ro->shape.rank; d++) {
        char ch = rl_start[1 + d];

        if (ch == 'i') {
            ifeat = ro->shape.dims[d];
        } else if (ch == 'o') {
            ofeat = ro->shape.dims[d];
        } else {
            win *= ro->shape.dims[d];
        }
    }
    if (ofeat < 1 || out_e < ofeat || ifeat < 1 || win < 1) {
        return;
    }
    m = out_e / ofeat;
    tpu_mxu_desc_init(&desc, m, win * ifeat, ofeat, elem_of(lo->shape.type, &cplx));
    if (desc.in == TPU_DTYPE_BF16 && leaf_type(&in->shape) == TPU_HLO_TYPE_F32) {
        desc.out = TPU_DTYPE_F32;
    }
    if (tpu_mxu_roofline(w->chip, &desc, &rl, NULL) != TPU_OK) {
        return;
    }
    k->flops += rl.flops * (cplx ? 4 : 1);
    k->mxu_us += rl.compute_us * (cplx ? 4 : 1);
}

static double vpu_us(walker_t *w, int64_t elements, double fpe)
{
    return tpu_vpu_seconds(w->chip, elements, fpe) * 1e6;
}

/* FLOPs and unit time of one instruction inside a fusion (no HBM bytes). */
static tpu_status_t inner_cost(walker_t *w, const tpu_hlo_comp_t *c, const tpu_hlo_instr_t *in,
                               cost_t *k);

static tpu_status_t fused_cost(walker_t *w, int ci, cost_t *k)
{
    const tpu_hlo_comp_t *c = &w->mod->comps[ci];
    tpu_status_t status = TPU_OK;
    int i;

    if (++w->depth > MAX_CALL_DEPTH) {
        return tpu_err_set(w->err, TPU_ERR_INVALID,
                           "%s:%d:1: computations nest deeper than %d (a cycle?) at '%s'",
                           w->mod->file, c->line, MAX_CALL_DEPTH, c->name);
    }
    for (i = 0; i < c->ninstrs && status == TPU_OK; i++) {
        status = inner_cost(w, c, &c->instrs[i], k);
    }
    w->depth--;
    return status;
}

static tpu_status_t inner_cost(walker_t *w, const tpu_hlo_comp_t *c, const tpu_hlo_instr_t *in,
                               cost_t *k)
{
    int64_t e = tpu_hlo_shape_elements(&in->shape);

    switch (tpu_hlo_op_class(in->op)) {
    case TPU_HLO_CLASS_DOT:
        dot_cost(w, c, in, k);
        break;
    case TPU_HLO_CLASS_CONV:
        conv_cost(w, c, in, k);
        break;
    case TPU_HLO_CLASS_ELEMWISE:
        k->flops += (double)e;
        k->vpu_us += vpu_us(w, e, 1);
        break;
    case TPU_HLO_CLASS_TRANSC:
        k->flops += (double)e * TPU_VPU_TRANSCENDENTAL_FLOPS;
        k->vpu_us += vpu_us(w, e, TPU_VPU_TRANSCENDENTAL_FLOPS);
        break;
    case TPU_HLO_CLASS_REDUCE: {
        const tpu_hlo_instr_t *o = operand(c, in, 0);
        int64_t ie = o != NULL ? tpu_hlo_shape_elements(&o->shape) : e;

        k->flops += (double)ie;
        k->vpu_us += vpu_us(w, ie, 1);
        break;
    }
    case TPU_HLO_CLASS_FFT: {
        double n = in->fft_length > 1 ? (double)in->fft_length : 1;
        double f = n > 1 ? 5 * log2(n) : 0;

        k->flops += (double)e * f;
        k->vpu_us += vpu_us(w, e, f);
        break;
    }
    case TPU_HLO_CLASS_FUSION:
        if (in->calls_c >= 0) {
            return fused_cost(w, in->calls_c, k);
        }
        break;
    default:
        break;
    }
    return TPU_OK;
}

/*
 * Bytes a top-level op moves through HBM: operands read, result written.  Ops
 * that touch part of an operand count that part: a slice or gather reads what
 * it writes; a dynamic-update-slice or scatter updates its buffer in place.
 */
static double io_bytes(const tpu_hlo_comp_t *c, const tpu_hlo_instr_t *in)
{
    double out = (double)tpu_hlo_shape_bytes(&in->shape);
    const tpu_hlo_instr_t *upd;

    switch (in->op) {
    case TPU_HLO_OP_SLICE:
    case TPU_HLO_OP_DYNAMIC_SLICE:
    case TPU_HLO_OP_GATHER:
        return 2 * out;
    case TPU_HLO_OP_DYNAMIC_UPDATE_SLICE:
    case TPU_HLO_OP_SCATTER:
        upd = operand(c, in, in->op == TPU_HLO_OP_SCATTER ? in->noperands - 1 : 1);
        return upd != NULL ? 2 * (double)tpu_hlo_shape_bytes(&upd->shape) : out;
    default:
        return operand_bytes(c, in) + out;
    }
}

static double custom_us(const walker_t *w, const tpu_hlo_instr_t *in, int *given_p)
{
    int k;

    *given_p = 0;
    for (k = 0; w->opts != NULL && k < w->opts->ncustom; k++) {
        if (strcmp(w->opts->custom_names[k], in->name) == 0 ||
            (in->custom_call_target != NULL &&
             strcmp(w->opts->custom_names[k], in->custom_call_target) == 0)) {
            *given_p = 1;
            return w->opts->custom_us[k];
        }
    }
    return 0;
}

/* The row and time of compute instruction 'i' of 'c'. */
static tpu_status_t op_at(walker_t *w, const tpu_hlo_comp_t *c, int i, int64_t mult, double *us_p)
{
    const tpu_hlo_instr_t *in = &c->instrs[i];
    int *slot = rowslot(w, c, i);
    tpu_replay_op_t *row;
    tpu_status_t status;

    if (slot == NULL) {
        return oom(w);
    }
    if (*slot < 0) {
        cost_t k = {0, 0, 0, 0};
        double mem_us, t;
        int given = 0;

        row = new_op(w);
        if (row == NULL) {
            return oom(w);
        }
        row->name = in->name;
        row->opcode = in->opcode;
        row->line = in->line;
        *slot = w->rep->nops - 1;
        if (in->op == TPU_HLO_OP_CUSTOM_CALL) {
            row->custom = 1;
            row->detail = in->custom_call_target;
            row->modeled_us = custom_us(w, in, &given);
            row->bytes = io_bytes(c, in);
            w->rep->custom_calls++;
            status = warn(w, "%s:%d: custom-call '%s' (%s) costs %s", w->mod->file, in->line,
                          in->name, in->custom_call_target ? in->custom_call_target : "?",
                          given ? "the time given by --custom-call-us"
                                : "0 (unknown; set it with "
                                  "--custom-call-us NAME=US)");
            if (status != TPU_OK) {
                return status;
            }
        } else {
            if (in->op == TPU_HLO_OP_FUSION) {
                row->detail = in->calls;
                if (in->calls_c >= 0) {
                    status = fused_cost(w, in->calls_c, &k);
                    if (status != TPU_OK) {
                        return status;
                    }
                }
                k.bytes = io_bytes(c, in);
            } else {
                status = inner_cost(w, c, in, &k);
                if (status != TPU_OK) {
                    return status;
                }
                if (tpu_hlo_op_class(in->op) != TPU_HLO_CLASS_DOT) {
                    k.bytes = io_bytes(c, in);
                }
            }
            mem_us = k.bytes / w->chip->hbm_bw * 1e6;
            t = k.mxu_us > k.vpu_us ? k.mxu_us : k.vpu_us;
            row->compute_bound = t > mem_us;
            /* A slow chip (tpu/fault.h) paces every op of the SPMD program. */
            row->modeled_us = (t > mem_us ? t : mem_us) / tpu_faults_slowest_chip(w->link->faults);
            row->flops = k.flops;
            row->bytes = k.bytes;
        }
    }
    row = &w->rep->ops[*slot];
    if (w->record) {
        row->executions += mult;
    }
    *us_p = row->modeled_us;
    return TPU_OK;
}

/* ---------------------------------------------------------------- control flow */

static tpu_status_t walk(walker_t *w, int ci, int64_t mult, times_t *out);

/* The start instruction a -done / -update refers to (through updates). */
static int start_of(const tpu_hlo_comp_t *c, int i)
{
    int guard;

    for (guard = 0; guard < 64; guard++) {
        const tpu_hlo_instr_t *in = &c->instrs[i];

        if (in->noperands < 1 || in->operands[0] < 0) {
            return -1;
        }
        i = in->operands[0];
        if (c->instrs[i].async == TPU_HLO_START ||
            (c->instrs[i].op == TPU_HLO_OP_ASYNC && c->instrs[i].async == TPU_HLO_START)) {
            return i;
        }
    }
    return -1;
}

/* A constant feeding 'in' (through copy / convert / bitcast). */
static int const_value(const tpu_hlo_comp_t *c, const tpu_hlo_instr_t *in, int64_t *v)
{
    int guard;

    for (guard = 0; in != NULL && guard < 8; guard++) {
        if (in->has_int_value) {
            *v = in->int_value;
            return 1;
        }
        if (in->op != TPU_HLO_OP_COPY && in->op != TPU_HLO_OP_CONVERT &&
            in->op != TPU_HLO_OP_BITCAST && in->op != TPU_HLO_OP_RESHAPE) {
            return 0;
        }
        in = operand(c, in, 0);
    }
    return 0;
}

/* Is 'in' get-tuple-element(parameter, index=k)?  Sets *k_p. */
static int is_param_gte(const tpu_hlo_comp_t *c, const tpu_hlo_instr_t *in, int64_t *k_p)
{
    const tpu_hlo_instr_t *p;

    if (in == NULL || in->op != TPU_HLO_OP_GET_TUPLE_ELEMENT || in->index < 0) {
        return 0;
    }
    p = operand(c, in, 0);
    if (p == NULL || p->op != TPU_HLO_OP_PARAMETER) {
        return 0;
    }
    *k_p = in->index;
    return 1;
}

/*
 * The counted-loop pattern: condition compare(gte(param, k), constant) (either
 * side), init tuple element k a constant, body root tuple element k
 * add(gte(param, k), constant).  -1 when the loop does not match.
 */
static int64_t infer_trip(const walker_t *w, const tpu_hlo_comp_t *caller,
                          const tpu_hlo_instr_t *loop)
{
    const tpu_hlo_module_t *m = w->mod;
    const tpu_hlo_comp_t *cond, *body;
    const tpu_hlo_instr_t *cmp, *a, *b, *init, *broot, *upd;
    int64_t k, k2, limit, start, step, n;
    const char *dir;
    int flip = 0;

    if (loop->condition_c < 0 || loop->body_c < 0) {
        return -1;
    }
    cond = &m->comps[loop->condition_c];
    body = &m->comps[loop->body_c];
    cmp = &cond->instrs[cond->root];
    if (cmp->op != TPU_HLO_OP_COMPARE || cmp->direction == NULL || cmp->noperands != 2) {
        return -1;
    }
    a = operand(cond, cmp, 0);
    b = operand(cond, cmp, 1);
    if (is_param_gte(cond, a, &k) && const_value(cond, b, &limit)) {
    } else if (is_param_gte(cond, b, &k) && const_value(cond, a, &limit)) {
        flip = 1;
    } else {
        return -1;
    }
    init = operand(caller, loop, 0);
    if (init == NULL || init->op != TPU_HLO_OP_TUPLE || k >= init->noperands ||
        !const_value(caller, operand(caller, init, (int)k), &start)) {
        return -1;
    }
    broot = &body->instrs[body->root];
    if (broot->op != TPU_HLO_OP_TUPLE || k >= broot->noperands) {
        return -1;
    }
    upd = operand(body, broot, (int)k);
    if (upd == NULL || upd->op != TPU_HLO_OP_ADD || upd->noperands != 2) {
        return -1;
    }
    if (is_param_gte(body, operand(body, upd, 0), &k2) && k2 == k &&
        const_value(body, operand(body, upd, 1), &step)) {
    } else if (is_param_gte(body, operand(body, upd, 1), &k2) && k2 == k &&
               const_value(body, operand(body, upd, 0), &step)) {
    } else {
        return -1;
    }
    dir = cmp->direction;
    if (flip) {
        dir = strcmp(dir, "LT") == 0   ? "GT"
              : strcmp(dir, "LE") == 0 ? "GE"
              : strcmp(dir, "GT") == 0 ? "LT"
              : strcmp(dir, "GE") == 0 ? "LE"
                                       : dir;
    }
    if (step == 0) {
        return -1;
    }
    if (strcmp(dir, "LT") == 0 && step > 0) {
        n = limit > start ? (limit - start + step - 1) / step : 0;
    } else if (strcmp(dir, "LE") == 0 && step > 0) {
        n = limit >= start ? (limit - start) / step + 1 : 0;
    } else if (strcmp(dir, "GT") == 0 && step < 0) {
        n = start > limit ? (start - limit + (-step) - 1) / (-step) : 0;
    } else if (strcmp(dir, "GE") == 0 && step < 0) {
        n = start >= limit ? (start - limit) / (-step) + 1 : 0;
    } else if (strcmp(dir, "NE") == 0 && (limit - start) % step == 0 &&
               (limit - start) / step >= 0) {
        n = (limit - start) / step;
    } else {
        return -1;
    }
    return n;
}

static tpu_status_t trip_count(walker_t *w, const tpu_hlo_comp_t *caller,
                               const tpu_hlo_instr_t *loop, int64_t *n_p)
{
    int k;
    int64_t n;

    for (k = 0; w->opts != NULL && k < w->opts->ntrips; k++) {
        if (strcmp(w->opts->trip_names[k], loop->name) == 0) {
            *n_p = w->opts->trip_counts[k];
            return TPU_OK;
        }
    }
    if (loop->known_trip_count >= 0) {
        *n_p = loop->known_trip_count;
        return TPU_OK;
    }
    n = infer_trip(w, caller, loop);
    if (n >= 0) {
        *n_p = n;
        return TPU_OK;
    }
    *n_p = 1;
    return warn(w,
                "%s:%d: while '%s': trip count unknown (no known_trip_count, not a counted loop); "
                "counted once (set it with --trip-count %s=K)",
                w->mod->file, loop->line, loop->name, loop->name);
}

/*
 * Append to the timeline: one event (from < 0), or a copy of events [from, from +
 * n) shifted by 'shift' us (a loop's later iterations).
 */
static tpu_status_t tl_append(walker_t *w, int64_t from, int64_t n, double shift, int coll,
                              int32_t row, double start, double dur)
{
    tpu_replay_report_t *r = w->rep;
    int64_t k;

    if (!w->record || w->opts == NULL || !w->opts->timeline || r->timeline_truncated) {
        return TPU_OK;
    }
    if (from < 0) {
        n = 1;
    }
    if (r->ntimeline + n > TPU_REPLAY_MAX_TIMELINE) {
        r->timeline_truncated = 1;
        return TPU_OK;
    }
    if (r->ntimeline + n > w->tlcap) {
        int64_t ncap = w->tlcap ? w->tlcap : 256;
        tpu_replay_event_t *nb;

        while (ncap < r->ntimeline + n) {
            ncap *= 2;
        }
        nb = tpu__realloc(r->timeline, (size_t)ncap * sizeof(*nb));
        if (nb == NULL) {
            return oom(w);
        }
        r->timeline = nb;
        w->tlcap = ncap;
    }
    for (k = 0; k < n; k++) {
        tpu_replay_event_t *e = &r->timeline[r->ntimeline + k];

        if (from >= 0) {
            *e = r->timeline[from + k];
            e->start_us += shift;
        } else {
            e->coll = coll;
            e->row = row;
            e->start_us = start;
            e->dur_us = dur;
        }
    }
    r->ntimeline += n;
    return TPU_OK;
}

static void add_times(times_t *t, const times_t *s, double n)
{
    t->clock += n * s->clock;
    t->compute += n * s->compute;
    t->comm += n * s->comm;
    t->exposed += n * s->exposed;
}

static tpu_status_t walk(walker_t *w, int ci, int64_t mult, times_t *out)
{
    const tpu_hlo_comp_t *c = &w->mod->comps[ci];
    double comm_free = 0, *end_at = NULL, base = w->base;
    tpu_status_t status = TPU_OK;
    times_t t = {0, 0, 0, 0};
    int i;

    if (++w->depth > MAX_CALL_DEPTH) {
        return tpu_err_set(w->err, TPU_ERR_INVALID,
                           "%s:%d:1: computations call each other deeper than %d (a cycle?) at "
                           "'%s'",
                           w->mod->file, c->line, MAX_CALL_DEPTH, c->name);
    }
    end_at = tpu__malloc((size_t)c->ninstrs * sizeof(double));
    if (end_at == NULL) {
        status = oom(w);
        goto out;
    }
    for (i = 0; i < c->ninstrs; i++) {
        end_at[i] = -1;
    }
    for (i = 0; i < c->ninstrs && status == TPU_OK; i++) {
        const tpu_hlo_instr_t *in = &c->instrs[i];
        tpu_hlo_class_t cls = tpu_hlo_op_class(in->op);
        const tpu_hlo_instr_t *attrs = in;
        tpu_replay_coll_t *row = NULL;
        times_t sub;
        double us = 0;

        if (cls == TPU_HLO_CLASS_ASYNC && in->async == TPU_HLO_START && in->calls_c >= 0) {
            const tpu_hlo_comp_t *cc = &w->mod->comps[in->calls_c];

            attrs = &cc->instrs[cc->root];
            if (tpu_hlo_op_class(attrs->op) == TPU_HLO_CLASS_COLL) {
                cls = TPU_HLO_CLASS_COLL;
            } else {
                /* An async computation that is not a collective: run it in place. */
                w->base = base + t.clock;
                status = walk(w, in->calls_c, mult, &sub);
                w->base = base;
                add_times(&t, &sub, 1);
                continue;
            }
        } else if (cls == TPU_HLO_CLASS_ASYNC) {
            cls = TPU_HLO_CLASS_COLL; /* async-update / async-done */
        }
        switch (cls) {
        case TPU_HLO_CLASS_COLL:
            if (in->async == TPU_HLO_UPDATE) {
                break;
            }
            if (in->async == TPU_HLO_DONE) {
                int s = start_of(c, i);
                int *slot;

                if (s < 0 || end_at[s] < 0) {
                    break;
                }
                if (end_at[s] > t.clock) {
                    slot = rowslot(w, c, s);
                    if (slot != NULL && *slot >= 0 && w->record) {
                        w->rep->colls[*slot].exposed_us += (end_at[s] - t.clock) * (double)mult;
                    }
                    t.exposed += end_at[s] - t.clock;
                    t.clock = end_at[s];
                }
                end_at[s] = -1;
                break;
            }
            status = coll_at(w, c, i, attrs, in->async == TPU_HLO_START, mult, &row);
            if (status != TPU_OK) {
                break;
            }
            status = seq_append(w, -1, 1, (int32_t)(row - w->rep->colls));
            if (status != TPU_OK) {
                break;
            }
            us = row->supported ? row->modeled_us : 0;
            {
                double start = t.clock > comm_free ? t.clock : comm_free;

                if (row->supported) {
                    status =
                        tl_append(w, -1, 1, 0, 1, (int32_t)(row - w->rep->colls), base + start, us);
                }
                comm_free = start + us;
                t.comm += us;
                if (in->async == TPU_HLO_START) {
                    end_at[i] = comm_free;
                } else {
                    if (w->record) {
                        row->exposed_us += (comm_free - t.clock) * (double)mult;
                    }
                    t.exposed += comm_free - t.clock;
                    t.clock = comm_free;
                }
            }
            break;
        case TPU_HLO_CLASS_WHILE: {
            int64_t n = 1;
            times_t cond;

            if (in->body_c < 0 || in->condition_c < 0) {
                break;
            }
            status = trip_count(w, c, in, &n);
            if (status == TPU_OK && n > 0 && mult > INT64_MAX / 4 / n) {
                status = tpu_err_set(w->err, TPU_ERR_INVALID,
                                     "%s:%d:%d: while '%s' runs %lld times inside loops that run "
                                     "%lld times: too many to count",
                                     w->mod->file, in->line, in->col, in->name, (long long)n,
                                     (long long)mult);
            }
            if (status == TPU_OK && n > 0) {
                int64_t a = w->rep->nseq, b, k, ta = w->rep->ntimeline, tb;

                w->base = base + t.clock;
                status = walk(w, in->body_c, mult * n, &sub);
                if (status == TPU_OK) {
                    w->base = base + t.clock + sub.clock;
                    status = walk(w, in->condition_c, mult * n, &cond);
                }
                w->base = base;
                /* The timeline: the iteration just walked, n - 1 more times. */
                tb = w->rep->ntimeline;
                for (k = 1; k < n && status == TPU_OK && tb > ta && !w->rep->timeline_truncated;
                     k++) {
                    status =
                        tl_append(w, ta, tb - ta, (double)k * (sub.clock + cond.clock), 0, 0, 0, 0);
                }
                if (status == TPU_OK) {
                    add_times(&t, &sub, (double)n);
                    add_times(&t, &cond, (double)n);
                }
                /* The sequence: the iteration just walked, n - 1 more times. */
                b = w->rep->nseq;
                for (k = 1; k < n && status == TPU_OK && b > a && !w->rep->seq_truncated; k++) {
                    status = seq_append(w, a, b - a, 0);
                }
            }
            break;
        }
        case TPU_HLO_CLASS_CALL:
            if (in->to_apply_c >= 0) {
                w->base = base + t.clock;
                status = walk(w, in->to_apply_c, mult, &sub);
                w->base = base;
                add_times(&t, &sub, 1);
            }
            break;
        case TPU_HLO_CLASS_COND: {
            int nb = in->nbranches > 0 ? in->nbranches : 2, b, best = -1, save = w->record;
            double best_t = -1;

            for (b = 0; b < nb && status == TPU_OK; b++) {
                int bc = in->nbranches > 0 ? in->branches[b] : b == 0 ? in->true_c : in->false_c;

                if (bc < 0) {
                    continue;
                }
                w->record = 0;
                status = walk(w, bc, mult, &sub);
                w->record = save;
                if (status == TPU_OK && sub.clock > best_t) {
                    best_t = sub.clock;
                    best = bc;
                }
            }
            if (status == TPU_OK && best >= 0) {
                w->base = base + t.clock;
                status = walk(w, best, mult, &sub);
                w->base = base;
                add_times(&t, &sub, 1);
                if (status == TPU_OK && nb > 1) {
                    status = warn(w,
                                  "%s:%d: conditional '%s': the most expensive of %d branches "
                                  "('%s', %.3f us) is counted",
                                  w->mod->file, in->line, in->name, nb, w->mod->comps[best].name,
                                  sub.clock);
                }
            }
            break;
        }
        case TPU_HLO_CLASS_FREE:
            break;
        case TPU_HLO_CLASS_UNKNOWN:
            status = warn(w, "%s: opcode '%s' is not known to the replay: skipped (costs 0)",
                          w->mod->file, in->opcode);
            break;
        case TPU_HLO_CLASS_ASYNC:
            break;
        default:
            status = op_at(w, c, i, mult, &us);
            if (status == TPU_OK) {
                status = tl_append(w, -1, 1, 0, 0, (int32_t)*rowslot(w, c, i), base + t.clock, us);
            }
            if (status == TPU_OK) {
                t.clock += us;
                t.compute += us;
                if (w->record) {
                    const tpu_replay_op_t *op = &w->rep->ops[*rowslot(w, c, i)];

                    w->rep->hbm_bytes += op->bytes * (double)mult;
                    w->rep->flops += op->flops * (double)mult;
                }
            }
            break;
        }
    }
    /* Collectives started and never waited for: the computation ends when they do. */
    for (i = 0; i < c->ninstrs && status == TPU_OK; i++) {
        if (end_at[i] > t.clock) {
            t.exposed += end_at[i] - t.clock;
            t.clock = end_at[i];
        }
    }
    *out = t;
out:
    tpu__free(end_at);
    w->depth--;
    return status;
}

void tpu_replay_coll_desc(const tpu_replay_coll_t *row, tpu_groups_t *groups,
                          tpu_coll_desc_t *desc_p)
{
    *desc_p = row->desc;
    if (row->chips != NULL) {
        groups->ngroups = row->ngroups;
        groups->size = row->group_size;
        groups->chips = row->chips;
        desc_p->groups = groups;
    }
    if (row->pairs != NULL) {
        desc_p->pairs = row->pairs;
        desc_p->npairs = row->npairs;
    }
}

void tpu_replay_report_destroy(tpu_replay_report_t *r)
{
    int i;

    if (r == NULL) {
        return;
    }
    for (i = 0; r->colls != NULL && i < r->ncolls; i++) {
        tpu__free(r->colls[i].chips);
        tpu__free(r->colls[i].pairs);
    }
    tpu__free(r->colls);
    tpu__free(r->ops);
    tpu__free(r->warnings);
    tpu__free(r->seq);
    tpu__free(r->timeline);
    tpu__free(r);
}

/*
 * The ENTRY reached no collective: say so when other computations hold some (a
 * file of test computations behind a dummy ENTRY, as XLA's own tests write them).
 */
static tpu_status_t warn_unreached(walker_t *w)
{
    const tpu_hlo_module_t *mod = w->mod;
    int c, k, n = 0, first = -1;

    for (c = 0; c < mod->ncomps; c++) {
        for (k = 0; k < mod->comps[c].ninstrs; k++) {
            if (tpu_hlo_op_class(mod->comps[c].instrs[k].op) == TPU_HLO_CLASS_COLL) {
                first = first < 0 ? c : first;
                n++;
                break;
            }
        }
    }
    if (n == 0) {
        return TPU_OK;
    }
    return warn(w,
                "the ENTRY '%s' reaches no collective, but %d other computation%s hold%s some "
                "('%s', line %d%s): --entry NAME replays one",
                mod->comps[mod->entry].name, n, n == 1 ? "" : "s", n == 1 ? "s" : "",
                mod->comps[first].name, mod->comps[first].line, n > 1 ? ", ..." : "");
}

tpu_status_t tpu_replay_run(const tpu_hlo_module_t *mod, const tpu_topo_t *topo,
                            const tpu_link_model_t *link, const tpu_chip_spec_t *chip,
                            const tpu_replay_opts_t *opts, tpu_replay_report_t **report_p,
                            tpu_err_t *err)
{
    walker_t w;
    tpu_status_t status;
    times_t t;
    int d, c, entry;

    memset(&w, 0, sizeof(w));
    w.mod = mod;
    w.topo = topo;
    w.link = link;
    w.chip = chip;
    w.opts = opts;
    w.err = err;
    w.record = 1;
    w.ndev = tpu_replay_device_count(mod);
    w.R = mod->replica_count > 0 ? (int)mod->replica_count : 1;
    w.P = mod->num_partitions > 0 ? (int)mod->num_partitions : 1;
    if (w.ndev != topo->nchips) {
        char why[96];

        if (mod->num_partitions > 0 || mod->replica_count > 0) {
            snprintf(why, sizeof(why), "num_partitions %lld x replica_count %lld",
                     (long long)(mod->num_partitions > 0 ? mod->num_partitions : 1),
                     (long long)(mod->replica_count > 0 ? mod->replica_count : 1));
        } else {
            snprintf(why, sizeof(why), "the largest device id in its groups is %d",
                     mod->max_device_id);
        }
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "%s:%d:1: module '%s' runs on %d devices (%s), and the pod has %d "
                           "chips: replay it on a %d-chip topology",
                           mod->file, mod->line, mod->name, w.ndev, why, topo->nchips, w.ndev);
    }
    if (mod->max_device_id >= w.ndev) {
        /* Named precisely by the collective that does it, below. */
    }
    w.rep = tpu__calloc(1, sizeof(*w.rep));
    w.dev2chip = tpu__malloc((size_t)w.ndev * sizeof(int32_t));
    w.rowmap = tpu__calloc((size_t)mod->ncomps, sizeof(int *));
    if (w.rep == NULL || w.dev2chip == NULL || w.rowmap == NULL) {
        status = oom(&w);
        goto out;
    }
    w.rep->devices = w.ndev;
    for (d = 0; d < w.ndev; d++) {
        w.dev2chip[d] = d;
    }
    if (opts != NULL && opts->device_order != NULL) {
        char *seen = NULL;

        if (opts->ndevice_order != w.ndev) {
            status = tpu_err_set(err, TPU_ERR_INVALID,
                                 "--device-order lists %d chips, and the module has %d devices",
                                 opts->ndevice_order, w.ndev);
            goto out;
        }
        seen = tpu__calloc((size_t)w.ndev, 1);
        if (seen == NULL) {
            status = oom(&w);
            goto out;
        }
        for (d = 0; d < w.ndev; d++) {
            int32_t chip_id = opts->device_order[d];

            if (chip_id < 0 || chip_id >= w.ndev || seen[chip_id]) {
                tpu__free(seen);
                status = tpu_err_set(err, TPU_ERR_INVALID,
                                     "--device-order is not a permutation of chips 0 to %d "
                                     "(entry %d is %d)",
                                     w.ndev - 1, d, chip_id);
                goto out;
            }
            seen[chip_id] = 1;
            w.dev2chip[d] = chip_id;
        }
        tpu__free(seen);
    }
    entry = mod->entry;
    if (opts != NULL && opts->entry != NULL) {
        entry = tpu_hlo_module_find_comp(mod, opts->entry + (opts->entry[0] == '%'));
        if (entry < 0) {
            status = tpu_err_set(err, TPU_ERR_INVALID,
                                 "--entry: module '%s' has no computation named '%s' (%d "
                                 "computations; the ENTRY is '%s')",
                                 mod->name, opts->entry, mod->ncomps, mod->comps[mod->entry].name);
            goto out;
        }
    }
    status = walk(&w, entry, 1, &t);
    if (status != TPU_OK) {
        goto out;
    }
    if (w.rep->ncolls == 0 && (opts == NULL || opts->entry == NULL)) {
        status = warn_unreached(&w);
        if (status != TPU_OK) {
            goto out;
        }
    }
    w.rep->step_us = t.clock;
    w.rep->compute_us = t.compute;
    w.rep->comm_us = t.comm;
    w.rep->exposed_comm_us = t.exposed;
    w.rep->unknown_opcodes = mod->unknown_opcodes;
    *report_p = w.rep;
    w.rep = NULL;
out:
    if (w.rowmap != NULL) {
        for (c = 0; c < mod->ncomps; c++) {
            tpu__free(w.rowmap[c]);
        }
    }
    tpu__free(w.rowmap);
    tpu__free(w.memo);
    tpu__free(w.dev2chip);
    tpu_replay_report_destroy(w.rep);
    return status;
}
