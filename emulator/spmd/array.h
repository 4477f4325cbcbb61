/* A sharded array's internals (array.c), shared with array_coll.c.  Private to emulator/spmd. */
#ifndef TPU_SPMD_ARRAY_H
#define TPU_SPMD_ARRAY_H

#include "tpu/spmd.h"

#include "array_spec.h"

#include <stdint.h>

struct tpu_array {
    tpu_spmd_t *spmd;
    int ndims;
    int64_t shape[MAXD];
    int64_t local_shape[MAXD];
    tpu_dtype_t dtype;
    spec_t spec;
    int64_t local_count;
    uint64_t local_bytes;
    void **data; /* per local chip; NULL entries without data */
    int reserved;
};

/* An array of the given local shape and spec (global shape computed). */
tpu_status_t tpu__array_new(tpu_spmd_t *s, int ndims, const int64_t *local_shape, tpu_dtype_t dtype,
                            const spec_t *sp, tpu_array_t **arr_p, tpu_err_t *err);

#endif
