# The workloads (issue 11): .npy I/O and the MLP training step.  Included by
# emulator/CMakeLists.txt; names are relative to emulator/.
set(TPU_WORKLOAD_SOURCES
  workloads/npy.c
  workloads/mlp_comm.c
  workloads/mlp.c)
# The transformer on one chip (issue 24): ops, parameters, forward, backward, step.
list(APPEND TPU_WORKLOAD_SOURCES
  workloads/transformer_ops.c
  workloads/transformer_params.c
  workloads/transformer_fwd.c
  workloads/transformer_bwd.c
  workloads/transformer_step.c)
