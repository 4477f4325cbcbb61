# The capacity planner (issue 25).  Included by tests/cli/CMakeLists.txt.
# --search on a 2x2 pod (ranked, fitting, the best equal to a direct run), the input
# pipeline worked out by hand, a flag beside a preset (planner_check.py).
add_test(NAME train_planner_cli COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/planner_check.py
  $<TARGET_FILE:tpuemu>)
set_tests_properties(train_planner_cli PROPERTIES LABELS cli TIMEOUT 120)
# The step model against MaxText's measured MFU (bench/maxtext_compare.py over the public
# rows of shared/reference/maxtext_mfu_public.csv): every row within the issue's goal, 10%
# (docs/planner.md gives the table).  Skipped (77) without the reference data.
add_test(NAME train_planner_maxtext COMMAND sh -c
  "[ -f \"$1\" ] || exit 77; python3 \"$2\" --tpuemu \"$3\" --csv \"$1\" --tolerance 10" sh
  ${PROJECT_SOURCE_DIR}/../shared/reference/maxtext_mfu_public.csv
  ${PROJECT_SOURCE_DIR}/bench/maxtext_compare.py $<TARGET_FILE:tpuemu>)
set_tests_properties(train_planner_maxtext PROPERTIES LABELS cli TIMEOUT 300
  SKIP_RETURN_CODE 77)
