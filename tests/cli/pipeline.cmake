# The real input pipeline of train --model transformer under mpirun on 4 ranks
# (train_pipeline_check.py): --prefetch 0, 1, 2 bit-identical, the measured wait in the JSON,
# CSV, text and measured trace; a slow --input-rate makes the measured wait longer and the
# modeled step input-bound; SIGINT ends a paced read.
tpu_mpirun_command(cmd 4)
foreach(part same rate)
  add_test(NAME cli_train_pipeline_${part} COMMAND python3
    ${CMAKE_CURRENT_SOURCE_DIR}/train_pipeline_check.py ${part} $<TARGET_FILE:tpuemu>
    ${PROJECT_BINARY_DIR}/tests/train_pipeline_${part} ${cmd})
  set_tests_properties(cli_train_pipeline_${part} PROPERTIES LABELS "cli;mpi" TIMEOUT 90
    PROCESSORS 2)
endforeach()
# The measured timeline of a transformer run (its own processes, on its own clock).
tpu_mpirun_command(cmd 4 $<TARGET_FILE:tpuemu> train --model transformer --topology 2x2
  --mesh data=2,tensor=2 --layers 1 --d-model 32 --heads 4 --d-ff 64 --vocab 48 --seq 16
  --batch 8 --steps 2 --quiet --trace ${OUT}/train_xfmr_measured.json --trace-measured)
add_test(NAME cli_trace_train_transformer_measured COMMAND python3 ${TRACE_CHECK} --chips 4
  --links 8 --measured ${OUT}/train_xfmr_measured.json -- ${cmd})
set_tests_properties(cli_trace_train_transformer_measured PROPERTIES LABELS "cli;mpi" TIMEOUT 90
  PROCESSORS 2)
