/*
 * Shared test helpers for the collectives: a topology from its text, and the
 * check that a plan gives one modeled time, bit for bit, from the model, the sim
 * and the loopback transports, with every chip's data equal to the reference.
 * They fail the running CMocka test on error: call them from a test only.
 */
#ifndef TPU_TEST_COLL_H
#define TPU_TEST_COLL_H

#include "tpu/coll.h"
#include "tpu/mesh.h"
#include "tpu/topo.h"

#include <stdint.h>

/* 'shape' ("4x4"), 'wrap' ("all", "none", "x,z") and 'slices' into '*t'. */
void tpu_test_topo(tpu_topo_t *t, const char *shape, const char *wrap, int slices);

/*
 * The pod and link model of the model's shortcut tests: 'shape' and 'wrap' into
 * '*topo' (returns 0 when 'wrap' names an axis the shape lacks: "x,z" on a 2D
 * shape), 90 GB/s ICI links of 1 us, DCN at 12.5 GB/s and 10 us, hosts of two
 * chips along each even axis, no message cost.
 */
int tpu_test_model_pod(tpu_topo_t *topo, tpu_link_model_t *link, const char *shape,
                       const char *wrap);

/* Fail unless 'a' and 'b' have the same per-axis statistics (==). */
void tpu_test_same_stats(const tpu_coll_result_t *a, const tpu_coll_result_t *b);

/* The axis masks of 't' whose groups have two chips or more (dcn too when it has
 * slices), increasing, into 'masks' (room for 32) with the axes each names in
 * 'naxes'; returns how many. */
int tpu_test_axis_masks(const tpu_topo_t *t, unsigned *masks, int *naxes);

/*
 * Point 'd' at the groups of the mesh axes 'axes' of 'mesh_spec' (the mesh and the
 * groups into '*mesh' and '*groups', for the caller to free), or with 'mesh_spec'
 * NULL at the torus axes 'axes'; d->bytes = the group size times 'per_member'.
 */
void tpu_test_coll_target(const tpu_topo_t *topo, const char *mesh_spec, const char *axes,
                          uint64_t per_member, tpu_mesh_t **mesh, tpu_groups_t *groups,
                          tpu_coll_desc_t *d);

/*
 * Model 'plan', run it twice over the loopback transport (the run object's
 * buffers reused) and once over sim, from index-tagged data; fail with 'label'
 * unless the three modeled times are equal and every chip's output (the
 * destination's for p2p) equals tpu_coll_reference().
 */
void tpu_test_check_transports(const tpu_coll_plan_t *plan, const tpu_topo_t *topo,
                               const char *label);

/* A link model for easy arithmetic: ici_bw 2e9 B/s both directions (1000 bytes take
 * 1 us one way), 1 us per ICI hop, DCN 1e9 B/s and 10 us, PCIe 1e10 B/s. */
tpu_link_model_t tpu_test_easy_link(void);

#endif
