/*
 * Groups of chips: the sets a collective spans.
 *
 * JAX names a collective by mesh axes, XLA by replica groups (lists of chip
 * ids).  Both end here: a tpu_groups_t lists every group of one collective, each
 * in member order (member i of a group is the chip whose block comes i-th in an
 * all-gather, keeps the i-th slice of a reduce-scatter, and so on).  Every group
 * has the same size, and every chip of the pod is in exactly one group.
 *
 * A group set that equals the groups of a set of whole torus axes (same members,
 * same member order as tpu_topo_group_member() gives) runs on the torus
 * algorithms; any other set on the general group algorithm (collectives/).
 * tpu_groups_axes_mask() is that test.
 *
 * Ownership: a tpu_groups_t is caller storage; tpu_groups_init() (and the
 * functions that fill one) allocate 'chips', tpu_groups_fini() frees it.
 */
#ifndef TPU_GROUPS_H
#define TPU_GROUPS_H

#include "tpu/status.h"
#include "tpu/topo.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tpu_groups {
    int ngroups;    /* number of groups */
    int size;       /* chips per group (all groups the same size) */
    int32_t *chips; /* ngroups*size chip ids; group g is chips[g*size, +size),
                       in member order (member i is the i-th block) */
} tpu_groups_t;

/*
 * Allocate 'ngroups' groups of 'size' chips (ids set to -1) into 'groups'.
 * @return TPU_OK, TPU_ERR_INVALID (ngroups or size < 1), TPU_ERR_NO_MEMORY.
 */
TPU_API tpu_status_t tpu_groups_init(tpu_groups_t *groups, int ngroups, int size, tpu_err_t *err);
/* Free the chips of 'groups' and zero it; NULL or a zeroed struct is a no-op. */
TPU_API void tpu_groups_fini(tpu_groups_t *groups);
/* A deep copy of 'src' into 'dst' (caller storage, freed with tpu_groups_fini()). */
TPU_API tpu_status_t tpu_groups_copy(tpu_groups_t *dst, const tpu_groups_t *src, tpu_err_t *err);

/*
 * Check 'groups' against a pod of 'nchips' chips: at least one group of at least
 * one chip, ids in [0, nchips), every chip in exactly one group.
 * @return TPU_OK, or TPU_ERR_INVALID naming the first bad chip ("chip 5 is in
 *         group 0 and group 2", "chip 7 is in no group", ...).
 */
TPU_API tpu_status_t tpu_groups_check(const tpu_groups_t *groups, int nchips, tpu_err_t *err);

/*
 * Build groups from lists of chip ids as XLA writes them ({{0,1},{2,3}}): 'ids'
 * holds the lists one after the other, 'sizes[g]' the length of list g.  Lists of
 * different sizes are an error naming both sizes.  Does not check coverage (call
 * tpu_groups_check()).
 */
TPU_API tpu_status_t tpu_groups_from_lists(const int32_t *ids, const int *sizes, int ngroups,
                                           tpu_groups_t *groups_p, tpu_err_t *err);

/*
 * The groups of a collective over the torus axes 'mask' (TPU_AXIS_MASK_DCN for
 * the slices): one group per chip whose group index is 0, groups in increasing
 * order of that chip, members in tpu_topo_group_member() order.
 */
TPU_API tpu_status_t tpu_groups_of_axes(const tpu_topo_t *topo, unsigned mask,
                                        tpu_groups_t *groups_p, tpu_err_t *err);

/*
 * Is 'groups' the group set of whole torus axes?  Returns 1 and sets '*mask_p' to
 * those axes when every group has exactly the members, in exactly the order, that
 * tpu_topo_group_member() gives for the mask (the order of the groups themselves
 * does not matter); else returns 0.  A set of one-chip groups gives mask 0.
 * 'groups' must pass tpu_groups_check().
 */
TPU_API int tpu_groups_axes_mask(const tpu_topo_t *topo, const tpu_groups_t *groups,
                                 unsigned *mask_p);

/*
 * Per chip: its group ('group_of[chip]') and its member index in it
 * ('index_of[chip]'); both arrays have 'nchips' entries (either may be NULL).
 * 'groups' must pass tpu_groups_check().
 */
TPU_API void tpu_groups_index(const tpu_groups_t *groups, int nchips, int32_t *group_of,
                              int32_t *index_of);

/*
 * Does the shift by 'p' along 'axis' (modulo the axis size) map every group onto
 * a group with its member order rotated (member i of g -> member (i + s) mod G of
 * g', s fixed per group)?  'group_of' and 'index_of' are tpu_groups_index()'s
 * tables.  With 'windowed' it also asks every group to lie within one window
 * [k p, (k + 1) p) of the axis, so that on an open axis a route between members
 * never reaches the axis' ends.  Returns 1 or 0.
 */
TPU_API int tpu_groups_shift_maps(const tpu_topo_t *topo, const tpu_groups_t *groups,
                                  const int32_t *group_of, const int32_t *index_of, int axis, int p,
                                  int windowed);

/*
 * The translations of the torus that map 'groups' onto itself, each group onto a
 * group with its member order rotated (member i of g -> member (i + s) mod G of
 * g', s fixed per group): per axis the smallest 'period[a]' (a divisor of the
 * axis size; the axis size when no shorter one works, always on an open axis)
 * such that the shift by period[a] along axis a is such a map.  Ring, direct and
 * all-to-all schedules over the groups are then invariant under the lattice of
 * those shifts, and the link model times them from the chips whose coordinates
 * are below 'period' (collectives/linkmodel.h, orbit mode).  Returns the number
 * of translations, prod(dims / period) (1: no symmetry; always 1 across slices).
 * 'groups' must pass tpu_groups_check().
 */
TPU_API int tpu_groups_period(const tpu_topo_t *topo, const tpu_groups_t *groups,
                              int period[TPU_MAX_AXES]);

/* Format as "{0,1,2,3} {4,5,6,7}" into 'buf' (cut with "..." when too long). */
TPU_API void tpu_groups_str(const tpu_groups_t *groups, char *buf, int len);

#ifdef __cplusplus
}
#endif

#endif /* TPU_GROUPS_H */
