/*
 * HLO shapes (hlo_shape.c), for the parser's files.  Private to emulator/replay/.
 */
#ifndef TPU_HLO_SHAPE_H
#define TPU_HLO_SHAPE_H

#include "hlo_lex.h"

#include <stddef.h>

/*
 * The index (from 1) of s[0..n) among the names of a table of 'count' entries of
 * 'stride' bytes whose first member is the name; 0 when absent.
 */
int tpu__hlo_name_lookup(const void *table, size_t stride, int count, const char *s, size_t n);

/* Does a shape start at the cursor?  '(' (a tuple) or a word followed by '['. */
int tpu__hlo_shape_here(const parser_t *p);

/*
 * Read the shape at the cursor into '*sh' (tuple elements in the arena), with its
 * layout skipped; 'in_signature': after a computation's '->', where '{}' opens
 * the body rather than an empty layout.
 */
tpu_status_t tpu__hlo_parse_shape(parser_t *p, tpu_hlo_shape_t *sh, int in_signature);

#endif /* TPU_HLO_SHAPE_H */
