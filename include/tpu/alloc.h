/*
 * The allocator hook.  All heap use of libtpuemu goes through it, so that a test
 * can make any allocation fail (the OOM loop of the tests) or count them.
 */
#ifndef TPU_ALLOC_H
#define TPU_ALLOC_H

#include "tpu/status.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef void *(*tpu_malloc_fn_t)(size_t size);
typedef void *(*tpu_realloc_fn_t)(void *ptr, size_t size);
typedef void *(*tpu_calloc_fn_t)(size_t count, size_t size);
typedef void (*tpu_free_fn_t)(void *ptr);

/*
 * Replace the allocator.  Call it before any other libtpuemu call, or after every
 * object has been destroyed.  Passing all NULL restores the C library's.  This is
 * the library's one piece of global state.
 */
TPU_API tpu_status_t tpu_alloc_set(tpu_malloc_fn_t malloc_fn, tpu_realloc_fn_t realloc_fn,
                                   tpu_calloc_fn_t calloc_fn, tpu_free_fn_t free_fn);

/*
 * Free a block the library allocated and handed to the caller (the data of
 * tpu_npy_read_f32(), say), through the allocator in force.  NULL is a no-op.
 */
TPU_API void tpu_free(void *ptr);

#ifdef __cplusplus
}
#endif

#endif /* TPU_ALLOC_H */
