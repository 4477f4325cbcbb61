/*
 * The HBM a chip holds through the transformer's step (private to
 * emulator/workloads, for transformer_cost.c): the items of
 * tpu_xfmr_cost_t.items per the plan (include/tpu/transformer_cost.h).
 */
#ifndef TPU_WORKLOADS_TRANSFORMER_HBM_H
#define TPU_WORKLOADS_TRANSFORMER_HBM_H

#include "transformer_cost_prog.h"

/* The HBM items of a chip and their sum (c->items, c->hbm_peak_bytes). */
void tpu__xfmr_cost_hbm(tpu_xfmr_cost_t *c);

#endif /* TPU_WORKLOADS_TRANSFORMER_HBM_H */
