/*
 * The collectives over the loopback and sim transports, for many shapes (1 to 3
 * axes, with and without wraparound, non-powers of two, two slices), every axis
 * subset, every collective, and every algorithm of the registry
 * (collectives/algorithms.def, forced with desc.algo) besides the one the cost
 * model picks:
 *   - the result equals the reference computation on every chip;
 *   - every schedule delivers every byte of an all-gather to every chip exactly
 *     once (each block written once, the chip's own block never);
 *   - the modeled time is the same, bit for bit, from the model, the sim
 *     transport and the loopback transport;
 * every row of the host plans (collectives/host_algorithms.def), on the requests
 * the run object gives it: exact results, a rank's part of it the full plan's
 * flows of its chips, and an OOM loop;
 * and OOM loops: plan creation and a run under an allocator that fails after
 * n allocations, for every n until success, return TPU_ERR_NO_MEMORY and leak
 * nothing; once on a chosen psum, and once for every line of the registry
 * (every schedule builder), forced.
 */
#include "tpu/chip.h"
#include "tpu/coll.h"
#include "tpu/xport.h"

#include "build.h"
#include "exec.h"
#include "plan.h"
#include "test_coll.h"
#include "test_main.h"
#include "test_support.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* Every byte of every chip's all-gather working buffer, but its own block, is
 * written once (the working buffer has the output's size, in the stream layout). */
static void check_exactly_once(const tpu_coll_plan_t *plan, const tpu_topo_t *topo)
{
    tpu_err_t err = {0};
    tpu_plan_sched_t full;
    const tpu_sched_t *s = &full.s;
    uint64_t inb, outb, b;
    unsigned char *count;
    int64_t i;
    int c;

    memset(&full, 0, sizeof(full));
    assert_int_equal(tpu__plan_build(plan, plan->algo, plan->args.chunks, -1, 0, &full, &err),
                     TPU_OK);
    tpu_coll_plan_sizes(plan, &inb, &outb);
    count = calloc((size_t)topo->nchips * outb, 1);
    for (i = 0; i < s->nflows; i++) {
        const tpu_flow_t *f = &s->flows[i];
        int x, y, z;

        for (x = 0; x < f->span.count[0]; x++) {
            for (y = 0; y < f->span.count[1]; y++) {
                for (z = 0; z < f->span.count[2]; z++) {
                    int64_t o = f->span.dst_off + x * f->span.stride[0] + y * f->span.stride[1] +
                                z * f->span.stride[2];

                    for (b = 0; b < (uint64_t)f->span.len; b++) {
                        count[(uint64_t)f->dst * outb + (uint64_t)o + b]++;
                    }
                }
            }
        }
    }
    for (c = 0; c < topo->nchips; c++) {
        int64_t me = tpu_topo_group_index(topo, plan->desc.axes, c);

        for (b = 0; b < outb; b++) {
            unsigned want = 1;
            int k;

            /* The chip's own block, wherever the working layout keeps its parts. */
            for (k = 0; k < s->nlayout; k++) {
                uint64_t lo = (uint64_t)tpu__layout_offset(&s->layout[k], me);

                if (b >= lo && b < lo + (uint64_t)s->layout[k].sub_len) {
                    want = 0;
                }
            }

            if (count[(uint64_t)c * outb + b] != want) {
                unsigned got = count[(uint64_t)c * outb + b];

                free(count);
                tpu__plan_sched_fini(&full);
                fail_msg("all-gather over axes %u: chip %d byte %llu written %u times",
                         plan->desc.axes, c, (unsigned long long)b, got);
            }
        }
    }
    free(count);
    tpu__plan_sched_fini(&full);
}

/*
 * Plan, model and run one collective (algorithm 'algo' of the registry, or the
 * cost model's choice for NULL); 0 when a forced algorithm does not take the
 * shape, else 1.
 */
static int check_case(const tpu_topo_t *topo, const tpu_link_model_t *link,
                      const tpu_coll_desc_t *d0, const char *algo, const char *shape,
                      const char *wrap)
{
    tpu_err_t err = {0};
    tpu_coll_desc_t d = *d0;
    tpu_coll_plan_t *plan = NULL;
    char label[160];

    if (algo != NULL) {
        snprintf(d.algo, sizeof(d.algo), "%s", algo);
    }
    if (tpu_coll_plan_create(topo, link, &d, &plan, &err) != TPU_OK) {
        if (algo != NULL && err.status == TPU_ERR_UNSUPPORTED) {
            return 0;
        }
        fail_msg("%s %s %s %s: plan: %s", shape, wrap, tpu_coll_name(d.kind),
                 algo ? algo : "(auto)", err.msg);
    }
    snprintf(label, sizeof(label), "%s %s %s axes %u", shape, wrap, tpu_coll_name(d.kind), d.axes);
    tpu_test_check_transports(plan, topo, label);
    if (d.kind == TPU_COLL_ALL_GATHER) {
        check_exactly_once(plan, topo);
    }
    tpu_coll_plan_destroy(plan);
    return 1;
}

/* Runs of each registry algorithm, forced, over all shapes. */
static int forced[64];

static void check_shape(const char *shape, const char *wrap, int slices)
{
    tpu_err_t err = {0};
    tpu_topo_t topo;
    tpu_chip_spec_t chip;
    tpu_link_model_t link;
    unsigned mask, all;
    int k, cases = 0;

    tpu_test_topo(&topo, shape, wrap, slices);
    tpu_chip_preset("v5p", &chip, &err);
    tpu_chip_link_model(&chip, &link);
    all = ((1u << topo.naxes) - 1) | (slices > 1 ? TPU_AXIS_MASK_DCN : 0);
    for (mask = 1; mask <= all; mask++) {
        int g, naxes = 0, a;

        if ((mask & all) != mask || (g = tpu_topo_group_size(&topo, mask)) < 2) {
            continue;
        }
        for (a = 0; a <= TPU_AXIS_DCN; a++) {
            naxes += (mask >> a) & 1;
        }
        for (k = 0; k < TPU_COLL_COUNT; k++) {
            tpu_coll_desc_t d;
            int i;

            if ((k == TPU_COLL_PPERMUTE && naxes != 1) || (k == TPU_COLL_P2P && mask != 1)) {
                continue;
            }
            tpu_coll_desc_init(&d);
            d.kind = (tpu_coll_kind_t)k;
            d.axes = mask;
            d.dtype = k == TPU_COLL_PSUM ? TPU_DTYPE_BF16 : TPU_DTYPE_F32;
            d.shift = g > 2 ? 2 : 1;
            d.bytes = (uint64_t)g * 12 * (uint64_t)tpu_dtype_size(d.dtype);
            if (k == TPU_COLL_PSUM) {
                d.bytes += 6; /* uneven blocks */
            }
            cases += check_case(&topo, &link, &d, NULL, shape, wrap);
            /* Every algorithm of the registry for this collective. */
            for (i = 0; i < tpu_coll_algo_count(); i++) {
                tpu_coll_kind_t kind;
                const char *name, *summary;

                tpu_coll_algo_at(i, &kind, &name, &summary);
                if (kind == d.kind) {
                    int ran = check_case(&topo, &link, &d, name, shape, wrap);

                    forced[i] += ran;
                    cases += ran;
                }
            }
        }
    }
    assert_true(cases > 0);
    printf("%s wrap %s slices %d: %d cases\n", shape, wrap, slices, cases);
}

static void test_shapes(void **state)
{
    static const struct {
        const char *shape, *wrap;
        int slices;
    } shapes[] = {
        {"2", "none", 1},    {"3", "all", 1},     {"5", "none", 1},    {"6", "all", 1},
        {"2x2", "all", 1},   {"2x3", "none", 1},  {"2x3", "all", 1},   {"3x5", "x", 1},
        {"4x4", "none", 1},  {"4x4", "all", 1},   {"4x6", "y", 1},     {"2x2x2", "none", 1},
        {"3x3x2", "all", 1}, {"2x2x4", "x,z", 1}, {"4x4x4", "all", 1}, {"2x2", "none", 2},
        {"3", "all", 3},
    };
    size_t i;

    (void)state;
    assert_true(tpu_coll_algo_count() <= (int)(sizeof(forced) / sizeof(forced[0])));
    for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        check_shape(shapes[i].shape, shapes[i].wrap, shapes[i].slices);
    }
    /* The registry drives the matrix: every algorithm ran with data somewhere. */
    for (i = 0; i < (size_t)tpu_coll_algo_count(); i++) {
        tpu_coll_kind_t kind;
        const char *name, *summary;

        tpu_coll_algo_at((int)i, &kind, &name, &summary);
        printf("%s %s: %d cases\n", tpu_coll_name(kind), name, forced[i]);
        if (forced[i] == 0) {
            fail_msg("%s %s never ran", tpu_coll_name(kind), name);
        }
    }
}

/*
 * The host plans of psum (one round up to 16 KiB per chip, two rounds above) for
 * every dtype and reduction at their edge sizes: one element, sizes the chip
 * count does not divide, just below, at and just above the one-round limit, and
 * a larger one; on a 4x4 (16 chips) and a 3x5 (15), over all axes and one.
 * Every chip's result equals the reference bit for bit (so every chip holds the
 * same bits) after two runs of one run object, and the modeled time is the
 * model's over loopback and sim (check_case).
 */
static void test_psum_host_plans(void **state)
{
    static const struct {
        const char *shape, *wrap;
        unsigned mask;
    } shapes[] = {{"4x4", "none", 3}, {"3x5", "x", 3}, {"4x4", "all", 2}};
    static const uint64_t elems[] = {1, 17, 4095, 4096, 4097, 16 * 1024 + 3, 40000};
    tpu_err_t err = {0};
    tpu_chip_spec_t chip;
    tpu_link_model_t link;
    size_t s, e;
    int dt, op, cases = 0;

    (void)state;
    tpu_chip_preset("v5e", &chip, &err);
    tpu_chip_link_model(&chip, &link);
    for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
        tpu_topo_t topo;

        tpu_test_topo(&topo, shapes[s].shape, shapes[s].wrap, 1);
        for (dt = 0; dt < 3; dt++) {
            static const tpu_dtype_t dtypes[] = {TPU_DTYPE_F32, TPU_DTYPE_BF16, TPU_DTYPE_I32};

            for (op = 0; op < TPU_REDOP_COUNT; op++) {
                for (e = 0; e < sizeof(elems) / sizeof(elems[0]); e++) {
                    tpu_coll_desc_t d;
                    uint64_t esz = (uint64_t)tpu_dtype_size(dtypes[dt]);

                    tpu_coll_desc_init(&d);
                    d.kind = TPU_COLL_PSUM;
                    d.axes = shapes[s].mask;
                    d.dtype = dtypes[dt];
                    d.op = (tpu_redop_t)op;
                    /* 4095, 4096, 4097 f32 words straddle the 16 KiB limit; bf16
                     * words at twice the count do. */
                    d.bytes = elems[e] * (esz == 2 && elems[e] >= 4095 ? 2 : 1) * esz;
                    cases += check_case(&topo, &link, &d, NULL, shapes[s].shape, shapes[s].wrap);
                }
            }
        }
    }
    assert_int_equal(cases, 3 * 3 * 3 * 7);
}

static void test_oom_loop(void **state)
{
    tpu_topo_t topo;
    tpu_chip_spec_t chip;
    tpu_link_model_t link;
    tpu_coll_desc_t d;
    long budget;
    int done = 0;

    (void)state;
    tpu_test_topo(&topo, "2x3", "all", 1);
    tpu_chip_preset("v5e", &chip, NULL);
    tpu_chip_link_model(&chip, &link);
    tpu_coll_desc_init(&d);
    d.axes = 3;
    d.bytes = 6 * 64;
    for (budget = 0; !done && budget < 100000; budget++) {
        tpu_err_t err = {0};
        tpu_coll_plan_t *plan = NULL;
        tpu_xport_t *x = NULL;
        tpu_coll_exec_t *exec = NULL;
        tpu_status_t status;
        double us;

        tpu_test_alloc_fail_after(budget);
        status = tpu_coll_plan_create(&topo, &link, &d, &plan, &err);
        if (status == TPU_OK) {
            status = tpu_xport_loopback_create(topo.nchips, &x, &err);
        }
        if (status == TPU_OK) {
            status = tpu_coll_exec_create(plan, x, &exec, &err);
        }
        if (status == TPU_OK) {
            static float in_buf[6][96], out_buf[6][96];
            void *in[6], *out[6];
            int c;

            for (c = 0; c < 6; c++) {
                in[c] = in_buf[c];
                out[c] = out_buf[c];
            }
            status = tpu_coll_exec_run(exec, NULL, in, out, &us, &err);
        }
        tpu_coll_exec_destroy(exec);
        tpu_xport_destroy(x);
        tpu_coll_plan_destroy(plan);
        if (status == TPU_OK) {
            done = !tpu_test_alloc_failed();
        } else {
            assert_int_equal(status, TPU_ERR_NO_MEMORY);
            assert_true(strlen(err.msg) > 0);
        }
        assert_int_equal(tpu_test_alloc_live(), 0);
        tpu_test_alloc_restore();
    }
    assert_true(done);
    printf("oom loop: success after %ld allocations, every failure clean\n", budget - 1);
}

/*
 * One OOM run: plan create, loopback create, exec create and a run of 'd' on
 * 'topo' under an allocator that fails after 'budget' allocations.  Returns 1
 * when everything succeeded with no allocation refused; asserts that a failure
 * is TPU_ERR_NO_MEMORY with a message and that nothing leaks.
 */
static int oom_once(const tpu_topo_t *topo, const tpu_link_model_t *link, const tpu_coll_desc_t *d,
                    long budget)
{
    tpu_err_t err = {0};
    tpu_coll_plan_t *plan = NULL;
    tpu_xport_t *x = NULL;
    tpu_coll_exec_t *exec = NULL;
    tpu_status_t status;
    uint64_t inb = 0, outb = 0;
    void *in[64], *out[64];
    double us;
    int c, done;

    tpu_test_alloc_fail_after(budget);
    status = tpu_coll_plan_create(topo, link, d, &plan, &err);
    if (status == TPU_OK) {
        status = tpu_xport_loopback_create(topo->nchips, &x, &err);
    }
    if (status == TPU_OK) {
        status = tpu_coll_exec_create(plan, x, &exec, &err);
    }
    if (status == TPU_OK) {
        tpu_coll_plan_sizes(plan, &inb, &outb);
        /* The caller's buffers come from libc, outside the failing allocator. */
        for (c = 0; c < topo->nchips; c++) {
            in[c] = calloc(1, inb);
            out[c] = calloc(1, outb);
        }
        status = tpu_coll_exec_run(exec, NULL, in, out, &us, &err);
        for (c = 0; c < topo->nchips; c++) {
            free(in[c]);
            free(out[c]);
        }
    }
    tpu_coll_exec_destroy(exec);
    tpu_xport_destroy(x);
    tpu_coll_plan_destroy(plan);
    done = status == TPU_OK && !tpu_test_alloc_failed();
    if (status != TPU_OK && (status != TPU_ERR_NO_MEMORY || strlen(err.msg) == 0)) {
        fail_msg("%s %s, allocation %ld failing: status %d (%s)", tpu_coll_name(d->kind), d->algo,
                 budget, status, err.msg);
    }
    if (tpu_test_alloc_live() != 0) {
        fail_msg("%s %s, allocation %ld failing: %ld blocks leaked", tpu_coll_name(d->kind),
                 d->algo, budget, tpu_test_alloc_live());
    }
    tpu_test_alloc_restore();
    return done;
}

/*
 * The OOM loop over every schedule builder: each line of the registry, forced on
 * the first shape it takes, through plan create, exec create and a run, failing
 * allocation n for n = 0, 1, ... until the whole succeeds.
 */
static void test_oom_every_algorithm(void **state)
{
    static const struct {
        const char *shape, *wrap;
    } shapes[] = {{"2x3", "all"}, {"4x4", "all"}, {"2x2x2", "none"}, {"3", "all"}};
    tpu_chip_spec_t chip;
    tpu_link_model_t link;
    int i;

    (void)state;
    tpu_chip_preset("v5p", &chip, NULL);
    tpu_chip_link_model(&chip, &link);
    for (i = 0; i < tpu_coll_algo_count(); i++) {
        tpu_coll_kind_t kind;
        const char *name, *summary;
        size_t s;
        int taken = 0;

        tpu_coll_algo_at(i, &kind, &name, &summary);
        for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]) && !taken; s++) {
            tpu_topo_t topo;
            tpu_coll_desc_t d;
            tpu_coll_plan_t *plan = NULL;
            tpu_err_t err = {0};
            long budget;
            int g;

            tpu_test_topo(&topo, shapes[s].shape, shapes[s].wrap, 1);
            tpu_coll_desc_init(&d);
            d.kind = kind;
            d.axes =
                kind == TPU_COLL_PPERMUTE || kind == TPU_COLL_P2P ? 1u : (1u << topo.naxes) - 1;
            g = tpu_topo_group_size(&topo, d.axes);
            d.dtype = TPU_DTYPE_F32;
            d.bytes = (uint64_t)g * 12 * 4;
            snprintf(d.algo, sizeof(d.algo), "%s", name);
            if (tpu_coll_plan_create(&topo, &link, &d, &plan, &err) != TPU_OK) {
                assert_int_equal(err.status, TPU_ERR_UNSUPPORTED);
                continue;
            }
            tpu_coll_plan_destroy(plan);
            taken = 1;
            for (budget = 0; budget < 1000000; budget++) {
                if (oom_once(&topo, &link, &d, budget)) {
                    break;
                }
            }
            assert_true(budget < 1000000);
            printf("oom %s %s on %s: success after %ld failing allocations\n", tpu_coll_name(kind),
                   name, shapes[s].shape, budget);
        }
        if (!taken) {
            fail_msg("%s %s takes none of the OOM loop's shapes", tpu_coll_name(kind), name);
        }
    }
}

/* Is 'dst' a member of the group of 'src'? */
static int same_group(const tpu_coll_plan_t *p, int src, int dst)
{
    int g;

    for (g = 0; g < p->group; g++) {
        if (tpu__plan_member(p, src, g) == dst) {
            return 1;
        }
    }
    return 0;
}

/*
 * The host plan 'row' of 'plan': every flow within a group, every dependency on
 * an earlier step; and for every chip, the part built for it alone holds exactly
 * the full plan's flows that start or end on it, in the same order.
 */
static void check_host_plan(const tpu_host_algo_t *row, const tpu_coll_plan_t *p, const char *label)
{
    tpu_err_t err = {0};
    tpu_plan_sched_t full, part;
    uint8_t *mine = calloc((size_t)p->topo.nchips, 1);
    int64_t i, k, n;
    int c, d;

    memset(&full, 0, sizeof(full));
    assert_non_null(mine);
    assert_int_equal(row->build(p, NULL, &full, &err), TPU_OK);
    for (i = 0; i < full.s.nflows; i++) {
        const tpu_flow_t *f = &full.s.flows[i];

        if (!same_group(p, f->src, f->dst)) {
            fail_msg("%s: host plan %s: flow %lld from chip %d to chip %d outside its group", label,
                     row->name, (long long)i, f->src, f->dst);
        }
        for (d = 0; d < f->ndeps; d++) {
            assert_true(full.s.flows[full.s.deps[f->dep_first + d]].step < f->step);
        }
    }
    for (c = 0; c < p->topo.nchips; c++) {
        memset(&part, 0, sizeof(part));
        mine[c] = 1;
        assert_int_equal(row->build(p, mine, &part, &err), TPU_OK);
        for (i = 0, n = 0; i < full.s.nflows; i++) {
            const tpu_flow_t *f = &full.s.flows[i], *g;

            if (f->src != c && f->dst != c) {
                continue;
            }
            k = n++;
            assert_true(k < part.s.nflows);
            g = &part.s.flows[k];
            if (g->src != f->src || g->dst != f->dst || g->step != f->step ||
                g->reduce != f->reduce || g->span.off != f->span.off ||
                g->span.dst_off != f->span.dst_off || g->span.len != f->span.len) {
                fail_msg("%s: host plan %s: chip %d's part differs at flow %lld", label, row->name,
                         c, (long long)k);
            }
        }
        assert_int_equal(part.s.nflows, n);
        tpu__plan_sched_fini(&part);
        mine[c] = 0;
    }
    tpu__plan_sched_fini(&full);
    free(mine);
}

/*
 * Every row of the host plans (host_algorithms.def), driven by the table: for
 * each row, the requests of its collective (pods, dtypes, sizes) on which the run
 * object picks that row; each one's plan is checked (check_host_plan) and run
 * over loopback and sim (tpu_test_check_transports: exact results, one modeled
 * time), and the first one through the OOM loop (oom_once).  A row no request
 * reaches fails the test.
 */
static void test_host_plan_rows(void **state)
{
    static const struct {
        const char *shape, *wrap;
        unsigned mask;
    } shapes[] = {{"2x3", "none", 3},
                  {"4x4", "none", 3},
                  {"3x5", "x", 3},
                  {"2x2x2", "all", 7},
                  {"4x4", "all", 2}};
    static const tpu_dtype_t dtypes[] = {TPU_DTYPE_F32, TPU_DTYPE_BF16};
    static const uint64_t elems[] = {1, 17, 10000};
    tpu_err_t err = {0};
    tpu_chip_spec_t chip;
    tpu_link_model_t link;
    int r;

    (void)state;
    tpu_chip_preset("v5e", &chip, &err);
    tpu_chip_link_model(&chip, &link);
    for (r = 0; r < tpu__nhost_algos; r++) {
        const tpu_host_algo_t *row = &tpu__host_algos[r];
        size_t s, t, e;
        int taken = 0;

        for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
            for (t = 0; t < sizeof(dtypes) / sizeof(dtypes[0]); t++) {
                for (e = 0; e < sizeof(elems) / sizeof(elems[0]); e++) {
                    tpu_topo_t topo;
                    tpu_coll_desc_t d;
                    tpu_coll_plan_t *plan = NULL;
                    tpu_coll_exec_t *exec = NULL;
                    tpu_xport_t *x = NULL;
                    uint64_t esz = (uint64_t)tpu_dtype_size(dtypes[t]);
                    char label[160];
                    int picked;

                    tpu_test_topo(&topo, shapes[s].shape, shapes[s].wrap, 1);
                    tpu_coll_desc_init(&d);
                    d.kind = row->kind;
                    d.axes = shapes[s].mask;
                    d.dtype = dtypes[t];
                    d.bytes = elems[e] * esz *
                              (row->kind == TPU_COLL_REDUCE_SCATTER
                                   ? (uint64_t)tpu_topo_group_size(&topo, d.axes)
                                   : 1);
                    snprintf(label, sizeof(label), "%s %s %s of %llu bytes %s", shapes[s].shape,
                             shapes[s].wrap, tpu_coll_name(d.kind), (unsigned long long)d.bytes,
                             tpu_dtype_name(d.dtype));
                    if (tpu_coll_plan_create(&topo, &link, &d, &plan, &err) != TPU_OK) {
                        fail_msg("%s: plan: %s", label, err.msg);
                    }
                    assert_int_equal(tpu_xport_loopback_create(topo.nchips, &x, &err), TPU_OK);
                    assert_int_equal(tpu_coll_exec_create(plan, x, &exec, &err), TPU_OK);
                    picked = tpu__exec_host_algo(exec) == row;
                    tpu_coll_exec_destroy(exec);
                    tpu_xport_destroy(x);
                    if (picked) {
                        check_host_plan(row, plan, label);
                        tpu_test_check_transports(plan, &topo, label);
                        if (taken++ == 0) {
                            /* The OOM loop on the row's first request, its algorithm
                             * forced (the selector's allocations are test_oom_loop's). */
                            long budget;

                            snprintf(d.algo, sizeof(d.algo), "%s", plan->algo->name);
                            for (budget = 0; budget < 1000000; budget++) {
                                if (oom_once(&topo, &link, &d, budget)) {
                                    break;
                                }
                            }
                            assert_true(budget < 1000000);
                        }
                    }
                    tpu_coll_plan_destroy(plan);
                }
            }
        }
        printf("host plan %s (%s): %d requests\n", row->name, tpu_coll_name(row->kind), taken);
        if (taken == 0) {
            fail_msg("host plan %s: the run object picks it for none of the requests", row->name);
        }
    }
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shapes),         cmocka_unit_test(test_psum_host_plans),
        cmocka_unit_test(test_host_plan_rows), cmocka_unit_test(test_oom_every_algorithm),
        cmocka_unit_test(test_oom_loop),
    };

    return tpu_test_main(argc, argv, "coll loopback", tests, sizeof tests / sizeof tests[0]);
}
