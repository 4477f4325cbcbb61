/* The SPMD collective tests' runtime: a pod, mesh, transport and SPMD runtime
 * opened and closed as one, f32 arrays placed from the host, and checks. */
#include "spmd_env.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>


void spmd_env_open_slices(env_t *e, const char *shape, int wrap, int slices, const char *spec,
                          const int32_t *devices, int transport)
{
    tpu_err_t err = {0};
    int dims[TPU_MAX_AXES], w[TPU_MAX_AXES] = {wrap, wrap, wrap}, naxes;

    memset(e, 0, sizeof(*e));
    assert_int_equal(tpu_topo_parse_shape(shape, dims, &naxes, &err), TPU_OK);
    assert_int_equal(tpu_topo_init(&e->topo, naxes, dims, w, slices, &err), TPU_OK);
    assert_int_equal(tpu_chip_preset("v5e", &e->chip, &err), TPU_OK);
    tpu_chip_link_model(&e->chip, &e->link);
    if (tpu_mesh_create(&e->topo, spec, devices, devices ? e->topo.nchips : 0, &e->mesh, &err) !=
        TPU_OK) {
        fail_msg("mesh: %s", err.msg);
    }
    if (transport == 0) {
        assert_int_equal(tpu_xport_loopback_create(e->topo.nchips, &e->x, &err), TPU_OK);
    } else if (transport == 1) {
        assert_int_equal(tpu_xport_sim_create(e->topo.nchips, &e->x, &err), TPU_OK);
    }
    if (tpu_spmd_create(&e->topo, &e->link, &e->chip, e->mesh, e->x, NULL, &e->s, &err) != TPU_OK) {
        fail_msg("spmd: %s", err.msg);
    }
}

void spmd_env_open(env_t *e, const char *shape, int wrap, const char *spec, const int32_t *devices,
                   int transport)
{
    spmd_env_open_slices(e, shape, wrap, 1, spec, devices, transport);
}

void spmd_env_close(env_t *e)
{
    tpu_spmd_destroy(e->s);
    tpu_xport_destroy(e->x);
    tpu_mesh_destroy(e->mesh);
}

/* An f32 array placed from 'host'. */
tpu_array_t *spmd_arr_f32(env_t *e, int ndims, const int64_t *shape, const char *spec,
                          const float *host)
{
    tpu_err_t err = {0};
    tpu_array_t *a = NULL;

    if (tpu_array_create(e->s, ndims, shape, TPU_DTYPE_F32, spec, &a, &err) != TPU_OK) {
        fail_msg("array: %s", err.msg);
    }
    assert_int_equal(tpu_array_place(a, host, &err), TPU_OK);
    return a;
}

tpu_array_t *spmd_env_open_arr(env_t *e, const char *shape, int wrap, const char *mesh, int ndims,
                               const int64_t *shp, const char *spec, const float *host)
{
    spmd_env_open(e, shape, wrap, mesh, NULL, 0);
    return spmd_arr_f32(e, ndims, shp, spec, host);
}

void spmd_env_close_arr(env_t *e, tpu_array_t *a)
{
    tpu_array_destroy(a);
    spmd_env_close(e);
}

/* The shard of the chip at mesh position 'pos' (loopback: local index = chip). */
const float *spmd_shard_at(env_t *e, const tpu_array_t *a, int pos)
{
    return tpu_array_local(a, tpu_mesh_chip(e->mesh, pos));
}

void spmd_expect_f32(const float *got, const float *want, int n)
{
    int i;

    for (i = 0; i < n; i++) {
        if (got[i] != want[i]) {
            fail_msg("element %d: got %g, want %g", i, (double)got[i], (double)want[i]);
        }
    }
}

void spmd_expect_shards(env_t *e, const tpu_array_t *a, int npos, const float *want, int stride,
                        int n)
{
    int p;

    for (p = 0; p < npos; p++) {
        spmd_expect_f32(spmd_shard_at(e, a, p), want + (ptrdiff_t)stride * p, n);
    }
}

void spmd_iota(float *x, int n)
{
    int i;

    for (i = 0; i < n; i++) {
        x[i] = (float)i;
    }
}

void spmd_check(tpu_status_t status, const tpu_err_t *err)
{
    if (status != TPU_OK) {
        fail_msg("%s", err->msg);
    }
}


const float spmd_f16[16] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 1, 2};
