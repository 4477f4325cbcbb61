/*
 * The call signature of a run and its diagnostics (exec_sig.c).
 */
#ifndef TPU_EXEC_SIG_H
#define TPU_EXEC_SIG_H

#include "tpu/topo.h"
#include "tpu/xport.h"

#include "plan.h"

#include <stddef.h>

/* The signature of the plan's call (everything but the call number). */
void tpu__exec_sig_init(const tpu_coll_plan_t *p, tpu_call_sig_t *s);

/*
 * The first field in which two signatures differ, written as "chunks (2 vs 4)"
 * into 'buf' (NULL: not written); returns 0 when they are the same call.
 */
int tpu__exec_sig_diff(const tpu_call_sig_t *a, const tpu_call_sig_t *b, char *buf, size_t len);

/* "call 3: psum over xy of 4096 bytes f32 sum (torus)". */
void tpu__exec_sig_str(const tpu_call_sig_t *s, char *buf, size_t len);

/* "chip 5 (1,1)" or "chip 17 (slice 1, 0,1)". */
void tpu__exec_chip_str(const tpu_topo_t *topo, int chip, char *buf, size_t len);

#endif /* TPU_EXEC_SIG_H */
