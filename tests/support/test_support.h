/* Shared test helpers: a failing allocator for OOM loops, small pods, files read whole. */
#ifndef TPU_TEST_SUPPORT_H
#define TPU_TEST_SUPPORT_H

#include "tpu/chip.h"
#include "tpu/pod.h"
#include "tpu/topo.h"
#include "tpu/vmem.h"

#include <stddef.h>

/* A VMEM executor for the preset 'chip' ("v5e"); NULL if it cannot be made. */
tpu_vmem_t *tpu_test_vmem(const char *chip);

/* A one-slice pod of the preset 'chip' as 'shape' ("2x2"); NULL if it cannot be made. */
tpu_pod_t *tpu_test_pod(const char *chip, const char *shape);

/* A 2D open torus of n chips (the most square a x n/a) of the preset 'chip', with its
 * link model: the pod a replayed module of n devices is timed on. */
void tpu_test_square_pod(int n, const char *chip, tpu_topo_t *topo, tpu_chip_spec_t *spec,
                         tpu_link_model_t *link);

/* The whole file at 'path', NUL-terminated (its length in *len_p when not NULL);
 * NULL if it cannot be read.  The caller frees it. */
char *tpu_test_slurp(const char *path, size_t *len_p);

/* Install an allocator that fails every call after 'budget' successful ones (-1: never). */
void tpu_test_alloc_fail_after(long budget);
/* Restore the C library's allocator. */
void tpu_test_alloc_restore(void);
/* Allocations made through the hook and not yet freed. */
long tpu_test_alloc_live(void);
/* Did the failing allocator refuse a call since it was installed? */
int tpu_test_alloc_failed(void);

#endif
