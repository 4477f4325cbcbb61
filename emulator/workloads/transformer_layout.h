/*
 * The transformer's mesh layout (transformer_layout.c), private to
 * emulator/workloads: its mesh axes, and the reading of a mesh spec into
 * their sizes with the checks that the model divides over them.
 */
#ifndef TPU_WORKLOADS_TRANSFORMER_LAYOUT_H
#define TPU_WORKLOADS_TRANSFORMER_LAYOUT_H

#include "tpu/status.h"
#include "tpu/transformer.h"

/* The mesh axes of the transformer (an axis the spec leaves out has size 1), slowest
 * first: a collective over several names them in this order. */
enum {
    XFMR_AXIS_DCN, /* across slices: an outer data axis */
    XFMR_AXIS_DATA,
    XFMR_AXIS_FSDP,
    XFMR_AXIS_SEQUENCE,
    XFMR_AXIS_TENSOR,
    XFMR_NAXES
};

/* The axes that split the batch. */
#define XFMR_BATCH_AXES ((1 << XFMR_AXIS_DCN) | (1 << XFMR_AXIS_DATA) | (1 << XFMR_AXIS_FSDP))

/*
 * Read 'spec' (tpu/mesh.h; axis names dcn, data, fsdp, sequence, tensor or its
 * alias model, each at most once) into each axis' size (1 when left out), its
 * index in the spec (-1) and the name written ("tensor" or "model"), then
 * check that 'model' (its batch the global batch) divides: the batch over dcn
 * x data x fsdp, heads, d_ff and vocab over tensor, seq over sequence, and
 * every parameter's first dimension (after tensor and sequence) over fsdp.
 * @return TPU_OK, TPU_ERR_INVALID in one line naming the dimension (the
 *         parameter) and the axis, or the spec's fault.
 */
tpu_status_t tpu__xfmr_layout_read(const char *spec, const tpu_xfmr_config_t *model,
                                   int size[XFMR_NAXES], int axis[XFMR_NAXES],
                                   char name[XFMR_NAXES][32], tpu_err_t *err);

#endif /* TPU_WORKLOADS_TRANSFORMER_LAYOUT_H */
