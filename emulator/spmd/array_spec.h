/* Partition specs of sharded arrays (array_spec.c).  Private to emulator/spmd. */
#ifndef TPU_SPMD_ARRAY_SPEC_H
#define TPU_SPMD_ARRAY_SPEC_H

#include "tpu/mesh.h"
#include "tpu/spmd.h"
#include "tpu/status.h"

#include <stddef.h>
#include <stdint.h>

#define MAXD TPU_ARRAY_MAX_DIMS
#define MAXA TPU_MESH_MAX_AXES

typedef struct spec {
    int n[MAXD];
    int ax[MAXD][MAXA]; /* mesh axes of each dimension, slowest first */
} spec_t;

/* Parse the partition spec 'text' of an array of 'ndims' dimensions over 'mesh'. */
tpu_status_t tpu__array_spec_parse(const tpu_mesh_t *mesh, const char *text, int ndims, spec_t *sp,
                                   tpu_err_t *err);
/* The product of the sizes of the mesh axes dimension d is sharded over. */
int tpu__array_spec_prod(const tpu_mesh_t *mesh, const spec_t *sp, int d);
/* Dimension d's entry of the spec as text: None, 'data' or ('data','model'). */
void tpu__array_spec_entry_str(const tpu_mesh_t *mesh, const spec_t *sp, int d, char *buf,
                               size_t len);
/* Remove the mesh axes 'axes' (n of them) from every dimension of 'sp'. */
void tpu__array_spec_remove(spec_t *sp, int ndims, const int *axes, int n);
/* Insert an unsharded dimension at 'at' (the spec then has ndims + 1). */
void tpu__array_spec_insert_dim(spec_t *sp, int ndims, int at);
/* Delete dimension 'at' of a spec of 'ndims' dimensions. */
void tpu__array_spec_delete_dim(spec_t *sp, int ndims, int at);
/* The block index along dimension d of the shard chip 'chip' holds. */
int64_t tpu__array_block_index(const tpu_mesh_t *mesh, const spec_t *sp, int d, int chip);

#endif
