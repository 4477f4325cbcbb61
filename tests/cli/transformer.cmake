# The one-chip transformer (issue 24 groundwork) against PyTorch: a driver of the
# library on files and a script that trains the same model in torch from the same
# init files.  Skipped (exit 77) when /usr/bin/python3 has no torch.  Included by
# tests/cli/CMakeLists.txt.
add_executable(transformer_run transformer_run.c)
target_link_libraries(transformer_run PRIVATE tpuemu_static tpu_warnings)
add_test(NAME transformer_torch COMMAND /usr/bin/python3
  ${CMAKE_CURRENT_SOURCE_DIR}/transformer_torch.py $<TARGET_FILE:transformer_run>
  ${PROJECT_BINARY_DIR}/tests/transformer_torch)
set_tests_properties(transformer_torch PROPERTIES LABELS cli TIMEOUT 120 SKIP_RETURN_CODE 77)
# tpuemu train --model transformer on 2x2 (data=2,tensor=2, loopback) against --topology 1x1:
# losses and final weights equal, the JSON's keys, a bad token id named (train_xfmr_check.py).
add_test(NAME train_transformer_cli COMMAND python3
  ${CMAKE_CURRENT_SOURCE_DIR}/train_xfmr_check.py $<TARGET_FILE:tpuemu>
  ${PROJECT_BINARY_DIR}/tests/train_transformer_cli)
set_tests_properties(train_transformer_cli PROPERTIES LABELS cli TIMEOUT 60)
