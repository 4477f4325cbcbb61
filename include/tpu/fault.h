/*
 * Faults and stragglers in the link model: slow and failed ICI links, slow chips
 * and slow DCN NICs, and the routes around failed links.
 *
 * A fault is described by a tpu_fault_t (from the text "KIND:key=value,..." of
 * tpu_fault_parse(), or filled field by field); tpu_faults_create() checks a list
 * of them against a pod and builds the tables the link model reads:
 *
 *   slow-link  one directed ICI link (both=1: and the link back) carries 'factor'
 *              times its bandwidth;
 *   link-down  the link carries nothing: routes avoid it (tpu_faults_route()), and
 *              a set of failed links that leaves a chip unreachable is refused
 *              with a message naming the cut;
 *   slow-chip  the chip computes at 'factor' times its speed and every ICI link
 *              leaving it (what it injects and what it forwards) carries 'factor'
 *              times its bandwidth;
 *   slow-nic   one host's DCN NICs (egress and ingress) carry 'factor' times
 *              their bandwidth.
 *
 * Factors of several faults on one resource multiply.  The faults only change
 * modeled times and routes; the bytes a collective moves stay the same.
 */
#ifndef TPU_FAULT_H
#define TPU_FAULT_H

#include "tpu/status.h"
#include "tpu/topo.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The most faults one pod takes. */
#define TPU_MAX_FAULTS 64

typedef enum {
    TPU_FAULT_SLOW_LINK = 0,
    TPU_FAULT_LINK_DOWN,
    TPU_FAULT_SLOW_CHIP,
    TPU_FAULT_SLOW_NIC,
    TPU_FAULT_KIND_COUNT
} tpu_fault_kind_t;

typedef struct tpu_fault {
    tpu_fault_kind_t kind;
    /* Links and slow-chip: the chip, by id, or by coordinates when chip < 0
     * ('ncoords' values, the slice first when the pod has several slices). */
    int chip;
    int ncoords;
    int coords[TPU_MAX_AXES + 1];
    int axis;      /* links: the axis (0..2) of the link leaving 'chip' */
    int dir;       /* links: +1 or -1 */
    int both;      /* links: 1 for the link back as well */
    int host;      /* slow-nic: the host index (tpu_topo_host_of()) */
    double factor; /* slow-*: bandwidth or speed factor, 0 < factor <= 1 */
} tpu_fault_t;

typedef struct tpu_faults tpu_faults_t;

/* "slow-link", "link-down", "slow-chip", "slow-nic". */
TPU_API const char *tpu_fault_kind_name(tpu_fault_kind_t kind);
/* A kind by name; TPU_ERR_INVALID naming 'text' and the kinds. */
TPU_API tpu_status_t tpu_fault_kind_parse(const char *text, tpu_fault_kind_t *kind_p,
                                          tpu_err_t *err);
/* A link direction "+x", "-y", "+z" into axis and dir; TPU_ERR_INVALID naming 'text'. */
TPU_API tpu_status_t tpu_fault_dir_parse(const char *text, int *axis_p, int *dir_p, tpu_err_t *err);

/*
 * Parse one fault "KIND:key=value,...":
 *   slow-link:chip=C,dir=+x,factor=F[,both=yes]
 *   link-down:chip=C,dir=+x[,both=yes]
 *   slow-chip:chip=C,factor=F
 *   slow-nic:host=H,factor=F
 * C is a chip id or coordinates in parentheses, "(1,2)"; F is in (0, 1].  Every
 * key the kind needs must be there, once, and no other.  The message starts
 * with "fault 'TEXT': ".  '*fault_p' is written only on success.
 */
TPU_API tpu_status_t tpu_fault_parse(const char *text, tpu_fault_t *fault_p, tpu_err_t *err);

/* How a kind uses key 'key' ("chip", "dir", "both", "factor", "host"): 2 needs it,
 * 1 may take it, 0 takes no such key. */
TPU_API int tpu_fault_key_use(tpu_fault_kind_t kind, const char *key);
/* The text form of a kind, as "slow-nic:host=H,factor=F", for messages. */
TPU_API const char *tpu_fault_usage(tpu_fault_kind_t kind);

/* Fill a fault with no chip, link or host, factor 1, of kind 'kind'. */
TPU_API void tpu_fault_init(tpu_fault_t *fault, tpu_fault_kind_t kind);

/*
 * Check 'n' faults against the pod ('host_dims' the host block of its DCN NICs)
 * and build their tables; the caller frees '*faults_p' with tpu_faults_destroy().
 * Refused (TPU_ERR_INVALID, the message naming the fault): a chip outside the
 * pod, a link the torus does not have (an open edge, an axis of one chip), a
 * host outside the pod, a factor outside (0, 1], more than TPU_MAX_FAULTS, and
 * failed links that cut a slice (the message names a chip that cannot reach
 * another and the failed links of the cut).  '*faults_p' is set only on success.
 */
TPU_API tpu_status_t tpu_faults_create(const tpu_topo_t *topo, const int host_dims[TPU_MAX_AXES],
                                       const tpu_fault_t *list, int n, tpu_faults_t **faults_p,
                                       tpu_err_t *err);
TPU_API void tpu_faults_destroy(tpu_faults_t *faults);

/* The faults, with every chip resolved to its id (chip >= 0). */
TPU_API int tpu_faults_count(const tpu_faults_t *faults);
TPU_API const tpu_fault_t *tpu_faults_get(const tpu_faults_t *faults, int i);
/* Directed ICI links that carry nothing. */
TPU_API int tpu_faults_down_count(const tpu_faults_t *faults);

/* Bandwidth factor of directed link 'link' (0: failed), of chip 'chip' (its speed),
 * of host 'host''s NICs; 1 where no fault applies.  'faults' may be NULL. */
TPU_API double tpu_faults_link_factor(const tpu_faults_t *faults, int link);
TPU_API double tpu_faults_chip_factor(const tpu_faults_t *faults, int chip);
TPU_API double tpu_faults_nic_factor(const tpu_faults_t *faults, int host);
/* The smallest chip factor of the pod: the straggler that paces SPMD compute. */
TPU_API double tpu_faults_slowest_chip(const tpu_faults_t *faults);

/*
 * The route from 'src' to 'dst' (same slice) that avoids failed links:
 *   1. the dimension-order route tpu_topo_route(order, tie_dir) when it crosses
 *      no failed link (so flows away from the faults keep their routes);
 *   2. else the first other minimal dimension-order route without a failed link
 *      (the axis orders in a fixed order, each with tie_dir, then -tie_dir);
 *   3. else a shortest route over the links that work (it is minimal when one
 *      exists, non-minimal otherwise), going straight on where a shortest
 *      route allows it and turning in the order 'order', +1 before -1.
 * Deterministic.  'scratch' holds 2 * topo->chips_per_slice ints (step 3).  The
 * faults must come from tpu_faults_create() for this topology, so a route
 * exists; 'faults' may be NULL (then step 1).  Returns 0, or -1 when the route
 * of step 3 would need more than TPU_ROUTE_MAX_SEGS straight runs (a maze of
 * failed links; '*route' is then the route of step 1).
 */
TPU_API int tpu_faults_route(const tpu_faults_t *faults, const tpu_topo_t *topo, int src, int dst,
                             const int *order, int tie_dir, int32_t *scratch, tpu_route_t *route);

/*
 * One line for a fault, as "link-down chip 1 (1) +x both" or "slow-nic host 1
 * factor 0.25", into 'buf'.  The chip must be resolved (from tpu_faults_get()).
 */
TPU_API void tpu_fault_str(const tpu_topo_t *topo, const tpu_fault_t *fault, char *buf, int len);

#ifdef __cplusplus
}
#endif

#endif /* TPU_FAULT_H */
