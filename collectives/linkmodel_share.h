/*
 * Processor sharing on the link model's resources (linkmodel_share.c).
 */
#ifndef TPU_LINKMODEL_SHARE_H
#define TPU_LINKMODEL_SHARE_H

#include "linkmodel.h"

#include <stddef.h>

/*
 * Sort one group of 'len' records of 'size' bytes by 'cmp' (a total order), a
 * group that comes nearly sorted: nothing to do when it is in order, insertion
 * sort when it is short, else a merge of its ascending runs through lm's scratch.
 * @return TPU_OK or TPU_ERR_NO_MEMORY.
 */
tpu_status_t tpu__linkmodel_sort_group(tpu_linkmodel_t *lm, void *base, int64_t len, size_t size,
                                       int (*cmp)(const void *, const void *));

/*
 * The resources whose flows of the step do not all start together with the same
 * bytes: processor sharing; a flow's latest end there goes to md[k].
 */
tpu_status_t tpu__linkmodel_drain_mixed(tpu_linkmodel_t *lm, const tpu_flow_t *flows, int64_t n);

#endif /* TPU_LINKMODEL_SHARE_H */
