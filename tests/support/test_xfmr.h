/*
 * Shared test helper for the transformer's sharded runs: one small model, one
 * token set and one init that every chip of a layout and the one-chip
 * reference apply alike.
 */
#ifndef TPU_TEST_XFMR_H
#define TPU_TEST_XFMR_H

#include "tpu/transformer.h"

#include <stdint.h>

/*
 * tpu_xfmr_init_random(xf, seed), then the norm gains away from 1 (1 + 0.3
 * sin(7p + i)) and the embeddings 25 times larger, so that a wrong gain or
 * position shows in the loss.  A gain's element is set by its index in the
 * whole gain, so any shard view (fsdp splits the gains) gets one chip's values.
 */
void tpu_test_xfmr_init(tpu_xfmr_t *xf, uint64_t seed);

/* The token set: TPU_TEST_XFMR_ROWS sequences of TPU_TEST_XFMR_SEQ tokens. */
#define TPU_TEST_XFMR_ROWS  32
#define TPU_TEST_XFMR_BATCH 16 /* global batch, sequences */
#define TPU_TEST_XFMR_SEQ   16
#define TPU_TEST_XFMR_VOCAB 48

/* The model of the sharded runs: L=2 D=32 H=4 F=64, the vocabulary, sequence and
 * global batch above. */
void tpu_test_xfmr_config(tpu_xfmr_config_t *cfg);

/* The token set into x and y (ROWS * SEQ each): pseudo-random ids, each target
 * the token before it (the first of a sequence its own), so attention can learn. */
void tpu_test_xfmr_tokens(int32_t *x, int32_t *y);

#endif
