/*
 * One HLO instruction: '[ROOT] name = shape opcode(operands), attr=value, ...'.
 * The opcode table and async suffixes (-start/-update/-done), operands (names,
 * nested instructions, literals), the attributes the replay reads (groups,
 * pairs, dimensions, called computations, trip counts, ...) and the ones it
 * skips; tpu_hlo_op_name() and tpu_hlo_op_class().
 */
#include "hlo_instr.h"

#include "hlo_groups.h"
#include "hlo_lex.h"
#include "hlo_shape.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------- instructions */

static const struct {
    const char *name;
    tpu_hlo_class_t cls;
} ops[TPU_HLO_OP_COUNT] = {{NULL, TPU_HLO_CLASS_UNKNOWN},
#define X(name, str, cls) {str, TPU_HLO_CLASS_##cls},
                           TPU_HLO_OP_MAP(X)
#undef X
};

static tpu_hlo_op_t op_lookup(const char *s, size_t n)
{
    return (tpu_hlo_op_t)tpu__hlo_name_lookup(ops, sizeof(ops[0]), TPU_HLO_OP_COUNT, s, n);
}

static void classify_opcode(tpu_hlo_instr_t *in)
{
    static const struct {
        const char *suffix;
        tpu_hlo_async_t kind;
    } sfx[] = {{"-start", TPU_HLO_START}, {"-update", TPU_HLO_UPDATE}, {"-done", TPU_HLO_DONE}};
    size_t n = strlen(in->opcode), k;

    in->op = op_lookup(in->opcode, n);
    in->async = TPU_HLO_SYNC;
    if (in->op != TPU_HLO_OP_UNKNOWN) {
        return;
    }
    for (k = 0; k < sizeof(sfx) / sizeof(sfx[0]); k++) {
        size_t m = strlen(sfx[k].suffix);

        if (n > m && strcmp(in->opcode + n - m, sfx[k].suffix) == 0) {
            in->op = op_lookup(in->opcode, n - m);
            if (in->op != TPU_HLO_OP_UNKNOWN) {
                in->async = sfx[k].kind;
            }
            return;
        }
    }
}

/* The number in backend_config's "known_trip_count":{"n":"K"} (escaped or not); -1. */
static int64_t find_trip_count(const char *cfg)
{
    const char *k = strstr(cfg, "known_trip_count"), *q;
    int64_t v = 0;

    if (k == NULL) {
        return -1;
    }
    q = strstr(k, "\"n\"");
    if (q == NULL) {
        q = strstr(k, "\\\"n\\\"");
    }
    if (q == NULL || q - k > 40) {
        return -1;
    }
    while (*q != '\0' && !tpu__hlo_is_digit((unsigned char)*q)) {
        if (*q == '}') {
            return -1;
        }
        q++;
    }
    if (!tpu__hlo_is_digit((unsigned char)*q)) {
        return -1;
    }
    while (tpu__hlo_is_digit((unsigned char)*q) && v < MAX_INT_VALUE / 10) {
        v = v * 10 + (*q++ - '0');
    }
    return v;
}

/* A computation name (or an inline computation, skipped: NULL). */
static tpu_status_t read_comp_ref(parser_t *p, const char **name_p)
{
    *name_p = NULL;
    if (tpu__hlo_cur(p) == '{') {
        p->mod->skipped_attributes++;
        return tpu__hlo_skip_group(p);
    }
    return tpu__hlo_read_ident(p, "a computation name", name_p);
}

/* Operands: "[shape] name", nested "[shape] opcode(...)", or literals (skipped). */
static tpu_status_t parse_operands(parser_t *p, tpu_hlo_instr_t *in)
{
    tpu_status_t status;
    int cap = 0, cap2 = 0;
    char buf[24];

    status = tpu__hlo_skip_ws(p);
    if (status != TPU_OK) {
        return status;
    }
    if (in->op == TPU_HLO_OP_CONSTANT || in->op == TPU_HLO_OP_PARAMETER) {
        /* A plain integer literal: "constant(10)", "parameter(0)". */
        size_t i = tpu__hlo_cur(p) == '-' ? 1 : 0, j;
        int64_t v = 0;

        for (j = i;
             p->pos + j < p->len && tpu__hlo_is_digit(tpu__hlo_at(p, j)) && v < MAX_INT_VALUE / 10;
             j++) {
            v = v * 10 + (tpu__hlo_at(p, j) - '0');
        }
        if (j > i && tpu__hlo_at(p, j) == ')') {
            for (; j > 0; j--) {
                tpu__hlo_adv(p);
            }
            tpu__hlo_adv(p);
            if (in->op == TPU_HLO_OP_PARAMETER) {
                in->parameter_number = v;
            } else {
                in->has_int_value = 1;
                in->int_value = i ? -v : v;
            }
            return TPU_OK;
        }
        /* Any other literal: skip it whole. */
        while (!tpu__hlo_at_end(p) && tpu__hlo_cur(p) != ')') {
            int c = tpu__hlo_cur(p);

            if (c == '{' || c == '(' || c == '[' || c == '"' || c == '\'') {
                status = c == '"' || c == '\'' ? tpu__hlo_skip_string(p) : tpu__hlo_skip_group(p);
            } else if (c == '/' && (tpu__hlo_at(p, 1) == '/' || tpu__hlo_at(p, 1) == '*')) {
                status = tpu__hlo_skip_ws(p);
            } else {
                tpu__hlo_adv(p);
                status = TPU_OK;
            }
            if (status != TPU_OK) {
                return status;
            }
        }
        return tpu__hlo_expect(p, ')', "closing the constant");
    }
    if (tpu__hlo_cur(p) == ')') {
        tpu__hlo_adv(p);
        return TPU_OK;
    }
    for (;;) {
        const char *name = NULL;
        size_t skip;

        status = tpu__hlo_skip_ws(p);
        if (status != TPU_OK) {
            return status;
        }
        if (tpu__hlo_shape_here(p)) {
            tpu_hlo_shape_t sh;

            status = tpu__hlo_parse_shape(p, &sh, 0);
            if (status == TPU_OK) {
                status = tpu__hlo_skip_ws(p);
            }
            if (status != TPU_OK) {
                return status;
            }
        }
        if (tpu__hlo_ident_len(p, &skip) > 0) {
            status = tpu__hlo_read_ident(p, "an operand", &name);
            if (status == TPU_OK) {
                status = tpu__hlo_skip_ws(p);
            }
            if (status != TPU_OK) {
                return status;
            }
            if (tpu__hlo_cur(p) == '(') {
                /* A nested instruction (tests write these): skip it, and any attributes. */
                p->mod->nested_operands++;
                name = NULL;
                status = tpu__hlo_skip_group(p);
                if (status != TPU_OK) {
                    return status;
                }
            }
        } else if (tpu__hlo_cur(p) != ',' && tpu__hlo_cur(p) != ')') {
            /* A literal operand: skip it. */
            if (tpu__hlo_at_end(p)) {
                return tpu__hlo_fail(p, "the file ends inside the operands of '%s'", in->name);
            }
            status = tpu__hlo_skip_value(p);
            if (status != TPU_OK) {
                return status;
            }
        } else {
            return tpu__hlo_fail(p, "expected an operand of '%s', found %s", in->name,
                                 tpu__hlo_what(p, buf, sizeof(buf)));
        }
        status = tpu__hlo_grow(p, (void **)&in->operand_names, in->noperands, &cap, sizeof(char *));
        if (status == TPU_OK) {
            status =
                tpu__hlo_grow(p, (void **)&in->operands, in->noperands, &cap2, sizeof(int32_t));
        }
        if (status != TPU_OK) {
            return status;
        }
        in->operand_names[in->noperands] = name;
        in->operands[in->noperands++] = -1;
        status = tpu__hlo_skip_ws(p);
        if (status != TPU_OK) {
            return status;
        }
        if (tpu__hlo_cur(p) == ',') {
            tpu__hlo_adv(p);
            continue;
        }
        if (tpu__hlo_cur(p) == ')') {
            tpu__hlo_adv(p);
            return TPU_OK;
        }
        return tpu__hlo_fail(p, "expected ',' or ')' in the operands of '%s', found %s", in->name,
                             tpu__hlo_what(p, buf, sizeof(buf)));
    }
}

/* Attributes whose values are skipped without counting them as unknown. */
static int known_skipped(const char *key)
{
    static const char *const names[] = {"sharding",
                                        "frontend_attributes",
                                        "statistics",
                                        "control-predecessors",
                                        "parameter_replication",
                                        "origin",
                                        "window",
                                        "padding",
                                        "slice",
                                        "dynamic_slice_sizes",
                                        "slice_sizes",
                                        "fft_type",
                                        "operand_precision",
                                        "algorithm",
                                        "constrain_layout",
                                        "mode",
                                        "async_execution_thread",
                                        "is_stable",
                                        "called_computations",
                                        "api_version",
                                        "output_to_operand_aliasing",
                                        "schedule",
                                        "custom_call_has_side_effect",
                                        "operand_layout_constraints",
                                        "exponent_bits",
                                        "mantissa_bits",
                                        "distribution",
                                        "rng_algorithm",
                                        "indices_are_sorted",
                                        "unique_indices",
                                        "offset_dims",
                                        "collapsed_slice_dims",
                                        "start_index_map",
                                        "index_vector_dim",
                                        "slice_sizes",
                                        "update_window_dims",
                                        "inserted_window_dims",
                                        "scatter_dims_to_operand_dims",
                                        "has_dynamic_root",
                                        "iota_dimension",
                                        "lhs_ragged_dims",
                                        "rhs_group_dims",
                                        "sparsity",
                                        "result_accuracy",
                                        "custom_call_schedule",
                                        "literal",
                                        "comparison_type",
                                        "is_host_transfer",
                                        "infeed_config",
                                        "outfeed_config",
                                        "outfeed_shape",
                                        "largest",
                                        "to_apply_c",
                                        "execution_thread",
                                        "select",
                                        "scatter",
                                        "split_dimension",
                                        "split_count",
                                        "concat_dimension",
                                        "channel_handle",
                                        "precision_config"};
    size_t i;

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcmp(names[i], key) == 0) {
            return 1;
        }
    }
    return 0;
}

/* The attributes that name one computation, and where each goes. */
static const struct {
    const char *key;
    size_t off;
} comp_refs[] = {
    {"to_apply", offsetof(tpu_hlo_instr_t, to_apply)},
    {"calls", offsetof(tpu_hlo_instr_t, calls)},
    {"condition", offsetof(tpu_hlo_instr_t, condition)},
    {"body", offsetof(tpu_hlo_instr_t, body)},
    {"true_computation", offsetof(tpu_hlo_instr_t, true_comp)},
    {"false_computation", offsetof(tpu_hlo_instr_t, false_comp)},
};

static tpu_status_t parse_attribute(parser_t *p, tpu_hlo_instr_t *in)
{
    size_t r;
    const char *key = NULL;
    tpu_status_t status;
    int64_t v = 0;

    status = tpu__hlo_read_key(p, "an attribute name", "after an attribute name", &key);
    if (status != TPU_OK) {
        return status;
    }
    if (strcmp(key, "replica_groups") == 0) {
        return tpu__hlo_parse_groups(p, &in->groups);
    }
    if (strcmp(key, "source_target_pairs") == 0) {
        return tpu__hlo_parse_pairs(p, &in->pairs);
    }
    if (strcmp(key, "dimensions") == 0) {
        return tpu__hlo_read_int_list(p, "dimensions", &in->dimensions);
    }
    if (strcmp(key, "lhs_batch_dims") == 0) {
        return tpu__hlo_read_int_list(p, key, &in->lhs_batch);
    }
    if (strcmp(key, "lhs_contracting_dims") == 0) {
        return tpu__hlo_read_int_list(p, key, &in->lhs_contracting);
    }
    if (strcmp(key, "rhs_batch_dims") == 0) {
        return tpu__hlo_read_int_list(p, key, &in->rhs_batch);
    }
    if (strcmp(key, "rhs_contracting_dims") == 0) {
        return tpu__hlo_read_int_list(p, key, &in->rhs_contracting);
    }
    if (strcmp(key, "fft_length") == 0) {
        tpu_hlo_ints_t l;
        int i;

        status = tpu__hlo_read_int_list(p, key, &l);
        in->fft_length = 1;
        for (i = 0; status == TPU_OK && i < l.n; i++) {
            if (l.v[i] < 1 || l.v[i] > TPU_HLO_MAX_IDS) {
                return tpu__hlo_fail(p, "fft_length %lld is out of range", (long long)l.v[i]);
            }
            in->fft_length *= l.v[i];
            if (in->fft_length > MAX_INT_VALUE / TPU_HLO_MAX_IDS) {
                return tpu__hlo_fail(p, "fft_length is out of range");
            }
        }
        return status;
    }
    if (strcmp(key, "channel_id") == 0) {
        status = tpu__hlo_read_int(p, key, &v);
        in->channel_id = v;
        return status;
    }
    if (strcmp(key, "index") == 0) {
        status = tpu__hlo_read_int(p, key, &v);
        in->index = v;
        return status;
    }
    if (strcmp(key, "feature_group_count") == 0 || strcmp(key, "batch_group_count") == 0) {
        status = tpu__hlo_read_int(p, key, &v);
        if (status == TPU_OK && v < 1) {
            return tpu__hlo_fail(p, "%s must be positive, got %lld", key, (long long)v);
        }
        *(key[0] == 'f' ? &in->feature_group_count : &in->batch_group_count) = v;
        return status;
    }
    if (strcmp(key, "use_global_device_ids") == 0) {
        return tpu__hlo_read_bool(p, key, &in->use_global_device_ids);
    }
    for (r = 0; r < sizeof(comp_refs) / sizeof(comp_refs[0]); r++) {
        if (strcmp(key, comp_refs[r].key) == 0) {
            return read_comp_ref(p, (const char **)((char *)in + comp_refs[r].off));
        }
    }
    if (strcmp(key, "branch_computations") == 0) {
        int cap = 0;

        status = tpu__hlo_expect(p, '{', "before branch_computations");
        while (status == TPU_OK) {
            status = tpu__hlo_skip_ws(p);
            if (status != TPU_OK || tpu__hlo_cur(p) == '}') {
                break;
            }
            status =
                tpu__hlo_grow(p, (void **)&in->branch_names, in->nbranches, &cap, sizeof(char *));
            if (status == TPU_OK) {
                status = tpu__hlo_read_ident(p, "a branch computation",
                                             &in->branch_names[in->nbranches]);
            }
            if (status != TPU_OK) {
                return status;
            }
            in->nbranches++;
            status = tpu__hlo_skip_ws(p);
            if (status == TPU_OK && tpu__hlo_cur(p) == ',') {
                tpu__hlo_adv(p);
            }
        }
        return status == TPU_OK ? tpu__hlo_expect(p, '}', "closing branch_computations") : status;
    }
    if (strcmp(key, "custom_call_target") == 0) {
        return tpu__hlo_read_string(p, &in->custom_call_target);
    }
    if (strcmp(key, "kind") == 0) {
        return tpu__hlo_read_ident(p, "a fusion kind", &in->fusion_kind);
    }
    if (strcmp(key, "direction") == 0) {
        return tpu__hlo_read_ident(p, "a comparison direction", &in->direction);
    }
    if (strcmp(key, "dim_labels") == 0) {
        size_t start = p->pos;

        while (!tpu__hlo_at_end(p) && (tpu__hlo_is_id_char(tpu__hlo_cur(p)) ||
                                       tpu__hlo_cur(p) == '>' || tpu__hlo_cur(p) == '?')) {
            tpu__hlo_adv(p);
        }
        in->dim_labels = tpu__hlo_dup_range(p, p->s + start, p->pos - start);
        return in->dim_labels != NULL ? TPU_OK : tpu__hlo_oom(p);
    }
    if (strcmp(key, "metadata") == 0) {
        size_t start = p->pos;

        status = tpu__hlo_skip_value(p);
        if (status != TPU_OK) {
            return status;
        }
        return tpu__hlo_find_quoted(p, p->s + start, p->pos - start, "op_name", &in->op_name);
    }
    if (strcmp(key, "backend_config") == 0) {
        size_t start = p->pos;

        status = tpu__hlo_cur(p) == '"' ? tpu__hlo_skip_string(p) : tpu__hlo_skip_value(p);
        if (status != TPU_OK) {
            return status;
        }
        in->backend_config = tpu__hlo_dup_range(p, p->s + start, p->pos - start);
        if (in->backend_config == NULL) {
            return tpu__hlo_oom(p);
        }
        in->known_trip_count = find_trip_count(in->backend_config);
        return TPU_OK;
    }
    if (!known_skipped(key)) {
        p->mod->skipped_attributes++;
    }
    return tpu__hlo_skip_value(p);
}

tpu_status_t tpu__hlo_parse_instruction(parser_t *p, tpu_hlo_instr_t *in)
{
    tpu_status_t status;
    char buf[24];

    memset(in, 0, sizeof(*in));
    in->channel_id = -1;
    in->use_global_device_ids = -1;
    in->known_trip_count = -1;
    in->index = -1;
    in->parameter_number = -1;
    in->feature_group_count = 1;
    in->batch_group_count = 1;
    in->to_apply_c = in->calls_c = in->condition_c = in->body_c = in->true_c = in->false_c = -1;
    in->shape.type = TPU_HLO_TYPE_TUPLE;
    in->line = p->line;
    in->col = tpu__hlo_col_of(p);
    status = tpu__hlo_take_word(p, "ROOT", &in->root);
    if (status == TPU_OK) {
        status = tpu__hlo_read_ident(p, "an instruction name", &in->name);
    }
    if (status == TPU_OK) {
        status = tpu__hlo_expect(p, '=', "after the instruction name");
    }
    if (status == TPU_OK) {
        status = tpu__hlo_skip_ws(p);
    }
    if (status != TPU_OK) {
        return status;
    }
    if (tpu__hlo_shape_here(p)) {
        status = tpu__hlo_parse_shape(p, &in->shape, 0);
        if (status == TPU_OK) {
            status = tpu__hlo_skip_ws(p);
        }
        if (status != TPU_OK) {
            return status;
        }
        in->has_shape = 1;
    }
    status = tpu__hlo_read_ident(p, "an opcode", &in->opcode);
    if (status != TPU_OK) {
        return status;
    }
    classify_opcode(in);
    if (in->op == TPU_HLO_OP_UNKNOWN) {
        p->mod->unknown_opcodes++;
    }
    status = tpu__hlo_skip_ws(p);
    if (status != TPU_OK) {
        return status;
    }
    if (tpu__hlo_cur(p) != '(') {
        return tpu__hlo_fail(p, "expected '(' after opcode '%s', found %s", in->opcode,
                             tpu__hlo_what(p, buf, sizeof(buf)));
    }
    tpu__hlo_adv(p);
    status = parse_operands(p, in);
    while (tpu__hlo_next_item(p, &status)) {
        status = parse_attribute(p, in);
    }
    return status;
}


const char *tpu_hlo_op_name(tpu_hlo_op_t op)
{
    return op > TPU_HLO_OP_UNKNOWN && op < TPU_HLO_OP_COUNT ? ops[op].name : NULL;
}

tpu_hlo_class_t tpu_hlo_op_class(tpu_hlo_op_t op)
{
    return op > TPU_HLO_OP_UNKNOWN && op < TPU_HLO_OP_COUNT ? ops[op].cls : TPU_HLO_CLASS_UNKNOWN;
}
