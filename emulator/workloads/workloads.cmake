# The workloads: .npy I/O, what they share (workload_util.c: random numbers, a
# transpose), the MLP (mlp.c: the model and its weights; mlp_cost.c:
# the costs of a chip; mlp_step.c: the training step; mlp_comm.c: its collectives
# over the mesh) and the transformer (transformer_ops.c: shared ops;
# transformer_params.c: parameters; transformer_fwd.c, transformer_bwd.c: the
# passes; transformer_step.c: a step; transformer_fsdp.c: the fsdp
# weight gathers and gradient reduces; transformer_layout.c: the mesh axes and
# what must divide; transformer_comm.c: its collectives over
# the mesh, the chips in lock step; transformer_pod.c: its public face for the
# command line; transformer_cost.c, transformer_cost_prog.c: its step cost on a
# pod from a mesh alone; transformer_cost_time.c: the engine's time of each of its
# collectives; transformer_hbm.c: its HBM items; transformer_presets.c:
# published model shapes and the planner's fitted constants).  Included by emulator/CMakeLists.txt; names
# are relative to emulator/.
set(TPU_WORKLOAD_SOURCES
  workloads/npy.c
  workloads/workload_util.c
  workloads/mlp_comm.c
  workloads/mlp.c
  workloads/mlp_cost.c
  workloads/mlp_step.c
  workloads/transformer_ops.c
  workloads/transformer_params.c
  workloads/transformer_fwd.c
  workloads/transformer_bwd.c
  workloads/transformer_step.c
  workloads/transformer_fsdp.c
  workloads/transformer_layout.c
  workloads/transformer_comm.c
  workloads/transformer_pod.c
  workloads/transformer_cost.c
  workloads/transformer_cost_prog.c
  workloads/transformer_cost_time.c
  workloads/transformer_hbm.c
  workloads/transformer_presets.c)
