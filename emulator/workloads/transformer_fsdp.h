/*
 * The transformer's fsdp weight movement (transformer_fsdp.c): the units of
 * "The fsdp shard" in include/tpu/transformer.h (0 the embeddings, 1 + l layer
 * l, L + 1 the head), each unit's all-gather before use, the release of its
 * gathered copy after use, and the reduce of its gradients into the owned
 * rows.  Without fsdp, the gathers and releases do nothing and the reduce is
 * the plain gradient hook of each of the unit's parameters.
 */
#ifndef TPU_WORKLOADS_TRANSFORMER_FSDP_H
#define TPU_WORKLOADS_TRANSFORMER_FSDP_H

#include "transformer_ops.h"

/* The number of units, L + 2. */
int tpu__xfmr_units(const tpu_xfmr_t *xf);

/* The owned rows of unit u's parameters into their blocks, then TPU_XFMR_HOOK_GATHER
 * on each block (fsdp only). */
tpu_status_t tpu__xfmr_gather_unit(tpu_xfmr_t *xf, int u, tpu_err_t *err);

/* Drop unit u's gathered copy: its blocks filled with NaN (fsdp only). */
void tpu__xfmr_release_unit(tpu_xfmr_t *xf, int u);

/* TPU_XFMR_HOOK_GRAD on each of unit u's gradient blocks, then (fsdp) the owned rows
 * of each into the owned gradient. */
tpu_status_t tpu__xfmr_reduce_unit(tpu_xfmr_t *xf, int u, tpu_err_t *err);

#endif /* TPU_WORKLOADS_TRANSFORMER_FSDP_H */
