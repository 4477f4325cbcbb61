/*
 * The HLO verifier: what XLA's hlo_verifier refuses, checked on a parsed module
 * before anything is costed (tpu_hlo_verify() in tpu/hlo.h).
 *
 * - Structure: every operand names an instruction of its computation, defined
 *   before its use (a parameter may come anywhere), no instruction depends on
 *   itself; every called computation exists and no computation calls itself,
 *   directly or through others; the module has an entry computation.
 * - Collectives, as XLA's shape inference defines them, for each operand and
 *   its output (element k of a tuple result when there are several operands; the
 *   second element of an all-gather-start or collective-permute-start tuple):
 *   all-reduce keeps the shape; all-gather multiplies dimensions={d} by the
 *   group size; reduce-scatter divides it (evenly); all-to-all splits
 *   dimensions={d} into group-size parts (evenly) and keeps the shape.
 *   Replica groups: none empty, all of one size (all-gather, reduce-scatter,
 *   all-to-all), no id twice, ids 0 to n-1 with n the module's replicas,
 *   partitions or devices as the collective's mode says (channel_id,
 *   use_global_device_ids).  source_target_pairs: ids in range, no source or
 *   target twice.
 * - dot: as many lhs as rhs contracting and batch dimensions, each in range and
 *   named once, equal sizes on both sides, and the result [batch..., lhs free...,
 *   rhs free...].
 * - while: backend_config's known_trip_count a whole number from 0 to 2^63-1.
 *
 * Cost: linear in the instructions, operands and group ids (two passes of Kahn's
 * algorithm, no recursion).  The first violation is the error:
 * "FILE:LINE:COL: message".
 */
#include "tpu/hlo.h"

#include "alloc.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    const tpu_hlo_module_t *mod;
    tpu_err_t *err;
} verifier_t;

static tpu_status_t fail_at(verifier_t *v, const tpu_hlo_instr_t *in, const char *what)
{
    return tpu_err_set(v->err, TPU_ERR_INVALID, "%s:%d:%d: '%s': %s", v->mod->file, in->line,
                       in->col, in->name, what);
}

static tpu_status_t oom(verifier_t *v)
{
    return tpu_err_set(v->err, TPU_ERR_NO_MEMORY, "out of memory verifying '%s'", v->mod->file);
}

/* "f32[4,8]" into buf. */
static const char *shape_str(const tpu_hlo_shape_t *s, char *buf, size_t len)
{
    size_t used = (size_t)snprintf(buf, len, "%s[", tpu_hlo_type_name(s->type));
    int d;

    for (d = 0; d < s->rank && used < len; d++) {
        used +=
            (size_t)snprintf(buf + used, len - used, "%s%lld", d ? "," : "", (long long)s->dims[d]);
    }
    if (used < len) {
        snprintf(buf + used, len - used, "]");
    }
    return buf;
}

static int is_array(const tpu_hlo_shape_t *s)
{
    return s->type != TPU_HLO_TYPE_TUPLE && s->type != TPU_HLO_TYPE_TOKEN &&
           s->type != TPU_HLO_TYPE_OPAQUE;
}

/*
 * Kahn's algorithm over n nodes whose edges 'from -> to' come from 'edges'
 * (2 * nedges ints); returns the first node left in a cycle, or -1 (-2: out of
 * memory).
 */
static int first_in_cycle(int n, const int *edges, int nedges)
{
    int *indeg = tpu__calloc((size_t)n + 1, sizeof(int));
    int *start = tpu__calloc((size_t)n + 2, sizeof(int));
    int *fill = tpu__calloc((size_t)n + 1, sizeof(int));
    int *adj = tpu__malloc(((size_t)nedges + 1) * sizeof(int));
    int *queue = tpu__malloc(((size_t)n + 1) * sizeof(int));
    int e, head = 0, tail = 0, i, found = -1, step;

    if (indeg == NULL || start == NULL || fill == NULL || adj == NULL || queue == NULL) {
        found = -2;
        goto out;
    }
    for (e = 0; e < nedges; e++) {
        start[edges[2 * e] + 1]++;
        indeg[edges[2 * e + 1]]++;
    }
    for (i = 0; i < n; i++) {
        start[i + 1] += start[i];
    }
    for (e = 0; e < nedges; e++) {
        int a = edges[2 * e];

        adj[start[a] + fill[a]++] = edges[2 * e + 1];
    }
    for (i = 0; i < n; i++) {
        if (indeg[i] == 0) {
            queue[tail++] = i;
        }
    }
    while (head < tail) {
        int a = queue[head++];

        for (e = start[a]; e < start[a + 1]; e++) {
            if (--indeg[adj[e]] == 0) {
                queue[tail++] = adj[e];
            }
        }
    }
    for (i = 0; i < n && found < 0; i++) {
        if (indeg[i] > 0) {
            found = i;
        }
    }
    /* A node left over is in a cycle or after one, and has a left-over predecessor
     * (kept in 'fill'): n steps back from it end inside a cycle. */
    for (e = 0; e < nedges && found >= 0; e++) {
        if (indeg[edges[2 * e]] > 0 && indeg[edges[2 * e + 1]] > 0) {
            fill[edges[2 * e + 1]] = edges[2 * e];
        }
    }
    for (step = 0; found >= 0 && step < n; step++) {
        found = fill[found];
    }
out:
    tpu__free(indeg);
    tpu__free(start);
    tpu__free(fill);
    tpu__free(adj);
    tpu__free(queue);
    return found;
}

/* first_in_cycle() over 'edges', which it frees: '*cyc' the node, or -1. */
static tpu_status_t cycle_in(verifier_t *v, int n, int *edges, int nedges, int *cyc)
{
    *cyc = first_in_cycle(n, edges, nedges);
    tpu__free(edges);
    return *cyc == -2 ? oom(v) : TPU_OK;
}

/* Operands: they exist, come first (parameters excepted), no instruction depends on itself. */
static tpu_status_t check_operands(verifier_t *v, const tpu_hlo_comp_t *c)
{
    char msg[TPU_ERR_MSG_LEN];
    int i, k, nedges = 0, *edges, cyc;

    for (i = 0; i < c->ninstrs; i++) {
        const tpu_hlo_instr_t *in = &c->instrs[i];

        for (k = 0; k < in->noperands; k++) {
            if (in->operand_names[k] != NULL && in->operands[k] < 0) {
                snprintf(msg, sizeof(msg),
                         "operand %d names '%.100s', which is no instruction of computation "
                         "'%.100s' (XLA: instruction does not exist)",
                         k, in->operand_names[k], c->name);
                return fail_at(v, in, msg);
            }
            nedges += in->operands[k] >= 0;
        }
    }
    edges = tpu__malloc(((size_t)nedges + 1) * 2 * sizeof(int));
    if (edges == NULL) {
        return oom(v);
    }
    nedges = 0;
    for (i = 0; i < c->ninstrs; i++) {
        const tpu_hlo_instr_t *in = &c->instrs[i];

        for (k = 0; k < in->noperands; k++) {
            if (in->operands[k] >= 0) {
                edges[2 * nedges] = in->operands[k];
                edges[2 * nedges + 1] = i;
                nedges++;
            }
        }
    }
    if (cycle_in(v, c->ninstrs, edges, nedges, &cyc) != TPU_OK) {
        return TPU_ERR_NO_MEMORY;
    }
    if (cyc >= 0) {
        return fail_at(v, &c->instrs[cyc],
                       "the instruction depends on itself through its operands (a cycle; XLA "
                       "needs an acyclic graph)");
    }
    for (i = 0; i < c->ninstrs; i++) {
        const tpu_hlo_instr_t *in = &c->instrs[i];

        for (k = 0; k < in->noperands; k++) {
            const tpu_hlo_instr_t *op = in->operands[k] >= 0 ? &c->instrs[in->operands[k]] : NULL;

            if (op != NULL && in->operands[k] > i && op->op != TPU_HLO_OP_PARAMETER) {
                snprintf(msg, sizeof(msg),
                         "operand '%.100s' is defined after its use, at line %d (XLA: "
                         "instruction does not exist)",
                         op->name, op->line);
                return fail_at(v, in, msg);
            }
        }
    }
    return TPU_OK;
}

/* The computations an instruction calls, resolved (-1: named but missing). */
static int calls_of(const tpu_hlo_instr_t *in, int *out, const char **names)
{
    const char *n[6] = {in->to_apply, in->calls,     in->condition,
                        in->body,     in->true_comp, in->false_comp};
    int c[6] = {in->to_apply_c, in->calls_c, in->condition_c, in->body_c, in->true_c, in->false_c};
    int k, m = 0;

    for (k = 0; k < 6; k++) {
        if (n[k] != NULL) {
            names[m] = n[k];
            out[m++] = c[k];
        }
    }
    return m;
}

/* Called computations exist; the call graph has no cycle; there is an entry. */
static tpu_status_t check_calls(verifier_t *v)
{
    const tpu_hlo_module_t *mod = v->mod;
    const char *names[6];
    char msg[TPU_ERR_MSG_LEN];
    int ci, i, k, m, called[6], nedges = 0, cap = 16, *edges = tpu__malloc(2 * 16 * sizeof(int));
    int cyc;

    if (edges == NULL) {
        return oom(v);
    }
    if (mod->ncomps == 0 || mod->entry < 0 || mod->entry >= mod->ncomps) {
        tpu__free(edges);
        return tpu_err_set(v->err, TPU_ERR_INVALID,
                           "%s:%d:1: module '%s' has no entry computation (XLA: ENTRY, else the "
                           "last computation)",
                           mod->file, mod->line, mod->name);
    }
    for (ci = 0; ci < mod->ncomps; ci++) {
        const tpu_hlo_comp_t *c = &mod->comps[ci];

        for (i = 0; i < c->ninstrs; i++) {
            const tpu_hlo_instr_t *in = &c->instrs[i];

            m = calls_of(in, called, names);
            for (k = 0; k < m + in->nbranches; k++) {
                int to = k < m ? called[k] : in->branches[k - m];
                const char *name = k < m ? names[k] : in->branch_names[k - m];

                if (to < 0 && name != NULL) {
                    tpu__free(edges);
                    snprintf(msg, sizeof(msg),
                             "calls computation '%.100s', which the module does not define", name);
                    return fail_at(v, in, msg);
                }
                if (to < 0) {
                    continue;
                }
                if (nedges == cap) {
                    int *grown = tpu__realloc(edges, (size_t)cap * 4 * sizeof(int));

                    if (grown == NULL) {
                        tpu__free(edges);
                        return oom(v);
                    }
                    edges = grown;
                    cap *= 2;
                }
                edges[2 * nedges] = ci;
                edges[2 * nedges + 1] = to;
                nedges++;
            }
        }
    }
    if (cycle_in(v, mod->ncomps, edges, nedges, &cyc) != TPU_OK) {
        return TPU_ERR_NO_MEMORY;
    }
    if (cyc >= 0) {
        return tpu_err_set(v->err, TPU_ERR_INVALID,
                           "%s:%d:1: computation '%s' calls itself, directly or through others "
                           "(XLA: the call graph must be acyclic)",
                           mod->file, mod->comps[cyc].line, mod->comps[cyc].name);
    }
    return TPU_OK;
}

/* The id space of a collective's groups (XLA's group modes), 0 when the header gives no counts. */
static int64_t id_space(const tpu_hlo_module_t *mod, const tpu_hlo_instr_t *in, int *mode)
{
    int64_t r = mod->replica_count > 0 ? mod->replica_count : 1;
    int64_t p = mod->num_partitions > 0 ? mod->num_partitions : 1;
    int ugdi = in->op == TPU_HLO_OP_ALL_REDUCE || in->op == TPU_HLO_OP_ALL_GATHER ||
               in->op == TPU_HLO_OP_REDUCE_SCATTER;

    *mode = 0; /* devices */
    if (mod->replica_count <= 0 && mod->num_partitions <= 0) {
        return 0;
    }
    if (r == 1 || p == 1) {
        return r * p;
    }
    if (in->channel_id < 0) {
        *mode = 1;
        return r;
    }
    if (ugdi && in->use_global_device_ids == 1) {
        return r * p;
    }
    *mode = ugdi ? 1 : 2;
    return ugdi ? r : p;
}

/* Replica groups: none empty, uniform where XLA wants it, ids 0..n-1 once each.  '*size' set. */
static tpu_status_t check_groups(verifier_t *v, const tpu_hlo_instr_t *in, int uniform,
                                 int64_t *size)
{
    static const char *const what[] = {"device", "replica", "partition"};
    const tpu_hlo_groups_t *g = &in->groups;
    char msg[TPU_ERR_MSG_LEN];
    int mode, k, gi;
    int64_t space = id_space(v->mod, in, &mode), n = g->ngroups > 0 ? g->start[g->ngroups] : 0;
    unsigned char *seen;

    *size = g->ngroups > 0 ? g->start[1] - g->start[0] : space;
    if (g->ngroups == 0) {
        return TPU_OK;
    }
    for (gi = 0; gi < g->ngroups; gi++) {
        int32_t s = g->start[gi + 1] - g->start[gi];

        if (s == 0) {
            snprintf(msg, sizeof(msg),
                     "replica group %d is empty (XLA: an instruction cannot "
                     "have an empty replica group)",
                     gi);
            return fail_at(v, in, msg);
        }
        if (uniform && s != *size) {
            snprintf(msg, sizeof(msg),
                     "replica group %d has %d %ss and group 0 has %lld (XLA: replica groups "
                     "expected to be of uniform size)",
                     gi, s, what[mode], (long long)*size);
            return fail_at(v, in, msg);
        }
    }
    seen = tpu__calloc((size_t)n + 1, 1);
    if (seen == NULL) {
        return oom(v);
    }
    for (k = 0; k < n; k++) {
        int32_t id = g->ids[k];

        if (id < 0 || id >= n || (space > 0 && id >= space)) {
            int64_t top = space > 0 && space < n ? space : n;

            snprintf(msg, sizeof(msg),
                     "a replica group names %s %d: the %lld ids of its groups must be %ss 0 to "
                     "%lld, each once",
                     what[mode], id, (long long)n, what[mode], (long long)top - 1);
            tpu__free(seen);
            return fail_at(v, in, msg);
        }
        if (seen[id]++) {
            snprintf(msg, sizeof(msg),
                     "%s %d is in two replica groups (XLA: replica %d is repeated in the "
                     "instruction's replica groups)",
                     what[mode], id, id);
            tpu__free(seen);
            return fail_at(v, in, msg);
        }
    }
    tpu__free(seen);
    if (space > 1 && n != space) {
        snprintf(msg, sizeof(msg),
                 "replica groups name %lld %ss, and the module has %lld: the groups must "
                 "partition them",
                 (long long)n, what[mode], (long long)space);
        return fail_at(v, in, msg);
    }
    return TPU_OK;
}

/* source_target_pairs: ids 0 to n-1 (n known), no source or target twice. */
static tpu_status_t check_pairs(verifier_t *v, const tpu_hlo_instr_t *in)
{
    const tpu_hlo_ints_t *pr = &in->pairs;
    char msg[TPU_ERR_MSG_LEN];
    int mode, k, j;
    int64_t space = id_space(v->mod, in, &mode);

    for (k = 0; k < pr->n; k++) {
        if (pr->v[k] < 0 || (space > 0 && pr->v[k] >= space)) {
            snprintf(msg, sizeof(msg), "source_target_pairs names device %lld, outside 0 to %lld",
                     (long long)pr->v[k], (long long)space - 1);
            return fail_at(v, in, msg);
        }
    }
    /* Pairs are few (one per device): a quadratic scan is enough and bounded by the parser. */
    for (k = 0; k + 1 < pr->n && pr->n <= 2 * 65536; k++) {
        for (j = k + 2; j < pr->n; j += 2) {
            if (pr->v[j] == pr->v[k]) {
                snprintf(msg, sizeof(msg),
                         "device %lld is a %s in two source_target_pairs (XLA: each device "
                         "sends at most once and receives at most once)",
                         (long long)pr->v[k], k % 2 == 0 ? "source" : "target");
                return fail_at(v, in, msg);
            }
        }
    }
    return TPU_OK;
}

/* Operand k's shape and the matching output shape; 0 when either is not a known array. */
static int shapes_of(const tpu_hlo_comp_t *c, const tpu_hlo_instr_t *in, int k,
                     const tpu_hlo_shape_t **op, const tpu_hlo_shape_t **out)
{
    const tpu_hlo_shape_t *res = &in->shape;

    if (in->operands[k] < 0 || !in->has_shape) {
        return 0;
    }
    *op = &c->instrs[in->operands[k]].shape;
    if (in->async == TPU_HLO_START &&
        (in->op == TPU_HLO_OP_ALL_GATHER || in->op == TPU_HLO_OP_COLLECTIVE_PERMUTE)) {
        if (res->type != TPU_HLO_TYPE_TUPLE || res->ntuple < 2) {
            return 0;
        }
        res = &res->tuple[1];
    }
    if (in->noperands > 1) {
        if (res->type != TPU_HLO_TYPE_TUPLE || k >= res->ntuple) {
            return 0;
        }
        res = &res->tuple[k];
    }
    *out = res;
    return is_array(*op) && is_array(*out) && (*op)->rank == (*out)->rank;
}

static tpu_status_t check_collective(verifier_t *v, const tpu_hlo_comp_t *c,
                                     const tpu_hlo_instr_t *in)
{
    const char *name = tpu_hlo_op_name(in->op);
    char msg[TPU_ERR_MSG_LEN], a[160], b[160];
    int64_t size, d = in->dimensions.n > 0 ? in->dimensions.v[0] : -1;
    int k, j,
        split = in->op == TPU_HLO_OP_ALL_GATHER || in->op == TPU_HLO_OP_REDUCE_SCATTER ||
                in->op == TPU_HLO_OP_ALL_TO_ALL;
    tpu_status_t status;

    if (in->async == TPU_HLO_DONE || in->async == TPU_HLO_UPDATE) {
        return TPU_OK;
    }
    if (in->op == TPU_HLO_OP_COLLECTIVE_PERMUTE) {
        return check_pairs(v, in);
    }
    status = check_groups(v, in, split, &size);
    if (status != TPU_OK || size <= 1 || (in->op != TPU_HLO_OP_ALL_REDUCE && !split) ||
        (in->op == TPU_HLO_OP_ALL_TO_ALL && in->dimensions.n == 0)) {
        return status;
    }
    if (split && in->op != TPU_HLO_OP_ALL_TO_ALL && in->dimensions.n != 1) {
        snprintf(msg, sizeof(msg), "%s needs one dimension in dimensions={d}, not %d", name,
                 in->dimensions.n);
        return fail_at(v, in, msg);
    }
    for (k = 0; k < in->noperands; k++) {
        const tpu_hlo_shape_t *op, *out;
        int64_t want;

        if (!shapes_of(c, in, k, &op, &out)) {
            continue;
        }
        if (split && (d < 0 || d >= op->rank)) {
            snprintf(msg, sizeof(msg), "%s dimension %lld is outside operand %s (rank %d)", name,
                     (long long)d, shape_str(op, a, sizeof(a)), op->rank);
            return fail_at(v, in, msg);
        }
        for (j = 0; j < op->rank; j++) {
            want = op->dims[j];
            if (split && j == d && in->op == TPU_HLO_OP_ALL_GATHER) {
                want = op->dims[j] > INT64_MAX / size ? -1 : op->dims[j] * size;
            } else if (split && j == d) {
                if (op->dims[j] % size != 0) {
                    snprintf(msg, sizeof(msg),
                             "%s splits dimension %lld of %s (%lld) into groups of %lld: not a "
                             "multiple (XLA: the split dimension must divide by the group size)",
                             name, (long long)d, shape_str(op, a, sizeof(a)),
                             (long long)op->dims[j], (long long)size);
                    return fail_at(v, in, msg);
                }
                want = in->op == TPU_HLO_OP_REDUCE_SCATTER ? op->dims[j] / size : op->dims[j];
            }
            if (out->dims[j] != want) {
                snprintf(msg, sizeof(msg),
                         "%s of %s over groups of %lld%s gives dimension %d of %lld, not %lld "
                         "(result %s)",
                         name, shape_str(op, a, sizeof(a)), (long long)size,
                         split ? " along that dimension" : "", j, (long long)want,
                         (long long)out->dims[j], shape_str(out, b, sizeof(b)));
                return fail_at(v, in, msg);
            }
        }
    }
    return TPU_OK;
}

/* One side's dimension list: in range, each once; bit j of '*used' marks dimension j. */
static tpu_status_t dims_ok(verifier_t *v, const tpu_hlo_instr_t *in, const char *what,
                            const tpu_hlo_ints_t *l, int rank, unsigned *used)
{
    char msg[TPU_ERR_MSG_LEN];
    int k;

    for (k = 0; k < l->n; k++) {
        if (l->v[k] < 0 || l->v[k] >= rank || (*used >> l->v[k] & 1u)) {
            snprintf(msg, sizeof(msg), "%s names dimension %lld %s (rank %d)", what,
                     (long long)l->v[k],
                     l->v[k] < 0 || l->v[k] >= rank ? "outside the operand" : "twice", rank);
            return fail_at(v, in, msg);
        }
        *used |= 1u << l->v[k];
    }
    return TPU_OK;
}

static tpu_status_t check_dot(verifier_t *v, const tpu_hlo_comp_t *c, const tpu_hlo_instr_t *in)
{
    const tpu_hlo_shape_t *l, *r;
    char msg[TPU_ERR_MSG_LEN], a[160], b[160];
    unsigned lu = 0, ru = 0;
    int k, j, n = 0;
    int64_t want[TPU_HLO_MAX_RANK * 2];
    tpu_status_t status;

    if (in->noperands < 2 || in->operands[0] < 0 || in->operands[1] < 0) {
        return TPU_OK;
    }
    l = &c->instrs[in->operands[0]].shape;
    r = &c->instrs[in->operands[1]].shape;
    if (!is_array(l) || !is_array(r)) {
        return TPU_OK;
    }
    if (in->lhs_contracting.n != in->rhs_contracting.n || in->lhs_batch.n != in->rhs_batch.n) {
        snprintf(msg, sizeof(msg),
                 "dot has %d lhs and %d rhs contracting, %d lhs and %d rhs batch dimensions "
                 "(XLA: they must be as many on each side)",
                 in->lhs_contracting.n, in->rhs_contracting.n, in->lhs_batch.n, in->rhs_batch.n);
        return fail_at(v, in, msg);
    }
    status = dims_ok(v, in, "lhs_batch_dims", &in->lhs_batch, l->rank, &lu);
    if (status == TPU_OK) {
        status = dims_ok(v, in, "lhs_contracting_dims", &in->lhs_contracting, l->rank, &lu);
    }
    if (status == TPU_OK) {
        status = dims_ok(v, in, "rhs_batch_dims", &in->rhs_batch, r->rank, &ru);
    }
    if (status == TPU_OK) {
        status = dims_ok(v, in, "rhs_contracting_dims", &in->rhs_contracting, r->rank, &ru);
    }
    if (status != TPU_OK) {
        return status;
    }
    for (k = 0; k < in->lhs_batch.n + in->lhs_contracting.n; k++) {
        int batch = k < in->lhs_batch.n;
        int64_t ld = batch ? in->lhs_batch.v[k] : in->lhs_contracting.v[k - in->lhs_batch.n];
        int64_t rd = batch ? in->rhs_batch.v[k] : in->rhs_contracting.v[k - in->lhs_batch.n];

        if (l->dims[ld] != r->dims[rd]) {
            snprintf(msg, sizeof(msg),
                     "dot %s dimension sizes do not match: lhs %s dimension %lld is %lld, rhs %s "
                     "dimension %lld is %lld",
                     batch ? "batch" : "contracting", shape_str(l, a, sizeof(a)), (long long)ld,
                     (long long)l->dims[ld], shape_str(r, b, sizeof(b)), (long long)rd,
                     (long long)r->dims[rd]);
            return fail_at(v, in, msg);
        }
    }
    if (!in->has_shape || !is_array(&in->shape)) {
        return TPU_OK;
    }
    for (k = 0; k < in->lhs_batch.n; k++) {
        want[n++] = l->dims[in->lhs_batch.v[k]];
    }
    for (j = 0; j < l->rank; j++) {
        if (!(lu >> j & 1u)) {
            want[n++] = l->dims[j];
        }
    }
    for (j = 0; j < r->rank; j++) {
        if (!(ru >> j & 1u)) {
            want[n++] = r->dims[j];
        }
    }
    for (k = 0; k < n && n == in->shape.rank && in->shape.dims[k] == want[k]; k++) {
    }
    if (k < n || n != in->shape.rank) {
        snprintf(msg, sizeof(msg),
                 "dot of %s and %s gives a result of rank %d with dimension %d of %lld; the "
                 "instruction says %s",
                 shape_str(l, a, sizeof(a)), shape_str(r, b, sizeof(b)), n, k,
                 (long long)(k < n ? want[k] : 0), shape_str(&in->shape, b, sizeof(b)));
        return fail_at(v, in, msg);
    }
    return TPU_OK;
}

/* known_trip_count in backend_config: a whole number 0 to 2^63-1, as XLA's int64 field. */
static tpu_status_t check_trip(verifier_t *v, const tpu_hlo_instr_t *in)
{
    const char *k, *q, *s;
    char msg[TPU_ERR_MSG_LEN];
    int digits = 0;
    uint64_t x = 0;

    if (in->backend_config == NULL ||
        (k = strstr(in->backend_config, "known_trip_count")) == NULL) {
        return TPU_OK;
    }
    q = strstr(k, "\"n\"");
    q = q != NULL ? q + 3 : (q = strstr(k, "\\\"n\\\"")) != NULL ? q + 5 : NULL;
    if (q == NULL || q - k > 40) {
        return TPU_OK;
    }
    while (*q == ' ' || *q == ':' || *q == '"' || *q == '\\') {
        q++;
    }
    for (s = q; *s >= '0' && *s <= '9'; s++, digits++) {
        if (x > (UINT64_MAX - 9) / 10) {
            x = UINT64_MAX;
        } else {
            x = x * 10 + (uint64_t)(*s - '0');
        }
    }
    if (digits == 0 || (*s != '"' && *s != '\\' && *s != '}' && *s != ',' && *s != ' ') ||
        x > (uint64_t)INT64_MAX) {
        size_t len = strcspn(q, "\"\\},\n ");

        snprintf(msg, sizeof(msg),
                 "known_trip_count '%.*s' is not a whole number from 0 to 2^63-1 (XLA reads it "
                 "as an int64)",
                 (int)(len > 24 ? 24 : len), q);
        return fail_at(v, in, msg);
    }
    return TPU_OK;
}

tpu_status_t tpu_hlo_verify(const tpu_hlo_module_t *mod, tpu_err_t *err)
{
    verifier_t v = {mod, err};
    tpu_status_t status = check_calls(&v);
    int ci, i;

    for (ci = 0; ci < mod->ncomps && status == TPU_OK; ci++) {
        const tpu_hlo_comp_t *c = &mod->comps[ci];

        status = check_operands(&v, c);
        for (i = 0; i < c->ninstrs && status == TPU_OK; i++) {
            const tpu_hlo_instr_t *in = &c->instrs[i];
            tpu_hlo_class_t cls = tpu_hlo_op_class(in->op);

            if (cls == TPU_HLO_CLASS_COLL) {
                status = check_collective(&v, c, in);
            } else if (in->op == TPU_HLO_OP_DOT) {
                status = check_dot(&v, c, in);
            } else if (in->op == TPU_HLO_OP_WHILE) {
                status = check_trip(&v, in);
            }
        }
    }
    return status;
}
