/* Chip coordinates on the command line (coords.c).  Private to launch/. */
#ifndef APP_LAUNCH_COORDS_H
#define APP_LAUNCH_COORDS_H

#include "tpu/status.h"
#include "tpu/topo.h"

/*
 * Parse 'text', coordinates "1,2" (slice first when t->slices > 1) or a chip id,
 * into '*chip_p'.  'what' names the flag ("src") and 'shape' the topology in
 * messages.  TPU_ERR_INVALID with one line on anything else.
 */
tpu_status_t app_parse_coords(const tpu_topo_t *t, const char *shape, const char *text,
                              const char *what, int *chip_p, tpu_err_t *err);

#endif
