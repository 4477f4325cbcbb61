/*
 * The allocator hook.  The function pointers below are the library's one piece of
 * global state (STYLE.md R13): set once, before any other call, by a test or an
 * embedding program.
 */
#include "tpu/alloc.h"

#include "alloc.h"

#include <stdlib.h>

static tpu_malloc_fn_t hook_malloc = malloc;
static tpu_realloc_fn_t hook_realloc = realloc;
static tpu_calloc_fn_t hook_calloc = calloc;
static tpu_free_fn_t hook_free = free;

tpu_status_t tpu_alloc_set(tpu_malloc_fn_t malloc_fn, tpu_realloc_fn_t realloc_fn,
                           tpu_calloc_fn_t calloc_fn, tpu_free_fn_t free_fn)
{
    if (malloc_fn == NULL && realloc_fn == NULL && calloc_fn == NULL && free_fn == NULL) {
        hook_malloc = malloc;
        hook_realloc = realloc;
        hook_calloc = calloc;
        hook_free = free;
        return TPU_OK;
    }
    if (malloc_fn == NULL || realloc_fn == NULL || calloc_fn == NULL || free_fn == NULL) {
        return TPU_ERR_INVALID;
    }
    hook_malloc = malloc_fn;
    hook_realloc = realloc_fn;
    hook_calloc = calloc_fn;
    hook_free = free_fn;
    return TPU_OK;
}

void *tpu__malloc(size_t size)
{
    return hook_malloc(size == 0 ? 1 : size);
}

void *tpu__realloc(void *ptr, size_t size)
{
    return hook_realloc(ptr, size == 0 ? 1 : size);
}

void *tpu__calloc(size_t count, size_t size)
{
    return hook_calloc(count == 0 ? 1 : count, size == 0 ? 1 : size);
}

void tpu__free(void *ptr)
{
    if (ptr != NULL) {
        hook_free(ptr);
    }
}

void tpu_free(void *ptr)
{
    tpu__free(ptr);
}
