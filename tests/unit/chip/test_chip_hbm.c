/*
 * The HBM allocator: capacity, accounting, the XLA-style out-of-memory message,
 * lazy host memory, and an OOM loop over every host allocation of the chip
 * model (HBM, VMEM executor, matmul, VPU op).
 */
#include "tpu/chip.h"
#include "tpu/hbm.h"
#include "tpu/mxu.h"
#include "tpu/roofline.h"
#include "tpu/vmem.h"
#include "tpu/vpu.h"

#include "test_main.h"
#include "test_support.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#define GiB (1024.0 * 1024.0 * 1024.0)

static tpu_chip_spec_t preset(const char *name)
{
    tpu_chip_spec_t spec;

    assert_int_equal(tpu_chip_preset(name, &spec, NULL), TPU_OK);
    return spec;
}

static void test_alloc_free_accounting(void **state)
{
    tpu_chip_spec_t spec = preset("v5e");
    tpu_err_t err = {0};
    tpu_hbm_t *hbm = NULL;
    unsigned char *a = NULL;
    unsigned char *b = NULL;
    void *z = NULL;
    size_t i;

    (void)state;
    assert_int_equal(tpu_hbm_create(&spec, &hbm, &err), TPU_OK);
    assert_int_equal(tpu_hbm_capacity(hbm), 16000000000ull);
    assert_int_equal(tpu_hbm_in_use(hbm), 0);
    assert_int_equal(tpu_hbm_alloc(hbm, 1000, (void **)&a, &err), TPU_OK);
    assert_int_equal(tpu_hbm_alloc(hbm, 3000, (void **)&b, &err), TPU_OK);
    assert_int_equal(tpu_hbm_alloc(hbm, 0, &z, &err), TPU_OK);
    assert_non_null(z);
    assert_ptr_not_equal(z, a);
    assert_int_equal((uintptr_t)a % 16, 0);
    for (i = 0; i < 1000; i++) {
        assert_int_equal(a[i], 0); /* zeroed */
    }
    memset(b, 0xab, 3000);
    assert_int_equal(tpu_hbm_in_use(hbm), 4000);
    assert_int_equal(tpu_hbm_count(hbm), 3);
    assert_int_equal(tpu_hbm_host_bytes(hbm), 4000);
    tpu_hbm_free(hbm, a);
    assert_int_equal(tpu_hbm_in_use(hbm), 3000);
    assert_int_equal(tpu_hbm_peak(hbm), 4000);
    tpu_hbm_free(hbm, NULL);
    tpu_hbm_free(hbm, b);
    tpu_hbm_free(hbm, z);
    assert_int_equal(tpu_hbm_in_use(hbm), 0);
    assert_int_equal(tpu_hbm_count(hbm), 0);
    assert_int_equal(tpu_hbm_peak(hbm), 4000);
    assert_int_equal(err.status, TPU_OK);
    tpu_hbm_destroy(hbm);
    tpu_hbm_destroy(NULL);
}

/* The message names the request, the bytes in use and the capacity, as XLA does. */
static void test_out_of_memory_message(void **state)
{
    tpu_chip_spec_t spec = preset("v5e");
    tpu_err_t err = {0};
    tpu_hbm_t *hbm = NULL;
    void *p = (void *)&spec;

    (void)state;
    assert_int_equal(tpu_hbm_create(&spec, &hbm, &err), TPU_OK);
    assert_int_equal(tpu_hbm_reserve(hbm, (uint64_t)(14 * GiB), &err), TPU_OK);
    assert_int_equal(tpu_hbm_alloc(hbm, (uint64_t)(4 * GiB), &p, &err), TPU_ERR_RESOURCE_EXHAUSTED);
    assert_ptr_equal(p, (void *)&spec); /* out-param untouched */
    assert_int_equal(err.status, TPU_ERR_RESOURCE_EXHAUSTED);
    /* The v5e preset's 16 GB are 16e9 bytes = 14.90 GiB. */
    assert_string_equal(err.msg, "RESOURCE_EXHAUSTED: HBM of chip v5e: requested 4.00 GiB, in use "
                                 "14.00 GiB, capacity 14.90 GiB");
    assert_int_equal(tpu_hbm_in_use(hbm), (uint64_t)(14 * GiB));
    assert_int_equal(tpu_hbm_count(hbm), 0);

    /* A reservation past the capacity fails the same way. */
    tpu_err_clear(&err);
    assert_int_equal(tpu_hbm_reserve(hbm, (uint64_t)(1 * GiB), &err), TPU_ERR_RESOURCE_EXHAUSTED);
    assert_non_null(strstr(err.msg, "requested 1.00 GiB"));
    tpu_hbm_unreserve(hbm, (uint64_t)(14 * GiB));
    assert_int_equal(tpu_hbm_in_use(hbm), 0);
    tpu_hbm_destroy(hbm);
}

/* Allocations up to the capacity succeed, one byte more fails, freeing makes room. */
static void test_capacity_edge(void **state)
{
    tpu_chip_spec_t spec = preset("v5p");
    tpu_err_t err = {0};
    tpu_hbm_t *hbm = NULL;
    void *a = NULL;
    void *b = NULL;

    (void)state;
    spec.hbm_bytes = 1 << 20; /* a small custom chip */
    assert_int_equal(tpu_hbm_create(&spec, &hbm, &err), TPU_OK);
    assert_int_equal(tpu_hbm_alloc(hbm, 600 * 1024, &a, &err), TPU_OK);
    assert_int_equal(tpu_hbm_alloc(hbm, 600 * 1024, &b, &err), TPU_ERR_RESOURCE_EXHAUSTED);
    assert_string_equal(err.msg, "RESOURCE_EXHAUSTED: HBM of chip v5p: requested 600.00 KiB, in "
                                 "use 600.00 KiB, capacity 1.00 MiB");
    tpu_err_clear(&err);
    assert_int_equal(tpu_hbm_alloc(hbm, 424 * 1024, &b, &err), TPU_OK);
    assert_int_equal(tpu_hbm_in_use(hbm), 1 << 20);
    tpu_hbm_free(hbm, a);
    assert_int_equal(tpu_hbm_alloc(hbm, 600 * 1024, &a, &err), TPU_OK);
    assert_int_equal(tpu_hbm_peak(hbm), 1 << 20);
    tpu_hbm_destroy(hbm); /* frees a and b */
}

/* Sixteen v5e chips (16 x 16 GB of capacity) cost only what they hold. */
static void test_lazy_host_memory(void **state)
{
    tpu_chip_spec_t spec = preset("v5e");
    tpu_hbm_t *hbm[16];
    void *p = NULL;
    long live;
    int i;

    (void)state;
    tpu_test_alloc_fail_after(-1); /* count, never fail */
    for (i = 0; i < 16; i++) {
        assert_int_equal(tpu_hbm_create(&spec, &hbm[i], NULL), TPU_OK);
        assert_int_equal(tpu_hbm_alloc(hbm[i], 1 << 20, &p, NULL), TPU_OK);
        assert_int_equal(tpu_hbm_host_bytes(hbm[i]), 1 << 20);
        /* A size-only model takes capacity without host memory. */
        assert_int_equal(tpu_hbm_reserve(hbm[i], (uint64_t)(10 * GiB), NULL), TPU_OK);
    }
    live = tpu_test_alloc_live();
    assert_int_equal(live, 32); /* a state and one block per chip, nothing else */
    for (i = 0; i < 16; i++) {
        tpu_hbm_destroy(hbm[i]);
    }
    assert_int_equal(tpu_test_alloc_live(), 0);
    tpu_test_alloc_restore();
}

static void test_bad_arguments(void **state)
{
    tpu_chip_spec_t spec = preset("v5e");
    tpu_err_t err = {0};
    tpu_hbm_t *hbm = NULL;

    (void)state;
    spec.hbm_bytes = 0;
    assert_int_equal(tpu_hbm_create(&spec, &hbm, &err), TPU_ERR_INVALID);
    assert_null(hbm);
    assert_non_null(strstr(err.msg, "capacity"));
    assert_int_equal(tpu_hbm_create(NULL, &hbm, NULL), TPU_ERR_INVALID);
}

/* OOM loop: fail the n-th host allocation for n = 0, 1, 2, ... until the whole
 * scenario succeeds; every failure is TPU_ERR_NO_MEMORY and leaks nothing. */
typedef tpu_status_t (*scenario_fn_t)(tpu_err_t *err);

static tpu_status_t scenario_hbm(tpu_err_t *err)
{
    tpu_chip_spec_t spec = preset("v5e");
    tpu_status_t status;
    tpu_hbm_t *hbm = NULL;
    void *a = NULL;
    void *b = NULL;

    status = tpu_hbm_create(&spec, &hbm, err);
    if (status != TPU_OK) {
        goto out;
    }
    status = tpu_hbm_alloc(hbm, 4096, &a, err);
    if (status != TPU_OK) {
        goto out_destroy;
    }
    status = tpu_hbm_alloc(hbm, 100, &b, err);
    if (status != TPU_OK) {
        goto out_destroy;
    }
    tpu_hbm_free(hbm, a);
out_destroy:
    tpu_hbm_destroy(hbm); /* frees b */
out:
    return status;
}

static tpu_status_t scenario_matmul(tpu_err_t *err)
{
    tpu_chip_spec_t spec = preset("v5e");
    tpu_status_t status;
    tpu_mxu_desc_t desc;
    tpu_vmem_t *vmem = NULL;
    uint16_t a[6 * 5] = {0};
    uint16_t b[5 * 7] = {0};
    int32_t c[6 * 7]; /* room for the int32 output */

    status = tpu_vmem_create(&spec, &vmem, err);
    if (status != TPU_OK) {
        goto out;
    }
    tpu_mxu_desc_init(&desc, 6, 5, 7, TPU_DTYPE_BF16);
    status = tpu_mxu_matmul(vmem, &desc, a, b, c, NULL, err);
    if (status != TPU_OK) {
        goto out_destroy;
    }
    desc.in = TPU_DTYPE_I8;
    desc.out = TPU_DTYPE_I32;
    status = tpu_mxu_matmul(vmem, &desc, a, b, c, NULL, err);
out_destroy:
    tpu_vmem_destroy(vmem);
out:
    return status;
}

static tpu_status_t scenario_vpu(tpu_err_t *err)
{
    tpu_chip_spec_t spec = preset("v6e");
    tpu_status_t status;
    tpu_vpu_desc_t desc;
    tpu_vmem_t *vmem = NULL;
    uint16_t x[3 * 50] = {0};
    uint16_t y[3 * 50] = {0};

    status = tpu_vmem_create(&spec, &vmem, err);
    if (status != TPU_OK) {
        goto out;
    }
    tpu_vpu_desc_init(&desc, TPU_VPU_SOFTMAX, TPU_DTYPE_BF16, 3, 50);
    status = tpu_vpu_run(vmem, &desc, x, NULL, y, NULL, err);
    if (status != TPU_OK) {
        goto out_destroy;
    }
    tpu_vpu_desc_init(&desc, TPU_VPU_SUM, TPU_DTYPE_BF16, 3, 50);
    status = tpu_vpu_run(vmem, &desc, x, NULL, y, NULL, err);
out_destroy:
    tpu_vmem_destroy(vmem);
out:
    return status;
}

static void oom_loop(scenario_fn_t scenario, const char *name)
{
    tpu_status_t status;
    tpu_err_t err;
    long n;

    for (n = 0; n < 1000; n++) {
        tpu_err_clear(&err);
        tpu_test_alloc_fail_after(n);
        status = scenario(&err);
        if (status == TPU_OK) {
            assert_false(tpu_test_alloc_failed());
        } else if (status != TPU_ERR_NO_MEMORY) {
            fail_msg("%s, allocation %ld failing: status %d (%s)", name, n, status, err.msg);
        } else {
            assert_true(tpu_test_alloc_failed());
            assert_int_equal(err.status, TPU_ERR_NO_MEMORY);
            assert_true(strlen(err.msg) > 0);
        }
        if (tpu_test_alloc_live() != 0) {
            fail_msg("%s, allocation %ld failing: %ld blocks leaked", name, n,
                     tpu_test_alloc_live());
        }
        tpu_test_alloc_restore();
        if (status == TPU_OK) {
            assert_true(n >= 2);
            return;
        }
    }
    fail_msg("%s never succeeded", name);
}

static void test_oom_loop_hbm(void **state)
{
    (void)state;
    oom_loop(scenario_hbm, "hbm");
}

static void test_oom_loop_matmul(void **state)
{
    (void)state;
    oom_loop(scenario_matmul, "matmul");
}

static void test_oom_loop_vpu(void **state)
{
    (void)state;
    oom_loop(scenario_vpu, "vpu");
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alloc_free_accounting), cmocka_unit_test(test_out_of_memory_message),
        cmocka_unit_test(test_capacity_edge),         cmocka_unit_test(test_lazy_host_memory),
        cmocka_unit_test(test_bad_arguments),         cmocka_unit_test(test_oom_loop_hbm),
        cmocka_unit_test(test_oom_loop_matmul),       cmocka_unit_test(test_oom_loop_vpu),
    };

    return tpu_test_main(argc, argv, "chip hbm", tests, sizeof tests / sizeof tests[0]);
}
