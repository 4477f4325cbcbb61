# tpuemu replay under mpirun (issue 12): every collective execution of a module,
# loops unrolled, with real bytes over MPI, verified, modeled time equal to the replay's.
set(HLO ${PROJECT_SOURCE_DIR}/tests/fixtures/hlo)
tpu_prog_mpi_test(replay_loops 16 0
  "real run over MPI \\(16 ranks\\): 16 executions with real bytes, 0 wrong elements, 0 not run$"
  replay ${HLO}/while_4x4.hlo --topology 4x4)
tpu_prog_mpi_test(replay_features 8 0
  "real run over MPI \\(8 ranks\\): 10 executions with real bytes, 0 wrong elements, 0 not run$"
  replay ${HLO}/features.hlo --topology 2x4)
tpu_prog_mpi_test(replay_bad_group_chip 16 nonzero "bad_group_chip\\.hlo:5:3: .*names device 16"
  replay ${HLO}/bad_group_chip.hlo --topology 4x4)
tpu_prog_mpi_test(replay_bad_option 4 nonzero "unknown option '--bogus'" replay
  ${HLO}/coll_4x4.hlo --bogus 1)
