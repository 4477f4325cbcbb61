/* The HLO tests' shared pieces: test_hlo.c's parse helpers and the replay cases of
 * test_hlo_replay.c that its main() runs. */
#ifndef TPU_TEST_HLO_H
#define TPU_TEST_HLO_H

#include "tpu/hlo.h"

#ifndef TPU_SOURCE_DIR
#define TPU_SOURCE_DIR "."
#endif
#define FIX TPU_SOURCE_DIR "/tests/fixtures/hlo/"

/* The parsed file at 'path' / of 'text' (named t.hlo); the test fails on an error. */
tpu_hlo_file_t *hlo_parse_path(const char *path);
tpu_hlo_file_t *hlo_parse_text(const char *text);

/* The replay's cases (test_hlo_replay.c). */
void test_replay_loops(void **state);
void test_replay_async_overlap(void **state);
void test_replay_features(void **state);
void test_replay_group_collectives(void **state);
void test_replay_errors(void **state);
void test_fuzz(void **state);
void test_oom_loop(void **state);
void test_reference_modules(void **state);

#endif
