/* Opening input files without blocking on a FIFO (internal to the library and launch/). */
#ifndef TPU_COMMON_FILE_H
#define TPU_COMMON_FILE_H

#include <stdio.h>

/*
 * Open 'path' for reading ("rb") if it is a regular file.  The open does not
 * block (a FIFO with no writer would stall fopen forever).  On failure returns
 * NULL and writes the reason into 'why': "cannot open: REASON" or "not a regular
 * file (a directory)" and the like.
 */
FILE *tpu__fopen_regular(const char *path, char *why, size_t len);

#endif
