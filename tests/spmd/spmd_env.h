/* The SPMD collective tests' runtime (spmd_env.c). */
#ifndef TPU_TEST_SPMD_ENV_H
#define TPU_TEST_SPMD_ENV_H

#include "tpu/chip.h"
#include "tpu/coll.h"
#include "tpu/mesh.h"
#include "tpu/spmd.h"
#include "tpu/xport.h"

#include <stdint.h>

/* One test's pod, mesh, transport and SPMD runtime. */
typedef struct env {
    tpu_topo_t topo;
    tpu_chip_spec_t chip;
    tpu_link_model_t link;
    tpu_mesh_t *mesh;
    tpu_xport_t *x;
    tpu_spmd_t *s;
} env_t;

/* A runtime of v5e chips on 'shape' (all axes wrapped when 'wrap'), mesh 'spec'
 * (explicit 'devices' when not NULL), 'transport' 0 loopback, 1 sim, 2 none
 * (model only). */
void spmd_env_open_slices(env_t *e, const char *shape, int wrap, int slices, const char *spec,
                          const int32_t *devices, int transport);

/* spmd_env_open_slices() on one slice. */
void spmd_env_open(env_t *e, const char *shape, int wrap, const char *spec, const int32_t *devices,
                   int transport);

/* Close what spmd_env_open*() opened. */
void spmd_env_close(env_t *e);

/* An f32 array placed from 'host'. */
tpu_array_t *spmd_arr_f32(env_t *e, int ndims, const int64_t *shape, const char *spec,
                          const float *host);

/* spmd_env_open() on the loopback transport (no explicit devices) with one f32
 * array of 'ndims' dimensions 'shp', spec 'spec', placed from 'host'. */
tpu_array_t *spmd_env_open_arr(env_t *e, const char *shape, int wrap, const char *mesh, int ndims,
                               const int64_t *shp, const char *spec, const float *host);

/* Destroy 'a' and close e. */
void spmd_env_close_arr(env_t *e, tpu_array_t *a);

/* The shard of the chip at mesh position 'pos' (loopback: local index = chip). */
const float *spmd_shard_at(env_t *e, const tpu_array_t *a, int pos);

/* The shards at mesh positions 0 .. npos-1 of 'a': position p's first n values
 * equal want[p * stride ..], exactly (stride 0: every shard the same). */
void spmd_expect_shards(env_t *e, const tpu_array_t *a, int npos, const float *want, int stride,
                        int n);

/* x[i] = i for i < n. */
void spmd_iota(float *x, int n);

/* got[i] == want[i] for i < n, exactly; the test fails naming the first difference. */
void spmd_expect_f32(const float *got, const float *want, int n);

/* Fail the test with err->msg unless 'status' is TPU_OK. */
void spmd_check(tpu_status_t status, const tpu_err_t *err);

/* 16 values of the docs' worked examples. */
extern const float spmd_f16[16];

#endif
