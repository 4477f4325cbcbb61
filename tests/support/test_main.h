/*
 * The command line every CMocka test binary shares: each test's main() hands its
 * cases to tpu_test_main() (or its groups to tpu_test_main_groups()), which reads
 *   test_x [GROUP] [-f PATTERN] [-l] [-h]
 * -f runs only the cases whose name matches PATTERN ('*' any run of characters,
 * '?' one character: CMocka's cmocka_set_test_filter()), -l lists the cases, -h
 * prints the usage; a bad flag, a GROUP the binary does not have or a PATTERN
 * that matches no case is a usage error (exit 2).  Otherwise the exit status is
 * CMocka's: the number of cases that failed.
 */
#ifndef TPU_TEST_MAIN_H
#define TPU_TEST_MAIN_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

/* One group of cases of a test binary. */
typedef struct tpu_test_group {
    const char *arg;  /* the GROUP that selects it ("core", "fuzz") */
    const char *name; /* the name CMocka reports ("hlo core") */
    const struct CMUnitTest *tests;
    size_t count;
    CMFixtureFunction setup;    /* run once before the group's cases, or NULL */
    CMFixtureFunction teardown; /* run once after them, or NULL */
} tpu_test_group_t;

/*
 * Run the 'count' cases of 'tests' as one group called 'group_name', as the
 * command line asks.  A binary of one group takes no GROUP argument.
 */
int tpu_test_main(int argc, char **argv, const char *group_name, const struct CMUnitTest *tests,
                  size_t count);

/*
 * Run the groups chosen on the command line: GROUP is one group's 'arg' or
 * "all".  Without GROUP the first group runs (the ctest entry named after the
 * binary), but -f and -l look in every group, so that -f finds a case wherever
 * it is.  A group none of whose cases -f selects does not run at all.
 */
int tpu_test_main_groups(int argc, char **argv, const tpu_test_group_t *groups, size_t count);

#endif
