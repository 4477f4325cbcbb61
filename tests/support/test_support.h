/* Shared test helpers: a failing allocator for OOM loops. */
#ifndef TPU_TEST_SUPPORT_H
#define TPU_TEST_SUPPORT_H

#include "tpu/vmem.h"

#include <stddef.h>

/* A VMEM executor for the preset 'chip' ("v5e"); NULL if it cannot be made. */
tpu_vmem_t *tpu_test_vmem(const char *chip);

/* Install an allocator that fails every call after 'budget' successful ones (-1: never). */
void tpu_test_alloc_fail_after(long budget);
/* Restore the C library's allocator. */
void tpu_test_alloc_restore(void);
/* Allocations made through the hook and not yet freed. */
long tpu_test_alloc_live(void);
/* Did the failing allocator refuse a call since it was installed? */
int tpu_test_alloc_failed(void);

#endif
