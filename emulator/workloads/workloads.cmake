# The workloads (issue 11): .npy I/O and the MLP (mlp.c: the model and its weights;
# mlp_cost.c: the costs of a chip; mlp_step.c: the training step; mlp_comm.c: its
# collectives over the mesh).  Included by emulator/CMakeLists.txt; names are
# relative to emulator/.
set(TPU_WORKLOAD_SOURCES
  workloads/npy.c
  workloads/mlp_comm.c
  workloads/mlp.c
  workloads/mlp_cost.c
  workloads/mlp_step.c)
