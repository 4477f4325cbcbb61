/* Status strings and the first-writer-wins error record. */
#include "tpu/alloc.h"
#include "tpu/status.h"

#include "alloc.h"
#include "test_main.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void test_strings(void **state)
{
    (void)state;
    assert_string_equal(tpu_status_str(TPU_OK), "success");
    assert_string_equal(tpu_status_str(TPU_ERR_RESOURCE_EXHAUSTED), "resource exhausted");
    assert_string_equal(tpu_status_str((tpu_status_t)-999), "unknown status");
}

static void test_first_writer_wins(void **state)
{
    tpu_err_t err = {0};

    (void)state;
    assert_int_equal(tpu_err_set(&err, TPU_ERR_CONFIG, "first %d", 1), TPU_ERR_CONFIG);
    assert_int_equal(tpu_err_set(&err, TPU_ERR_INVALID, "second"), TPU_ERR_INVALID);
    assert_int_equal(err.status, TPU_ERR_CONFIG);
    assert_string_equal(err.msg, "first 1");
    assert_int_equal(tpu_err_set(NULL, TPU_ERR_INVALID, "nowhere"), TPU_ERR_INVALID);
    tpu_err_clear(&err);
    assert_int_equal(err.status, TPU_OK);
    assert_string_equal(err.msg, "");
}

static void test_allocator_hook(void **state)
{
    (void)state;
    assert_int_equal(tpu_alloc_set(NULL, NULL, NULL, NULL), TPU_OK);
    assert_int_equal(tpu_alloc_set(NULL, realloc, NULL, NULL), TPU_ERR_INVALID);
    tpu__free(NULL);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_first_writer_wins),
        cmocka_unit_test(test_allocator_hook),
    };

    return tpu_test_main(argc, argv, "status", tests, sizeof tests / sizeof tests[0]);
}
