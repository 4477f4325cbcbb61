/*
 * Reductions of the reducing collectives (psum, reduce-scatter): sum, max, min.
 * Named apart from the chip's operations (tpu/vpu.h, tpu/mxu.h).
 */
#ifndef TPU_REDOP_H
#define TPU_REDOP_H

#include "tpu/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    TPU_REDOP_SUM = 0,
    TPU_REDOP_MAX = 1,
    TPU_REDOP_MIN = 2,
    TPU_REDOP_COUNT
} tpu_redop_t;

/* "sum", "max", "min"; "?" for anything else. */
TPU_API const char *tpu_redop_name(tpu_redop_t op);
/* Parse a name.  @return TPU_OK, or TPU_ERR_INVALID listing the known ones. */
TPU_API tpu_status_t tpu_redop_parse(const char *text, tpu_redop_t *op_p, tpu_err_t *err);

#ifdef __cplusplus
}
#endif

#endif /* TPU_REDOP_H */
