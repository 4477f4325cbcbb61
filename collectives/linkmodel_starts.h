/*
 * The message starts of the link model (linkmodel_starts.c).
 */
#ifndef TPU_LINKMODEL_STARTS_H
#define TPU_LINKMODEL_STARTS_H

#include "linkmodel.h"

/*
 * Start the messages of the step's 'n' flows on their ports' DMA engines, each
 * ready at its start plus off[k] (NULL: none); lm->wait[k] receives how long
 * flow k's start waited.  TPU_OK or TPU_ERR_NO_MEMORY.
 */
tpu_status_t tpu__linkmodel_engine_starts(tpu_linkmodel_t *lm, int64_t n, const double *off);

#endif /* TPU_LINKMODEL_STARTS_H */
