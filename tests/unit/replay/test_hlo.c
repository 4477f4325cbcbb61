/*
 * The HLO parser and the replay: every feature of the hand-written fixtures
 * (tests/fixtures/hlo), the three replica-group spellings against groups
 * computed by hand, XLA's group modes, errors with their line and column, a
 * mutation fuzzer, an OOM loop over parse + replay, loops, async overlap,
 * conditionals, custom-calls, and a tier that replays every module of
 * ../shared/reference/hlo when that folder is there.
 */
#include "tpu/alloc.h"
#include "tpu/chip.h"
#include "tpu/coll.h"
#include "tpu/groups.h"
#include "tpu/hlo.h"
#include "tpu/replay.h"

#include "test_main.h"
#include "test_support.h"

#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#ifndef TPU_SOURCE_DIR
#define TPU_SOURCE_DIR "."
#endif
#define FIX TPU_SOURCE_DIR "/tests/fixtures/hlo/"

static char *slurp(const char *path, size_t *len_p)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;

    if (f == NULL) {
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    rewind(f);
    buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    buf[n] = '\0';
    *len_p = (size_t)n;
    return buf;
}

static tpu_hlo_file_t *parse_path(const char *path)
{
    size_t len;
    char *text = slurp(path, &len);
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

static tpu_hlo_file_t *parse_text(const char *text)
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
    tpu_hlo_file_t *f = parse_path(FIX "features.hlo");
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
    tpu_hlo_file_t *f = parse_path(FIX "multi.hlo");

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
        tpu_hlo_file_t *f = parse_text(
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
        f = parse_text(text);
        check_groups(&find(&f->modules[0], "r")->groups, cases[c].ng, cases[c].size, cases[c].want);
        tpu_hlo_file_destroy(f);
    }
}

/* XLA's group modes with 2 replicas x 4 partitions, computed by hand. */
static void test_group_modes(void **state)
{
    tpu_hlo_file_t *f = parse_text(
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

static void pod_for(int n, const char *chip, tpu_topo_t *topo, tpu_chip_spec_t *spec,
                    tpu_link_model_t *link)
{
    int dims[3] = {1, 1, 1}, wrap[3] = {0, 0, 0}, a;
    tpu_err_t err = {0};

    for (a = 1; a * a <= n; a++) {
        if (n % a == 0) {
            dims[0] = a;
        }
    }
    dims[1] = n / dims[0];
    assert_int_equal(tpu_chip_preset(chip, spec, &err), TPU_OK);
    assert_int_equal(tpu_topo_init(topo, 2, dims, wrap, 1, &err), TPU_OK);
    tpu_chip_link_model(spec, link);
}

static tpu_replay_report_t *replay(const tpu_hlo_module_t *m, const tpu_replay_opts_t *opts)
{
    tpu_topo_t topo;
    tpu_chip_spec_t spec;
    tpu_link_model_t link;
    tpu_replay_report_t *r = NULL;
    tpu_err_t err = {0};

    pod_for(tpu_replay_device_count(m), "v5e", &topo, &spec, &link);
    if (tpu_replay_run(m, &topo, &link, &spec, opts, &r, &err) != TPU_OK) {
        fail_msg("replay of '%s': %s", m->name, err.msg);
    }
    return r;
}

static const tpu_replay_coll_t *coll(const tpu_replay_report_t *r, const char *name)
{
    int i;

    for (i = 0; i < r->ncolls; i++) {
        if (strcmp(r->colls[i].name, name) == 0) {
            return &r->colls[i];
        }
    }
    fail_msg("no collective '%s'", name);
    return NULL;
}

static const tpu_replay_op_t *op(const tpu_replay_report_t *r, const char *name)
{
    int i;

    for (i = 0; i < r->nops; i++) {
        if (strcmp(r->ops[i].name, name) == 0) {
            return &r->ops[i];
        }
    }
    fail_msg("no op '%s'", name);
    return NULL;
}

static int has_warning(const tpu_replay_report_t *r, const char *part)
{
    int i;

    for (i = 0; i < r->nwarnings; i++) {
        if (strstr(r->warnings[i], part) != NULL) {
            return 1;
        }
    }
    return 0;
}

static void test_replay_loops(void **state)
{
    tpu_hlo_file_t *f = parse_path(FIX "while_4x4.hlo");
    const tpu_hlo_module_t *m = &f->modules[0];
    tpu_replay_report_t *r = replay(m, NULL);
    const char *names[] = {"unknown"};
    const int64_t counts[] = {4};
    tpu_replay_opts_t o;
    int i;

    (void)state;
    assert_int_equal(coll(r, "ar")->executions, 12); /* known_trip_count */
    assert_int_equal(coll(r, "ag")->executions, 3);  /* 1, 4, 7 < 10 */
    assert_int_equal(coll(r, "a2a")->executions, 1); /* unknown: once, with a warning */
    assert_true(has_warning(r, "while 'unknown': trip count unknown"));
    assert_true(fabs(r->comm_us - (12 * coll(r, "ar")->modeled_us + 3 * coll(r, "ag")->modeled_us +
                                   coll(r, "a2a")->modeled_us)) < 1e-9);
    assert_true(r->step_us >= r->comm_us);
    /* The executions in order, loops unrolled: 12 x ar, 3 x ag, 1 x a2a. */
    assert_int_equal(r->nseq, 16);
    assert_int_equal(r->seq_truncated, 0);
    for (i = 0; i < 16; i++) {
        assert_string_equal(r->colls[r->seq[i]].name, i < 12 ? "ar" : i < 15 ? "ag" : "a2a");
    }
    tpu_replay_report_destroy(r);

    memset(&o, 0, sizeof(o));
    o.ntrips = 1;
    o.trip_names = names;
    o.trip_counts = counts;
    r = replay(m, &o);
    assert_int_equal(coll(r, "a2a")->executions, 4);
    assert_false(has_warning(r, "trip count unknown"));
    tpu_replay_report_destroy(r);
    tpu_hlo_file_destroy(f);
}

/* A dot between an all-gather's start and done hides it; run synchronously, they add. */
static void test_replay_async_overlap(void **state)
{
    tpu_hlo_file_t *f = parse_path(FIX "async_4x4.hlo");
    tpu_replay_report_t *ov = replay(&f->modules[0], NULL);
    tpu_replay_report_t *sy = replay(&f->modules[1], NULL);
    tpu_replay_report_t *ca = replay(&f->modules[2], NULL);
    double ag = coll(ov, "ags")->modeled_us, dot = op(ov, "d")->modeled_us;
    tpu_chip_spec_t v5e;
    tpu_err_t err = {0};

    (void)state;
    /* 2 x 2048^3 FLOPs at the v5e's bf16 peak: compute-bound, no padding. */
    assert_int_equal(tpu_chip_preset("v5e", &v5e, &err), TPU_OK);
    assert_true(op(ov, "d")->flops == 2.0 * 2048 * 2048 * 2048);
    assert_true(fabs(dot - 2.0 * 2048 * 2048 * 2048 / v5e.bf16_flops * 1e6) < 1e-9);
    assert_true(ag > 0 && dot > 0);
    assert_true(fabs(ov->step_us - (ag > dot ? ag : dot)) < 1e-9);
    assert_true(fabs(ov->exposed_comm_us - (ag > dot ? ag - dot : 0)) < 1e-9);
    assert_true(fabs(sy->step_us - (ag + dot)) < 1e-9);
    assert_true(fabs(sy->exposed_comm_us - ag) < 1e-9);
    assert_true(fabs(coll(sy, "ag")->modeled_us - ag) < 1e-12);
    /* async-start / async-done with calls=: the same as the sugared pair. */
    assert_true(fabs(ca->step_us - ov->step_us) < 1e-9);
    assert_true(fabs(coll(ca, "as")->modeled_us - ag) < 1e-12);
    assert_int_equal(coll(ca, "as")->async, 1);
    tpu_replay_report_destroy(ov);
    tpu_replay_report_destroy(sy);
    tpu_replay_report_destroy(ca);
    tpu_hlo_file_destroy(f);
}

/* Every feature replayed on 2x4: conditional, custom-call, fusion, loop, all collectives. */
static void test_replay_features(void **state)
{
    tpu_hlo_file_t *f = parse_path(FIX "features.hlo");
    const tpu_hlo_module_t *m = &f->modules[0];
    tpu_replay_report_t *r = replay(m, NULL);
    const char *names[] = {"my_pallas_kernel"};
    const double us[] = {5.5};
    tpu_replay_opts_t o;
    int i;

    (void)state;
    assert_true(has_warning(r, "conditional 'cond': the most expensive of 2 branches "
                               "('branch_big'"));
    assert_true(has_warning(r, "custom-call 'cc'"));
    assert_int_equal(r->custom_calls, 1);
    assert_int_equal(r->unknown_opcodes, 1);
    assert_true(op(r, "cc")->modeled_us == 0);
    assert_int_equal(op(r, "e")->executions, 1);                 /* branch_big counted */
    assert_int_equal(op(r, "n")->executions, 0);                 /* branch_small not */
    assert_int_equal(coll(r, "ar")->executions, 5);              /* the counted loop */
    assert_int_equal(coll(r, "ag-start")->bytes, 512 * 512 * 2); /* output per chip */
    assert_int_equal(coll(r, "rs")->bytes, 512 * 512 * 2);       /* input per chip */
    assert_string_equal(coll(r, "a2a")->axes, "x");
    assert_string_equal(coll(r, "cp")->axes, "y");
    assert_int_equal(coll(r, "cp")->desc.shift, 1);
    assert_string_equal(coll(r, "cb")->axes, "y");
    assert_true(op(r, "gelu")->flops == 64.0 * 512 * (1 + 4)); /* tanh 4 + multiply 1 */
    assert_true(op(r, "gelu")->bytes == 2.0 * 64 * 512 * 2);
    for (i = 0; i < r->ncolls; i++) {
        assert_int_equal(r->colls[i].supported, 1);
    }
    tpu_replay_report_destroy(r);
    memset(&o, 0, sizeof(o));
    o.ncustom = 1;
    o.custom_names = names;
    o.custom_us = us;
    r = replay(m, &o);
    assert_true(op(r, "cc")->modeled_us == 5.5);
    tpu_replay_report_destroy(r);
    tpu_hlo_file_destroy(f);
}

/* Groups that are not whole torus axes and pairs that are not one shift: the
 * engine's group collectives, given the same chips the module names. */
static void test_replay_group_collectives(void **state)
{
    tpu_hlo_file_t *f = parse_text(
        "HloModule g, num_partitions=8\n"
        "add {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT c = f32[] add(a, b)\n}\n"
        "ENTRY e {\n p = f32[65536] parameter(0)\n"
        " ar = f32[65536] all-reduce(p), channel_id=1, replica_groups={{0,5},{1,4},{2,7},{3,6}}, "
        "use_global_device_ids=true, to_apply=add\n"
        " ROOT cp = f32[65536] collective-permute(p), channel_id=2, "
        "source_target_pairs={{0,1},{1,2},{2,3},{3,4},{4,5},{5,6},{6,7},{7,0}}\n}\n");
    const tpu_hlo_module_t *m = &f->modules[0];
    tpu_replay_report_t *r = replay(m, NULL);
    static const int32_t ids[] = {0, 5, 1, 4, 2, 7, 3, 6};
    static const int sizes[] = {2, 2, 2, 2};
    static const int32_t ring[] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 0};
    const tpu_replay_coll_t *ar = coll(r, "ar"), *cp = coll(r, "cp");
    tpu_topo_t topo;
    tpu_chip_spec_t spec;
    tpu_link_model_t link;
    tpu_groups_t g;
    tpu_coll_desc_t d;
    tpu_coll_plan_t *plan = NULL;
    tpu_coll_result_t res;
    tpu_err_t err = {0};

    (void)state;
    pod_for(8, "v5e", &topo, &spec, &link);
    assert_int_equal(ar->supported, 1);
    assert_string_equal(ar->axes, "groups");
    assert_int_equal(ar->group_size, 2);
    assert_memory_equal(ar->chips, ids, sizeof(ids));
    assert_int_equal(tpu_groups_from_lists(ids, sizes, 4, &g, &err), TPU_OK);
    tpu_coll_desc_init(&d);
    d.kind = TPU_COLL_PSUM;
    d.bytes = 65536 * 4;
    d.groups = &g;
    assert_int_equal(tpu_coll_plan_create(&topo, &link, &d, &plan, &err), TPU_OK);
    assert_int_equal(tpu_coll_plan_model(plan, &res, &err), TPU_OK);
    assert_true(res.modeled_us == ar->modeled_us);
    tpu_coll_plan_destroy(plan);
    tpu_groups_fini(&g);

    assert_int_equal(cp->supported, 1);
    assert_string_equal(cp->axes, "pairs");
    assert_int_equal(cp->npairs, 8);
    assert_memory_equal(cp->pairs, ring, sizeof(ring));
    tpu_coll_desc_init(&d);
    d.kind = TPU_COLL_PPERMUTE;
    d.bytes = 65536 * 4;
    d.pairs = ring;
    d.npairs = 8;
    assert_int_equal(tpu_coll_plan_create(&topo, &link, &d, &plan, &err), TPU_OK);
    assert_int_equal(tpu_coll_plan_model(plan, &res, &err), TPU_OK);
    assert_true(res.modeled_us == cp->modeled_us);
    tpu_coll_plan_destroy(plan);
    tpu_replay_report_destroy(r);
    tpu_hlo_file_destroy(f);
}

/* Bad modules for the replay: one message with the line. */
static void test_replay_errors(void **state)
{
    tpu_hlo_file_t *f = parse_path(FIX "bad_group_chip.hlo");
    tpu_topo_t topo;
    tpu_chip_spec_t spec;
    tpu_link_model_t link;
    tpu_replay_report_t *r = NULL;
    tpu_err_t err = {0};
    int32_t order[16];
    tpu_replay_opts_t o;
    int i;

    (void)state;
    pod_for(16, "v5e", &topo, &spec, &link);
    assert_int_equal(tpu_replay_run(&f->modules[0], &topo, &link, &spec, NULL, &r, &err),
                     TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "bad_group_chip.hlo:5:3: replica group of 'ag' names device "
                                    "16"));
    tpu_hlo_file_destroy(f);
    f = parse_path(FIX "features.hlo");
    tpu_err_clear(&err);
    assert_int_equal(tpu_replay_run(&f->modules[0], &topo, &link, &spec, NULL, &r, &err),
                     TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "features.hlo:4:1: module 'features_8dev' runs on 8 devices"));
    assert_null(r);
    pod_for(8, "v5e", &topo, &spec, &link);
    for (i = 0; i < 8; i++) {
        order[i] = i == 7 ? 0 : i;
    }
    memset(&o, 0, sizeof(o));
    o.device_order = order;
    o.ndevice_order = 8;
    tpu_err_clear(&err);
    assert_int_equal(tpu_replay_run(&f->modules[0], &topo, &link, &spec, &o, &r, &err),
                     TPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "not a permutation"));
    tpu_hlo_file_destroy(f);
}

/* Mutations of the fixtures: an error or a module, never a crash (ASan watches). */
static void test_fuzz(void **state)
{
    static const char *const files[] = {"features.hlo", "coll_4x4.hlo", "async_4x4.hlo",
                                        "while_4x4.hlo", "multi.hlo"};
    static const char tokens[] = "{}()[],=%:<>\"'/*-0123456789 \nTxaf";
    uint64_t seed = 12345;
    size_t fi;
    int iter, ok = 0;

    (void)state;
    for (fi = 0; fi < sizeof(files) / sizeof(files[0]); fi++) {
        char path[512];
        size_t len;
        char *orig;

        snprintf(path, sizeof(path), "%s%s", FIX, files[fi]);
        orig = slurp(path, &len);
        assert_non_null(orig);
        for (iter = 0; iter < 400; iter++) {
            char *text = malloc(len + 16);
            size_t n = len, k, nmut;
            tpu_hlo_file_t *f = NULL;
            tpu_err_t err = {0};

            memcpy(text, orig, len);
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            nmut = 1 + (seed >> 60) % 4;
            for (k = 0; k < nmut; k++) {
                size_t at;

                seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
                at = (size_t)((seed >> 33) % n);
                switch ((seed >> 20) % 4) {
                case 0:
                    text[at] = tokens[(seed >> 8) % (sizeof(tokens) - 1)];
                    break;
                case 1:
                    n = at; /* truncate */
                    break;
                case 2:
                    text[at] = (char)(seed >> 40);
                    break;
                default:
                    memmove(text + at, text + at + 1, n - at - 1);
                    n--;
                    break;
                }
                if (n == 0) {
                    break;
                }
            }
            /* A copy of exactly n bytes: the parser must not read past it (ASan). */
            {
                char *exact = malloc(n ? n : 1);

                memcpy(exact, text, n);
                if (tpu_hlo_parse(exact, n, "fuzz.hlo", &f, &err) == TPU_OK) {
                    int m;

                    ok++;
                    for (m = 0; m < f->nmodules; m++) {
                        int d = tpu_replay_device_count(&f->modules[m]);
                        tpu_err_t ve = {0};

                        /* The verifier refuses with a message, or passes (replayed either way). */
                        if (tpu_hlo_verify(&f->modules[m], &ve) != TPU_OK) {
                            assert_true(strlen(ve.msg) > 0);
                        }

                        if (d == 8 || d == 16) {
                            tpu_topo_t topo;
                            tpu_chip_spec_t spec;
                            tpu_link_model_t link;
                            tpu_replay_report_t *r = NULL;
                            tpu_err_t e2 = {0};

                            pod_for(d, "v5e", &topo, &spec, &link);
                            if (tpu_replay_run(&f->modules[m], &topo, &link, &spec, NULL, &r,
                                               &e2) == TPU_OK) {
                                tpu_replay_report_destroy(r);
                            } else {
                                assert_true(strlen(e2.msg) > 0);
                            }
                        }
                    }
                    tpu_hlo_file_destroy(f);
                } else {
                    assert_true(strlen(err.msg) > 0);
                    assert_null(f);
                }
                free(exact);
            }
            free(text);
        }
        free(orig);
    }
    printf("fuzz: %d of %d mutants parsed\n", ok, (int)(5 * 400));
}

/* Fail the k-th allocation for every k: TPU_ERR_NO_MEMORY, no leak. */
static void test_oom_loop(void **state)
{
    size_t len;
    char *text = slurp(FIX "features.hlo", &len);
    long n;

    (void)state;
    assert_non_null(text);
    for (n = 0; n < 100000; n++) {
        tpu_hlo_file_t *f = NULL;
        tpu_replay_report_t *r = NULL;
        tpu_err_t err = {0};
        tpu_status_t status;
        tpu_topo_t topo;
        tpu_chip_spec_t spec;
        tpu_link_model_t link;

        pod_for(8, "v5e", &topo, &spec, &link);
        tpu_test_alloc_fail_after(n);
        status = tpu_hlo_parse(text, len, "features.hlo", &f, &err);
        if (status == TPU_OK) {
            status = tpu_replay_run(&f->modules[0], &topo, &link, &spec, NULL, &r, &err);
            tpu_replay_report_destroy(r);
            tpu_hlo_file_destroy(f);
        }
        if (status != TPU_OK && status != TPU_ERR_NO_MEMORY) {
            fail_msg("allocation %ld failing: status %d (%s)", n, status, err.msg);
        }
        if (status == TPU_ERR_NO_MEMORY) {
            assert_true(tpu_test_alloc_failed());
            assert_int_equal(err.status, TPU_ERR_NO_MEMORY);
        }
        if (tpu_test_alloc_live() != 0) {
            fail_msg("allocation %ld failing: %ld blocks leaked", n, tpu_test_alloc_live());
        }
        tpu_test_alloc_restore();
        if (status == TPU_OK) {
            printf("oom loop: succeeded after %ld failing allocations\n", n);
            assert_true(n >= 3);
            free(text);
            return;
        }
    }
    fail_msg("parse + replay never succeeded");
}

/* Every module of ../shared/reference/hlo (third-party text, read where it lies). */
static void test_reference_modules(void **state)
{
    const char *dir = TPU_HLO_REFERENCE_DIR;
    DIR *d = opendir(dir);
    struct dirent *e;
    int nfiles = 0, nmodules = 0;

    (void)state;
    if (d == NULL) {
        printf("reference tier skipped: %s is not there\n", dir);
        skip();
    }
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        char path[1024];
        tpu_hlo_file_t *f;
        int m;

        if (n < 5 || strcmp(e->d_name + n - 4, ".hlo") != 0) {
            continue;
        }
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        f = parse_path(path);
        nfiles++;
        for (m = 0; m < f->nmodules; m++) {
            tpu_replay_report_t *r = replay(&f->modules[m], NULL);
            int i;

            for (i = 0; i < r->ncolls; i++) {
                assert_true(r->colls[i].executions >= 0);
                assert_true(isfinite(r->colls[i].modeled_us));
            }
            assert_true(isfinite(r->step_us) && r->step_us >= 0);
            printf("  %s module %d '%s': %d devices, step %.3f us, %d collectives (%d not "
                   "timed)\n",
                   e->d_name, m + 1, f->modules[m].name, r->devices, r->step_us, r->ncolls,
                   r->unsupported);
            nmodules++;
            tpu_replay_report_destroy(r);
        }
        tpu_hlo_file_destroy(f);
    }
    closedir(d);
    printf("reference tier: %d modules in %d files\n", nmodules, nfiles);
    assert_true(nfiles > 0);
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
