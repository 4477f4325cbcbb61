/* Shared collective test helpers (test_coll.h). */
#include "test_coll.h"

#include "tpu/xport.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

void tpu_test_topo(tpu_topo_t *t, const char *shape, const char *wrap, int slices)
{
    tpu_err_t err = {0};
    int dims[TPU_MAX_AXES], w[TPU_MAX_AXES], naxes, is_auto;

    assert_int_equal(tpu_topo_parse_shape(shape, dims, &naxes, &err), TPU_OK);
    assert_int_equal(tpu_topo_parse_wrap(wrap, naxes, w, &is_auto, &err), TPU_OK);
    assert_int_equal(tpu_topo_init(t, naxes, dims, w, slices, &err), TPU_OK);
}

int tpu_test_model_pod(tpu_topo_t *topo, tpu_link_model_t *link, const char *shape,
                       const char *wrap)
{
    tpu_err_t err = {0};
    int dims[TPU_MAX_AXES], w[TPU_MAX_AXES], naxes, is_auto, a;

    assert_int_equal(tpu_topo_parse_shape(shape, dims, &naxes, &err), TPU_OK);
    if (tpu_topo_parse_wrap(wrap, naxes, w, &is_auto, &err) != TPU_OK) {
        return 0; /* "x,z" on a 2D shape */
    }
    assert_int_equal(tpu_topo_init(topo, naxes, dims, w, 1, &err), TPU_OK);
    memset(link, 0, sizeof(*link));
    link->ici_bw = 90e9;
    link->ici_latency = 1e-6;
    link->dcn_bw = 12.5e9;
    link->dcn_latency = 10e-6;
    for (a = 0; a < TPU_MAX_AXES; a++) {
        link->host_dims[a] = a < naxes ? (dims[a] % 2 == 0 ? 2 : 1) : 1;
    }
    return 1;
}

void tpu_test_same_stats(const tpu_coll_result_t *a, const tpu_coll_result_t *b)
{
    int k;

    for (k = 0; k <= TPU_MAX_AXES; k++) {
        assert_true(a->axis[k].bytes == b->axis[k].bytes);
        assert_true(a->axis[k].busy_us == b->axis[k].busy_us);
        assert_true(a->axis[k].utilisation == b->axis[k].utilisation);
    }
}

void tpu_test_coll_target(const tpu_topo_t *topo, const char *mesh_spec, const char *axes,
                          uint64_t per_member, tpu_mesh_t **mesh, tpu_groups_t *groups,
                          tpu_coll_desc_t *d)
{
    tpu_err_t err = {0};

    if (mesh_spec != NULL) {
        assert_int_equal(tpu_mesh_create(topo, mesh_spec, NULL, 0, mesh, &err), TPU_OK);
        assert_int_equal(tpu_mesh_groups(*mesh, axes, groups, &err), TPU_OK);
        d->groups = groups;
        d->bytes = (uint64_t)groups->size * per_member;
    } else {
        assert_int_equal(tpu_topo_parse_axes(topo, axes, &d->axes, &err), TPU_OK);
        d->bytes = (uint64_t)tpu_topo_group_size(topo, d->axes) * per_member;
    }
}

/* Index-tagged data: element i of chip c is (c * 64 + i) % 4096 (exact in f32, i32;
 * bf16 takes it modulo 256).  'arg' points to the dtype. */
static void fill(int chip, void *buf, uint64_t bytes, void *arg)
{
    tpu_dtype_t dtype = *(const tpu_dtype_t *)arg;
    uint64_t i, n = bytes / (uint64_t)tpu_dtype_size(dtype);

    for (i = 0; i < n; i++) {
        int v = (int)((chip * 64 + i) % 4096);

        if (dtype == TPU_DTYPE_F32) {
            ((float *)buf)[i] = (float)v;
        } else if (dtype == TPU_DTYPE_I32) {
            ((int32_t *)buf)[i] = v;
        } else {
            float f = (float)(v % 256);
            uint32_t u;

            memcpy(&u, &f, 4);
            ((uint16_t *)buf)[i] = (uint16_t)(u >> 16);
        }
    }
}

/* Run 'plan' over a transport ('runs' times); check data against the reference when
 * it moves (loopback).  Returns the modeled microseconds. */
static double run_over(const tpu_coll_plan_t *plan, const tpu_topo_t *topo, int loopback, int runs,
                       const char *label)
{
    tpu_err_t err = {0};
    tpu_xport_t *x = NULL;
    tpu_coll_exec_t *exec = NULL;
    const tpu_coll_desc_t *d = tpu_coll_plan_desc(plan);
    uint64_t inb, outb;
    void **in = calloc((size_t)topo->nchips, sizeof(void *));
    void **out = calloc((size_t)topo->nchips, sizeof(void *));
    void *ref;
    double us = -1;
    int c, r;

    tpu_coll_plan_sizes(plan, &inb, &outb);
    ref = calloc(1, outb);
    for (c = 0; c < topo->nchips; c++) {
        in[c] = malloc(inb);
        out[c] = calloc(1, outb);
        fill(c, in[c], inb, (void *)&d->dtype);
    }
    if (loopback) {
        assert_int_equal(tpu_xport_loopback_create(topo->nchips, &x, &err), TPU_OK);
    } else {
        assert_int_equal(tpu_xport_sim_create(topo->nchips, &x, &err), TPU_OK);
    }
    if (tpu_coll_exec_create(plan, x, &exec, &err) != TPU_OK) {
        fail_msg("%s: run: %s", label, err.msg);
    }
    for (r = 0; r < runs; r++) {
        if (tpu_coll_exec_run(exec, NULL, in, out, &us, &err) != TPU_OK) {
            fail_msg("%s: run: %s", label, err.msg);
        }
    }
    for (c = 0; loopback && c < topo->nchips; c++) {
        if (d->kind == TPU_COLL_P2P && c != d->dst) {
            continue;
        }
        memset(ref, 0, outb);
        assert_int_equal(tpu_coll_reference(plan, c, fill, (void *)&d->dtype, ref, &err), TPU_OK);
        if (memcmp(ref, out[c], outb) != 0) {
            fail_msg("%s: chip %d differs from the reference", label, c);
        }
    }
    for (c = 0; c < topo->nchips; c++) {
        free(in[c]);
        free(out[c]);
    }
    free(in);
    free(out);
    free(ref);
    tpu_coll_exec_destroy(exec);
    tpu_xport_destroy(x);
    return us;
}

void tpu_test_check_transports(const tpu_coll_plan_t *plan, const tpu_topo_t *topo,
                               const char *label)
{
    tpu_err_t err = {0};
    tpu_coll_result_t res;
    double lb, sim;

    assert_int_equal(tpu_coll_plan_model(plan, &res, &err), TPU_OK);
    /* Twice over loopback: the run object's buffers are reused, and the result must
     * not change. */
    lb = run_over(plan, topo, 1, 2, label);
    sim = run_over(plan, topo, 0, 1, label);
    if (lb != res.modeled_us || sim != res.modeled_us) {
        fail_msg("%s (%s): model %.17g loopback %.17g sim %.17g", label, tpu_coll_plan_algo(plan),
                 res.modeled_us, lb, sim);
    }
}

int tpu_test_axis_masks(const tpu_topo_t *t, unsigned *masks, int *naxes)
{
    unsigned mask, all = ((1u << t->naxes) - 1) | (t->slices > 1 ? TPU_AXIS_MASK_DCN : 0);
    int n = 0, a;

    for (mask = 1; mask <= all && n < 32; mask++) {
        if ((mask & all) != mask || tpu_topo_group_size(t, mask) < 2) {
            continue;
        }
        masks[n] = mask;
        naxes[n] = 0;
        for (a = 0; a <= TPU_AXIS_DCN; a++) {
            naxes[n] += (mask >> a) & 1;
        }
        n++;
    }
    return n;
}

tpu_link_model_t tpu_test_easy_link(void)
{
    tpu_link_model_t l;

    memset(&l, 0, sizeof(l));
    l.ici_bw = 2e9;
    l.ici_latency = 1e-6;
    l.dcn_bw = 1e9;
    l.dcn_latency = 10e-6;
    l.pcie_bw = 1e10;
    l.ici_efficiency = 1;
    l.host_dims[0] = l.host_dims[1] = l.host_dims[2] = 1;
    return l;
}
