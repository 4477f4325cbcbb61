/*
 * The engine's time of one collective row of the transformer's step
 * (transformer_cost_time.c; private to emulator/workloads).
 */
#ifndef TPU_WORKLOADS_TRANSFORMER_COST_TIME_H
#define TPU_WORKLOADS_TRANSFORMER_COST_TIME_H

#include "transformer_cost_prog.h"

#include <stddef.h>
#include <stdint.h>

/* The axes of 'mask' that are in the mesh with a size above 1: their names in the mesh's
 * order into 'names', their torus layout into 'layout' (both 'len' bytes), the group size
 * into *g_p; the set of those axes (0 when none is left). */
unsigned tpu__xfmr_axes_of(eng_t *e, unsigned mask, char *names, char *layout, size_t len,
                           int *g_p);

/* Time 'row' (its kind, op, mesh axes and layout set) of 'count' f32 elements: from the
 * plan's time cache, or by the engine (and then cached). */
tpu_status_t tpu__xfmr_row_time(tpu_xfmr_cost_t *c, tpu_xfmr_cost_coll_t *row, uint64_t count,
                                tpu_err_t *err);

#endif
