/*
 * What the algorithms share about groups, domains and direct blocks
 * (group_args.c).
 */
#ifndef TPU_GROUP_ARGS_H
#define TPU_GROUP_ARGS_H

#include "tpu/groups.h"

#include "algo.h"
#include "schedule.h"

#include <stdint.h>

/* Is 'chip' in the domain of args->period (always, without a period)? */
int tpu__algo_in_domain(const tpu_algo_args_t *args, int chip);
/* The chip of the domain that stands for 'chip' (itself without a period). */
int tpu__algo_canon(const tpu_algo_args_t *args, int chip);
/* The same, and in '*refl_p' the axes along which the symmetry that maps 'chip' to
 * its stand-in reflects (a flow along such an axis runs the other way there). */
int tpu__algo_canon_refl(const tpu_algo_args_t *args, int chip, unsigned *refl_p);

/*
 * The groups a group algorithm works on: 'gr' is args->groups, or
 * for a request over whole axes the groups of args->mask, built into 'own'.
 * Release with tpu__algo_groups_fini() after success.
 */
typedef struct {
    const tpu_groups_t *gr;
    tpu_groups_t own;
} tpu_algo_groups_t;

tpu_status_t tpu__algo_groups(const tpu_algo_args_t *args, tpu_algo_groups_t *ag, tpu_err_t *err);
void tpu__algo_groups_fini(tpu_algo_groups_t *ag);

/* The flows from member i to member j of the group 'm' (a direct algorithm). */
typedef tpu_status_t (*tpu_algo_pair_fn_t)(const tpu_algo_args_t *args, tpu_sched_t *sched,
                                           const int32_t *m, int i, int j);

/*
 * A one-step, one-stream direct schedule: 'fn' for every ordered pair i != j of
 * members of every group whose sender is in the domain; '*size_p' is the group size.
 * With args->local, only the pairs whose sender or receiver is marked (a rank's own
 * part), in the same order.
 */
tpu_status_t tpu__algo_group_pairs(const tpu_algo_args_t *args, tpu_sched_t *sched,
                                   tpu_algo_pair_fn_t fn, int *size_p, tpu_err_t *err);

/* Keep block k of the input as block k of the output on every chip (a local copy). */
void tpu__algo_keep_own_block(tpu_sched_t *sched, int64_t blk);

/* Give 'sched' one stream whose working layout is the user's: block k (of 'nblocks',
 * 'block' bytes each) at k * block. */
tpu_status_t tpu__algo_user_layout(tpu_sched_t *sched, int64_t block, int nblocks);

/*
 * Add the direct flow of one args->shard block from chip 'src' (at 'src_off') to
 * chip 'dst' (at 'dst_off'): over DCN between slices, else over ICI; when the ICI
 * route (from src's twin in dst's slice) has an axis at the tie distance, the block
 * is split in two halves of whole elements that go both ways round.
 */
tpu_status_t tpu__algo_direct_block(const tpu_algo_args_t *args, tpu_sched_t *sched, int src,
                                    int dst, int64_t src_off, int64_t dst_off);

#endif /* TPU_GROUP_ARGS_H */
