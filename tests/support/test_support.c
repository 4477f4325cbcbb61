/* A counting, failing allocator for OOM loops (libuv test-loop-oom.c style). */
#include "test_support.h"

#include "tpu/alloc.h"
#include "tpu/chip.h"

#include <stdlib.h>

static long budget_left = -1;
static long live;
static int failed;

/* Take one allocation from the budget; 0 when the budget is spent. */
static int take(void)
{
    if (budget_left == 0) {
        failed = 1;
        return 0;
    }
    if (budget_left > 0) {
        budget_left--;
    }
    return 1;
}

static void *fail_malloc(size_t size)
{
    void *p;

    if (!take()) {
        return NULL;
    }
    p = malloc(size);
    if (p != NULL) {
        live++;
    }
    return p;
}

static void *fail_calloc(size_t count, size_t size)
{
    void *p;

    if (!take()) {
        return NULL;
    }
    p = calloc(count, size);
    if (p != NULL) {
        live++;
    }
    return p;
}

static void *fail_realloc(void *ptr, size_t size)
{
    void *p;

    if (!take()) {
        return NULL;
    }
    p = realloc(ptr, size);
    if (p != NULL && ptr == NULL) {
        live++;
    }
    return p;
}

static void fail_free(void *ptr)
{
    if (ptr != NULL) {
        live--;
    }
    free(ptr);
}

void tpu_test_alloc_fail_after(long budget)
{
    budget_left = budget;
    live = 0;
    failed = 0;
    tpu_alloc_set(fail_malloc, fail_realloc, fail_calloc, fail_free);
}

void tpu_test_alloc_restore(void)
{
    tpu_alloc_set(NULL, NULL, NULL, NULL);
}

long tpu_test_alloc_live(void)
{
    return live;
}

int tpu_test_alloc_failed(void)
{
    return failed;
}

tpu_vmem_t *tpu_test_vmem(const char *chip)
{
    tpu_chip_spec_t spec;
    tpu_vmem_t *vmem = NULL;

    if (tpu_chip_preset(chip, &spec, NULL) != TPU_OK ||
        tpu_vmem_create(&spec, &vmem, NULL) != TPU_OK) {
        return NULL;
    }
    return vmem;
}

tpu_pod_t *tpu_test_pod(const char *chip, const char *shape)
{
    tpu_pod_spec_t spec;
    tpu_pod_t *pod = NULL;

    tpu_pod_spec_init(&spec);
    spec.chip = chip;
    spec.shape = shape;
    return tpu_pod_create(&spec, &pod, NULL) == TPU_OK ? pod : NULL;
}
