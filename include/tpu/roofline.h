/*
 * The roofline cost model of the chip's built-in operations (the MXU matmul of
 * tpu/mxu.h, the VPU ops of tpu/vpu.h), and the report every op returns.
 *
 * Two times are reported for every op:
 *
 * - The roofline time (tpu_roofline_t, modeled_us): the whole-array formula of
 *   the reference table (shared/reference/roofline_public.csv),
 *     modeled = max(compute, memory),
 *     compute = hw_flops / peak,  memory = hbm_bytes / hbm_bw,
 *   hbm_bytes = inputs read once + output written once (bf16 2 bytes, f32 4,
 *   int8 1, int32 4; an int8 matmul's output is int32).  'flops' is the useful
 *   work (2mkn for a matmul) and sets the arithmetic intensity; 'hw_flops' is
 *   what the unit spends: a matmul pads m, k and n up to multiples of the MXU
 *   edge (128, or 256 on v6e and v7), a VPU op rounds its elements up to whole
 *   (8,128) tiles (a row op first pads each row to whole 128-lane vectors).  peak: bf16_flops,
 * int8_ops or f32_flops for a matmul by input type, vpu_flops for the VPU.  'bound' says which term
 * is larger.
 *
 * - The pipelined time (tpu_vmem_stats_t, modeled_us): what the VMEM executor
 *   (vmem.h) gets for the block plan the op actually runs, with the prologue
 *   and epilogue DMA exposed, max(DMA, compute) per grid step and the re-fetches
 *   of blocks that a blocked matmul needs.  It is never below the roofline time
 *   (up to rounding), and approaches it for large arrays.  tpuemu reports both;
 *   the roofline time is the one checked against the reference table.
 */
#ifndef TPU_ROOFLINE_H
#define TPU_ROOFLINE_H

#include "tpu/status.h"
#include "tpu/vmem.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    TPU_ROOFLINE_MEMORY = 0,
    TPU_ROOFLINE_COMPUTE = 1
} tpu_roofline_bound_t;

/* "memory" or "compute". */
TPU_API const char *tpu_roofline_bound_name(tpu_roofline_bound_t bound);

/* The roofline of one op (see the top of this file). */
typedef struct tpu_roofline {
    double flops;               /* useful FLOPs: 2mkn, or elements x FLOPs per element */
    double hw_flops;            /* FLOPs the unit spends, dimensions padded */
    double hbm_bytes;           /* inputs read once + output written once */
    double intensity;           /* flops / hbm_bytes */
    double peak;                /* FLOP/s of the unit and type */
    double compute_us;          /* hw_flops / peak */
    double memory_us;           /* hbm_bytes / hbm_bw */
    double modeled_us;          /* max(compute_us, memory_us) */
    tpu_roofline_bound_t bound; /* COMPUTE when compute_us > memory_us */
} tpu_roofline_t;

/* The result of a built-in op: its roofline, and what the executor did. */
typedef struct tpu_roofline_report {
    tpu_roofline_t roofline;
    tpu_vmem_stats_t pipeline;
    int64_t block[3]; /* the block plan: bm, bk, bn (matmul) or the block size (VPU) */
} tpu_roofline_report_t;

#ifdef __cplusplus
}
#endif

#endif /* TPU_ROOFLINE_H */
