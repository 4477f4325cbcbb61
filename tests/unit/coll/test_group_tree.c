/*
 * The tree psum over groups (collectives/algorithms/psum_group_tree.c): its
 * modeled time against the cost model's figure worked out by hand, its flow
 * count (2 (G - 1) per group, not G^2), the cost model's choice between it and
 * the ring for a one-element psum over a large group and for a large buffer,
 * the selector's budgets on a group of 2,240 chips, the sums its schedule
 * computes, and the data path with it chosen.
 *
 * The constants are chosen for easy arithmetic: ici_bw 2e9 B/s both directions,
 * so one direction carries 1e9 B/s and 1000 bytes take 1 us; 1 us per hop.
 */
#include "tpu/chip.h"
#include "tpu/coll.h"
#include "tpu/groups.h"
#include "tpu/topo.h"

#include "build.h"
#include "plan.h"
#include "test_coll.h"
#include "test_main.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

static tpu_link_model_t easy_link(void)
{
    return tpu_test_easy_link();
}

/* A psum of 'bytes' over the two halves of an open line of 2n chips, members in
 * line order (groups, not a whole axis), with 'algo' ("": the cost model's choice). */
static tpu_coll_plan_t *line_plan(int n, uint64_t bytes, const char *algo)
{
    int dims[TPU_MAX_AXES] = {2 * n, 1, 1}, wrap[TPU_MAX_AXES] = {0, 0, 0}, i;
    tpu_link_model_t link = easy_link();
    tpu_err_t err = {0};
    tpu_topo_t topo;
    tpu_groups_t g;
    tpu_coll_desc_t d;
    tpu_coll_plan_t *plan = NULL;

    assert_int_equal(tpu_topo_init(&topo, 1, dims, wrap, 1, &err), TPU_OK);
    assert_int_equal(tpu_groups_init(&g, 2, n, &err), TPU_OK);
    for (i = 0; i < 2 * n; i++) {
        g.chips[i] = i;
    }
    tpu_coll_desc_init(&d);
    d.kind = TPU_COLL_PSUM;
    d.groups = &g;
    d.bytes = bytes;
    snprintf(d.algo, sizeof(d.algo), "%s", algo);
    if (tpu_coll_plan_create(&topo, &link, &d, &plan, &err) != TPU_OK) {
        print_error("line %d psum %s: %s\n", n, algo, err.msg);
        fail();
    }
    tpu_groups_fini(&g);
    return plan;
}

static double modeled_us(const tpu_coll_plan_t *plan)
{
    tpu_coll_result_t r;
    tpu_err_t err = {0};

    assert_int_equal(tpu_coll_plan_model(plan, &r, &err), TPU_OK);
    return r.modeled_us;
}

/*
 * The walk's time is the bytes' time, links shared, plus the hop latency of the
 * deepest dependency chain (timing.c).  G = 4 on an open line, V = 4000 bytes
 * (4 us a link): reduce 1 -> 0 and 3 -> 2 at 0-4 us, 2 -> 0 at 4-8; broadcast
 * 0 -> 2 at 8-12, then 0 -> 1 (behind it on link 0 -> 1) and 2 -> 3 at 12-16:
 * 16 us of bytes; the deepest chain 3 -> 2 -> 0 -> 2 -> 3, 1 + 2 + 2 + 1 hops:
 * T = 16 + 6 = 22 us.  G = 6, V = 6000 (6 us a link): reduce at 0-6 (1 -> 0,
 * 3 -> 2, 5 -> 4), 2 -> 0 at 6-12, 4 -> 0 (ready at 6, behind 2 -> 0 on links
 * 2 -> 1 -> 0) at 12-18; broadcast 0 -> 4 at 18-24, 0 -> 2 at 24-30, 0 -> 1 and
 * 2 -> 3 at 30-36 (4 -> 5 at 24-30): 36 us of bytes; the deepest chain
 * 5 -> 4 -> 0 -> 4 -> 5, 1 + 4 + 4 + 1 hops: T = 36 + 10 = 46 us.
 */
static void test_tree_cost_by_hand(void **state)
{
    tpu_coll_plan_t *plan;

    (void)state;
    plan = line_plan(4, 4000, "group_tree");
    assert_string_equal(plan->algo->name, "group_tree");
    assert_true(fabs(modeled_us(plan) - 22.0) < 1e-6);
    tpu_coll_plan_destroy(plan);
    plan = line_plan(6, 6000, "group_tree");
    assert_true(fabs(modeled_us(plan) - 46.0) < 1e-6);
    tpu_coll_plan_destroy(plan);
}

/* 2 (G - 1) flows for a group of G (two groups here): one up and one down per member
 * but the root. */
static void test_tree_flows(void **state)
{
    static const int sizes[] = {2, 5, 8, 64, 100};
    int k;

    (void)state;
    for (k = 0; k < (int)(sizeof(sizes) / sizeof(sizes[0])); k++) {
        tpu_coll_plan_t *plan = line_plan(sizes[k], 4 * (uint64_t)sizes[k], "group_tree");

        assert_int_equal(tpu_coll_plan_model_flows(plan), 2 * 2 * (sizes[k] - 1));
        tpu_coll_plan_destroy(plan);
    }
}

/*
 * The cost model's choice on the halves of a line of 512 (groups of 256): one
 * element per member (1024 bytes, 1.024 us a link): the tree's 16 buffers
 * through the root's link (16.384 us) plus its deepest chain, from member 255
 * up (1 + 2 + 4 + ... + 128 = 255 hops) and back down, 510 us, against the
 * ring's 2 x 128 dependent steps of at least a hop each: the tree, at 526.384
 * us.  64 MiB: the tree's 16 V/(W/2), 1.07 s, against the ring's about
 * 2 x 2 V/(W/2) (its closing hop shares the line's links), 0.27 s: the ring.
 */
static void test_tree_chosen_where_faster(void **state)
{
    tpu_coll_plan_t *plan;

    (void)state;
    plan = line_plan(256, 1024, "");
    assert_string_equal(plan->algo->name, "group_tree");
    assert_true(fabs(modeled_us(plan) - (510.0 + 16 * 1.024)) < 1e-6);
    tpu_coll_plan_destroy(plan);
    plan = line_plan(256, 64u << 20, "");
    assert_string_equal(plan->algo->name, "group_rs_ag");
    tpu_coll_plan_destroy(plan);
}

/*
 * The selector never builds a candidate over its budget (select.c): a one-element
 * psum over the data x fsdp groups of data=35,fsdp=64,tensor=4 on the wrapped v5p
 * 16x20x28 (four groups of 2,240 chips).  The direct psum's one step would hold
 * about 6 GB in the walk (more than the 3 GB a build times) and is weighed out
 * before it is built; the ring's 2 x 1,120 dependent steps are slower than the
 * tree's time before it is built: the tree is chosen, with its 2 (G - 1) flows
 * per group.  Named, the direct psum is refused with the reason, at once (its
 * 2 x 1,792 x 2,239 flows are within the flow budget, its step's walk is not).
 */
static void test_large_group_budget(void **state)
{
    tpu_chip_spec_t chip;
    tpu_link_model_t link;
    tpu_topo_t topo;
    tpu_mesh_t *mesh = NULL;
    tpu_groups_t groups;
    tpu_coll_desc_t d;
    tpu_coll_plan_t *plan = NULL;
    tpu_err_t err = {0};

    (void)state;
    assert_int_equal(tpu_chip_preset("v5p", &chip, NULL), TPU_OK);
    tpu_chip_link_model(&chip, &link);
    tpu_test_topo(&topo, "16x20x28", "all", 1);
    memset(&groups, 0, sizeof(groups));
    tpu_coll_desc_init(&d);
    d.kind = TPU_COLL_PSUM;
    tpu_test_coll_target(&topo, "data=35,fsdp=64,tensor=4", "data,fsdp", 4, &mesh, &groups, &d);
    assert_int_equal(groups.size, 2240);
    assert_int_equal(tpu_coll_plan_create(&topo, &link, &d, &plan, &err), TPU_OK);
    assert_string_equal(plan->algo->name, "group_tree");
    assert_int_equal(tpu_coll_plan_model_flows(plan), 4 * 2 * (2240 - 1));
    tpu_coll_plan_destroy(plan);
    plan = NULL;
    snprintf(d.algo, sizeof(d.algo), "group_direct");
    assert_int_equal(tpu_coll_plan_create(&topo, &link, &d, &plan, &err), TPU_ERR_UNSUPPORTED);
    assert_null(plan);
    assert_non_null(strstr(err.msg, "psum over 2240 chips with group_direct: one step of its "
                                    "schedule needs about 5.9 GB in the link model's walk"));
    tpu_groups_fini(&groups);
    tpu_mesh_destroy(mesh);
}

/*
 * The schedule itself sums: every chip starts with its own bit (1 << chip), a
 * reducing flow adds its source's value into its destination, a copying flow
 * replaces it, in step order (within a step no chip both sends and receives);
 * at the end every chip holds the sum of its group's bits exactly (a value
 * added twice would carry into another bit).  Every chip's schedule, groups of
 * mesh axes and of torus axes, group sizes 2 to 16.
 */
static void check_sums(const char *shape, const char *wrap, const char *mesh_spec, const char *axes)
{
    tpu_link_model_t link = easy_link();
    tpu_topo_t topo;
    tpu_mesh_t *mesh = NULL;
    tpu_groups_t groups;
    tpu_coll_desc_t d;
    tpu_coll_plan_t *plan = NULL;
    tpu_plan_sched_t full;
    tpu_groups_t own;
    const tpu_groups_t *gr;
    tpu_err_t err = {0};
    uint64_t val[64], want[64];
    int64_t i;
    int c, g, k, size, ngroups;

    tpu_test_topo(&topo, shape, wrap, 1);
    assert_true(topo.nchips <= 64);
    memset(&groups, 0, sizeof(groups));
    tpu_coll_desc_init(&d);
    d.kind = TPU_COLL_PSUM;
    snprintf(d.algo, sizeof(d.algo), "group_tree");
    tpu_test_coll_target(&topo, mesh_spec, axes, 4, &mesh, &groups, &d);
    assert_int_equal(tpu_coll_plan_create(&topo, &link, &d, &plan, &err), TPU_OK);
    memset(&full, 0, sizeof(full));
    assert_int_equal(tpu__plan_build(plan, plan->algo, 1, -1, 0, &full, &err), TPU_OK);
    memset(&own, 0, sizeof(own));
    if (d.groups == NULL) {
        assert_int_equal(tpu_groups_of_axes(&topo, d.axes, &own, &err), TPU_OK);
    }
    gr = d.groups != NULL ? d.groups : &own;
    size = gr->size;
    ngroups = gr->ngroups;
    for (c = 0; c < topo.nchips; c++) {
        val[c] = 1ull << c;
        want[c] = 0;
    }
    for (g = 0; g < ngroups; g++) {
        uint64_t sum = 0;

        for (k = 0; k < size; k++) {
            sum += 1ull << gr->chips[g * size + k];
        }
        for (k = 0; k < size; k++) {
            want[gr->chips[g * size + k]] = sum;
        }
    }
    for (i = 0; i < full.s.nflows; i++) {
        const tpu_flow_t *f = &full.s.flows[i];

        assert_true(i == 0 || f->step >= full.s.flows[i - 1].step);
        val[f->dst] = f->reduce ? val[f->dst] + val[f->src] : val[f->src];
    }
    for (c = 0; c < topo.nchips; c++) {
        if (val[c] != want[c]) {
            print_error("%s %s %s %s chip %d: %llx, want %llx\n", shape, wrap,
                        mesh_spec != NULL ? mesh_spec : "-", axes, c, (unsigned long long)val[c],
                        (unsigned long long)want[c]);
        }
        assert_true(val[c] == want[c]);
    }
    tpu__plan_sched_fini(&full);
    tpu_coll_plan_destroy(plan);
    tpu_groups_fini(&own);
    tpu_groups_fini(&groups);
    tpu_mesh_destroy(mesh);
}

static void test_tree_schedule_sums(void **state)
{
    (void)state;
    check_sums("4x4", "none", "a=2,b=8", "b");
    check_sums("6x4", "x", "a=4,b=6", "b");
    check_sums("3x5", "none", "a=5,b=3", "a");
    check_sums("4x6", "all", "a=2,b=12", "b");
    check_sums("2x2x4", "x,z", "a=4,b=4", "a,b");
    check_sums("4x4", "all", NULL, "x,y");
    check_sums("4x4", "none", NULL, "x");
    check_sums("2", "none", NULL, "x");
}

/*
 * The data path with the tree chosen: the groups of mesh axes (parts of an axis, a product
 * of axes, groups of 3, 5, 6 and 12 members: not powers of two) and over the
 * torus axes named, f32, bf16 and i32, sum and max, buffers that do not divide
 * into the group: the model, the sim and loopback transports give one time and
 * every chip's output equals the reference (tpu_test_check_transports()).  A
 * psum's bytes move through the host plans whatever the algorithm (exec.c):
 * the tree's own sums are checked on its schedule above.
 */
static void test_tree_data(void **state)
{
    static const struct {
        const char *shape, *wrap, *mesh, *axes;
    } cases[] = {
        {"4x4", "none", "a=2,b=8", "b"},    {"6x4", "x", "a=4,b=6", "b"},
        {"3x5", "none", "a=5,b=3", "a"},    {"4x6", "all", "a=2,b=12", "b"},
        {"2x2x4", "x,z", "a=4,b=4", "a,b"}, {"4x4", "all", NULL, "x,y"},
        {"5", "none", NULL, "x"},
    };
    static const tpu_dtype_t dtypes[] = {TPU_DTYPE_F32, TPU_DTYPE_BF16, TPU_DTYPE_I32};
    tpu_link_model_t link = easy_link();
    int c, t;

    (void)state;
    for (c = 0; c < (int)(sizeof(cases) / sizeof(cases[0])); c++) {
        for (t = 0; t < 3; t++) {
            tpu_topo_t topo;
            tpu_mesh_t *mesh = NULL;
            tpu_groups_t groups;
            tpu_coll_desc_t d;
            tpu_coll_plan_t *plan = NULL;
            tpu_err_t err = {0};
            char label[128];

            tpu_test_topo(&topo, cases[c].shape, cases[c].wrap, 1);
            memset(&groups, 0, sizeof(groups));
            tpu_coll_desc_init(&d);
            d.kind = TPU_COLL_PSUM;
            d.dtype = dtypes[t];
            d.op = t == 2 ? TPU_REDOP_MAX : TPU_REDOP_SUM;
            snprintf(d.algo, sizeof(d.algo), "group_tree");
            tpu_test_coll_target(&topo, cases[c].mesh, cases[c].axes, 8, &mesh, &groups, &d);
            d.bytes += (uint64_t)tpu_dtype_size(d.dtype) * 3; /* uneven blocks */
            snprintf(label, sizeof(label), "%s %s %s %s %d", cases[c].shape, cases[c].wrap,
                     cases[c].mesh != NULL ? cases[c].mesh : "-", cases[c].axes, t);
            if (tpu_coll_plan_create(&topo, &link, &d, &plan, &err) != TPU_OK) {
                print_error("%s: %s\n", label, err.msg);
                fail();
            }
            assert_string_equal(plan->algo->name, "group_tree");
            tpu_test_check_transports(plan, &topo, label);
            tpu_coll_plan_destroy(plan);
            tpu_groups_fini(&groups);
            tpu_mesh_destroy(mesh);
        }
    }
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tree_cost_by_hand),        cmocka_unit_test(test_tree_flows),
        cmocka_unit_test(test_tree_chosen_where_faster), cmocka_unit_test(test_large_group_budget),
        cmocka_unit_test(test_tree_schedule_sums),       cmocka_unit_test(test_tree_data),
    };

    return tpu_test_main(argc, argv, "group_tree", tests, sizeof tests / sizeof tests[0]);
}
