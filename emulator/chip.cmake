# The chip model (issue 7): HBM allocator, VMEM kernel executor, MXU and VPU ops,
# roofline cost model.  Included by emulator/CMakeLists.txt; names are relative
# to emulator/.  The MXU's host arithmetic uses OpenBLAS (PkgConfig::OPENBLAS,
# linked by tpu_emulator).
set(TPU_CHIP_SOURCES
  chip_util.c
  hbm.c
  vmem.c
  mxu.c
  vpu.c
  roofline.c)
