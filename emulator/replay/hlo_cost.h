/*
 * The replay's op costs (hlo_cost.c), for the walk and the trip counts.  Private
 * to emulator/replay/.
 */
#ifndef TPU_HLO_COST_H
#define TPU_HLO_COST_H

#include "replay_state.h"

/* Operand 'k' of 'in' in 'c'; NULL when it is not an instruction of 'c'. */
const tpu_hlo_instr_t *tpu__replay_operand(const tpu_hlo_comp_t *c, const tpu_hlo_instr_t *in,
                                           int k);

/* Is 'in' a reshape XLA makes a bitcast (default layouts on both sides, no tiling)? */
int tpu__replay_reshape_free(const tpu_hlo_comp_t *c, const tpu_hlo_instr_t *in);

/* The row and time of compute instruction 'i' of 'c'. */
tpu_status_t tpu__replay_op_at(walker_t *w, const tpu_hlo_comp_t *c, int i, int64_t mult,
                               double *us_p);

#endif /* TPU_HLO_COST_H */
