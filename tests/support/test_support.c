/* Shared test helpers: a counting, failing allocator for OOM loops (libuv
 * test-loop-oom.c style), small pods, files read whole. */
#include "test_support.h"

#include "tpu/alloc.h"
#include "tpu/chip.h"

#include <stdio.h>
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

void tpu_test_square_pod(int n, const char *chip, tpu_topo_t *topo, tpu_chip_spec_t *spec,
                         tpu_link_model_t *link)
{
    int dims[3] = {1, 1, 1}, wrap[3] = {0, 0, 0}, a;
    tpu_err_t err = {0};

    for (a = 1; a * a <= n; a++) {
        if (n % a == 0) {
            dims[0] = a;
        }
    }
    dims[1] = n / dims[0];
    if (tpu_chip_preset(chip, spec, &err) != TPU_OK ||
        tpu_topo_init(topo, 2, dims, wrap, 1, &err) != TPU_OK) {
        fprintf(stderr, "tpu_test_square_pod(%d, %s): %s\n", n, chip, err.msg);
        abort();
    }
    tpu_chip_link_model(spec, link);
}

char *tpu_test_slurp(const char *path, size_t *len_p)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n;

    if (f == NULL) {
        return NULL;
    }
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0) {
        goto out;
    }
    rewind(f);
    buf = malloc((size_t)n + 1);
    if (buf == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
        goto out;
    }
    buf[n] = '\0';
    if (len_p != NULL) {
        *len_p = (size_t)n;
    }
out:
    fclose(f);
    return buf;
}
