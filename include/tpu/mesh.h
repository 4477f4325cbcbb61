/*
 * Meshes: named logical axes over the chips of a pod, as jax.sharding.Mesh.
 *
 * A mesh such as "data=4,model=4" numbers its positions row-major over its axes
 * (the last axis varies fastest): position (d, m) is d*4 + m.  That position is
 * what JAX calls the partition id and what HLO replica groups refer to.  The chip
 * at each position is the mesh's device assignment, kept separate:
 *
 * - Default assignment.  As JAX's mesh_utils.create_device_mesh does, the
 *   physical axes (the slices, then x, y, z; axes of size 1 left out) are handed
 *   to the logical axes from the fastest logical axis (the last, the most
 *   communication-heavy by JAX's convention) to the slowest.  Unlike JAX, which
 *   gives that axis as many physical axes as fit (3, then 2, then 1, for
 *   bandwidth), each logical axis here takes as few physical axes as it can, so
 *   that a mesh axis stays one ring when it can; fastest physical axes first:
 *     1. one physical axis whose remaining size equals the logical size;
 *     2. else one physical axis whose remaining size the logical size divides
 *        (the logical axis takes its inner, fastest part);
 *     3. else two (then three, four) whole remaining physical axes whose product
 *        equals it, the fastest such set first;
 *     4. else factors of the remaining physical axes, fastest first (gcd of what
 *        is left of each), which splits axes.
 *   A logical axis named "dcn" takes exactly the slices (its size must be the
 *   number of slices); without one, the slices are the slowest physical axis and
 *   may be shared like any other.  Inside a logical axis that spans several
 *   physical pieces, the faster physical piece is the faster digit.
 *   On a 4x4: "data=4,model=4" and "data=16" and "data=2,model=8" are the
 *   identity (chip id = position); on a 4x2, "data=2,model=4" puts model on x and
 *   data on y (chip = 2*model + data).
 * - Explicit assignment: a list of chip ids, position -> chip (a permutation).
 *
 * Ownership: tpu_mesh_create() allocates the mesh; tpu_mesh_destroy() frees it.
 * The mesh keeps a copy of the topology.  Pure: no I/O, no global state.
 */
#ifndef TPU_MESH_H
#define TPU_MESH_H

#include "tpu/groups.h"
#include "tpu/status.h"
#include "tpu/topo.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TPU_MESH_MAX_AXES 8
#define TPU_MESH_NAME_LEN 32

typedef struct tpu_mesh tpu_mesh_t;

/*
 * Parse "data=4,model=4" into names and sizes (no topology needed).  Names are
 * [A-Za-z_][A-Za-z0-9_]* of at most TPU_MESH_NAME_LEN-1 characters, unique; sizes
 * integers >= 1; at most TPU_MESH_MAX_AXES axes.
 * @return TPU_OK, or TPU_ERR_INVALID naming the bad part.
 */
TPU_API tpu_status_t tpu_mesh_parse(const char *spec, char names[][TPU_MESH_NAME_LEN], int *sizes,
                                    int *naxes_p, tpu_err_t *err);

/*
 * Create the mesh 'spec' over the chips of 'topo'.  'devices' (may be NULL) is an
 * explicit device order, 'ndevices' chip ids, devices[position] = chip; NULL
 * takes the default assignment above.
 * @return TPU_OK, TPU_ERR_INVALID (bad spec; a product of sizes that is not the
 *         number of chips, naming both; an axis that cannot be laid out, naming
 *         the sizes left; a device list that is not a permutation of the chips),
 *         TPU_ERR_NO_MEMORY.
 */
TPU_API tpu_status_t tpu_mesh_create(const tpu_topo_t *topo, const char *spec,
                                     const int32_t *devices, int ndevices, tpu_mesh_t **mesh_p,
                                     tpu_err_t *err);
/* Free 'mesh'; NULL is a no-op. */
TPU_API void tpu_mesh_destroy(tpu_mesh_t *mesh);

/* The topology the mesh lays out (the mesh's own copy). */
TPU_API const tpu_topo_t *tpu_mesh_topo(const tpu_mesh_t *mesh);
/* Number of axes, and each axis' name and size. */
TPU_API int tpu_mesh_naxes(const tpu_mesh_t *mesh);
TPU_API const char *tpu_mesh_axis_name(const tpu_mesh_t *mesh, int axis);
TPU_API int tpu_mesh_axis_size(const tpu_mesh_t *mesh, int axis);
/* The axis called 'name', or -1. */
TPU_API int tpu_mesh_axis_find(const tpu_mesh_t *mesh, const char *name);
/* Number of positions (= chips of the pod). */
TPU_API int tpu_mesh_size(const tpu_mesh_t *mesh);
/* The chip at row-major position 'pos', and the position of 'chip'. */
TPU_API int tpu_mesh_chip(const tpu_mesh_t *mesh, int pos);
TPU_API int tpu_mesh_position(const tpu_mesh_t *mesh, int chip);
/* The chip at mesh coordinates 'coords' (one per axis). */
TPU_API int tpu_mesh_chip_at(const tpu_mesh_t *mesh, const int *coords);
/* The mesh coordinates of 'chip' (one per axis). */
TPU_API void tpu_mesh_coords(const tpu_mesh_t *mesh, int chip, int *coords);
/* The coordinate of 'chip' along mesh axis 'axis' (jax.lax.axis_index of one name). */
TPU_API int tpu_mesh_axis_index(const tpu_mesh_t *mesh, int chip, int axis);
/* The spec as "data=4,model=4". */
TPU_API void tpu_mesh_str(const tpu_mesh_t *mesh, char *buf, int len);
/* How axis 'axis' lies on the torus: "y", "y*z" (slow*fast), "x[2 of 4]", "dcn". */
TPU_API void tpu_mesh_axis_layout(const tpu_mesh_t *mesh, int axis, char *buf, int len);

/*
 * Parse a tuple of mesh axis names, "data" or "data,model" (also "(data,model)"),
 * into axis indices in the order written.  Names must exist and appear once.
 */
TPU_API tpu_status_t tpu_mesh_parse_axes(const tpu_mesh_t *mesh, const char *axes, int *idx,
                                         int *n_p, tpu_err_t *err);
/*
 * jax.lax.axis_index over a tuple of axes: the row-major index of 'chip' over the
 * axes as written (the last varies fastest); and the product of their sizes.
 */
TPU_API tpu_status_t tpu_mesh_axes_index(const tpu_mesh_t *mesh, const char *axes, int chip,
                                         int *index_p, int *size_p, tpu_err_t *err);

/*
 * The groups of a collective over the mesh axes 'axes' ("data" or "data,model"),
 * as chip ids: one group per combination of the other axes (row-major over them),
 * members row-major over 'axes' as written, the last name fastest (JAX's
 * pxla._axis_groups).  Fills caller storage '*groups_p' (free with
 * tpu_groups_fini()).
 */
TPU_API tpu_status_t tpu_mesh_groups(const tpu_mesh_t *mesh, const char *axes,
                                     tpu_groups_t *groups_p, tpu_err_t *err);
/* The same from axis indices. */
TPU_API tpu_status_t tpu_mesh_groups_idx(const tpu_mesh_t *mesh, const int *idx, int n,
                                         tpu_groups_t *groups_p, tpu_err_t *err);

/*
 * Map groups written in mesh positions (HLO replica groups) to chip ids, in place.
 * @return TPU_INVALID for a position outside the mesh.
 */
TPU_API tpu_status_t tpu_mesh_groups_to_chips(const tpu_mesh_t *mesh, tpu_groups_t *groups,
                                              tpu_err_t *err);

#ifdef __cplusplus
}
#endif

#endif /* TPU_MESH_H */
