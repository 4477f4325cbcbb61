/*
 * Shared test helper for the transformer's sharded runs: one init that every
 * chip of a layout and the one-chip reference apply alike.
 */
#ifndef TPU_TEST_XFMR_H
#define TPU_TEST_XFMR_H

#include "tpu/transformer.h"

#include <stdint.h>

/*
 * tpu_xfmr_init_random(xf, seed), then the norm gains away from 1 (1 + 0.3
 * sin(7p + i)) and the embeddings 25 times larger, so that a wrong gain or
 * position shows in the loss.  Gains are whole on every chip, so any shard
 * view gets the same values as one chip.
 */
void tpu_test_xfmr_init(tpu_xfmr_t *xf, uint64_t seed);

#endif
