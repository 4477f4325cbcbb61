/*
 * The transformer's step cost model (tpu/transformer_cost.h) against figures
 * worked out here from the model's formulas: for L=1 D=64 H=4 F=128 V=64 S=16
 * B=4 (f32) on one v5e chip and on two chips as tensor=2, the ops of a step
 * (each matmul m x k x n of the forward and backward written out below, timed
 * through the MXU roofline, and each VPU pass through the VPU roofline: those
 * rooflines are the chip model's, not the code under test), the step (one
 * chip: compute alone; tensor=2: compute plus every psum, all exposed, each
 * timed by the engine over the tensor axis), the collectives' count and bytes,
 * the HBM items, the model FLOPs 6 N B S + 12 L B S^2 D and the MFU.
 */
#include "tpu/mesh.h"
#include "tpu/mxu.h"
#include "tpu/pod.h"
#include "tpu/spmd.h"
#include "tpu/transformer_cost.h"
#include "tpu/vpu.h"

#include "test_main.h"
#include "test_support.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

enum {
    L = 1,
    D = 64,
    H = 4,
    F = 128,
    V = 64,
    S = 16,
    B = 4,
    DH = D / H
};

static tpu_pod_t *make_pod(const char *shape)
{
    tpu_pod_t *pod = tpu_test_pod("v5e", shape);

    assert_non_null(pod);
    return pod;
}

static void config(tpu_xfmr_config_t *m)
{
    tpu_xfmr_config_init(m);
    m->layers = L;
    m->d_model = D;
    m->heads = H;
    m->d_ff = F;
    m->vocab = V;
    m->seq = S;
    m->batch = B;
    m->precision = TPU_XFMR_F32;
}

static double mxu(const tpu_chip_spec_t *chip, int64_t m, int64_t k, int64_t n)
{
    tpu_mxu_desc_t d;
    tpu_roofline_t rl;

    tpu_mxu_desc_init(&d, m, k, n, TPU_DTYPE_F32);
    d.out = TPU_DTYPE_F32;
    assert_int_equal(tpu_mxu_roofline(chip, &d, &rl, NULL), TPU_OK);
    return rl.modeled_us;
}

static double vpu(const tpu_chip_spec_t *chip, tpu_vpu_op_t op, int64_t rows, int64_t cols)
{
    tpu_vpu_desc_t d;
    tpu_roofline_t rl;

    tpu_vpu_desc_init(&d, op, TPU_DTYPE_F32, rows, cols);
    assert_int_equal(tpu_vpu_roofline(chip, &d, &rl, NULL), TPU_OK);
    return rl.modeled_us;
}

/*
 * The compute of one chip's step with t-way tensor sharding (one chip: t = 1):
 * T = B S tokens, Dl = D/t, Fl = F/t, Vl = V/t, nh = H/t heads.
 */
static double compute_by_hand(const tpu_chip_spec_t *c, int t, double *flops)
{
    const int64_t T = B * S, Dl = D / t, Fl = F / t, Vl = V / t, nh = H / t, bnh = B * nh;
    const int64_t npar = V / t * D + S * D + L * (2 * D + 4 * D * Dl + 2 * D * Fl) + D + D * Vl;
    const int64_t mm[][4] = {
        /* forward: q, k, v; q k^T and p v per sequence and head; wo; w1; w2; logits */
        {T, D, Dl, 3},
        {S, DH, S, bnh},
        {S, S, DH, bnh},
        {T, Dl, D, 1},
        {T, D, Fl, 1},
        {T, Fl, D, 1},
        {T, D, Vl, 1},
        /* backward: dunembed, daf; dgu, dw2, dw1, dm; dwo, do; dv, dp, dq, dk per head;
         * dwq, dwk, dwv and da three times */
        {D, T, Vl, 1},
        {T, Vl, D, 1},
        {T, D, Fl, 1},
        {Fl, T, D, 1},
        {D, T, Fl, 1},
        {T, Fl, D, 1},
        {Dl, T, D, 1},
        {T, D, Dl, 1},
        {S, S, DH, bnh},
        {S, DH, S, bnh},
        {S, S, DH, bnh},
        {S, S, DH, bnh},
        {D, T, Dl, 3},
        {T, Dl, D, 3},
    };
    double us = 0;
    size_t i;

    *flops = 0;
    for (i = 0; i < sizeof(mm) / sizeof(mm[0]); i++) {
        us += (double)mm[i][3] * mxu(c, mm[i][0], mm[i][1], mm[i][2]);
        *flops += 2.0 * (double)(mm[i][0] * mm[i][1] * mm[i][2] * mm[i][3]);
    }
    /* VPU: the embedding add; per layer two RMSNorms (mul, sum, mul, mul), scale+mask and
     * softmax over the scores, two residual adds, GELU; the final norm; the log-sum-exp;
     * backward: dlogits (a softmax pass), three norm backwards (mul, sum, mul, sum, add),
     * GELU', the softmax backward (mul, sum, mul), dembed/dpos; the SGD update. */
    us += vpu(c, TPU_VPU_ADD, T, D);
    us += 3 * (3 * vpu(c, TPU_VPU_MUL, T, D) + vpu(c, TPU_VPU_SUM, T, D));
    us += vpu(c, TPU_VPU_MUL, bnh * S, S) + vpu(c, TPU_VPU_SOFTMAX, bnh * S, S);
    us += 2 * vpu(c, TPU_VPU_ADD, T, D) + vpu(c, TPU_VPU_GELU, T, Fl);
    us += 2 * vpu(c, TPU_VPU_SOFTMAX, T, Vl);
    us += 3 * (2 * vpu(c, TPU_VPU_MUL, T, D) + 2 * vpu(c, TPU_VPU_SUM, T, D) +
               vpu(c, TPU_VPU_ADD, T, D));
    us += vpu(c, TPU_VPU_GELU, T, Fl);
    us += 2 * vpu(c, TPU_VPU_MUL, bnh * S, S) + vpu(c, TPU_VPU_SUM, bnh * S, S);
    us += vpu(c, TPU_VPU_ADD, T, 2 * D);
    us += vpu(c, TPU_VPU_ADD, 1, npar);
    return us;
}

/* The HBM of one chip, f32, with t-way tensor sharding. */
static uint64_t hbm_by_hand(int t)
{
    const int64_t T = B * S, Dl = D / t, Fl = F / t, Vl = V / t, nh = H / t;
    const int64_t kv = B * nh * S * DH, scores = B * nh * S * S;
    const int64_t params = Vl * D + S * D + L * (2 * D + 4 * D * Dl + 2 * D * Fl) + D + D * Vl;
    const int64_t act =
        L * (6 * T * D + 2 * T + 2 * T * Dl + 2 * kv + scores + 2 * T * Fl) + 3 * T * D + T;
    const int64_t wide = Fl > Dl ? (Fl > Vl ? Fl : Vl) : (Dl > Vl ? Dl : Vl);

    return 4 * (uint64_t)(2 * params + act + (T * Vl + 3 * T) + (scores + T * Dl + 2 * kv) +
                          (3 * T * D + T * wide) + 2 * T);
}

static double model_flops_by_hand(void)
{
    const double n = L * (4.0 * D * D + 2.0 * D * F) + (double)D * V;

    return 6 * n * B * S + 12.0 * L * B * S * S * D;
}

static void one_chip(void **state)
{
    tpu_pod_t *pod = make_pod("1x1");
    const tpu_chip_spec_t *chip = tpu_pod_chip(pod);
    tpu_xfmr_config_t m;
    tpu_xfmr_cost_t c;
    tpu_err_t err = {0};
    double flops, want;
    uint64_t sum = 0;
    int k;

    (void)state;
    config(&m);
    assert_int_equal(tpu_xfmr_cost_run(pod, &m, NULL, &c, &err), TPU_OK);
    want = compute_by_hand(chip, 1, &flops);
    assert_true(fabs(c.compute_us - want) <= 1e-9 * want);
    assert_true(fabs(c.step_us - want) <= 1e-9 * want); /* nothing to wait for */
    assert_int_equal(c.ncolls, 0);
    assert_true(c.comm_us == 0 && c.exposed_comm_us == 0);
    assert_true(fabs(c.model_flops - model_flops_by_hand()) < 1);
    assert_true(fabs(c.chip_flops - flops) < 1 && fabs(flops - model_flops_by_hand()) < 1);
    assert_true(fabs(c.mfu - c.model_flops / (c.step_us * 1e-6 * chip->bf16_flops)) < 1e-12);
    assert_int_equal(c.hbm_peak_bytes, hbm_by_hand(1));
    for (k = 0; k < c.nitems; k++) {
        sum += c.items[k].bytes;
    }
    assert_int_equal(sum, c.hbm_peak_bytes);
    tpu_xfmr_cost_fini(&c);
    tpu_pod_destroy(pod);
}

/* The engine's time of a psum (max: pmax) of 'count' f32 over tensor=2. */
static double psum_us(tpu_spmd_t *spmd, tpu_redop_t op, uint64_t count)
{
    const tpu_spmd_call_t *call;
    double us;

    assert_int_equal(tpu_spmd_psum(spmd, "tensor", TPU_DTYPE_F32, op, count, NULL, NULL, NULL),
                     TPU_OK);
    call = tpu_spmd_call_at(spmd, tpu_spmd_call_count(spmd) - 1);
    us = call->modeled_us;
    tpu_spmd_log_clear(spmd);
    return us;
}

static void tensor_two(void **state)
{
    tpu_pod_t *pod = make_pod("1x2");
    const tpu_chip_spec_t *chip = tpu_pod_chip(pod);
    const int64_t T = B * S;
    /* what, floats per call, calls per step (L = 1): every one a psum over tensor */
    const struct {
        const char *what;
        int64_t floats;
        int count;
        tpu_redop_t op;
    } want[] = {{"embed", T * D, 1, TPU_REDOP_SUM},     {"attn_out", T * D, L, TPU_REDOP_SUM},
                {"mlp_out", T * D, L, TPU_REDOP_SUM},   {"vocab_max", T, 1, TPU_REDOP_MAX},
                {"vocab_sum", 2 * T, 1, TPU_REDOP_SUM}, {"d_final", T * D, 1, TPU_REDOP_SUM},
                {"d_mlp_in", T * D, L, TPU_REDOP_SUM},  {"d_attn_in", T * D, L, TPU_REDOP_SUM}};
    tpu_xfmr_config_t m;
    tpu_xfmr_cost_t c;
    tpu_mesh_t *mesh = NULL;
    tpu_spmd_t *spmd = NULL;
    tpu_err_t err = {0};
    double flops, compute, comm = 0;
    size_t i;

    (void)state;
    config(&m);
    assert_int_equal(tpu_xfmr_cost_run(pod, &m, "tensor=2", &c, &err), TPU_OK);
    assert_int_equal(tpu_mesh_create(tpu_pod_topo(pod), "tensor=2", NULL, 0, &mesh, &err), TPU_OK);
    assert_int_equal(tpu_spmd_create_pod(pod, mesh, NULL, NULL, &spmd, &err), TPU_OK);
    compute = compute_by_hand(chip, 2, &flops);
    assert_true(fabs(c.compute_us - compute) <= 1e-9 * compute);
    assert_true(fabs(c.chip_flops - flops) < 1 && fabs(2 * flops - model_flops_by_hand()) < 1);
    assert_int_equal(c.ncolls, (int)(sizeof(want) / sizeof(want[0])));
    for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        int k = tpu_xfmr_cost_find(&c, want[i].what, TPU_COLL_PSUM, want[i].op, "tensor",
                                   (uint64_t)want[i].floats * 4);
        double us = psum_us(spmd, want[i].op, (uint64_t)want[i].floats);

        assert_true(k >= 0);
        assert_int_equal(c.colls[k].count, want[i].count);
        assert_int_equal(c.colls[k].exposed, 1);
        assert_int_equal(c.colls[k].group_size, 2);
        assert_int_equal(c.colls[k].groups, 1);
        assert_true(fabs(c.colls[k].modeled_us - us) <= 1e-12 * us);
        comm += want[i].count * us;
    }
    /* Every collective on the critical path: step = compute + all of them. */
    assert_true(fabs(c.comm_us - comm) <= 1e-9 * comm);
    assert_true(fabs(c.exposed_comm_us - comm) <= 1e-9 * (compute + comm));
    assert_true(fabs(c.step_us - (compute + comm)) <= 1e-9 * (compute + comm));
    assert_true(fabs(c.mfu - model_flops_by_hand() / (c.step_us * 1e-6 * 2 * chip->bf16_flops)) <
                1e-12);
    assert_int_equal(c.hbm_peak_bytes, hbm_by_hand(2));
    tpu_spmd_destroy(spmd);
    tpu_mesh_destroy(mesh);
    tpu_xfmr_cost_fini(&c);
    tpu_pod_destroy(pod);
}

/* A layout that does not divide is refused, naming the dimension and the axis. */
static void refused(void **state)
{
    tpu_pod_t *pod = make_pod("2x2");
    tpu_xfmr_config_t m;
    tpu_xfmr_cost_t c;
    tpu_err_t err = {0};

    (void)state;
    config(&m);
    m.batch = 6;
    assert_int_equal(tpu_xfmr_cost_run(pod, &m, "data=2,fsdp=2", &c, &err), TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "batch 6 does not divide over mesh axis data=2,fsdp=2"));
    tpu_pod_destroy(pod);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_chip),
        cmocka_unit_test(tensor_two),
        cmocka_unit_test(refused),
    };

    return tpu_test_main(argc, argv, "transformer cost", tests, sizeof tests / sizeof tests[0]);
}
