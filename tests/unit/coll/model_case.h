/*
 * One request's model schedule against the walk of every chip and step
 * (model_case.c), for the tests of the model's shortcuts.
 */
#ifndef TPU_TEST_MODEL_CASE_H
#define TPU_TEST_MODEL_CASE_H

#include "tpu/coll.h"

#include <stdint.h>

/* What tpu_test_model_case() found the model schedule to be. */
#define TPU_TEST_ORBIT  1 /* the chips of one domain (orbit timing) */
#define TPU_TEST_REPEAT 2 /* a ring's compact steps (timing_repeat.c) */
#define TPU_TEST_LINES  4 /* line timing (lines.c) */

/*
 * The collective 'kind' with --algo 'algo' over the torus axes 'axes' (or, with
 * 'mesh_spec', the groups of its mesh axes 'axes'), 'per_member' bytes a member, on
 * tpu_test_model_pod()'s pod and link model (changed by 'tweak' when not NULL):
 * the plan's model schedule, built as the selector builds it, and the schedule of
 * every chip and step, both walked, must give the same modeled time, per-axis
 * statistics, pod flows and steps (==), and the plan's own model that time; a
 * shortcut must hold fewer flows.  Returns the TPU_TEST_ flags of the model
 * schedule, or -1 when 'may_refuse' and the algorithm refuses the shape.
 */
int tpu_test_model_case(const char *shape, const char *wrap, void (*tweak)(tpu_link_model_t *),
                        const char *mesh_spec, const char *axes, tpu_coll_kind_t kind,
                        const char *algo, uint64_t per_member, int may_refuse);

#endif /* TPU_TEST_MODEL_CASE_H */
