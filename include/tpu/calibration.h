/*
 * The calibration profiles of the chip generations: the constants of the
 * calibrated mode (--calibrated), fitted to public measurements of each
 * generation, each with its source and the rows it was fitted on.
 *
 * A profile has two parts, each measured on some generation:
 * - the links: a link efficiency (the fraction of the published ICI rate the
 *   links reach) and a start cost added once per collective;
 * - the MXU: a start cost per op, the fraction of peak the MXU sustains, the
 *   fraction of the HBM rate a kernel's DMA sustains and the block edge of the
 *   pipeline whose first loads and last store are not overlapped (see
 *   tpu_mxu_seconds_calibrated() in tpu/mxu.h).
 * A chip without measurements of its own borrows each part from the nearest
 * measured generation, named in 'links_from' / 'mxu_from'.  The default
 * (formula) model uses none of this.
 *
 * Ownership: the profiles are static tables; the pointers stay valid.
 */
#ifndef TPU_CALIBRATION_H
#define TPU_CALIBRATION_H

#include "tpu/chip.h"
#include "tpu/link.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tpu_chip_calibration {
    const char *chip;         /* the preset ("v5e") */
    const char *links_from;   /* the generation the link constants were measured on */
    double ici_efficiency;    /* fraction of ici_bw the links reach */
    double launch;            /* seconds added once per collective */
    const char *links_source; /* the measurements and the rows fitted */
    const char *mxu_from;     /* the generation the MXU constants were measured on */
    double mxu_launch;        /* seconds added once per matmul */
    double mxu_efficiency;    /* fraction of the MXU peak sustained */
    double hbm_efficiency;    /* fraction of hbm_bw a kernel's DMA sustains */
    int mxu_block;            /* pipeline block edge (elements) */
    const char *mxu_source;   /* the measurements and the rows fitted */
} tpu_chip_calibration_t;

/*
 * The profile of the preset called 'chip' (aliases as tpu_chip_preset()); a
 * chip that is no preset gets the profile of the default v5e.  Never NULL.
 */
TPU_API const tpu_chip_calibration_t *tpu_chip_calibration(const char *chip);

/* Does the profile of 'chip' come from its own measurements (both parts)? */
TPU_API int tpu_chip_calibration_measured(const tpu_chip_calibration_t *cal);

/* Set the calibrated link constants of 'spec's profile in 'link'. */
TPU_API void tpu_chip_link_calibrate(const tpu_chip_spec_t *spec, tpu_link_model_t *link);

#ifdef __cplusplus
}
#endif

#endif /* TPU_CALIBRATION_H */
