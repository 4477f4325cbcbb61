/*
 * The loads of line timing in the link model (linkmodel_loads.c).
 */
#ifndef TPU_LINKMODEL_LOADS_H
#define TPU_LINKMODEL_LOADS_H

#include "linkmodel.h"

/*
 * One step whose flows all start at once (line timing, lines.c): count loads
 * (add_load: 'bytes' of messages of 'size' bytes each;
 * TPU_ERR_NO_MEMORY, or TPU_ERR_INTERNAL past TPU_LM_SIZES sizes), read one
 * (load), time a flow from them (time_flow: '*bytes_p' = ready + when its bytes
 * are through the busiest resource of its route, under processor sharing of the
 * step's messages there, '*lat_p' its latency: what tpu__linkmodel_step() gives
 * such a step), close the step.
 */
tpu_status_t tpu__linkmodel_add_load(tpu_linkmodel_t *lm, int r, double bytes, double size);
double tpu__linkmodel_load(const tpu_linkmodel_t *lm, int r);
void tpu__linkmodel_time_flow(tpu_linkmodel_t *lm, const tpu_flow_t *f, double ready,
                              double *bytes_p, double *lat_p);
void tpu__linkmodel_end_step(tpu_linkmodel_t *lm);

#endif /* TPU_LINKMODEL_LOADS_H */
