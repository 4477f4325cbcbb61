/*
 * The pieces the algorithms share: the groups a group algorithm works on (the
 * plan's groups, or for a request over whole torus axes, a group algorithm named
 * with --algo, the groups of the axes in tpu_topo_group_member() order), the
 * walk over the member pairs of a direct algorithm, the direct flow of one
 * block (split both ways round at a tie), the own-block copy and the user layout.
 */
#include "group_args.h"

#include "algo.h"
#include "alloc.h"

#include <string.h>

int tpu__algo_in_domain(const tpu_algo_args_t *args, int chip)
{
    int c[TPU_MAX_AXES], a;

    if (args->period == NULL) {
        return 1;
    }
    tpu_topo_coords(args->topo, chip, c);
    for (a = 0; a < TPU_MAX_AXES; a++) {
        int lim = (args->reflect & (1u << a)) ? args->topo->dims[a] / 2 : args->period[a];

        if (c[a] >= lim) {
            return 0;
        }
    }
    return 1;
}

int tpu__algo_canon_refl(const tpu_algo_args_t *args, int chip, unsigned *refl_p)
{
    int c[TPU_MAX_AXES], a;

    *refl_p = 0;
    if (args->period == NULL) {
        return chip;
    }
    tpu_topo_coords(args->topo, chip, c);
    for (a = 0; a < TPU_MAX_AXES; a++) {
        int n = args->topo->dims[a];

        if ((args->reflect & (1u << a)) && c[a] >= n / 2) {
            c[a] = n - 1 - c[a];
            *refl_p |= 1u << a;
        } else {
            c[a] %= args->period[a];
        }
    }
    return tpu_topo_chip(args->topo, tpu_topo_slice_of(args->topo, chip), c);
}

int tpu__algo_canon(const tpu_algo_args_t *args, int chip)
{
    unsigned refl;

    return tpu__algo_canon_refl(args, chip, &refl);
}

tpu_status_t tpu__algo_groups(const tpu_algo_args_t *args, tpu_algo_groups_t *ag, tpu_err_t *err)
{
    tpu_status_t status;

    memset(&ag->own, 0, sizeof(ag->own));
    if (args->groups != NULL) {
        ag->gr = args->groups;
        return TPU_OK;
    }
    status = tpu_groups_of_axes(args->topo, args->mask, &ag->own, err);
    if (status != TPU_OK) {
        return status;
    }
    ag->gr = &ag->own;
    return TPU_OK;
}

void tpu__algo_groups_fini(tpu_algo_groups_t *ag)
{
    tpu_groups_fini(&ag->own);
}

tpu_status_t tpu__algo_group_pairs(const tpu_algo_args_t *args, tpu_sched_t *sched,
                                   tpu_algo_pair_fn_t fn, int *size_p, tpu_err_t *err)
{
    tpu_algo_groups_t ag;
    tpu_status_t status;
    int G, g, i, j, k, nmine = 0, *mine = NULL;

    status = tpu__algo_groups(args, &ag, err);
    if (status != TPU_OK) {
        return status;
    }
    G = ag.gr->size;
    if (args->local != NULL) {
        mine = tpu__malloc((size_t)G * sizeof(*mine));
        status = mine == NULL ? TPU_ERR_NO_MEMORY : TPU_OK;
    }
    for (g = 0; g < ag.gr->ngroups && status == TPU_OK; g++) {
        const int32_t *m = ag.gr->chips + (int64_t)g * G;

        if (args->local != NULL) {
            /* A rank's own part: only the groups of its chips, and in them only the
             * pairs that start or end on one of its chips (the same order): from a
             * chip elsewhere, to its members here only. */
            for (nmine = 0, i = 0; i < G; i++) {
                if (args->local[m[i]]) {
                    mine[nmine++] = i;
                }
            }
            if (nmine == 0) {
                continue;
            }
        }
        for (i = 0; i < G && status == TPU_OK; i++) {
            if (!tpu__algo_in_domain(args, m[i])) {
                continue;
            }
            if (args->local != NULL && !args->local[m[i]]) {
                for (k = 0; k < nmine && status == TPU_OK; k++) {
                    status = fn(args, sched, m, i, mine[k]);
                }
                continue;
            }
            for (j = 0; j < G && status == TPU_OK; j++) {
                if (j != i) {
                    status = fn(args, sched, m, i, j);
                }
            }
        }
    }
    sched->nsteps = 1;
    sched->nstreams = 1;
    *size_p = G;
    tpu__free(mine);
    tpu__algo_groups_fini(&ag);
    return status;
}

void tpu__algo_keep_own_block(tpu_sched_t *sched, int64_t blk)
{
    sched->local[0].src_off = 0;
    sched->local[0].dst_off = 0;
    sched->local[0].len = blk;
    sched->nlocal = 1;
    sched->local_src_shift = blk;
    sched->local_dst_shift = blk;
}

tpu_status_t tpu__algo_user_layout(tpu_sched_t *sched, int64_t block, int nblocks)
{
    sched->layout = tpu__calloc(1, sizeof(*sched->layout));
    if (sched->layout == NULL) {
        return TPU_ERR_NO_MEMORY;
    }
    sched->nlayout = 1;
    sched->layout[0].sub_len = block;
    sched->layout[0].ndigits = 1;
    sched->layout[0].n[0] = nblocks;
    sched->layout[0].gstride[0] = 1;
    return TPU_OK;
}

/* Are src and dst at the tie distance (n/2 on a wrapped axis of even size n) on an axis? */
static int has_tie(const tpu_topo_t *topo, int src, int dst)
{
    int cs[TPU_MAX_AXES], cd[TPU_MAX_AXES], a;

    tpu_topo_coords(topo, src, cs);
    tpu_topo_coords(topo, dst, cd);
    for (a = 0; a < topo->naxes; a++) {
        int n = topo->dims[a];

        if (topo->wrap[a] && n % 2 == 0 && ((cd[a] - cs[a] + n) % n) == n / 2) {
            return 1;
        }
    }
    return 0;
}

tpu_status_t tpu__algo_direct_block(const tpu_algo_args_t *args, tpu_sched_t *sched, int src,
                                    int dst, int64_t src_off, int64_t dst_off)
{
    const tpu_topo_t *topo = args->topo;
    int64_t blk = args->shard, e = blk / args->elem, h1 = (e + 1) / 2;
    int dcn = tpu_topo_slice_of(topo, dst) != tpu_topo_slice_of(topo, src);
    int from = src, split, h;

    if (dcn) {
        int coords[TPU_MAX_AXES];

        tpu_topo_coords(topo, src, coords);
        from = tpu_topo_chip(topo, tpu_topo_slice_of(topo, dst), coords);
    }
    split = has_tie(topo, from, dst) && e >= 2;
    for (h = 0; h < (split ? 2 : 1); h++) {
        tpu_flow_t f;

        memset(&f, 0, sizeof(f));
        f.src = src;
        f.dst = dst;
        f.kind = dcn ? TPU_ROUTE_DCN : TPU_ROUTE_ICI;
        f.tie = (int8_t)(h == 0 ? 1 : -1);
        f.span.off = src_off;
        f.span.dst_off = dst_off;
        f.span.len = blk;
        f.span.count[0] = f.span.count[1] = f.span.count[2] = 1;
        if (split) {
            f.span.len = (h == 0 ? h1 : e - h1) * args->elem;
            if (h == 1) {
                f.span.off += h1 * args->elem;
                f.span.dst_off += h1 * args->elem;
            }
        }
        if (tpu__sched_add(sched, &f) < 0) {
            return TPU_ERR_NO_MEMORY;
        }
    }
    return TPU_OK;
}
