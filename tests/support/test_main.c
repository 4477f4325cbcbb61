/* The command line of every CMocka test binary: GROUP, -f PATTERN, -l, -h. */
#include "test_main.h"

#include <stdio.h>
#include <string.h>

/* The usage error's exit status, as the program's own (tpuemu exits 2 on bad input). */
#define USAGE_ERROR 2

/* What the command line asked for. */
typedef struct options {
    const char *group;   /* GROUP, or NULL */
    const char *pattern; /* -f PATTERN, or NULL */
    int list;            /* -l */
} options_t;

/*
 * Does 'str' match 'pattern' ('*' any run of characters, '?' one character)?
 * The rule CMocka 1.1.5 applies to cmocka_set_test_filter()'s pattern, so that
 * -l and the check for a pattern that matches nothing agree with the run.
 */
static int matches(const char *str, const char *pattern)
{
    for (;;) {
        if (*pattern == '\0') {
            return *str == '\0';
        }
        if (*pattern == '*') {
            pattern++;
            if (*pattern == '\0') {
                return 1;
            }
            for (; *str != '\0'; str++) {
                if (matches(str, pattern)) {
                    return 1;
                }
            }
            return 0;
        }
        if (*str == '\0' || (*pattern != '?' && *str != *pattern)) {
            return 0;
        }
        str++;
        pattern++;
    }
}

/* The cases of 'group' that the pattern (if any) selects. */
static size_t selected(const tpu_test_group_t *group, const char *pattern)
{
    size_t i, n = 0;

    for (i = 0; i < group->count; i++) {
        if (pattern == NULL || matches(group->tests[i].name, pattern)) {
            n++;
        }
    }
    return n;
}

static void usage(FILE *out, const char *prog, const tpu_test_group_t *groups, size_t count)
{
    size_t i;

    fprintf(out, "usage: %s%s [-f PATTERN] [-l] [-h]\n", prog, count > 1 ? " [GROUP]" : "");
    if (count > 1) {
        fprintf(out, "  GROUP       ");
        for (i = 0; i < count; i++) {
            fprintf(out, "%s%s, ", groups[i].arg, i == 0 ? " (the default)" : "");
        }
        fprintf(out, "or all\n");
    }
    fprintf(out,
            "  -f PATTERN  run only the cases whose name matches PATTERN ('*' any run of\n"
            "              characters, '?' one character), e.g. -f 'test_psum*'%s\n"
            "  -l          list the cases (those -f selects) and exit\n"
            "  -h          print this help and exit\n",
            count > 1 ? ";\n              without GROUP, every group is searched" : "");
}

/*
 * Read the command line into 'opt'.  -1 when the tests are to run (or be listed),
 * else the status to exit with: 0 after -h, USAGE_ERROR on a bad command line.
 */
static int parse(int argc, char **argv, const tpu_test_group_t *groups, size_t count,
                 options_t *opt)
{
    const char *prog = argc > 0 ? argv[0] : "test";
    int i;

    for (i = 1; i < argc; i++) {
        const char *a = argv[i];

        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout, prog, groups, count);
            return 0;
        } else if (strcmp(a, "-l") == 0) {
            opt->list = 1;
        } else if (strcmp(a, "-f") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "%s: -f needs a PATTERN\n", prog);
                goto bad;
            }
            opt->pattern = argv[++i];
        } else if (a[0] == '-') {
            fprintf(stderr, "%s: unknown option '%s'\n", prog, a);
            goto bad;
        } else if (count > 1 && opt->group == NULL) {
            opt->group = a;
        } else {
            fprintf(stderr, "%s: unexpected argument '%s'\n", prog, a);
            goto bad;
        }
    }
    return -1;

bad:
    usage(stderr, prog, groups, count);
    return USAGE_ERROR;
}

/* Is group 'i' among those the options choose? */
static int chosen(const options_t *opt, const tpu_test_group_t *groups, size_t i)
{
    if (opt->group == NULL) {
        return i == 0 || opt->pattern != NULL || opt->list;
    }
    return strcmp(opt->group, "all") == 0 || strcmp(opt->group, groups[i].arg) == 0;
}

int tpu_test_main_groups(int argc, char **argv, const tpu_test_group_t *groups, size_t count)
{
    const char *prog = argc > 0 ? argv[0] : "test";
    options_t opt = {NULL, NULL, 0};
    size_t i, j, found = 0, known = 0;
    int rc, failed = 0;

    rc = parse(argc, argv, groups, count, &opt);
    if (rc >= 0) {
        return rc;
    }
    for (i = 0; i < count; i++) {
        if (chosen(&opt, groups, i)) {
            known++;
            found += selected(&groups[i], opt.pattern);
        }
    }
    if (known == 0) {
        fprintf(stderr, "%s: no group '%s'\n", prog, opt.group);
        usage(stderr, prog, groups, count);
        return USAGE_ERROR;
    }
    if (found == 0 && opt.pattern != NULL) {
        fprintf(stderr, "%s: no case matches '%s' (-l lists them)\n", prog, opt.pattern);
        return USAGE_ERROR;
    }
    if (opt.pattern != NULL) {
        cmocka_set_test_filter(opt.pattern);
    }
    for (i = 0; i < count; i++) {
        const tpu_test_group_t *g = &groups[i];

        if (!chosen(&opt, groups, i) || selected(g, opt.pattern) == 0) {
            continue;
        }
        if (opt.list) {
            for (j = 0; j < g->count; j++) {
                if (opt.pattern == NULL || matches(g->tests[j].name, opt.pattern)) {
                    printf("%s\n", g->tests[j].name);
                }
            }
            continue;
        }
        failed += _cmocka_run_group_tests(g->name, g->tests, g->count, g->setup, g->teardown);
    }
    return failed;
}

int tpu_test_main(int argc, char **argv, const char *group_name, const struct CMUnitTest *tests,
                  size_t count)
{
    const tpu_test_group_t group = {"", group_name, tests, count, NULL, NULL};

    return tpu_test_main_groups(argc, argv, &group, 1);
}
