/*
 * Torus geometry of a TPU pod: shapes, per-axis wraparound, chip ids and
 * coordinates, neighbours, hop distances, directed link ids, dimension-order
 * routes, edge-disjoint minimal routes, and slices joined by DCN.
 *
 * A pod is 'slices' identical slices.  A slice is a 1-, 2- or 3-axis torus
 * (axes x, y, z).  Chip ids are slice-major, then row-major over the
 * coordinates: id = slice * chips_per_slice + (x * ny + y) * nz + z, so the last
 * axis varies fastest, as in a C array of shape [nx][ny][nz].
 *
 * Every directed ICI link has an id in [0, nlinks), dense and unique.  A link
 * leaves one chip along one axis in one direction (+1 or -1).  An axis of size 1
 * has no links; an open axis of size n has n-1 links each way per line; a wrapped
 * axis of size n >= 2 has n each way (on a wrapped axis of size 2 the + and - links
 * join the same two chips and are distinct links, as on the hardware).
 *
 * Everything here is pure arithmetic on a small value struct: no allocation, no
 * I/O, no global state.
 */
#ifndef TPU_TOPO_H
#define TPU_TOPO_H

#include "tpu/status.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TPU_MAX_AXES 3
/* The pseudo axis that spans the slices of a multi-slice job ("dcn"). */
#define TPU_AXIS_DCN      3
#define TPU_AXIS_MASK_DCN (1u << TPU_AXIS_DCN)
/* Largest size of one axis and of a pod: far beyond any TPU pod, small enough for int. */
#define TPU_MAX_DIM    4096
#define TPU_MAX_CHIPS  (1 << 20)
#define TPU_MAX_SLICES 1024

/* How '--wrap auto' decides which axes wrap (see tpu_topo_wrap_auto()). */
typedef enum {
    TPU_WRAP_RULE_FULL_AXIS = 0, /* 2D generations (v5e, v6e): an axis wraps when it spans 16 */
    TPU_WRAP_RULE_CUBES = 1      /* 3D generations (v4, v5p, v7): whole 4x4x4 cubes wrap */
} tpu_wrap_rule_t;

typedef struct tpu_topo {
    int naxes;                                    /* 1..3 ICI axes */
    int dims[TPU_MAX_AXES];                       /* chips along each axis; 1 beyond naxes */
    int wrap[TPU_MAX_AXES];                       /* 1 where the axis has wraparound links */
    int slices;                                   /* slices joined by DCN, >= 1 */
    int chips_per_slice;                          /* product of dims */
    int nchips;                                   /* slices * chips_per_slice */
    int links_per_slice;                          /* directed ICI links in one slice */
    int nlinks;                                   /* directed ICI links in the pod */
    int link_base[TPU_MAX_AXES][2];               /* first link id of (axis, dir) in a slice */
    int link_span[TPU_MAX_AXES][2][TPU_MAX_AXES]; /* dims of the grid of those links */
} tpu_topo_t;

/* One straight run of a route: 'hops' links along 'axis' in direction 'dir' (+1/-1). */
typedef struct tpu_route_seg {
    int8_t axis;
    int8_t dir;
    int16_t hops;
} tpu_route_seg_t;

/*
 * The most straight runs of a route: a dimension-order route makes at most
 * TPU_MAX_AXES; a route around failed links (tpu/fault.h) may turn more often.
 */
#define TPU_ROUTE_MAX_SEGS 32

/* A route between two chips of one slice, as straight runs. */
typedef struct tpu_route {
    int src;
    int dst;
    int nseg;
    int nhops;
    tpu_route_seg_t seg[TPU_ROUTE_MAX_SEGS];
} tpu_route_t;

/* The most edge-disjoint minimal routes tpu_topo_routes_disjoint() returns. */
#define TPU_MAX_ROUTES 8

/*
 * Parse a shape such as "16", "4x4", "2x3" or "16x20x28" into 'dims' and
 * '*naxes_p'.  Every dim must be an integer in [1, TPU_MAX_DIM].
 * @return TPU_OK, or TPU_ERR_INVALID with a message naming the bad part.
 */
TPU_API tpu_status_t tpu_topo_parse_shape(const char *text, int dims[TPU_MAX_AXES], int *naxes_p,
                                          tpu_err_t *err);

/*
 * Parse a wraparound choice: "auto", "all", "none", or a comma list of axis
 * names ("x,z").  '*is_auto_p' is set to 1 for "auto" (and 'wrap' is left for
 * tpu_topo_wrap_auto()), else 0.
 * @return TPU_OK, or TPU_ERR_INVALID naming an axis the shape lacks or a bad word.
 */
TPU_API tpu_status_t tpu_topo_parse_wrap(const char *text, int naxes, int wrap[TPU_MAX_AXES],
                                         int *is_auto_p, tpu_err_t *err);

/*
 * The wraparound a real TPU slice of this shape has.  Sources: the JAX scaling
 * book, "How to Think About TPUs": v5e/v6e pods are 16x16 and only a full axis of
 * 16 gets its wraparound link; v4/v5p slices made of whole 4x4x4 cubes get
 * wraparound (optical) links on every axis, smaller ones (2x2x4) get none.  On
 * 3D generations an axis of 16 or more also wraps.
 */
TPU_API void tpu_topo_wrap_auto(tpu_wrap_rule_t rule, int naxes, const int dims[TPU_MAX_AXES],
                                int wrap[TPU_MAX_AXES]);

/*
 * Fill 'topo' for 'slices' slices of the given shape and wraparound.
 * @return TPU_OK, or TPU_ERR_INVALID (bad dims, too many chips, slices < 1).
 */
TPU_API tpu_status_t tpu_topo_init(tpu_topo_t *topo, int naxes, const int dims[TPU_MAX_AXES],
                                   const int wrap[TPU_MAX_AXES], int slices, tpu_err_t *err);

/* Check the internal consistency of 'topo' (link ids dense and unique, ends agree). */
TPU_API tpu_status_t tpu_topo_check(const tpu_topo_t *topo, tpu_err_t *err);

/* The slice of 'chip', and its coordinates inside the slice (1 beyond naxes... 0). */
TPU_API int tpu_topo_slice_of(const tpu_topo_t *topo, int chip);
TPU_API void tpu_topo_coords(const tpu_topo_t *topo, int chip, int coords[TPU_MAX_AXES]);
/* The chip at 'coords' of 'slice'; -1 when outside the shape. */
TPU_API int tpu_topo_chip(const tpu_topo_t *topo, int slice, const int coords[TPU_MAX_AXES]);

/* The neighbour of 'chip' along 'axis' in direction 'dir' (+1/-1); -1 where there is no link. */
TPU_API int tpu_topo_neighbor(const tpu_topo_t *topo, int chip, int axis, int dir);
/* The id of the directed link leaving 'chip' along 'axis' in 'dir'; -1 where there is none. */
TPU_API int tpu_topo_link(const tpu_topo_t *topo, int chip, int axis, int dir);
/* The chip a link leaves, its axis and direction, and the chip it reaches. */
TPU_API void tpu_topo_link_ends(const tpu_topo_t *topo, int link, int *src_p, int *axis_p,
                                int *dir_p, int *dst_p);

/*
 * The shortest move along 'axis' from coordinate 'from' to 'to': returns the hop
 * count and sets '*dir_p' to +1 or -1 (+1 for 0 hops and for the tie at n/2 on a
 * wrapped axis of even size n, where both directions are minimal).
 */
TPU_API int tpu_topo_axis_move(const tpu_topo_t *topo, int axis, int from, int to, int *dir_p);
/* Hop distance between two chips of one slice (sum over axes of the shortest moves). */
TPU_API int tpu_topo_hops(const tpu_topo_t *topo, int a, int b);
/* The diameter over the axes in 'mask': the farthest hop distance inside such a group. */
TPU_API int tpu_topo_diameter(const tpu_topo_t *topo, unsigned mask);

/*
 * The dimension-order route from 'src' to 'dst' (same slice): x, then y, then z,
 * each axis taking its shortest direction.  'order' (may be NULL) gives another
 * axis order, a permutation of 0..2 (TPU_MAX_AXES entries; axes the shape lacks
 * are skipped); 'tie_dir' chooses the direction for
 * axes at the tie distance n/2 (+1 or -1).
 */
TPU_API void tpu_topo_route(const tpu_topo_t *topo, int src, int dst, const int *order, int tie_dir,
                            tpu_route_t *route);

/*
 * Write the directed link ids of 'route', in order, into 'links' (room for
 * 'max'); returns the number of hops (may exceed 'max', then only 'max' are written).
 */
TPU_API int tpu_topo_route_links(const tpu_topo_t *topo, const tpu_route_t *route, int *links,
                                 int max);

/*
 * Edge-disjoint minimal routes from 'src' to 'dst' (same slice): the rotations of
 * the order of the differing axes, each with the tie axes taken forwards and
 * backwards, kept while they share no directed link with a route already kept.
 * Between chips that differ in k open axes there are k; a wrapped axis of even
 * size at distance n/2 adds a second direction.  Writes at most TPU_MAX_ROUTES.
 */
TPU_API int tpu_topo_routes_disjoint(const tpu_topo_t *topo, int src, int dst,
                                     tpu_route_t routes[TPU_MAX_ROUTES]);

/* The axis named 'c' ('x', 'y', 'z'), or -1. */
TPU_API int tpu_topo_axis_of_name(char c);
/* The name of axis 'axis' ("x", "y", "z", "dcn"). */
TPU_API const char *tpu_topo_axis_name(int axis);

/*
 * Parse a comma list of axis names ("x", "x,y", "dcn,x,y") into a bit mask over
 * axis indices (TPU_AXIS_DCN for "dcn").  Every axis must exist in 'topo', be
 * named once, and "dcn" needs a multi-slice job.
 */
TPU_API tpu_status_t tpu_topo_parse_axes(const tpu_topo_t *topo, const char *text, unsigned *mask_p,
                                         tpu_err_t *err);

/* Format 'mask' back as "x,y" / "dcn,x" into 'buf'. */
TPU_API void tpu_topo_axes_str(unsigned mask, char *buf, int len);
/* Format the shape as "4x4x4" into 'buf'. */
TPU_API void tpu_topo_shape_str(const tpu_topo_t *topo, char *buf, int len);
/* Format the wrap as "all", "none" or "x,z" into 'buf'. */
TPU_API void tpu_topo_wrap_str(const tpu_topo_t *topo, char *buf, int len);

/*
 * Groups: the chips that differ from 'chip' only in the axes of 'mask' form its
 * group (the chips a collective over those axes spans).  The group size, and the
 * index of 'chip' inside its group (row-major over the selected axes, slice first).
 */
TPU_API int tpu_topo_group_size(const tpu_topo_t *topo, unsigned mask);
TPU_API int tpu_topo_group_index(const tpu_topo_t *topo, unsigned mask, int chip);
/* The chip at index 'index' of the group of 'chip'. */
TPU_API int tpu_topo_group_member(const tpu_topo_t *topo, unsigned mask, int chip, int index);

/*
 * The emulated TPU host of 'chip': hosts tile each slice with blocks of
 * 'host_dims' chips (clipped at the slice edge).  Returns the host index.
 */
TPU_API int tpu_topo_host_of(const tpu_topo_t *topo, const int host_dims[TPU_MAX_AXES], int chip);
/* The number of hosts of the whole pod for that host block. */
TPU_API int tpu_topo_host_count(const tpu_topo_t *topo, const int host_dims[TPU_MAX_AXES]);

#ifdef __cplusplus
}
#endif

#endif /* TPU_TOPO_H */
