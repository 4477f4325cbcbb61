# The workloads (issue 11): .npy I/O and the MLP training step.  Included by
# emulator/CMakeLists.txt; names are relative to emulator/.
set(TPU_WORKLOAD_SOURCES
  workloads/npy.c
  workloads/mlp_comm.c
  workloads/mlp.c)
