/*
 * The busy intervals of the link model's resources (linkmodel_busy.c).
 */
#ifndef TPU_LINKMODEL_BUSY_H
#define TPU_LINKMODEL_BUSY_H

#include "linkmodel.h"

/* The busy intervals of resource r: in place, or on the heap once there are more. */
double *tpu__linkmodel_busy_list(const tpu_linkmodel_t *lm, int32_t r);
/* The first interval of resource r that ends after t (niv[r] if none). */
int tpu__linkmodel_busy_first_after(const tpu_linkmodel_t *lm, int32_t r, double t);
/* How long work of w seconds that reaches resource r at t waits: the busy time it
 * skips before w seconds of idle time have passed. */
double tpu__linkmodel_busy_wait(const tpu_linkmodel_t *lm, int32_t r, double t, double w);
/* The first moment at or after t when resource r is idle. */
double tpu__linkmodel_busy_idle(const tpu_linkmodel_t *lm, int32_t r, double t);
/* Mark [a, b) busy on resource r; TPU_ERR_NO_MEMORY if its list cannot grow. */
tpu_status_t tpu__linkmodel_busy_add(tpu_linkmodel_t *lm, int32_t r, double a, double b);
/* Forget the intervals of resource r that end at or before t: no question will be
 * asked of them again (timing_repeat.c, the message starts of a repeated step). */
void tpu__linkmodel_busy_forget(tpu_linkmodel_t *lm, int32_t r, double t);
/* The first moment at or after t from which resource r is idle for w seconds. */
double tpu__linkmodel_busy_fit(const tpu_linkmodel_t *lm, int32_t r, double t, double w);

#endif /* TPU_LINKMODEL_BUSY_H */
