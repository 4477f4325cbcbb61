/*
 * The replay's HBM fit (replay_hbm.c): the peak of live bytes per chip, for
 * tpu_replay_run().  Private to emulator/replay/.
 */
#ifndef TPU_REPLAY_HBM_H
#define TPU_REPLAY_HBM_H

#include "replay_state.h"

/* The HBM peak of computation 'entry' into the report (a warning when over capacity). */
tpu_status_t tpu__replay_hbm(walker_t *w, int entry);

#endif /* TPU_REPLAY_HBM_H */
