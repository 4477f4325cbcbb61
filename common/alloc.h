/*
 * The library's allocation calls (alloc.c): every heap use of libtpuemu goes
 * through them, and so through the hook that tpu_alloc_set() (tpu/alloc.h)
 * installs.  A size or count of 0 asks for 1; tpu__free(NULL) is a no-op.
 * Private to the library and launch/; never installed.
 */
#ifndef TPU_COMMON_ALLOC_H
#define TPU_COMMON_ALLOC_H

#include "tpu/status.h"

#include <stddef.h>

TPU_API void *tpu__malloc(size_t size);
TPU_API void *tpu__realloc(void *ptr, size_t size);
TPU_API void *tpu__calloc(size_t count, size_t size);
TPU_API void tpu__free(void *ptr);

#endif /* TPU_COMMON_ALLOC_H */
