/*
 * The watchdog's choice of the chip behind (app_job_behind in launch/watch.c):
 * rank 0's view of each rank (the sync point it reached, whom it said it waits
 * for, when it was last heard from) written by hand for the cases a stalled job
 * produces, and the rank the job waits for worked out by hand.  The race it
 * fixes: a chip stopped at the same sync point as a chip that waits on it, with
 * the waiting one late to give up, was named instead of the stopped one.
 */
#include "test_main.h"
#include "watch.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#define NOW    100.0
#define SILENT 1.0

/* Rank r at point 'seen', waiting for 'waits' (said at that point), heard 'ago' s ago. */
static void at(app_job_peer_t *p, int r, uint64_t seen, int waits, double ago)
{
    p[r].seen = seen;
    p[r].waits_at = seen;
    p[r].waits = waits;
    p[r].heard = NOW - ago;
}

static int behind(const app_job_peer_t *p, int n, uint64_t point, int *waiters)
{
    return app_job_behind(p, n, point, NOW, SILENT, waiters);
}

/* Everyone reached the point: nobody is behind. */
static void test_none_behind(void **state)
{
    app_job_peer_t p[4];
    int w, r;

    (void)state;
    for (r = 0; r < 4; r++) {
        at(p, r, 9, APP_JOB_WAIT_ALL, 0.1);
    }
    assert_int_equal(behind(p, 4, 9, &w), -1);
    assert_int_equal(w, 0);
}

/*
 * The race: rank 0 and 3 gave up and reached point 12 (the barrier after the
 * timed-out collective); ranks 1 and 2 are both at 11, in the collective.  Rank 1
 * is alive (heard 0.2 s ago) and waits for rank 2; rank 2 was stopped 4 s ago,
 * its last word being that it waited for rank 3.  The sync points tie; the
 * chain 1 -> 2 ends at 2, silent: rank 2 is behind, and rank 1 waits for it.
 */
static void test_race_same_point(void **state)
{
    app_job_peer_t p[4];
    int w;

    (void)state;
    at(p, 0, 12, APP_JOB_WAIT_ALL, 0.0);
    at(p, 3, 12, APP_JOB_WAIT_ALL, 0.1);
    at(p, 1, 11, 2, 0.2);
    at(p, 2, 11, 3, 4.0);
    assert_int_equal(behind(p, 4, 12, &w), 2);
    assert_int_equal(w, 2);
    /* The same with rank 2 quiet since it entered the point (no wait said). */
    at(p, 2, 11, APP_JOB_WAIT_NONE, 4.0);
    assert_int_equal(behind(p, 4, 12, &w), 2);
    /* And with the roles of the ranks swapped: rank 2 waits on a stopped rank 1. */
    at(p, 1, 11, 3, 4.0);
    at(p, 2, 11, 1, 0.2);
    assert_int_equal(behind(p, 4, 12, &w), 1);
    assert_int_equal(w, 2);
}

/*
 * A chain through others: 1 waits for 3, 3 for 5, 5 for 6, all alive; 6 is busy
 * (waits for nobody) at the same point.  Rank 6 is behind, with three waiters.
 * Rank 7, stopped at an earlier point but reached by no chain, loses to it.
 */
static void test_chain(void **state)
{
    app_job_peer_t p[8];
    int w, r;

    (void)state;
    for (r = 0; r < 8; r++) {
        at(p, r, 20, APP_JOB_WAIT_ALL, 0.1);
    }
    at(p, 1, 19, 3, 0.1);
    at(p, 3, 19, 5, 0.2);
    at(p, 5, 19, 6, 0.1);
    at(p, 6, 19, APP_JOB_WAIT_NONE, 0.5);
    assert_int_equal(behind(p, 8, 20, &w), 6);
    assert_int_equal(w, 4);
    at(p, 7, 17, APP_JOB_WAIT_NONE, 3.0);
    assert_int_equal(behind(p, 8, 20, &w), 6);
    assert_int_equal(w, 4);
}

/*
 * A barrier: ranks in a wait of everyone lead to the one furthest back (rank 2,
 * busy at point 4); a wait said at an older point is stale and does not count
 * (rank 2 said it waited for rank 1 at point 4, then entered 5 and went quiet).
 */
static void test_barrier_and_stale(void **state)
{
    app_job_peer_t p[4];
    int w;

    (void)state;
    at(p, 0, 6, APP_JOB_WAIT_ALL, 0.0);
    at(p, 1, 5, APP_JOB_WAIT_ALL, 0.1);
    at(p, 3, 5, APP_JOB_WAIT_ALL, 0.1);
    at(p, 2, 4, APP_JOB_WAIT_NONE, 0.3);
    assert_int_equal(behind(p, 4, 6, &w), 2);
    assert_int_equal(w, 3);
    at(p, 2, 4, 1, 0.3);
    p[2].seen = 5; /* entered 5; its wait was said at 4 */
    p[2].heard = NOW - 3.0;
    assert_int_equal(behind(p, 4, 6, &w), 2);
    assert_int_equal(w, 1);
}

/*
 * A cycle of live waits (a deadlock among live chips): no chain ends, and the
 * one silent longest is named; equal silence goes to the one furthest back.
 */
static void test_cycle(void **state)
{
    app_job_peer_t p[3];
    int w;

    (void)state;
    at(p, 0, 3, APP_JOB_WAIT_ALL, 0.0);
    at(p, 1, 2, 2, 0.3);
    at(p, 2, 2, 1, 0.5);
    assert_int_equal(behind(p, 3, 3, &w), 2);
    at(p, 2, 2, 1, 0.3);
    p[1].seen = 1;
    p[1].waits_at = 1;
    assert_int_equal(behind(p, 3, 3, &w), 1);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_none_behind), cmocka_unit_test(test_race_same_point),
        cmocka_unit_test(test_chain),       cmocka_unit_test(test_barrier_and_stale),
        cmocka_unit_test(test_cycle),
    };

    return tpu_test_main(argc, argv, "watch", tests, sizeof tests / sizeof tests[0]);
}
