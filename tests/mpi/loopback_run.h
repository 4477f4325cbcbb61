/*
 * The MPI tests' reference run (loopback_run.c): a collective plan on the
 * loopback transport, every chip of the pod in this process.
 */
#ifndef TPU_TEST_LOOPBACK_RUN_H
#define TPU_TEST_LOOPBACK_RUN_H

#include "tpu/coll.h"
#include "tpu/topo.h"

/*
 * Runs 'plan' once with chip c's input filled by fill(c, buf, bytes, arg).
 * Returns 0 with '*out_p' the chips' outputs (free with
 * tpu_test_loopback_free()) and '*us_p' the modeled time; 1 after a line on
 * stderr, '*out_p' NULL.
 */
int tpu_test_loopback_run(const tpu_topo_t *topo, const tpu_coll_plan_t *plan,
                          tpu_coll_fill_fn_t fill, void *arg, void ***out_p, double *us_p);

/* Frees the 'nchips' outputs of tpu_test_loopback_run() ('out' may be NULL). */
void tpu_test_loopback_free(void **out, int nchips);

#endif
