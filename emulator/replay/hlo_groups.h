/*
 * HLO device groups (hlo_groups.c), for the instruction reader.  Private to
 * emulator/replay/.
 */
#ifndef TPU_HLO_GROUPS_H
#define TPU_HLO_GROUPS_H

#include "hlo_lex.h"

/* replica_groups at the cursor, in any of its spellings, expanded into '*g'. */
tpu_status_t tpu__hlo_parse_groups(parser_t *p, tpu_hlo_groups_t *g);

/* source_target_pairs at the cursor, {{s,t},{s,t}}: out->n / 2 pairs in out->v. */
tpu_status_t tpu__hlo_parse_pairs(parser_t *p, tpu_hlo_ints_t *out);

#endif /* TPU_HLO_GROUPS_H */
