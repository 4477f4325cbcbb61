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
# The transformer's report (issue 24, train_xfmr_report.py): the JSON of a real run and of
# --model-only runs (data/tensor, fsdp/dcn, a 4096-chip pod) read with json, their keys and
# relations, model_flops by hand, the real run equal to --model-only, the CSV, trace, heatmap.
add_test(NAME train_transformer_report COMMAND python3
  ${CMAKE_CURRENT_SOURCE_DIR}/train_xfmr_report.py $<TARGET_FILE:tpuemu>
  ${PROJECT_BINARY_DIR}/tests/train_transformer_report)
set_tests_properties(train_transformer_report PROPERTIES LABELS cli TIMEOUT 120)
# Its trace (2 steps: "step s" and its 68 compute ops each on every chip's compute track,
# the collectives with their steps) and heatmap, checked as the MLP's are.
set(TRAIN_XFMR_SMALL train --model transformer --topology 2x2 --mesh data=2,tensor=2 --layers 1
  --d-model 32 --heads 4 --d-ff 64 --vocab 48 --seq 16 --batch 8 --steps 2)
tpu_report_test(trace_train_transformer ${TRACE_CHECK} --chips 4 --links 8 --compute 138
  --min-ops 20 ${OUT}/train_xfmr.json -- ${TPUEMU} ${TRAIN_XFMR_SMALL} --trace
  ${OUT}/train_xfmr.json)
tpu_report_test(heatmap_train_transformer ${SVG_CHECK} --links 8 --panels 1 ${OUT}/train_xfmr.svg
  -- ${TPUEMU} ${TRAIN_XFMR_SMALL} --heatmap ${OUT}/train_xfmr.svg)
tpu_report_test(trace_train_transformer_model_only ${TRACE_CHECK} --chips 16 --links 48
  --compute 69 ${OUT}/train_xfmr_mo.json -- ${TPUEMU} train --model transformer --model-only
  --topology 4x4 --mesh fsdp=4,tensor=4 --layers 1 --batch 16 --trace ${OUT}/train_xfmr_mo.json)
