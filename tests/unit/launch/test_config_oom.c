/*
 * The YAML config loader (launch/config/config_yaml.c) under allocation failure.
 * The loader's own buffers come through tpu__malloc, but most of its memory is
 * libyaml's, which calls malloc directly: so this test replaces malloc, calloc,
 * realloc and free for the whole process (forwarding to glibc's __libc_*), and,
 * while armed, fails every allocation after the first n and keeps the set of
 * blocks still live.  For every n until the load succeeds: an error (no crash),
 * TPU_ERR_NO_MEMORY or a message that says memory ran out, and no block leaked;
 * the successful load equals the one made without failures.  Built without the
 * sanitizers only (they own malloc).
 *
 * One leak is libyaml's own and is let through: yaml_parser_load_mapping() and
 * _sequence() (libyaml 0.2.5 and upstream, src/loader.c) allocate the node's
 * pair or item stack (16 entries: 128 or 64 bytes), and when pushing the node
 * onto the document fails they jump to an error path that frees the tag but not
 * that stack.  A failed load may leave at most one such block, allocated inside
 * libyaml (the caller's object, by dladdr); any other leak fails the test.
 */
#define _GNU_SOURCE /* dladdr */
#include "config_yaml.h"
#include "test_main.h"

#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include <cmocka.h>

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t m);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);

#define SET_SIZE (1 << 16)
/* The build hides symbols by default; these must replace the C library's. */
#define EXPORTED __attribute__((visibility("default")))

/* The failing allocator's state (a test of the process's own malloc needs globals). */
static int armed;
static long budget, refused;
static void *live[SET_SIZE];
static size_t live_size[SET_SIZE];  /* bytes asked for */
static void *live_caller[SET_SIZE]; /* where the allocator was called from */
static long nlive;

static size_t slot_of(const void *p)
{
    return (size_t)(((uintptr_t)p >> 4) * 2654435761u) & (SET_SIZE - 1);
}

static void track(void *p, size_t size, void *caller)
{
    size_t i = slot_of(p);

    while (live[i] != NULL) {
        i = (i + 1) & (SET_SIZE - 1);
    }
    live[i] = p;
    live_size[i] = size;
    live_caller[i] = caller;
    nlive++;
}

/* Forget 'p' if it is tracked (linear probing with backward-shift deletion). */
static void untrack(void *p)
{
    size_t i = slot_of(p), j, k;

    while (live[i] != NULL && live[i] != p) {
        i = (i + 1) & (SET_SIZE - 1);
    }
    if (live[i] == NULL) {
        return;
    }
    live[i] = NULL;
    nlive--;
    for (j = (i + 1) & (SET_SIZE - 1); live[j] != NULL; j = (j + 1) & (SET_SIZE - 1)) {
        k = slot_of(live[j]);
        if ((j > i && (k <= i || k > j)) || (j < i && (k <= i && k > j))) {
            live[i] = live[j];
            live_size[i] = live_size[j];
            live_caller[i] = live_caller[j];
            live[j] = NULL;
            i = j;
        }
    }
}

static int refuse(void)
{
    if (!armed) {
        return 0;
    }
    if (budget-- <= 0) {
        refused++;
        return 1;
    }
    return 0;
}

EXPORTED void *malloc(size_t n)
{
    void *p;

    if (refuse()) {
        return NULL;
    }
    p = __libc_malloc(n);
    if (armed && p != NULL) {
        track(p, n, __builtin_return_address(0));
    }
    return p;
}

EXPORTED void *calloc(size_t n, size_t m)
{
    void *p;

    if (refuse()) {
        return NULL;
    }
    p = __libc_calloc(n, m);
    if (armed && p != NULL) {
        track(p, n * m, __builtin_return_address(0));
    }
    return p;
}

EXPORTED void *realloc(void *p, size_t n)
{
    void *q;

    if (p == NULL) {
        return malloc(n);
    }
    if (refuse()) {
        return NULL;
    }
    q = __libc_realloc(p, n);
    if (armed && q != NULL) {
        untrack(p);
        track(q, n, __builtin_return_address(0));
    }
    return q;
}

EXPORTED void free(void *p)
{
    if (p != NULL && armed) {
        untrack(p);
    }
    __libc_free(p);
}

/*
 * The blocks still live after a failed load, unarmed: libyaml's node-stack leak
 * (see the top) is freed and forgotten when it is the only one; returns how many
 * other blocks leaked.
 */
static long leaks_but_libyaml(void)
{
    Dl_info yaml, who;
    size_t i;

    if (nlive != 1 || dladdr((void *)yaml_parser_load, &yaml) == 0) {
        return nlive;
    }
    for (i = 0; i < SET_SIZE && live[i] == NULL; i++) {
    }
    if ((live_size[i] == 128 || live_size[i] == 64) && dladdr(live_caller[i], &who) != 0 &&
        who.dli_fbase == yaml.dli_fbase) {
        __libc_free(live[i]);
        untrack(live[i]);
    }
    return nlive;
}

static char *slurp(const char *path, size_t *len_p)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;

    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    rewind(f);
    buf = __libc_malloc((size_t)n + 1);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    *len_p = (size_t)n;
    return buf;
}

static void oom_file(const char *name)
{
    char path[512];
    size_t len;
    char *text;
    app_config_t want, got;
    tpu_err_t err = {0};
    long n;

    snprintf(path, sizeof(path), "%s/configs/%s", TPU_SOURCE_DIR, name);
    text = slurp(path, &len);
    app_config_init(&want);
    assert_int_equal(app_config_load_string(text, len, name, &want, &err), TPU_OK);
    for (n = 0; n < 1000000; n++) {
        tpu_status_t status;

        memset(&err, 0, sizeof(err));
        app_config_init(&got);
        memset(live, 0, sizeof(live));
        nlive = 0;
        refused = 0;
        budget = n;
        armed = 1;
        status = app_config_load_string(text, len, name, &got, &err);
        armed = 0;
        if (nlive != 0 && (status == TPU_OK || leaks_but_libyaml() != 0)) {
            fail_msg("%s, allocation %ld failing: %ld blocks leaked", name, n, nlive);
        }
        if (status == TPU_OK) {
            assert_int_equal(refused, 0);
            assert_memory_equal(&got, &want, sizeof(want));
            printf("oom %s: success after %ld failing allocations\n", name, n);
            break;
        }
        if (status != TPU_ERR_NO_MEMORY && strstr(err.msg, "memory") == NULL) {
            fail_msg("%s, allocation %ld failing: status %d, '%s'", name, n, status, err.msg);
        }
        assert_true(refused > 0);
        assert_true(strlen(err.msg) > 0);
    }
    assert_true(n < 1000000);
    __libc_free(text);
}

static void test_oom_configs(void **state)
{
    (void)state;
    oom_file("v5e-4x4.yaml");
    oom_file("custom-chip.yaml");
    oom_file("multislice-2x2x2.yaml");
    oom_file("v5p-4x4x4.yaml");
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_oom_configs),
    };

    return tpu_test_main(argc, argv, "config oom", tests, sizeof tests / sizeof tests[0]);
}
