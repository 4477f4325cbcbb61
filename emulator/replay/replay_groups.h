/*
 * The replay's groups (replay_groups.c), for the collective reader.  Private to
 * emulator/replay/.
 */
#ifndef TPU_REPLAY_GROUPS_H
#define TPU_REPLAY_GROUPS_H

#include "tpu/topo.h"

#include <stdint.h>

/*
 * Does the group set 'chips' (ng groups of 'size') equal the groups of the axes
 * in 'mask'?  'any_order': members may come in any order (all-reduce).
 * 'tmp' and 'pos' have room for nchips.
 */
int tpu__replay_groups_match(const tpu_topo_t *t, unsigned mask, const int32_t *chips, int ng,
                             int size, int any_order, int32_t *tmp, int32_t *pos);

#endif /* TPU_REPLAY_GROUPS_H */
