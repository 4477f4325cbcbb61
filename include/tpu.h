/*
 * libtpuemu, the whole public API in one include: every header of include/tpu/
 * but tpu/mpi.h, which includes <mpi.h> and is opt-in (include it where MPI is
 * wanted, as hwloc's hwloc/cuda.h).  Each header also compiles on its own.
 */
#ifndef TPU_H
#define TPU_H

/* Status codes and errors; the allocator hook; the version. */
#include "tpu/alloc.h"
#include "tpu/status.h"
#include "tpu/version.h"

/* Element types and reductions. */
#include "tpu/dtype.h"
#include "tpu/redop.h"

/* The torus, its meshes, groups and faults. */
#include "tpu/fault.h"
#include "tpu/groups.h"
#include "tpu/mesh.h"
#include "tpu/topo.h"

/* The chip model: generations, HBM, VMEM and kernels, MXU, VPU, their costs. */
#include "tpu/calibration.h"
#include "tpu/chip.h"
#include "tpu/hbm.h"
#include "tpu/mxu.h"
#include "tpu/roofline.h"
#include "tpu/vmem.h"
#include "tpu/vpu.h"

/* The pod, its transports, the collectives, remote DMA in kernels. */
#include "tpu/coll.h"
#include "tpu/link.h"
#include "tpu/pod.h"
#include "tpu/rdma.h"
#include "tpu/xport.h"

/* The SPMD layer, the HLO parser and replay, the workloads and their files. */
#include "tpu/hlo.h"
#include "tpu/mlp.h"
#include "tpu/npy.h"
#include "tpu/replay.h"
#include "tpu/spmd.h"
#include "tpu/transformer.h"
#include "tpu/transformer_cost.h"
#include "tpu/transformer_pod.h"
#include "tpu/transformer_presets.h"

#endif /* TPU_H */
