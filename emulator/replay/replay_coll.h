/*
 * The replay's collectives (replay_coll.c), for the walk and the op costs.
 * Private to emulator/replay/.
 */
#ifndef TPU_REPLAY_COLL_H
#define TPU_REPLAY_COLL_H

#include "replay_state.h"

/* The first array leaf's element type. */
tpu_hlo_type_t tpu__replay_leaf_type(const tpu_hlo_shape_t *sh);

/* The row of collective instruction 'i' of 'c' ('attrs': the one with the attributes). */
tpu_status_t tpu__replay_coll_at(walker_t *w, const tpu_hlo_comp_t *c, int i,
                                 const tpu_hlo_instr_t *attrs, int is_start, int64_t mult,
                                 tpu_replay_coll_t **row_p);

#endif /* TPU_REPLAY_COLL_H */
