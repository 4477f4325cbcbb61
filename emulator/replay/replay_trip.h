/*
 * The replay's control flow helpers (replay_trip.c), for the walk.  Private to
 * emulator/replay/.
 */
#ifndef TPU_REPLAY_TRIP_H
#define TPU_REPLAY_TRIP_H

#include "replay_state.h"

/* The start instruction a -done / -update refers to (through updates). */
int tpu__replay_start_of(const tpu_hlo_comp_t *c, int i);

/* The trip count of while loop 'loop' of 'caller' (1 with a warning when unknown). */
tpu_status_t tpu__replay_trip_count(walker_t *w, const tpu_hlo_comp_t *caller,
                                    const tpu_hlo_instr_t *loop, int64_t *n_p);

#endif /* TPU_REPLAY_TRIP_H */
