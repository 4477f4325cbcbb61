# HLO replay (issue 12): the parser on the fixtures of tests/fixtures/hlo, the
# group spellings and modes, errors, a mutation fuzzer, the OOM loop, the cost
# walk, and a tier over ../shared/reference/hlo (skipped when the folder is absent).
tpu_add_unit_test(test_hlo TIMEOUT 120)
target_link_libraries(test_hlo PRIVATE tpu_test_support)
target_compile_definitions(test_hlo PRIVATE TPU_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
  TPU_HLO_REFERENCE_DIR="${PROJECT_SOURCE_DIR}/../shared/reference/hlo")
