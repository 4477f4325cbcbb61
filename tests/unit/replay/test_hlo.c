/*
 * The HLO parser: every feature of the hand-written fixtures (tests/fixtures/hlo),
 * the three replica-group spellings against groups computed by hand, XLA's group
 * modes and errors with their line and column; main() runs these and the replay's
 * cases of test_hlo_replay.c in three groups (core, fuzz, oom).
 */
#include "test_hlo.h"

#include "tpu/alloc.h"
#include "tpu/chip.h"
#include "tpu/coll.h"
#include "tpu/groups.h"
#include "tpu/hlo.h"
#include "tpu/replay.h"

#include "test_main.h"
#include "test_support.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>


tpu_hlo_file_t *hlo_parse_path(const char *path)
{
    size_t len;
    char *text = tpu_test_slurp(path, &len);
    tpu_hlo_file_t *f = NULL;
    tpu_err_t err = {0};

    if (text == NULL) {
        fail_msg("cannot read %s", path);
    }
    if (tpu_hlo_parse(text, len, path, &f, &err) != TPU_OK) {
        fail_msg("%s", err.msg);
    }
    free(text);
    return f;
}

tpu_hlo_file_t *hlo_parse_text(const char *text)
{
    tpu_hlo_file_t *f = NULL;
    tpu_err_t err = {0};

    if (tpu_hlo_parse(text, strlen(text), "t.hlo", &f, &err) != TPU_OK) {
        fail_msg("%s", err.msg);
    }
    return f;
}

static const tpu_hlo_instr_t *find(const tpu_hlo_module_t *m, const char *name)
{
    int c, i;

    for (c = 0; c < m->ncomps; c++) {
        for (i = 0; i < m->comps[c].ninstrs; i++) {
            if (strcmp(m->comps[c].instrs[i].name, name) == 0) {
                return &m->comps[c].instrs[i];
            }
        }
    }
    fail_msg("no instruction '%s'", name);
    return NULL;
}

/* The groups of 'in' equal 'want' (ng groups of 'size'). */
static void check_groups(const tpu_hlo_groups_t *g, int ng, int size, const int32_t *want)
{
    int k;

    assert_int_equal(g->ngroups, ng);
    for (k = 0; k < ng; k++) {
        assert_int_equal(g->start[k + 1] - g->start[k], size);
    }
    for (k = 0; k < ng * size; k++) {
        if (g->ids[k] != want[k]) {
            fail_msg("group id %d: got %d, want %d (%s)", k, g->ids[k], want[k], g->text);
        }
    }
}

static void test_parse_features(void **state)
{
    tpu_hlo_file_t *f = hlo_parse_path(FIX "features.hlo");
    const tpu_hlo_module_t *m;
    const tpu_hlo_instr_t *in;
    static const int32_t all8[] = {0, 1, 2, 3, 4, 5, 6, 7};
    static const int32_t x_of_2x4[] = {0, 4, 1, 5, 2, 6, 3, 7};

    (void)state;
    assert_int_equal(f->nmodules, 1);
    m = &f->modules[0];
    assert_string_equal(m->name, "features_8dev");
    assert_int_equal(m->has_header, 1);
    assert_int_equal(m->num_partitions, 8);
    assert_int_equal(m->replica_count, 0);
    assert_int_equal(m->is_scheduled, 1);
    assert_int_equal(m->stack_frame_entries, 8);
    assert_int_equal(m->ncomps, 8);
    assert_string_equal(m->comps[m->entry].name, "main");
    assert_int_equal(m->comps[m->entry].is_entry, 1);
    assert_int_equal(m->unknown_opcodes, 1);
    assert_int_equal(m->skipped_attributes, 2); /* shiny_new_attribute, another */
    assert_int_equal(tpu_replay_device_count(m), 8);

    in = find(m, "w"); /* a TPU tiled layout */
    assert_int_equal(in->shape.type, TPU_HLO_TYPE_BF16);
    assert_int_equal(in->shape.rank, 2);
    assert_int_equal(in->shape.dims[0], 256);
    assert_int_equal(in->shape.dims[1], 512);
    assert_int_equal(tpu_hlo_shape_bytes(&in->shape), 256 * 512 * 2);
    assert_int_equal(in->parameter_number, 1);
    assert_int_equal(find(m, "tok")->shape.type, TPU_HLO_TYPE_TOKEN);
    assert_int_equal(find(m, "pid")->op, TPU_HLO_OP_PARTITION_ID);
    assert_int_equal(find(m, "m")->shape.type, TPU_HLO_TYPE_BF16); /* {1,0:T(8,128)(2,1)S(1)} */

    in = find(m, "dot.1"); /* operands with inline shapes, resolved */
    assert_int_equal(in->op, TPU_HLO_OP_DOT);
    assert_int_equal(in->noperands, 2);
    assert_string_equal(m->comps[m->entry].instrs[in->operands[0]].name, "x");
    assert_string_equal(m->comps[m->entry].instrs[in->operands[1]].name, "w");
    assert_int_equal(in->lhs_contracting.n, 1);
    assert_int_equal(in->lhs_contracting.v[0], 1);
    assert_int_equal(in->rhs_contracting.v[0], 0);

    in = find(m, "gelu");
    assert_int_equal(in->op, TPU_HLO_OP_FUSION);
    assert_string_equal(in->fusion_kind, "kLoop");
    assert_string_equal(m->comps[in->calls_c].name, "fused_gelu");
    assert_non_null(strstr(in->backend_config, "fusion"));

    in = find(m, "ag-start");
    assert_int_equal(in->op, TPU_HLO_OP_ALL_GATHER);
    assert_int_equal(in->async, TPU_HLO_START);
    assert_int_equal(in->shape.type, TPU_HLO_TYPE_TUPLE);
    assert_int_equal(in->shape.ntuple, 2);
    assert_int_equal(in->channel_id, 1);
    assert_int_equal(in->use_global_device_ids, 1);
    assert_int_equal(in->dimensions.n, 1);
    assert_int_equal(in->groups.form, TPU_HLO_GROUPS_LIST);
    check_groups(&in->groups, 1, 8, all8);
    assert_int_equal(find(m, "ag-done")->async, TPU_HLO_DONE);

    in = find(m, "rs");
    assert_int_equal(in->groups.form, TPU_HLO_GROUPS_IOTA);
    check_groups(&in->groups, 1, 8, all8);
    assert_string_equal(m->comps[in->to_apply_c].name, "max_bf16");

    in = find(m, "a2a"); /* [4,2]<=[2,4]T(1,0) */
    check_groups(&in->groups, 4, 2, x_of_2x4);
    assert_int_equal(in->use_global_device_ids, -1);

    in = find(m, "cp");
    assert_int_equal(in->pairs.n, 8);
    assert_int_equal(in->pairs.v[6], 3);
    assert_int_equal(in->pairs.v[7], 0);

    in = find(m, "cb");
    assert_int_equal(in->op, TPU_HLO_OP_COLLECTIVE_BROADCAST);
    assert_int_equal(in->groups.form, TPU_HLO_GROUPS_MESH);
    check_groups(&in->groups, 2, 4, all8);

    in = find(m, "cc");
    assert_string_equal(in->custom_call_target, "my_pallas_kernel");

    in = find(m, "loop");
    assert_string_equal(m->comps[in->condition_c].name, "loop_cond");
    assert_string_equal(m->comps[in->body_c].name, "loop_body");
    assert_int_equal(in->known_trip_count, -1);

    in = find(m, "cond");
    assert_int_equal(in->nbranches, 2);
    assert_string_equal(m->comps[in->branches[1]].name, "branch_big");

    in = find(m, "mystery");
    assert_int_equal(in->op, TPU_HLO_OP_UNKNOWN);
    assert_string_equal(in->opcode, "frobnicate");

    in = find(m, "limit");
    assert_int_equal(in->has_int_value, 1);
    assert_int_equal(in->int_value, 5);
    assert_string_equal(find(m, "lt")->direction, "LT");
    assert_int_equal(find(m, "i")->index, 0);
    assert_int_equal(m->comps[m->entry].instrs[m->comps[m->entry].root].root, 1);
    tpu_hlo_file_destroy(f);
}

static void test_multi_module(void **state)
{
    tpu_hlo_file_t *f = hlo_parse_path(FIX "multi.hlo");

    (void)state;
    assert_int_equal(f->nmodules, 3);
    assert_string_equal(f->modules[0].name, "first_4dev");
    assert_int_equal(f->modules[0].replica_count, 4);
    assert_int_equal(tpu_replay_device_count(&f->modules[0]), 4);
    assert_string_equal(f->modules[1].name, "");
    assert_int_equal(f->modules[1].has_header, 0);
    assert_int_equal(tpu_replay_device_count(&f->modules[1]), 16); /* from its groups */
    assert_string_equal(f->modules[1].comps[0].name, "e2");
    assert_string_equal(f->modules[2].name, "third_16dev");
    assert_int_equal(tpu_replay_device_count(&f->modules[2]), 16);
    tpu_hlo_file_destroy(f);
}

/* The worked expansions of GRAMMAR.md section 7, computed by hand. */
static void test_iota_groups(void **state)
{
    static const struct {
        int64_t g, s;
        int nd;
        int64_t dims[3], perm[3];
        int has_perm;
        int32_t want[30];
    } cases[] = {
        {2, 4, 1, {8}, {0}, 0, {0, 1, 2, 3, 4, 5, 6, 7}},
        {4, 2, 2, {2, 4}, {1, 0}, 1, {0, 4, 1, 5, 2, 6, 3, 7}},
        {3, 10, 2, {6, 5}, {1, 0}, 1, {0,  5,  10, 15, 20, 25, 1,  6,  11, 16, 21, 26, 2,  7,  12,
                                       17, 22, 27, 3,  8,  13, 18, 23, 28, 4,  9,  14, 19, 24, 29}},
        {4, 2, 3, {2, 2, 2}, {0, 2, 1}, 1, {0, 2, 1, 3, 4, 6, 5, 7}},
        {1, 4, 1, {4}, {0}, 0, {0, 1, 2, 3}},
    };
    size_t c;
    int32_t ids[64];
    tpu_err_t err = {0};

    (void)state;
    for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        assert_int_equal(tpu_hlo_iota_groups(cases[c].g, cases[c].s, cases[c].nd, cases[c].dims,
                                             cases[c].has_perm ? cases[c].perm : NULL, ids, &err),
                         TPU_OK);
        assert_memory_equal(ids, cases[c].want,
                            sizeof(int32_t) * (size_t)(cases[c].g * cases[c].s));
    }
    /* Through the parser, in a module. */
    {
        tpu_hlo_file_t *f = hlo_parse_text(
            "HloModule m, replica_count=30\nENTRY e {\n p = f32[128,32] parameter(0)\n ROOT ag = "
            "f32[128,320] all-gather(p), replica_groups=[3,10]<=[6,5]T(1,0), dimensions={1}\n}\n");

        check_groups(&find(&f->modules[0], "ag")->groups, 3, 10, cases[2].want);
        tpu_hlo_file_destroy(f);
    }
    {
        const int64_t dims[2] = {2, 4}, bad[2] = {0, 0};

        assert_int_equal(tpu_hlo_iota_groups(3, 3, 2, dims, NULL, ids, &err), TPU_ERR_INVALID);
        tpu_err_clear(&err);
        assert_int_equal(tpu_hlo_iota_groups(4, 2, 2, dims, bad, ids, &err), TPU_ERR_INVALID);
    }
}

/* Mesh axes (V3): rows over the listed axes; sub-axes; device_ids. */
static void test_mesh_groups(void **state)
{
    static const struct {
        const char *groups;
        int ng, size;
        int32_t want[8];
    } cases[] = {
        {"mesh['a'=2,'b'=4] {'b'}", 2, 4, {0, 1, 2, 3, 4, 5, 6, 7}},
        {"mesh['a'=2,'b'=4] {'a'}", 4, 2, {0, 4, 1, 5, 2, 6, 3, 7}},
        {"mesh['a'=2,'b'=4] {'b','a'}", 1, 8, {0, 4, 1, 5, 2, 6, 3, 7}},
        {"mesh['a'=2,'b'=4] {'b':(2)2}", 4, 2, {0, 1, 2, 3, 4, 5, 6, 7}},
        {"mesh['a'=2,'b'=4] {'b':(1)2}", 4, 2, {0, 2, 1, 3, 4, 6, 5, 7}},
        {"mesh['a'=2,'b'=4], device_ids=(7,6,5,4,3,2,1,0) {'b'}", 2, 4, {7, 6, 5, 4, 3, 2, 1, 0}},
        {"mesh['axis_0'=2,'axis_1'=2] {'axis_1'}", 2, 2, {0, 1, 2, 3}},
    };
    size_t c;
    char text[512];

    (void)state;
    for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        tpu_hlo_file_t *f;

        snprintf(text, sizeof(text),
                 "HloModule m\nadd {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT c = "
                 "f32[] add(a, b)\n}\nENTRY e {\n p = f32[8] parameter(0)\n ROOT r = f32[8] "
                 "all-reduce(p), replica_groups=%s, to_apply=add\n}\n",
                 cases[c].groups);
        f = hlo_parse_text(text);
        check_groups(&find(&f->modules[0], "r")->groups, cases[c].ng, cases[c].size, cases[c].want);
        tpu_hlo_file_destroy(f);
    }
}

/* XLA's group modes with 2 replicas x 4 partitions, computed by hand. */
static void test_group_modes(void **state)
{
    tpu_hlo_file_t *f = hlo_parse_text(
        "HloModule m, replica_count=2, num_partitions=4\n"
        "add {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT c = f32[] add(a, b)\n}\n"
        "ENTRY e {\n p = f32[8] parameter(0)\n"
        " cr = f32[8] all-reduce(p), replica_groups={{0,1}}, to_apply=add\n"
        " cp = f32[8] all-to-all(p), channel_id=1, replica_groups={{0,1},{2,3}}, dimensions={0}\n"
        " crp = f32[8] all-reduce(p), channel_id=2, replica_groups={{0,1}}, to_apply=add\n"
        " fl = f32[16] all-gather(p), channel_id=3, replica_groups={{0,5},{1,4},{2,7},{3,6}}, "
        "dimensions={0}, use_global_device_ids=true\n"
        " all = f32[8] all-reduce(p), replica_groups={}, to_apply=add\n"
        " ROOT r = f32[8] add(p, p)\n}\n");
    const tpu_hlo_module_t *m = &f->modules[0];
    static const int32_t cr[] = {0, 4, 1, 5, 2, 6, 3, 7};
    static const int32_t cp[] = {0, 1, 2, 3, 4, 5, 6, 7};
    static const int32_t crp[] = {0, 1, 2, 3, 4, 5, 6, 7};
    static const int32_t fl[] = {0, 5, 1, 4, 2, 7, 3, 6};
    static const int32_t all[] = {0, 4, 1, 5, 2, 6, 3, 7};
    static const int32_t rev[] = {7, 6, 5, 4, 3, 2, 1, 0};
    static const int32_t fl_rev[] = {7, 2, 6, 3, 5, 0, 4, 1};
    int32_t chips[8];
    int ng, size;
    tpu_err_t err = {0};

    (void)state;
    assert_int_equal(tpu_replay_device_count(m), 8);
    assert_int_equal(tpu_replay_groups_get(m, find(m, "cr"), NULL, chips, &ng, &size, &err),
                     TPU_OK);
    assert_int_equal(ng, 4);
    assert_int_equal(size, 2);
    assert_memory_equal(chips, cr, sizeof(cr));
    assert_int_equal(tpu_replay_groups_get(m, find(m, "cp"), NULL, chips, &ng, &size, &err),
                     TPU_OK);
    assert_int_equal(ng, 4);
    assert_memory_equal(chips, cp, sizeof(cp));
    assert_int_equal(tpu_replay_groups_get(m, find(m, "crp"), NULL, chips, &ng, &size, &err),
                     TPU_OK);
    assert_int_equal(ng, 1);
    assert_int_equal(size, 8);
    assert_memory_equal(chips, crp, sizeof(crp));
    assert_int_equal(tpu_replay_groups_get(m, find(m, "fl"), NULL, chips, &ng, &size, &err),
                     TPU_OK);
    assert_memory_equal(chips, fl, sizeof(fl));
    assert_int_equal(tpu_replay_groups_get(m, find(m, "all"), NULL, chips, &ng, &size, &err),
                     TPU_OK);
    assert_int_equal(ng, 4);
    assert_memory_equal(chips, all, sizeof(all));
    assert_int_equal(tpu_replay_groups_get(m, find(m, "fl"), rev, chips, &ng, &size, &err), TPU_OK);
    assert_memory_equal(chips, fl_rev, sizeof(fl_rev));
    tpu_hlo_file_destroy(f);
}

/* Bad text: one message with the file, line and column. */
static void test_errors(void **state)
{
    static const struct {
        const char *text;
        const char *want;
    } cases[] = {
        {"", "t.hlo:1:1: no HLO module"},
        {"HloModule m\nENTRY e {\n p = f32[8] parameter(0)\n", "t.hlo:4:1: the file ends inside "
                                                               "computation 'e'"},
        {"HloModule m\nENTRY e {\n p = f32[8] parameter(0)\n r = f32[8] all-gather(p), "
         "replica_groups=<0,1>\n}\n",
         "t.hlo:4:43: unknown replica_groups spelling '<0,1>'"},
        {"HloModule m\n/* open\nENTRY e {\n}\n", "t.hlo:2:1: unterminated /* comment"},
        {"HloModule m\nENTRY e {\n p = q32[8] parameter(0)\n}\n", "t.hlo:3:6: unknown element "
                                                                  "type 'q32'"},
        {"HloModule m\nENTRY e {\n ROOT p = f32[8] parameter(0)\n ROOT q = f32[8] "
         "parameter(1)\n}\n",
         "t.hlo:4:2: computation 'e' has two ROOT"},
        {"HloModule m\nENTRY e {\n p = f32[8] parameter(0)\n ROOT r = f32[8] call(p), "
         "to_apply=nowhere\n}\n",
         "t.hlo:4:2: instruction 'r' calls computation 'nowhere'"},
        {"HloModule m\nENTRY e {\n p = f32[8] parameter(0), metadata={op_name=\"x\n}\n",
         "unterminated string"},
        {"HloModule m\nENTRY e {\n p = f32[8] parameter(0)\n r = f32[8] all-gather(p), "
         "replica_groups=[4,3]<=[8]\n}\n",
         "t.hlo:4:43: iota replica groups [4,3] do not hold the 8 devices"},
        {"HloModule m\nENTRY e {\n p = f32[8] parameter(0)\n r = f32[8] all-gather(p), "
         "replica_groups=[4,2]<=[2,4]\n}\n",
         "need a transpose"},
        {"HloModule m\nENTRY e {\n p = f32[8] parameter(0)\n r = f32[8] all-gather(p), "
         "replica_groups=[4,2]<=[2,4]T(1,1)\n}\n",
         "not a permutation"},
        {"HloModule m, num_partitions=0\nENTRY e {\n p = f32[8] parameter(0)\n}\n",
         "num_partitions 0 is out of range"},
        {"HloModule m\nENTRY e {\n p = f32[99999999999999999999] parameter(0)\n}\n", "too large"},
        {"HloModule m\nENTRY e {\n p = f32[8] parameter(0)\n r = f32[8] negate p\n}\n",
         "t.hlo:4:20: expected '(' after opcode 'negate'"},
    };
    size_t c;

    (void)state;
    for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        tpu_hlo_file_t *f = NULL;
        tpu_err_t err = {0};

        assert_int_equal(tpu_hlo_parse(cases[c].text, strlen(cases[c].text), "t.hlo", &f, &err),
                         TPU_ERR_INVALID);
        assert_null(f);
        if (strstr(err.msg, cases[c].want) == NULL) {
            fail_msg("case %zu: got '%s', want '%s'", c, err.msg, cases[c].want);
        }
        assert_null(strchr(err.msg, '\n'));
    }
}

/* Three groups, one ctest entry each (argv[1]: core, the default; fuzz; oom; or all). */
int main(int argc, char **argv)
{
    const struct CMUnitTest core[] = {
        cmocka_unit_test(test_parse_features),  cmocka_unit_test(test_multi_module),
        cmocka_unit_test(test_iota_groups),     cmocka_unit_test(test_mesh_groups),
        cmocka_unit_test(test_group_modes),     cmocka_unit_test(test_errors),
        cmocka_unit_test(test_replay_loops),    cmocka_unit_test(test_replay_async_overlap),
        cmocka_unit_test(test_replay_features), cmocka_unit_test(test_replay_group_collectives),
        cmocka_unit_test(test_replay_errors),   cmocka_unit_test(test_reference_modules),
    };
    const struct CMUnitTest fuzz[] = {
        cmocka_unit_test(test_fuzz),
    };
    const struct CMUnitTest oom[] = {
        cmocka_unit_test(test_oom_loop),
    };
    const tpu_test_group_t groups[] = {
        {"core", "hlo core", core, sizeof core / sizeof core[0], NULL, NULL},
        {"fuzz", "hlo fuzz", fuzz, sizeof fuzz / sizeof fuzz[0], NULL, NULL},
        {"oom", "hlo oom", oom, sizeof oom / sizeof oom[0], NULL, NULL},
    };

    return tpu_test_main_groups(argc, argv, groups, sizeof groups / sizeof groups[0]);
}
