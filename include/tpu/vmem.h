/*
 * VMEM and the kernel executor: kernels described the way Pallas describes them.
 *
 * A kernel (tpu_vmem_kernel_t) is a grid of 1 to 3 dimensions, and for each input
 * and output array a block shape and an index map: a function from the grid
 * indices of a step to the block indices of that array (block index b along a
 * dimension covers elements b*block .. b*block + block - 1).  A body runs once per
 * grid step on the blocks in VMEM.  That is pl.pallas_call(body, grid=...,
 * in_specs=[pl.BlockSpec(block, index_map), ...], out_specs=...).
 *
 * The executor (tpu_vmem_run) walks the grid in row-major order (the last grid
 * dimension fastest) on a real VMEM buffer of the chip's size, with two buffers
 * per input and output block (double buffering):
 *
 *   step s:   body(s) computes on slot A     DMA in  HBM->VMEM of step s+1's
 *                                            blocks into slot B, DMA out
 *                                            VMEM->HBM of the blocks step s-1
 *                                            finished
 *
 * As in Pallas, an input block whose index did not change from the previous
 * step is not fetched again, and an output block is written back when its index
 * changes or after the last step; a body that revisits the same output block on
 * consecutive steps (a reduction over the innermost grid dimension) accumulates
 * in VMEM.  On the host the DMA and the body run one after the other; the
 * overlap is in the time model:
 *
 *   modeled = in(0)/bw                                     prologue
 *           + sum over steps s of max(compute(s), (in(s+1) + out(s-1))/bw)
 *           + out(last)/bw                                 epilogue
 *
 * where in(s) are the bytes fetched for step s, out(s) the bytes written back
 * after step s, bw the HBM bandwidth, and compute(s) the modeled time the body
 * reports for its step (see tpu_mxu_seconds() in mxu.h, tpu_vpu_seconds() in vpu.h).
 *
 * Blocks at the edge of an array may stick out of it (the array need not be a
 * multiple of the block).  The executor fills the outside part of an input
 * block with zeros (Pallas leaves it unspecified) and writes back only the
 * inside part of an output block; only the inside part counts as DMA bytes.
 *
 * The plan must fit VMEM: 2 x (sum of the input and output block bytes) +
 * scratch.  On chips with several TensorCores (megacore: v4, v5p, v7) a kernel's
 * grid is split between the cores, each with its own VMEM and its own double
 * buffers, so the plan must fit one core's share: vmem_bytes / tensorcores.
 * A plan that does not fit is TPU_ERR_RESOURCE_EXHAUSTED:
 *   "VMEM plan needs 160.0 MiB (2 x 3 blocks), capacity 128.0 MiB"
 *
 * Not thread-safe: one tpu_vmem_t belongs to one chip, driven by one thread.
 */
#ifndef TPU_VMEM_H
#define TPU_VMEM_H

#include "tpu/chip.h"
#include "tpu/status.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TPU_VMEM_MAX_GRID     3  /* grid dimensions */
#define TPU_VMEM_MAX_RANK     4  /* dimensions of an array */
#define TPU_VMEM_MAX_OPERANDS 16 /* inputs plus outputs of one kernel */

typedef struct tpu_vmem tpu_vmem_t;

/*
 * An index map: write the block indices of an array (one per array dimension,
 * into 'block_idx_p') for the grid step whose indices are 'grid_idx' (one per
 * grid dimension).  Must be a pure function of its arguments.
 */
typedef void (*tpu_vmem_index_map_fn_t)(const int64_t *grid_idx, int64_t *block_idx_p, void *arg);

/* One input or output array of a kernel, and how it is blocked. */
typedef struct tpu_vmem_operand {
    void *data;       /* the array in HBM, row-major; read-only for inputs; borrowed */
    size_t elem_size; /* bytes per element */
    int rank;         /* 1 to TPU_VMEM_MAX_RANK */
    int64_t shape[TPU_VMEM_MAX_RANK]; /* the whole array */
    int64_t block[TPU_VMEM_MAX_RANK]; /* the block shape */
    /* Grid indices -> block indices; NULL maps grid dimension d to array
     * dimension d (for d below both ranks) and every other dimension to 0. */
    tpu_vmem_index_map_fn_t index_map;
    void *index_map_arg;
} tpu_vmem_operand_t;

/* A block in VMEM as the body sees it. */
typedef struct tpu_vmem_ref {
    void *data;       /* the block, row-major in 'block' shape; NULL when only modelling */
    size_t elem_size; /* bytes per element */
    int rank;
    int64_t block[TPU_VMEM_MAX_RANK]; /* the layout of 'data' */
    int64_t valid[TPU_VMEM_MAX_RANK]; /* the part inside the array, from the start */
    int64_t index[TPU_VMEM_MAX_RANK]; /* block indices the index map returned */
    uint64_t version; /* changes each time the slot is (re)filled: a new fetch for an
                       * input, a new block for an output; never 0 */
    int first;        /* input: fetched for this step; output: first step on this block */
    int last;         /* output: last step on this block before it is written back */
} tpu_vmem_ref_t;

/* One grid step as the body sees it. */
typedef struct tpu_vmem_step {
    const tpu_chip_spec_t *spec;     /* the chip, for the cost helpers */
    int grid_rank;                   /* 1 to 3 */
    int64_t grid[TPU_VMEM_MAX_GRID]; /* the grid */
    int64_t idx[TPU_VMEM_MAX_GRID];  /* this step's indices */
    int64_t step;                    /* this step's number, 0 .. steps-1 */
    int model_only;                  /* 1: no data; the body only reports its cost */
    void *scratch;                   /* kernel scratch in VMEM (NULL when none or modelling) */
    size_t scratch_bytes;            /* its size; kept from step to step */
    double flops;                    /* [out] FLOPs of this step (0 on entry) */
    double compute_s;                /* [out] modeled seconds of this step (0 on entry) */
} tpu_vmem_step_t;

/*
 * The body: compute on 'refs' (the n_in input blocks, then the n_out output
 * blocks) and report the step's cost in step->flops and step->compute_s.
 * When step->model_only is set, the refs carry no data and the body only
 * reports the cost.  A status other than TPU_OK stops the kernel.
 */
typedef tpu_status_t (*tpu_vmem_body_fn_t)(tpu_vmem_step_t *step, tpu_vmem_ref_t *refs, void *arg,
                                           tpu_err_t *err);

/* A kernel.  Everything it points to is borrowed for the duration of the call. */
typedef struct tpu_vmem_kernel {
    const char *name;                /* for messages; may be NULL */
    int grid_rank;                   /* 1 to 3 */
    int64_t grid[TPU_VMEM_MAX_GRID]; /* steps per grid dimension, each >= 1 */
    int n_in;
    const tpu_vmem_operand_t *in;
    int n_out;
    const tpu_vmem_operand_t *out;
    size_t scratch_bytes; /* single-buffered VMEM scratch (accumulators) */
    tpu_vmem_body_fn_t body;
    void *body_arg;
} tpu_vmem_kernel_t;

/* What one run of a kernel did and what it would take on the chip. */
typedef struct tpu_vmem_stats {
    int64_t steps;           /* grid steps */
    int64_t fetches;         /* input blocks copied HBM -> VMEM */
    int64_t fetches_skipped; /* input blocks kept because their index did not change */
    int64_t writebacks;      /* output blocks copied VMEM -> HBM */
    double bytes_in;         /* DMA bytes HBM -> VMEM */
    double bytes_out;        /* DMA bytes VMEM -> HBM */
    double flops;            /* sum of the steps' FLOPs */
    double vmem_bytes;       /* the plan: 2 x blocks + scratch */
    double compute_us;       /* sum of the steps' compute time */
    double dma_us;           /* (bytes_in + bytes_out) / HBM bandwidth */
    double prologue_us;      /* first fetch, not overlapped */
    double epilogue_us;      /* last write-back, not overlapped */
    double modeled_us;       /* the pipelined time (see the top of this file) */
    double host_us;          /* wall time the host took */
} tpu_vmem_stats_t;

/*
 * Create the VMEM of a chip described by 'spec' (copied).  Host memory for the
 * buffer is taken on the first run, of the size the largest plan needs.
 * @param [out] vmem_p  the caller owns it and frees it with tpu_vmem_destroy()
 * @return TPU_OK, TPU_ERR_INVALID (NULL, or a spec with no VMEM, HBM bandwidth
 *         or TensorCores), TPU_ERR_NO_MEMORY.
 */
TPU_API tpu_status_t tpu_vmem_create(const tpu_chip_spec_t *spec, tpu_vmem_t **vmem_p,
                                     tpu_err_t *err);

/* Free 'vmem' and its buffer.  NULL is a no-op. */
TPU_API void tpu_vmem_destroy(tpu_vmem_t *vmem);

/* The chip 'vmem' was created for (owned by 'vmem'). */
TPU_API const tpu_chip_spec_t *tpu_vmem_spec(const tpu_vmem_t *vmem);

/* The bytes one kernel's plan may use: vmem_bytes / tensorcores. */
TPU_API uint64_t tpu_vmem_capacity(const tpu_vmem_t *vmem);

/* The host bytes the VMEM buffer holds now (0 until a kernel ran). */
TPU_API uint64_t tpu_vmem_host_bytes(const tpu_vmem_t *vmem);

/*
 * The VMEM bytes 'kernel' needs: 2 x (sum of its block bytes) + scratch, each
 * buffer rounded up to 64 bytes.  Checks the kernel's description.
 * @return TPU_OK or TPU_ERR_INVALID (the message names the bad field).
 */
TPU_API tpu_status_t tpu_vmem_plan_bytes(const tpu_vmem_kernel_t *kernel, uint64_t *bytes_p,
                                         tpu_err_t *err);

/*
 * Run 'kernel' on 'vmem': DMA the blocks, call the body for every grid step,
 * write the outputs back to their arrays.  The arrays are borrowed for the call.
 * @param [out] stats_p  what the run did and its modeled time (may be NULL;
 *                       written only on success)
 * @return TPU_OK, TPU_ERR_INVALID (bad description, or an index map that
 *         returned a block outside its array), TPU_ERR_RESOURCE_EXHAUSTED (the
 *         plan does not fit VMEM), TPU_ERR_NO_MEMORY, or the body's status.
 *         After an error the output arrays hold a partial result.
 */
TPU_API tpu_status_t tpu_vmem_run(tpu_vmem_t *vmem, const tpu_vmem_kernel_t *kernel,
                                  tpu_vmem_stats_t *stats_p, tpu_err_t *err);

/*
 * Like tpu_vmem_run() without data: walk the grid, ask the body for each step's
 * cost (step->model_only is 1, the refs' data NULL) and return the modeled time.
 * The operands' data pointers are not used and may be NULL.  Takes no VMEM host
 * memory, so it answers for any size at once.
 * @return as tpu_vmem_run().
 */
TPU_API tpu_status_t tpu_vmem_model(tpu_vmem_t *vmem, const tpu_vmem_kernel_t *kernel,
                                    tpu_vmem_stats_t *stats_p, tpu_err_t *err);

#ifdef __cplusplus
}
#endif

#endif /* TPU_VMEM_H */
