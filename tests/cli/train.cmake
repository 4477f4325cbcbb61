# tpuemu train (issue 11): success paths, the JSON report, the --init/--save round
# trip, model-only pod-scale runs, and every kind of bad input (exit 2, one line).
# Included by tests/cli/CMakeLists.txt (EXPECT, TPUEMU set there).
add_executable(train_npy_tool train_npy_tool.c)
target_link_libraries(train_npy_tool PRIVATE tpuemu_static tpu_warnings)
set(TRAIN_DATA ${PROJECT_BINARY_DIR}/tests/train_data)
set(USAGE ${CMAKE_CURRENT_SOURCE_DIR}/expect_usage.sh)

# The data, initial weights and broken files the tests use (128 rows, hidden 64).
add_test(NAME cli_train_data COMMAND train_npy_tool gen ${TRAIN_DATA} 128 64)
set_tests_properties(cli_train_data PROPERTIES FIXTURES_SETUP train_data LABELS cli TIMEOUT 30)

function(tpu_train_test name)
  add_test(NAME cli_train_${name} COMMAND ${ARGN})
  set_tests_properties(cli_train_${name} PROPERTIES LABELS cli TIMEOUT 60
    FIXTURES_REQUIRED train_data)
endfunction()

tpu_train_test(one_chip ${EXPECT} 0 "replicas over 'data' bit-identical after every step: yes"
  ${TPUEMU} train --topology 1x1 --steps 3 --hidden 64 --batch 32)
tpu_train_test(loopback_dp_tp ${EXPECT} 0 "strategy dp_tp.*" ${TPUEMU} train --topology 4x4
  --mesh data=4,model=4 --steps 2 --hidden 64 --batch 64 --dtype f32)
tpu_train_test(json ${CMAKE_CURRENT_SOURCE_DIR}/train_json.sh 3 ${TPUEMU} train --topology 2x2
  --mesh data=2,model=2 --steps 3 --hidden 64 --batch 32 --json -)
tpu_train_test(json_fsdp ${CMAKE_CURRENT_SOURCE_DIR}/train_json.sh 2 ${TPUEMU} train --topology
  2x2 --strategy fsdp --steps 2 --hidden 64 --batch 32 --json -)
# The transformer's axis names: fsdp is the data axis with strategy fsdp, tensor the
# model axis, dcn the data axis's outer factor across slices.
tpu_train_test(mesh_fsdp_name ${EXPECT} 0 "strategy fsdp.*" ${TPUEMU} train --topology 2x2
  --mesh fsdp=4 --steps 1 --hidden 64 --batch 32 --model-only)
tpu_train_test(mesh_tensor_name ${EXPECT} 0 "strategy dp_tp.*" ${TPUEMU} train --topology 2x2
  --mesh data=2,tensor=2 --steps 1 --hidden 64 --batch 32 --model-only)
tpu_train_test(mesh_dcn_name ${EXPECT} 0 "mesh data=8,model=1" ${TPUEMU} train --topology 2x2
  --slices 2 --mesh dcn=2,data=4 --steps 1 --hidden 64 --batch 32 --model-only)
tpu_train_test(roundtrip ${CMAKE_CURRENT_SOURCE_DIR}/train_roundtrip.sh ${TPUEMU}
  $<TARGET_FILE:train_npy_tool> ${TRAIN_DATA})
tpu_train_test(labels_int32 ${EXPECT} 0 "loss" ${TPUEMU} train --topology 1x1 --hidden 64
  --batch 64 --steps 3 --data ${TRAIN_DATA}/x.npy --labels ${TRAIN_DATA}/y32.npy)
# The shipped 3D config's mesh is one train takes (data x model over 4x4x4).
tpu_train_test(config_v5p_cube ${EXPECT} 0 "64 chips of v5p as 4x4x4, mesh data=16,model=4"
  ${TPUEMU} train --config ${PROJECT_SOURCE_DIR}/configs/v5p-4x4x4.yaml --model-only --steps 1)
tpu_train_test(model_only_pod ${EXPECT} 0 "modeled step [0-9.]+ us = compute" ${TPUEMU} train
  --model-only --chip v5p --topology 16x20x28 --mesh data=320,model=28 --hidden 16384
  --batch 81920)
# The issue's example: groups that are not whole torus axes (model = 5 of y times z).
tpu_train_test(model_only_pod_groups ${EXPECT} 0 "psum +model +y\\[5 of 20\\]\\*z +140 .*group" ${TPUEMU}
  train --model-only --chip v5p --topology 16x20x28 --mesh data=64,model=140 --hidden 16384
  --batch 65536)

# Bad input: exit 2 and one line naming the problem.
function(tpu_train_bad name regex)
  tpu_train_test(bad_${name} ${USAGE} ${regex} ${TPUEMU} train ${ARGN})
endfunction()
tpu_train_bad(batch "batch 30 is not divisible by the mesh's data axis \\(data=4\\)"
  --topology 2x2 --mesh data=4 --batch 30)
tpu_train_bad(hidden "hidden 30 is not divisible by the mesh's model axis \\(model=4\\)"
  --topology 2x2 --mesh model=4 --hidden 30)
tpu_train_bad(mesh_size "mesh data=3,model=5 has 15 positions, but the pod has 16 chips"
  --topology 4x4 --mesh data=3,model=5)
tpu_train_bad(mesh_axis "axis 'pipe' is unknown" --topology 4x4 --mesh data=4,pipe=4)
tpu_train_bad(hbm "RESOURCE_EXHAUSTED: the weights take [0-9]+ bytes .* per chip, more than the 16000000000 bytes" --model-only
  --topology 1x1 --hidden 70000)
tpu_train_bad(hbm_real "RESOURCE_EXHAUSTED: the weights take [0-9]+ bytes .* per chip, more than the 16000000000 bytes"
  --topology 1x1 --hidden 70000)
tpu_train_bad(strategy_dp "strategy dp replicates the weights, but the mesh has model=4"
  --topology 2x2 --mesh model=4 --strategy dp)
tpu_train_bad(strategy_name "unknown strategy 'zero3'" --strategy zero3)
tpu_train_bad(dtype "--dtype must be bf16 or f32, got 'fp8'" --dtype fp8)
tpu_train_bad(steps "--steps must be 1 to 1000000, got 0" --steps 0)
tpu_train_bad(data_alone "--data and --labels go together" --data ${TRAIN_DATA}/x.npy)
tpu_train_bad(model_only_data "--model-only runs without data" --model-only
  --data ${TRAIN_DATA}/x.npy --labels ${TRAIN_DATA}/y.npy)
tpu_train_bad(rows "the data has 128 rows, which is not a multiple of batch 48" --topology 1x1
  --batch 48 --hidden 64 --data ${TRAIN_DATA}/x.npy --labels ${TRAIN_DATA}/y.npy)
foreach(bad IN ITEMS bigendian:big-endian fortran:Fortran truncated:truncated
    malformed:malformed 783:must.have.shape..N,784.,.got..128,783.)
  string(REPLACE ":" ";" parts ${bad})
  list(GET parts 0 what)
  list(GET parts 1 regex)
  tpu_train_bad(npy_x_${what} "bad_x_${what}\\.npy: .*${regex}" --topology 1x1 --batch 64
    --hidden 64 --data ${TRAIN_DATA}/bad_x_${what}.npy --labels ${TRAIN_DATA}/y.npy)
endforeach()
tpu_train_bad(npy_y_short "bad_y_short\\.npy: the labels must be int32 or int64 of shape \\[128\\]"
  --topology 1x1 --batch 64 --hidden 64 --data ${TRAIN_DATA}/x.npy
  --labels ${TRAIN_DATA}/bad_y_short.npy)
tpu_train_bad(npy_y_f32 "bad_y_f32\\.npy: the labels must be int32 or int64" --topology 1x1
  --batch 64 --hidden 64 --data ${TRAIN_DATA}/x.npy --labels ${TRAIN_DATA}/bad_y_f32.npy)
tpu_train_bad(npy_y_range "bad_y_range\\.npy: label 12 at row 64 is outside the classes 0..9"
  --topology 1x1 --batch 64 --hidden 64 --data ${TRAIN_DATA}/x.npy
  --labels ${TRAIN_DATA}/bad_y_range.npy)
tpu_train_bad(npy_missing "nothere\\.npy: cannot open" --topology 1x1 --data
  ${TRAIN_DATA}/nothere.npy --labels ${TRAIN_DATA}/y.npy)
tpu_train_bad(init_shape "init_bad/w2\\.npy: w2 must have shape \\[64,64\\], got \\[64,65\\]"
  --topology 1x1 --batch 64 --hidden 64 --init ${TRAIN_DATA}/init_bad)
tpu_train_bad(init_hidden "init/w1\\.npy: w1 must have shape \\[784,128\\], got \\[784,64\\]"
  --topology 1x1 --batch 64 --hidden 128 --init ${TRAIN_DATA}/init)
# train --save: temporary files renamed into place once all are complete; a failed or
# interrupted save leaves the old checkpoint (train_save.sh).
add_test(NAME cli_train_save COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/train_save.sh ${TPUEMU} 7
  --topology 2x2 --hidden 64 --batch 16)
# The same for the transformer's checkpoint (20 parameters of the default two layers).
add_test(NAME cli_train_save_transformer COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/train_save.sh
  ${TPUEMU} 21 --model transformer --topology 2x2 --mesh data=2,tensor=2)
set_tests_properties(cli_train_save cli_train_save_transformer PROPERTIES LABELS "cli;probe"
  TIMEOUT 60)
