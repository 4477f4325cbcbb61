/*
 * Helpers shared by the chip model's files (hbm.c, vmem.c, mxu.c, vpu.c,
 * roofline.c).  Private to emulator/.
 */
#ifndef TPU_CHIP_INTERNAL_H
#define TPU_CHIP_INTERNAL_H

#include "tpu/chip.h"
#include "tpu/mxu.h"
#include "tpu/roofline.h"
#include "tpu/vmem.h"
#include "tpu/vpu.h"

#include "clock.h" /* common/: tpu__now_s() */

#include <stddef.h>
#include <stdint.h>

/* Sublanes and lanes of a VPU tile: (8, 128). */
#define TPU__SUBLANES 8
#define TPU__LANES    128

static inline int64_t tpu__cdiv(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

static inline int64_t tpu__round_up(int64_t a, int64_t b)
{
    return tpu__cdiv(a, b) * b;
}

/*
 * Write 'bytes' into 'buf' as "512 B", "1.50 KiB", "160.0 MiB", "4.00 GiB":
 * binary units, 'decimals' digits after the point.
 */
void tpu__fmt_bytes(double bytes, int decimals, char *buf, size_t len);


/* The peak FLOP/s of the MXU for input type 'in' on 'spec' (0 if unsupported). */
double tpu__mxu_peak(const tpu_chip_spec_t *spec, tpu_dtype_t in);

/*
 * Host work space of the built-in ops (widened bf16 blocks and the like: host
 * memory, not VMEM), kept by 'vmem' from call to call so that repeated ops do
 * not pay for fresh pages each time.  Contents are unspecified.  NULL when the
 * host has no memory.  Owned by 'vmem'; valid until the next call or
 * tpu_vmem_destroy().
 */
void *tpu__vmem_host_scratch(tpu_vmem_t *vmem, size_t bytes);

/* Check a VPU op's description: the op exists, the type is allowed for it, the
 * sizes are positive and below 2^56 elements. */
tpu_status_t tpu__vpu_check(const tpu_vpu_desc_t *desc, tpu_err_t *err);

/* The elements of a rows x cols array rounded up to whole (8,128) tiles. */
int64_t tpu__vpu_padded(int64_t rows, int64_t cols);

/* Is 'op' a row op (softmax, sum, reduce_max) rather than an elementwise one? */
int tpu__vpu_is_row_op(tpu_vpu_op_t op);

#endif /* TPU_CHIP_INTERNAL_H */
