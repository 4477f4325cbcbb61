/* Shared test helpers: a failing allocator for OOM loops. */
#ifndef TPU_TEST_SUPPORT_H
#define TPU_TEST_SUPPORT_H

#include "tpu/pod.h"
#include "tpu/vmem.h"

#include <stddef.h>

/* A VMEM executor for the preset 'chip' ("v5e"); NULL if it cannot be made. */
tpu_vmem_t *tpu_test_vmem(const char *chip);

/* A one-slice pod of the preset 'chip' as 'shape' ("2x2"); NULL if it cannot be made. */
tpu_pod_t *tpu_test_pod(const char *chip, const char *shape);

/* Install an allocator that fails every call after 'budget' successful ones (-1: never). */
void tpu_test_alloc_fail_after(long budget);
/* Restore the C library's allocator. */
void tpu_test_alloc_restore(void);
/* Allocations made through the hook and not yet freed. */
long tpu_test_alloc_live(void);
/* Did the failing allocator refuse a call since it was installed? */
int tpu_test_alloc_failed(void);

#endif
