# tpuemu replay (issue 12): replayed times against 'tpuemu model' (run side by
# side by a Python script that loads the JSON), the reference modules when
# ../shared/reference/hlo is there, and bad input: one line with the line number, exit 2.
set(HLO ${FIX}/hlo)
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  add_test(NAME cli_replay_vs_model COMMAND ${Python3_EXECUTABLE}
    ${CMAKE_CURRENT_SOURCE_DIR}/replay_check.py ${TPUEMU} ${HLO})
  set_tests_properties(cli_replay_vs_model PROPERTIES LABELS cli TIMEOUT 60)
endif()
tpu_cli_test(replay_help 0 "--device-order" ${TPUEMU} replay --help)
tpu_cli_test(replay_text 0 "ag_x +all-gather +x +4" ${TPUEMU} replay ${HLO}/coll_4x4.hlo
  --topology 4x4)
tpu_cli_test(replay_list 0 "3  third_16dev" ${TPUEMU} replay ${HLO}/multi.hlo --list)
tpu_cli_test(replay_default_module 0 "module 2 of 3" ${TPUEMU} replay ${HLO}/multi.hlo
  --topology 4x4)
tpu_cli_test(replay_trip_count 0 "a2a +all-to-all +y +4 +256.0 KiB +7 " ${TPUEMU} replay
  ${HLO}/while_4x4.hlo --topology 4x4 --trip-count unknown=7)
tpu_cli_test(replay_unknown_trip 0 "while 'unknown': trip count unknown" ${TPUEMU} replay
  ${HLO}/while_4x4.hlo --topology 4x4)
tpu_cli_test(replay_custom_call 0 "cc +custom-call .* 2\\.500 .* given" ${TPUEMU} replay
  ${HLO}/features.hlo --topology 2x4 --custom-call-us my_pallas_kernel=2.5)
tpu_cli_test(replay_dummy_entry_warns 0
  "the ENTRY 'dummy' reaches no collective, but 2 other computations hold some .'psum_test', line 16"
  ${TPUEMU} replay ${HLO}/dummy_entry.hlo --topology 2x2)
# 256 KiB psum over 4 chips on an open 2x2, as 'tpuemu model' gives it (8.369 us).
tpu_cli_test(replay_entry 0 "ar +psum +x,y +4 +256\\.0 KiB +1 +8\\.369" ${TPUEMU} replay
  ${HLO}/dummy_entry.hlo --topology 2x2 --entry %psum_test)
tpu_cli_test(replay_device_order 0 "ar_y +psum +x" ${TPUEMU} replay ${HLO}/coll_4x4.hlo
  --topology 4x4 --device-order 0,4,8,12,1,5,9,13,2,6,10,14,3,7,11,15)

# Bad input.
tpu_cli_test(replay_bad_truncated nonzero "bad_truncated\\.hlo:5:86: .*end of the file" ${TPUEMU}
  replay ${HLO}/bad_truncated.hlo --topology 4x4)
tpu_cli_test(replay_bad_group_spelling nonzero
  "bad_group_spelling\\.hlo:5:71: unknown replica_groups spelling" ${TPUEMU} replay
  ${HLO}/bad_group_spelling.hlo --topology 4x4)
tpu_cli_test(replay_bad_group_chip nonzero "bad_group_chip\\.hlo:5:3: .*names device 16" ${TPUEMU}
  replay ${HLO}/bad_group_chip.hlo --topology 4x4)
tpu_cli_test(replay_bad_partitions nonzero "features\\.hlo:4:1: .*runs on 8 devices.*16 chips"
  ${TPUEMU} replay ${HLO}/features.hlo --topology 4x4)
tpu_cli_test(replay_bad_missing nonzero "cannot read .*nothere\\.hlo" ${TPUEMU} replay
  ${HLO}/nothere.hlo)
tpu_cli_test(replay_bad_no_file nonzero "needs a module file" ${TPUEMU} replay --topology 4x4)
tpu_cli_test(replay_bad_module nonzero "--module 4: .* holds 3 modules" ${TPUEMU} replay
  ${HLO}/multi.hlo --module 4)
tpu_cli_test(replay_bad_device_order nonzero "not a permutation" ${TPUEMU} replay
  ${HLO}/coll_4x4.hlo --topology 4x4 --device-order 0,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14)
tpu_cli_test(replay_bad_trip_name nonzero "no while loop named 'nope'" ${TPUEMU} replay
  ${HLO}/while_4x4.hlo --topology 4x4 --trip-count nope=3)
tpu_cli_test(replay_bad_trip_value nonzero "trip count must be" ${TPUEMU} replay
  ${HLO}/while_4x4.hlo --trip-count unknown=x)
tpu_cli_test(replay_bad_option nonzero "unknown option '--bogus'" ${TPUEMU} replay
  ${HLO}/coll_4x4.hlo --bogus 1)

# The reference modules, when the shared folder is there (third-party text, read in place).
set(REF ${PROJECT_SOURCE_DIR}/../shared/reference/hlo)
if(EXISTS ${REF}/02_jaxfft-3d-alltoall-4x4-16dev.hlo)
  tpu_cli_test(replay_ref_02_v5e 0 "all-to-all-start\\.1 +all-to-all +x +4" ${TPUEMU} replay
    ${REF}/02_jaxfft-3d-alltoall-4x4-16dev.hlo --topology 4x4)
  tpu_cli_test(replay_ref_02_v5p 0 "all-to-all-start +all-to-all +z +4" ${TPUEMU} replay
    ${REF}/02_jaxfft-3d-alltoall-4x4-16dev.hlo --chip v5p --topology 2x2x4)
endif()
if(EXISTS ${REF}/03_jaxfft-3d-alltoall-2x4-8dev.hlo)
  tpu_cli_test(replay_ref_03 0 "all-to-all-start\\.1 +all-to-all +x +2" ${TPUEMU} replay
    ${REF}/03_jaxfft-3d-alltoall-2x4-8dev.hlo --topology 2x4)
endif()

# The README's examples.
tpu_cli_test(replay_readme_v5e 0 "ag\\.w2 +all-gather +x +4 +32\\.0 MiB +8" ${TPUEMU} replay
  ${HLO}/mlp_fsdp_tp_16dev.hlo --topology 4x4)
tpu_cli_test(replay_readme_v5p 0 "ar\\.y +psum +z +4 +4\\.0 MiB +8" ${TPUEMU} replay
  ${HLO}/mlp_fsdp_tp_64dev.hlo --chip v5p --topology 4x4x4)

# The JSON document, checked by the output layer's json_check.py.
if(COMMAND tpu_json_test)
  tpu_json_test(replay --has step_us --has compute_us --has comm_us --has exposed_comm_us
    --has collectives.0.name --has collectives.0.collective --has collectives.0.bytes
    --has collectives.0.group_size --has collectives.0.executions --has collectives.0.modeled_us
    --has compute.0.name --has compute.0.flops --has compute.0.bytes --has compute.0.modeled_us
    --equal devices=16 --equal chips=16
    -- ${TPUEMU} replay ${HLO}/mlp_fsdp_tp_16dev.hlo --topology 4x4 --json -)
endif()
tpu_cli_test(replay_json_dev_full nonzero "cannot write '/dev/full'" ${TPUEMU} replay
  ${HLO}/coll_4x4.hlo --topology 4x4 --json /dev/full)

# A replay refused after --trace and --heatmap were opened leaves neither file.
add_test(NAME cli_failed_replay_no_leftovers COMMAND bash
  ${CMAKE_CURRENT_SOURCE_DIR}/no_leftovers.sh ${TPUEMU} ${HLO})
set_tests_properties(cli_failed_replay_no_leftovers PROPERTIES LABELS cli TIMEOUT 60)

# Issue 26: the HBM fit, trip counts, the schedule estimate, backends, --by-source,
# --compare and the default slice, on the hand-counted fixtures (test_replay_fit
# checks the same figures through the library).
tpu_cli_test(replay_hbm_peak 0 "hbm peak +9\\.0 MiB +fits: of 14\\.9 GiB per chip .0%., at 'loop'"
  ${TPUEMU} replay ${HLO}/hbm_2x2.hlo --topology 2x2)
tpu_cli_test(replay_hbm_buffers 0 "ags +f32\\[1024,1024\\] +4\\.0 MiB +jit\\(fit\\)/all_gather"
  ${TPUEMU} replay ${HLO}/hbm_2x2.hlo --topology 2x2)
tpu_cli_test(replay_default_slice 0
  "no --topology: the module runs on 4 devices, so 2x2, the v5e's default slice" ${TPUEMU} replay
  ${HLO}/hbm_2x2.hlo)
tpu_cli_test(replay_default_slice_v5p 0 "pod +v5p 2x2x2 .wrap" ${TPUEMU} replay
  ${HLO}/features.hlo --chip v5p)
tpu_cli_test(replay_trips_chain 0
  "while 'chain' .line 177.: 5 trips, induction variable .0. from 0 by 2 while LT 10" ${TPUEMU}
  replay ${HLO}/trips_2x2.hlo --topology 2x2)
tpu_cli_test(replay_trips_unresolved 0
  "while 'fromparam': trip count unknown .the initial value of loop-state element .0. is not a constant"
  ${TPUEMU} replay ${HLO}/trips_2x2.hlo --topology 2x2)
tpu_cli_test(replay_backend_cpu 0 "backend +CPU .custom-call __onednn.matmul" ${TPUEMU} replay
  ${HLO}/cpu_2x2.hlo --topology 2x2)
tpu_cli_test(replay_comm_custom_call 0 "'halo' .my_halo_exchange. costs 0, and its name suggests it communicates"
  ${TPUEMU} replay ${HLO}/cpu_2x2.hlo --topology 2x2)
tpu_cli_test(replay_scheduled 0 "scheduled +10\\.473 us" ${TPUEMU} replay ${HLO}/cpu_2x2.hlo
  --topology 2x2)
tpu_cli_test(replay_by_source 0 "jit\\(step\\)/dot_general +2\\.265 +0\\.000 +0\\.06711" ${TPUEMU}
  replay ${HLO}/cpu_2x2.hlo --topology 2x2 --by-source 2)
tpu_cli_test(replay_compare 0 "collectives that differ .kind, axes, bytes. 4." ${TPUEMU} replay
  --compare ${HLO}/mlp_fsdp_tp_16dev.hlo ${HLO}/mlp_fsdp_tp_64dev.hlo)
if(COMMAND tpu_json_test)
  tpu_json_test(replay_fit --equal hbm_peak_bytes=9437188 --equal hbm_capacity_bytes=16000000000
    --equal hbm_fits=true --equal hbm_peak_at=loop --equal hbm_peak_buffers.0.name=ags
    --equal hbm_peak_buffers.0.bytes=4194304 --equal hbm_peak_buffers.0.shape=f32[1024,1024]
    "--equal" "hbm_peak_buffers.0.op_name=jit(fit)/all_gather" --equal loops.0.trip_count=4
    --equal loops.0.trip_count_known=true --has scheduled_step_us --equal backend=unknown
    --has mfu -- ${TPUEMU} replay ${HLO}/hbm_2x2.hlo --topology 2x2 --json -)
  tpu_json_test(replay_compare --equal a.devices=16 --equal b.devices=64 --equal b.topology=8x8
    --len collectives=4 --has a.hbm_peak_bytes --has b.scheduled_step_us -- ${TPUEMU} replay
    --compare ${HLO}/mlp_fsdp_tp_16dev.hlo ${HLO}/mlp_fsdp_tp_64dev.hlo --json -)
  tpu_json_test(replay_by_source "--equal" "by_source.0.op_name=jit(step)/psum"
    --has by_source.0.comm_us -- ${TPUEMU} replay ${HLO}/cpu_2x2.hlo --topology 2x2 --by-source 2
    --json -)
endif()
if(EXISTS ${REF}/04_xla-parser-tests-collectives.hlo)
  tpu_cli_test(replay_default_slice_20 0 "no --topology: the module runs on 20 devices, so 4x5"
    ${TPUEMU} replay ${REF}/04_xla-parser-tests-collectives.hlo --module 3)
endif()
