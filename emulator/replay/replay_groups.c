/*
 * The replay's groups: the device count of a module, the chips of each group of
 * a collective (tpu_replay_groups_get()), and whether a group set is the groups
 * of some torus axes.
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
 */
#include "replay_groups.h"

#include "tpu/replay.h"


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
    /* 'chips' has room for the module's devices: more ids (one named twice) do not fit. */
    if ((int64_t)(ng > 0 ? ng : 1) * size * outer * (mode == REPLICA_AND_PARTITION ? P : 1) >
        ndev) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "%s:%d:%d: replica groups of '%s' name more devices than the module's "
                           "%d (a device in two groups?)",
                           mod->file, in->line, in->col, in->name, ndev);
    }
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
int tpu__replay_groups_match(const tpu_topo_t *t, unsigned mask, const int32_t *chips, int ng,
                             int size, int any_order, int32_t *tmp, int32_t *pos)
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
