/*
 * Repeated steps in the timing walk (timing_repeat.c): a ring's compact model
 * schedule, whose middle step stands for every middle step of the ring.
 */
#ifndef TPU_TIMING_REPEAT_H
#define TPU_TIMING_REPEAT_H

#include "schedule.h"
#include "timing.h"

/* Is 'name' a ring algorithm that builds through tpu__ring_allgather() (group_ring,
 * group_rs_ag, snake), whose model schedule may be compact? */
int tpu__repeat_ring_algo(const char *name);

/* The steps one phase of a ring over 'group' members builds: 3 in compact form (a ring of
 * 8 members or more), else every step, floor(group / 2). */
int tpu__repeat_ring_steps(int group, int compact);

/*
 * Mark the compact ring schedule 'ps' (phases of 3 steps: first, middle, last, as
 * allgather_group_ring.c builds them, turned round and concatenated as the
 * reduce-scatter and the psum do) with its repeat counts: the middle step of each
 * phase runs floor(group / 2) - 2 times.  Returns 0 (ps left as it is) when its
 * middle steps are not the flows of the steps before them, in the same order, with
 * their dependencies there (a half step with empty flows): then the caller builds
 * every step.  TPU_ERR_NO_MEMORY is returned as -1.
 */
int tpu__repeat_note(tpu_plan_sched_t *ps, int group);

/* The steps and the flows the schedule 'ps' stands for (its repeats counted). */
int64_t tpu__repeat_steps(const tpu_plan_sched_t *ps);
int64_t tpu__repeat_flows(const tpu_plan_sched_t *ps);

/*
 * The runs 2 .. repeat[s] of step s of 'ps', after the walk (timing.c) has timed
 * its first: each from the previous one, exactly as the walk of every step would
 * time them.  @return TPU_OK or TPU_ERR_NO_MEMORY.
 */
tpu_status_t tpu__timing_repeat(tpu_timing_t *t, const tpu_plan_sched_t *ps, int s);

#endif /* TPU_TIMING_REPEAT_H */
