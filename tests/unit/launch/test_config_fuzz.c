/*
 * Robustness of the YAML loader: thousands of deterministic mutations of the
 * example configs (bit flips, YAML punctuation dropped in, insertions, deletions,
 * duplicated lines, truncations) from a fixed-seed xorshift generator.  Every
 * input must come back TPU_OK or TPU_ERR_CONFIG, an error with a one-line message
 * that starts with the file name, and an accepted config with bounded strings.
 * Each mutant is passed in a buffer of exactly its length, so that a read past
 * the end shows up under valgrind or the sanitizers.
 */
#include "tpu/status.h"

#include "config_yaml.h"
#include "test_main.h"

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#ifndef TPU_SOURCE_DIR
#define TPU_SOURCE_DIR "."
#endif

#define CONFIGS_DIR TPU_SOURCE_DIR "/configs"
#define MAX_SEEDS   16
#define MAX_SEED    8192
#define ITERATIONS  4000

typedef struct seed {
    char name[256];
    char text[MAX_SEED];
    size_t len;
} seed_t;

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t xorshift64(void)
{
    uint64_t x = rng_state;

    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    rng_state = x;
    return x;
}

static int seed_cmp(const void *a, const void *b)
{
    return strcmp(((const seed_t *)a)->name, ((const seed_t *)b)->name);
}

/* A number in [0, n) (n > 0). */
static size_t pick(size_t n)
{
    return (size_t)(xorshift64() % n);
}

/* Read every .yaml file of configs/ into 'seeds'; returns how many. */
static int read_seeds(seed_t *seeds)
{
    DIR *dir = opendir(CONFIGS_DIR);
    struct dirent *de;
    int n = 0;

    if (dir == NULL) {
        fail_msg("cannot open %s", CONFIGS_DIR);
    }
    while ((de = readdir(dir)) != NULL && n < MAX_SEEDS) {
        size_t len = strlen(de->d_name);
        char path[1024];
        FILE *f;

        if (len < 5 || strcmp(de->d_name + len - 5, ".yaml") != 0) {
            continue;
        }
        snprintf(seeds[n].name, sizeof(seeds[n].name), "%s", de->d_name);
        snprintf(path, sizeof(path), "%s/%s", CONFIGS_DIR, de->d_name);
        f = fopen(path, "rb");
        assert_non_null(f);
        seeds[n].len = fread(seeds[n].text, 1, MAX_SEED, f);
        fclose(f);
        assert_true(seeds[n].len > 0 && seeds[n].len < MAX_SEED);
        n++;
    }
    closedir(dir);
    /* Sort by name so that the run does not depend on the directory order. */
    qsort(seeds, (size_t)n, sizeof(seeds[0]), seed_cmp);
    return n;
}

/* Bytes that mean something to YAML or to the loader. */
static const char specials[] = ":-[]{}\"'\n \t#&*!|>%@`,?0123456789.eEKMGx=\0\xff\xc3\x01\r";

/* Snippets that make a structure change more likely than a single byte does. */
static const char *const snippets[] = {
    "\n- ",        ": ",           "\n  ",        "{",          "[1, 2]",
    "*a",          "&a ",          "!!str ",      "---\n",      "...\n",
    "? ",          "\"\\0\"",      "~",           "null",       "1e999",
    "-0",          "99999999999",  "chip: v5e\n", "base: v4\n", "mesh:\n  ",
    "host_dims: ", "\xef\xbb\xbf", "'it''s'",     "|\n  x\n",
};

/* Apply one random mutation to 'buf' of length '*len' (room for 'cap'). */
static void mutate(char *buf, size_t *len, size_t cap)
{
    size_t n = *len, at = n ? pick(n) : 0, k;
    const char *s;

    switch (pick(7)) {
    case 0: /* flip a bit */
        if (n) {
            buf[at] = (char)(buf[at] ^ (1 << pick(8)));
        }
        break;
    case 1: /* overwrite with a special byte */
        if (n) {
            buf[at] = specials[pick(sizeof(specials) - 1)];
        }
        break;
    case 2: /* insert a special byte */
        if (n + 1 <= cap) {
            memmove(buf + at + 1, buf + at, n - at);
            buf[at] = specials[pick(sizeof(specials) - 1)];
            *len = n + 1;
        }
        break;
    case 3: /* insert a snippet */
        s = snippets[pick(sizeof(snippets) / sizeof(snippets[0]))];
        k = strlen(s);
        if (n + k <= cap) {
            memmove(buf + at + k, buf + at, n - at);
            memcpy(buf + at, s, k);
            *len = n + k;
        }
        break;
    case 4: /* delete a run */
        k = n ? 1 + pick(16) : 0;
        if (at + k > n) {
            k = n - at;
        }
        memmove(buf + at, buf + at + k, n - at - k);
        *len = n - k;
        break;
    case 5: /* duplicate the line at 'at' (a duplicate key, or a list item) */
    {
        size_t start = at, end = at;

        while (start > 0 && buf[start - 1] != '\n') {
            start--;
        }
        while (end < n && buf[end] != '\n') {
            end++;
        }
        end += end < n;
        k = end - start;
        if (n + k <= cap) {
            memmove(buf + end + k, buf + end, n - end);
            memcpy(buf + end, buf + start, k);
            *len = n + k;
        }
        break;
    }
    default: /* truncate */
        *len = at;
        break;
    }
}

static void check_one(const char *text, size_t len, int *ok_p, int *bad_p)
{
    app_config_t cfg;
    tpu_err_t err = {0};
    char *copy = malloc(len ? len : 1);
    tpu_status_t status;

    assert_non_null(copy);
    memcpy(copy, text, len);
    app_config_init(&cfg);
    status = app_config_load_string(copy, len, "fuzz.yaml", &cfg, &err);
    if (status == TPU_OK) {
        assert_int_equal(err.status, TPU_OK);
        assert_true(strlen(cfg.chip) < sizeof(cfg.chip));
        assert_true(strlen(cfg.topology) < sizeof(cfg.topology));
        assert_true(strlen(cfg.wrap) < sizeof(cfg.wrap));
        assert_true(strlen(cfg.mesh) < sizeof(cfg.mesh));
        assert_true(strlen(cfg.custom.name) < sizeof(cfg.custom.name));
        (*ok_p)++;
    } else {
        if (status != TPU_ERR_CONFIG || err.status != TPU_ERR_CONFIG) {
            fail_msg("status %d for:\n%.*s", status, (int)len, copy);
        }
        if (strncmp(err.msg, "fuzz.yaml:", 10) != 0 || strlen(err.msg) <= 10 ||
            strchr(err.msg, '\n') != NULL) {
            fail_msg("bad message '%s' for:\n%.*s", err.msg, (int)len, copy);
        }
        (*bad_p)++;
    }
    free(copy);
}

static void test_mutations(void **state)
{
    static seed_t seeds[MAX_SEEDS];
    static char buf[2 * MAX_SEED];
    int nseeds, i, ok = 0, bad = 0;

    (void)state;
    nseeds = read_seeds(seeds);
    assert_true(nseeds >= 4);
    for (i = 0; i < nseeds; i++) {
        check_one(seeds[i].text, seeds[i].len, &ok, &bad);
    }
    assert_int_equal(ok, nseeds);
    for (i = 0; i < ITERATIONS; i++) {
        const seed_t *s = &seeds[pick((size_t)nseeds)];
        size_t len = s->len, m, nmut = 1 + pick(4);

        memcpy(buf, s->text, len);
        for (m = 0; m < nmut; m++) {
            mutate(buf, &len, sizeof(buf));
        }
        check_one(buf, len, &ok, &bad);
    }
    printf("%d mutants: %d accepted, %d refused\n", ITERATIONS, ok - nseeds, bad);
    /* The mutations must exercise both outcomes. */
    assert_true(ok > nseeds + ITERATIONS / 20);
    assert_true(bad > ITERATIONS / 2);
}

/* Every prefix of every seed: truncation at each byte. */
static void test_truncations(void **state)
{
    static seed_t seeds[MAX_SEEDS];
    int nseeds, i, ok = 0, bad = 0;
    size_t len;

    (void)state;
    nseeds = read_seeds(seeds);
    for (i = 0; i < nseeds; i++) {
        for (len = 0; len <= seeds[i].len; len++) {
            check_one(seeds[i].text, len, &ok, &bad);
        }
    }
    assert_true(ok > 0 && bad > 0);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mutations),
        cmocka_unit_test(test_truncations),
    };

    return tpu_test_main(argc, argv, "config fuzz", tests, sizeof tests / sizeof tests[0]);
}
