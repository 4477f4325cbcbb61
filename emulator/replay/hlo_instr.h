/*
 * One HLO instruction (hlo_instr.c), for the computation reader of hlo_parse.c.
 * Private to emulator/replay/.
 */
#ifndef TPU_HLO_INSTR_H
#define TPU_HLO_INSTR_H

#include "hlo_lex.h"

/*
 * Read the instruction at the cursor into '*in': name, shape, opcode, operands
 * (by name; resolved later by the computation) and attributes.
 */
tpu_status_t tpu__hlo_parse_instruction(parser_t *p, tpu_hlo_instr_t *in);

#endif /* TPU_HLO_INSTR_H */
