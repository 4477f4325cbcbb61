/*
 * The planner's terms of the transformer step cost model (issue 25,
 * tpu_xfmr_cost_run_plan()) against figures worked out by hand here: the
 * parameters of GQA + swiglu and of tied embeddings, AdamW's state, model
 * FLOPs (dense and the compiled step's causal attention), remat full's
 * recomputed forward matmul FLOPs (compiled: without what no backward reads),
 * the parallel block's single tensor psum,
 * the presets, the compiled mode's causal half (and attn_full's every key) and
 * fitted constants, the weight gradients run while the input gradient's psum
 * is on the links, and the datacenter network's bound on a psum over dcn.
 */
#include "tpu/pod.h"
#include "tpu/transformer_cost.h"
#include "tpu/transformer_presets.h"

#include "test_main.h"
#include "test_support.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

static tpu_pod_t *make_pod(const char *shape)
{
    tpu_pod_t *pod = tpu_test_pod("v5e", shape);

    assert_non_null(pod);
    return pod;
}

/* L 2, D 64, H 4, kv 2, Dh 16, F 128, V 256, S 32, B 8; swiglu, f32. */
static void small(tpu_xfmr_config_t *m, tpu_xfmr_plan_t *p)
{
    tpu_xfmr_config_init(m);
    m->layers = 2;
    m->d_model = 64;
    m->heads = 4;
    m->d_ff = 128;
    m->vocab = 256;
    m->seq = 32;
    m->batch = 8;
    m->precision = TPU_XFMR_F32;
    tpu_xfmr_plan_init(p);
    p->kv_heads = 2;
    p->head_dim = 16;
    p->mlp = TPU_XFMR_MLP_SWIGLU;
}

/* The same, compiled (--calibrated) at the profile's own MXU fraction. */
static void small_compiled(tpu_xfmr_config_t *m, tpu_xfmr_plan_t *p)
{
    small(m, p);
    p->compiled = 1;
    p->mxu_fraction = 1;
}

static uint64_t item(const tpu_xfmr_cost_t *c, const char *prefix)
{
    int k;

    for (k = 0; k < c->nitems; k++) {
        if (strncmp(c->items[k].what, prefix, strlen(prefix)) == 0) {
            return c->items[k].bytes;
        }
    }
    fail_msg("no HBM item '%s'", prefix);
    return 0;
}

static void run(const tpu_pod_t *pod, const tpu_xfmr_config_t *m, const tpu_xfmr_plan_t *p,
                const char *mesh, tpu_xfmr_cost_t *c)
{
    tpu_err_t err = {0};

    memset(c, 0, sizeof(*c));
    assert_int_equal(tpu_xfmr_cost_run_plan(pod, m, p, mesh, c, &err), TPU_OK);
}

static void params_and_flops(void **state)
{
    tpu_pod_t *pod = make_pod("1x1");
    tpu_xfmr_config_t m;
    tpu_xfmr_plan_t p;
    tpu_xfmr_cost_t c;

    (void)state;
    small(&m, &p);
    run(pod, &m, &p, NULL, &c);
    /* embed 256*64 + pos 32*64 + 2 layers of (norm1 64, wq 64*64, wk 64*32, wv 64*32,
     * wo 64*64, norm2 64, w1 64*128, w2 128*64, w3 64*128) + norm_f 64 + unembed 64*256:
     * 16384 + 2048 + 2*36992 + 64 + 16384 = 108864 elements, f32 */
    assert_int_equal(item(&c, "parameters"), 108864 * 4);
    assert_int_equal(item(&c, "optimizer state (sgd"), 0);
    /* N = 2*(2*64*4*16 + 2*64*2*16 + 3*64*128) + 64*256 = 90112; 6 N B S = 138412032;
     * dense attention 12 L B S^2 H Dh = 12*2*8*1024*64 = 12582912 */
    assert_true(c.model_flops == 138412032.0 + 12582912.0);
    tpu_xfmr_cost_fini(&c);

    p.tied = 1;
    p.adamw = 1;
    run(pod, &m, &p, NULL, &c);
    assert_int_equal(item(&c, "parameters"), (108864 - 16384) * 4);
    assert_int_equal(item(&c, "optimizer state (adamw"), 2 * (108864 - 16384) * 4);
    tpu_xfmr_cost_fini(&c);

    /* compiled: attention causal, 6 L B S^2 H Dh = 6291456 */
    p.compiled = 1;
    p.mxu_fraction = 1;
    run(pod, &m, &p, NULL, &c);
    assert_true(c.model_flops == 138412032.0 + 6291456.0);
    {
        const double causal = c.chip_flops;

        tpu_xfmr_cost_fini(&c);
        /* attn_full: every key, 12 L B S^2 H Dh again; the flash step's 7 attention matmuls
         * (q k^T, p v; again q k^T, dv, dp, dq, dk) over 32 keys instead of 16: 7 * 2*32*16*16
         * per sequence and head * 32 * 2 layers = 7340032 more executed */
        p.attn_full = 1;
        run(pod, &m, &p, NULL, &c);
        assert_true(c.model_flops == 138412032.0 + 12582912.0);
        assert_true(c.chip_flops - causal == 7340032.0);
    }
    tpu_xfmr_cost_fini(&c);
    tpu_pod_destroy(pod);
}

static void remat_full(void **state)
{
    tpu_pod_t *pod = make_pod("1x1");
    tpu_xfmr_config_t m;
    tpu_xfmr_plan_t p;
    tpu_xfmr_cost_t none, full, minimal;

    (void)state;
    small(&m, &p);
    run(pod, &m, &p, NULL, &none);
    p.remat = TPU_XFMR_REMAT_FULL;
    run(pod, &m, &p, NULL, &full);
    p.remat = TPU_XFMR_REMAT_MINIMAL;
    run(pod, &m, &p, NULL, &minimal);
    /* T = 256 tokens.  A layer's forward matmuls: q 2*256*64*64 = 2097152, k and v
     * 2*2*256*64*32 = 2097152, wo 2097152, w1 w3 w2 3*2*256*64*128 = 12582912, and the
     * attention 2 * 2*32*16*32 per sequence and head * 32 = 2097152: 20971520; two layers. */
    assert_true(full.chip_flops - none.chip_flops == 2 * 20971520.0);
    /* minimal recomputes only the attention's two matmuls: 2 * 2097152 */
    assert_true(minimal.chip_flops - none.chip_flops == 2 * 2097152.0);
    /* activations kept: full the layer inputs, 2 * T D (+ 3 T D + T for the head), f32 */
    assert_int_equal(item(&full, "activations kept (remat full"),
                     (2 * 256 * 64 + 3 * 256 * 64 + 256) * 4);
    assert_true(full.model_flops == none.model_flops);
    tpu_xfmr_cost_fini(&none);
    tpu_xfmr_cost_fini(&full);
    tpu_xfmr_cost_fini(&minimal);
    tpu_pod_destroy(pod);
}

/* Compiled (--calibrated), remat full recomputes only what the backward reads: not w2
 * (nor its psum and residual), and in the parallel block not wo either. */
static void remat_full_compiled(void **state)
{
    tpu_pod_t *pod = make_pod("1x1");
    tpu_xfmr_config_t m;
    tpu_xfmr_plan_t p;
    tpu_xfmr_cost_t none, full;
    int par;

    (void)state;
    for (par = 0; par < 2; par++) {
        small_compiled(&m, &p);
        p.parallel_block = par;
        run(pod, &m, &p, NULL, &none);
        p.remat = TPU_XFMR_REMAT_FULL;
        run(pod, &m, &p, NULL, &full);
        /* A layer's recomputed matmuls (T = 256): q, k, v 4194304, w1 and w3
         * 2*2*256*64*128 = 8388608, flash's q k^T and p v over S/2 keys a query on average
         * 2 * 2*32*16*16 per sequence and head * 32 = 1048576, and in the sequential block
         * wo 2097152 (its output feeds norm2); two layers. */
        assert_true(full.chip_flops - none.chip_flops ==
                    2 * (4194304.0 + 8388608.0 + 1048576.0 + (par ? 0 : 2097152.0)));
        tpu_xfmr_cost_fini(&none);
        tpu_xfmr_cost_fini(&full);
    }
    tpu_pod_destroy(pod);
}

static int coll_count(const tpu_xfmr_cost_t *c, const char *what)
{
    int k, n = 0;

    for (k = 0; k < c->ncolls; k++) {
        n += strcmp(c->colls[k].what, what) == 0 ? c->colls[k].count : 0;
    }
    return n;
}

static void parallel_block(void **state)
{
    tpu_pod_t *pod = make_pod("1x2");
    tpu_xfmr_config_t m;
    tpu_xfmr_plan_t p;
    tpu_xfmr_cost_t seq, par;

    (void)state;
    small(&m, &p);
    run(pod, &m, &p, "tensor=2", &seq);
    p.parallel_block = 1;
    run(pod, &m, &p, "tensor=2", &par);
    /* sequential: attn_out and mlp_out per layer forward, d_mlp_in and d_attn_in backward;
     * parallel: mlp_out and d_attn_in only */
    assert_int_equal(coll_count(&seq, "attn_out"), 2);
    assert_int_equal(coll_count(&seq, "d_mlp_in"), 2);
    assert_int_equal(coll_count(&par, "attn_out"), 0);
    assert_int_equal(coll_count(&par, "d_mlp_in"), 0);
    assert_int_equal(coll_count(&par, "mlp_out"), 2);
    /* kv heads 2 over tensor 2: one per chip, k and v [T, 16] each */
    tpu_xfmr_cost_fini(&seq);
    tpu_xfmr_cost_fini(&par);
    tpu_pod_destroy(pod);
}

static const tpu_xfmr_cost_op_t *op_named(const tpu_xfmr_cost_t *c, const char *what)
{
    int k;

    for (k = 0; k < c->nops; k++) {
        if (strcmp(c->ops[k].what, what) == 0) {
            return &c->ops[k];
        }
    }
    fail_msg("no op '%s'", what);
    return NULL;
}

/* Compiled, the backward's weight gradients (nothing of the layer reads them) run while
 * the input gradient's tensor psum is on the links: the psum starts beside the last matmul
 * that feeds it (dv @ wv^T), and the norm's backward, which reads it, starts when both the
 * psum and the weight gradients are through.  In the parallel block (one psum a layer)
 * the MLP's and wo's weight gradients wait for it too. */
static void wgrad_overlap(void **state)
{
    tpu_pod_t *pod = make_pod("1x2");
    tpu_xfmr_config_t m;
    tpu_xfmr_plan_t p;
    tpu_xfmr_cost_t c;
    int k, seen = 0;

    (void)state;
    small_compiled(&m, &p);
    p.parallel_block = 1;
    run(pod, &m, &p, "tensor=2", &c);
    for (k = 0; k < c.ncalls; k++) {
        const char *w[] = {"l1 bwd: dw2", "l1 bwd: dw1", "l1 bwd: dw3", "l1 bwd: dwo",
                           "l1 bwd: dwq"};
        size_t i;

        if (strcmp(c.colls[c.calls[k].coll].what, "d_attn_in") != 0 || c.calls[k].index != 1) {
            continue;
        }
        for (i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
            assert_true(op_named(&c, w[i])->start_us >= c.calls[k].start_us);
        }
        assert_true(op_named(&c, "l1 bwd: dq @ wq^T")->start_us < c.calls[k].start_us);
        seen++;
    }
    assert_int_equal(seen, 1);
    tpu_xfmr_cost_fini(&c);
    p.parallel_block = 0;
    seen = 0;
    run(pod, &m, &p, "tensor=2", &c);
    for (k = 0; k < c.ncalls; k++) {
        const tpu_xfmr_cost_coll_t *row = &c.colls[c.calls[k].coll];
        const tpu_xfmr_cost_op_t *dv, *dwo, *dwv, *norm;

        if (strcmp(row->what, "d_attn_in") != 0 || c.calls[k].index != 1) {
            continue;
        }
        dv = op_named(&c, "l1 bwd: dv @ wv^T");
        dwo = op_named(&c, "l1 bwd: dwo"); /* the first weight gradient held */
        dwv = op_named(&c, "l1 bwd: dwv"); /* the last */
        norm = op_named(&c, "l1 bwd: norm1 backward (mul)");
        assert_true(c.calls[k].start_us == dv->start_us);
        assert_true(dwo->start_us == dv->start_us + dv->us);
        assert_true(norm->start_us ==
                    (dwv->start_us + dwv->us > c.calls[k].start_us + row->modeled_us
                         ? dwv->start_us + dwv->us
                         : c.calls[k].start_us + row->modeled_us));
        seen++;
    }
    assert_int_equal(seen, 1);
    tpu_xfmr_cost_fini(&c);
    tpu_pod_destroy(pod);
}

/* Compiled over two slices with the network's capacity set low, the gradients' psum over
 * dcn takes the job's cross-slice bytes over that capacity: every one of the 8 chips moves
 * 2 (S - 1) / S = 1 times its row's bytes (a group of the 2 slices' chips, g = S).  Over
 * four slices with data=2 (groups of g = 8 chips over S = 4 slices), each of the 16 chips
 * moves 2 * 3/4 of its shard B * S / g = B / 2 after the reduce-scatter over ICI. */
static void fabric_bound(void **state)
{
    tpu_pod_spec_t spec;
    tpu_pod_t *pod = NULL;
    tpu_xfmr_config_t m;
    tpu_xfmr_plan_t p;
    tpu_xfmr_cost_t c;
    int k, seen = 0;

    (void)state;
    tpu_pod_spec_init(&spec);
    spec.chip = "v5e";
    spec.shape = "2x2";
    spec.slices = 2;
    assert_int_equal(tpu_pod_create(&spec, &pod, NULL), TPU_OK);
    small_compiled(&m, &p);
    p.dcn_fabric_bw = 1e6;
    run(pod, &m, &p, "dcn=2,fsdp=4", &c);
    for (k = 0; k < c.ncolls; k++) {
        const tpu_xfmr_cost_coll_t *row = &c.colls[k];

        if (strcmp(row->what, "grad") == 0 && strcmp(row->mesh_axis, "dcn") == 0) {
            assert_true(row->modeled_us == 1e6 * 8.0 * 1.0 * (double)row->bytes / 1e6);
            assert_non_null(strstr(row->algorithm, "+fabric"));
            seen++;
        }
    }
    assert_true(seen > 0);
    tpu_xfmr_cost_fini(&c);
    p.dcn_fabric_bw = 0; /* unlimited: the engine's time */
    run(pod, &m, &p, "dcn=2,fsdp=4", &c);
    for (k = 0; k < c.ncolls; k++) {
        assert_null(strstr(c.colls[k].algorithm, "+fabric"));
    }
    tpu_xfmr_cost_fini(&c);
    tpu_pod_destroy(pod);

    spec.slices = 4;
    assert_int_equal(tpu_pod_create(&spec, &pod, NULL), TPU_OK);
    p.dcn_fabric_bw = 1e6;
    m.batch = 16; /* over the 16 chips */
    seen = 0;
    run(pod, &m, &p, "dcn=4,data=2,fsdp=2", &c);
    for (k = 0; k < c.ncolls; k++) {
        const tpu_xfmr_cost_coll_t *row = &c.colls[k];

        if (strcmp(row->what, "grad") == 0 && row->kind == TPU_COLL_PSUM) {
            assert_int_equal(row->group_size, 8);
            assert_true(row->modeled_us == 1e6 * 16.0 * 1.5 * ((double)row->bytes / 2) / 1e6);
            seen++;
        }
    }
    assert_true(seen > 0);
    tpu_xfmr_cost_fini(&c);
    tpu_pod_destroy(pod);
}

static void presets(void **state)
{
    tpu_xfmr_config_t m;
    tpu_xfmr_plan_t p;
    tpu_err_t err = {0};

    (void)state;
    tpu_xfmr_config_init(&m);
    tpu_xfmr_plan_init(&p);
    /* Llama 2 70B (Touvron et al. 2023, table 1; config.json) */
    assert_int_equal(tpu_xfmr_preset("llama2-70b", &m, &p, &err), TPU_OK);
    assert_int_equal(m.layers, 80);
    assert_int_equal(m.d_model, 8192);
    assert_int_equal(m.heads, 64);
    assert_int_equal(p.kv_heads, 8);
    assert_int_equal(m.d_ff, 28672);
    assert_int_equal(m.vocab, 32000);
    assert_int_equal(p.mlp, TPU_XFMR_MLP_SWIGLU);
    /* MaxText 16B (maxtext_mfu.md: L 32, d 5120, H 32, F 32768, dh 256, relu, parallel, tied) */
    assert_int_equal(tpu_xfmr_preset("maxtext-default-16b", &m, &p, &err), TPU_OK);
    assert_int_equal(m.layers * (4 * m.d_model * m.heads * p.head_dim + 2 * m.d_model * m.d_ff) +
                         m.vocab * m.d_model,
                     16273899520LL); /* 32*(167772160 + 335544320) + 167772160; the CSV: 16274101248
                                        with the norms */
    assert_true(p.parallel_block && p.tied && p.mlp == TPU_XFMR_MLP_RELU);
    assert_int_equal(tpu_xfmr_preset("llama9", &m, &p, &err), TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "gpt3-175b"));
    assert_string_equal(tpu_xfmr_preset_name(0), "llama2-7b");
    assert_null(tpu_xfmr_preset_name(1000));
    tpu_xfmr_plan_fit("v7", &p);
    assert_true(p.mxu_fraction == 1 && p.fixed_us == 0 && p.dcn_fabric_bw == 0);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(params_and_flops),
        cmocka_unit_test(remat_full),
        cmocka_unit_test(remat_full_compiled),
        cmocka_unit_test(parallel_block),
        cmocka_unit_test(wgrad_overlap),
        cmocka_unit_test(fabric_bound),
        cmocka_unit_test(presets),
    };
    return tpu_test_main(argc, argv, "transformer plan", tests, sizeof tests / sizeof tests[0]);
}
