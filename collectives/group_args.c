/*
 * The groups a group algorithm works on: the plan's groups, or for a request
 * over whole torus axes (a group algorithm named with --algo) the groups of the
 * axes, in tpu_topo_group_member() order.
 */
#include "tpu/alloc.h"

#include "algo.h"

int tpu__algo_in_domain(const tpu_algo_args_t *args, int chip)
{
    int c[TPU_MAX_AXES], a;

    if (args->period == NULL) {
        return 1;
    }
    tpu_topo_coords(args->topo, chip, c);
    for (a = 0; a < TPU_MAX_AXES; a++) {
        if (c[a] >= args->period[a]) {
            return 0;
        }
    }
    return 1;
}

int tpu__algo_canon(const tpu_algo_args_t *args, int chip)
{
    int c[TPU_MAX_AXES], a;

    if (args->period == NULL) {
        return chip;
    }
    tpu_topo_coords(args->topo, chip, c);
    for (a = 0; a < TPU_MAX_AXES; a++) {
        c[a] %= args->period[a];
    }
    return tpu_topo_chip(args->topo, tpu_topo_slice_of(args->topo, chip), c);
}

tpu_status_t tpu__algo_groups(const tpu_algo_args_t *args, tpu_groups_t *own,
                              const tpu_groups_t **groups_p, const int32_t **member_p,
                              int32_t **own_member_p)
{
    tpu_status_t status;

    *own_member_p = NULL;
    if (args->groups != NULL) {
        *groups_p = args->groups;
        *member_p = args->member;
        return TPU_OK;
    }
    status = tpu_groups_of_axes(args->topo, args->mask, own, NULL);
    if (status != TPU_OK) {
        return status;
    }
    *own_member_p = tpu__malloc((size_t)args->topo->nchips * sizeof(int32_t));
    if (*own_member_p == NULL) {
        tpu_groups_fini(own);
        return TPU_ERR_NO_MEMORY;
    }
    tpu_groups_index(own, args->topo->nchips, NULL, *own_member_p);
    *groups_p = own;
    *member_p = *own_member_p;
    return TPU_OK;
}
