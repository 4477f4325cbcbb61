/*
 * HBM: the per-chip allocator of the emulated high-bandwidth memory.
 *
 * A tpu_hbm_t accounts for the chip's HBM capacity (16 GB on v5e, 96 GB on v5p,
 * ...) and hands out host memory for the arrays a chip holds.  Host memory is
 * taken lazily, one calloc per allocation and only of the bytes asked for, so an
 * emulated 16 GB chip that holds 10 MB of arrays costs 10 MB of host memory, and
 * 16 chips of one host do not need 16 x 16 GB.  Pages the C library maps for a
 * large calloc are only touched when written, so even a large allocation that
 * is never written costs little.
 *
 * Asking for more than the capacity left is TPU_ERR_RESOURCE_EXHAUSTED with a
 * message in the words XLA uses:
 *   "RESOURCE_EXHAUSTED: HBM of chip v5e: requested 4.00 GiB, in use 14.00 GiB,
 *    capacity 14.90 GiB"
 * (the v5e preset has 16 GB = 16e9 bytes = 14.90 GiB).
 *
 * tpu_hbm_reserve() accounts without any host memory, for models that track
 * sizes only (the sim transport, "tpuemu model").
 *
 * Not thread-safe: one tpu_hbm_t belongs to one chip, driven by one thread.
 */
#ifndef TPU_HBM_H
#define TPU_HBM_H

#include "tpu/chip.h"
#include "tpu/status.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tpu_hbm tpu_hbm_t;

/*
 * Create the HBM of a chip described by 'spec' (its name and hbm_bytes are
 * copied; 'spec' is not kept).  No host memory is taken for the capacity.
 * @param [in]  spec    the chip; hbm_bytes must be positive
 * @param [out] hbm_p   the new HBM; the caller owns it and frees it with
 *                      tpu_hbm_destroy()
 * @return TPU_OK, TPU_ERR_INVALID (NULL or non-positive capacity),
 *         TPU_ERR_NO_MEMORY.
 */
TPU_API tpu_status_t tpu_hbm_create(const tpu_chip_spec_t *spec, tpu_hbm_t **hbm_p, tpu_err_t *err);

/* Free 'hbm' and every allocation still live in it.  NULL is a no-op. */
TPU_API void tpu_hbm_destroy(tpu_hbm_t *hbm);

/*
 * Allocate 'bytes' of zeroed HBM.  The HBM owns the memory: the caller frees it
 * with tpu_hbm_free(), or tpu_hbm_destroy() frees it.  The pointer is aligned to
 * 16 bytes at least; 0 bytes gives a valid, unique pointer.
 * @param [out] ptr_p   the host address of the allocation (set only on success)
 * @return TPU_OK, TPU_ERR_RESOURCE_EXHAUSTED (capacity; the message names the
 *         request, the bytes in use and the capacity), TPU_ERR_NO_MEMORY (the
 *         host could not back it), TPU_ERR_INVALID (NULL arguments).
 */
TPU_API tpu_status_t tpu_hbm_alloc(tpu_hbm_t *hbm, uint64_t bytes, void **ptr_p, tpu_err_t *err);

/*
 * Return an allocation of tpu_hbm_alloc() on this 'hbm'.  NULL is a no-op; a
 * pointer that this HBM did not hand out is undefined behaviour, as with free().
 */
TPU_API void tpu_hbm_free(tpu_hbm_t *hbm, void *ptr);

/*
 * Account for 'bytes' of HBM without host memory (size-only models).  Fails
 * exactly as tpu_hbm_alloc() does when the capacity is exceeded.
 * @return TPU_OK, TPU_ERR_RESOURCE_EXHAUSTED, TPU_ERR_INVALID.
 */
TPU_API tpu_status_t tpu_hbm_reserve(tpu_hbm_t *hbm, uint64_t bytes, tpu_err_t *err);

/* Give back 'bytes' taken with tpu_hbm_reserve() (clamped to the bytes reserved). */
TPU_API void tpu_hbm_unreserve(tpu_hbm_t *hbm, uint64_t bytes);

/* Bytes in use (allocations plus reservations), the peak of that, the capacity. */
TPU_API uint64_t tpu_hbm_in_use(const tpu_hbm_t *hbm);
TPU_API uint64_t tpu_hbm_peak(const tpu_hbm_t *hbm);
TPU_API uint64_t tpu_hbm_capacity(const tpu_hbm_t *hbm);

/* Host bytes actually allocated for the live allocations (no reservations). */
TPU_API uint64_t tpu_hbm_host_bytes(const tpu_hbm_t *hbm);

/* The number of live allocations. */
TPU_API int64_t tpu_hbm_count(const tpu_hbm_t *hbm);

#ifdef __cplusplus
}
#endif

#endif /* TPU_HBM_H */
