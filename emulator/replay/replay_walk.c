/*
 * The replay's walk: an HLO module -> step time, compute, communication
 * and exposed communication, per collective and per op (include/tpu/replay.h).
 *
 * Cost model.  Two streams per chip, walked in text order:
 *
 *   compute stream  |--dot--|--fusion--|        |--fusion--|
 *   comm stream             |=====all-gather (async)=====|
 *                   start ^                       done ^  (waits if not finished)
 *
 * - A compute op advances the clock by its roofline time: dot and convolution
 *   as matmuls (tpu_roofline_matmul, batch dims as repeated matmuls; complex
 *   types as 4 real ones), elementwise ops and reductions max(VPU time of
 *   their elements, HBM bytes / bandwidth), fusions max(MXU time of the dots
 *   inside, VPU time of the rest, operand + result bytes / bandwidth).
 * - A collective takes the modeled time of the engine's plan for it.  The
 *   communication stream runs one collective at a time: a collective starts at
 *   max(now, the end of the previous one).  A synchronous one blocks the
 *   clock until it ends; a -start lets the clock run on, and its -done waits
 *   for the end.  Exposed communication is the waiting.
 * - while: body and condition times the trip count (--trip-count NAME=K, else
 *   backend_config known_trip_count, else XLA's while-loop analysis, else 1 with
 *   a warning naming the reason); call: the callee inline; conditional: the most
 *   expensive branch, with a warning naming it.
 *
 * The files of the replay:
 *
 *   replay_walk.c    the walk over computations, the timeline, tpu_replay_run()
 *   replay_trip.c    trip counts of while loops, async start/done pairs
 *   hlo_cost.c       the time of one compute op
 *   replay_coll.c    one collective -> an engine request, timed
 *   replay_groups.c  replica groups -> chips
 *   replay_state.c   the walker's state: warnings, rows, memo, sequence
 *   replay_hbm.c     the HBM fit: the peak of live bytes per chip
 *   replay_backend.c the compiler behind the module, what each custom-call is
 *
 * Beside the as-written walk, the same pass times the latency-hiding estimate
 * (scheduled_step_us): every collective asynchronous, issued when its operands
 * are ready and waited for by its first user, the links one collective at a
 * time, compute in text order with ready ops filling the gaps left by ops that
 * wait for a collective.
 */
#include "tpu/replay.h"

#include "alloc.h"
#include "hlo_cost.h"
#include "replay_backend.h"
#include "replay_coll.h"
#include "replay_hbm.h"
#include "replay_state.h"
#include "replay_trip.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct times {
    double clock, compute, comm, exposed;
    double sched; /* the latency-hiding estimate of the computation's time */
} times_t;

/*
 * The scheduled model's compute stream: ops in text order, each at the earliest
 * time its operands are ready, filling the idle gaps left by ops that waited
 * for a collective (a list scheduler that lets ready work run ahead, as XLA's
 * latency-hiding scheduler does).  At most MAX_GAPS gaps are remembered.
 */
#define MAX_GAPS 64

typedef struct gaps {
    double s[MAX_GAPS], e[MAX_GAPS];
    int n;
} gaps_t;

/* Place an op of 'us' ready at 'rd' on the stream whose end is *sclock; its end. */
static double place(gaps_t *g, double *sclock, double rd, double us)
{
    double st;
    int k;

    for (k = 0; k < g->n && rd < *sclock; k++) {
        st = g->s[k] > rd ? g->s[k] : rd;
        if (st + us <= g->e[k]) {
            double s0 = g->s[k];

            g->s[k] = st + us;
            if (st > s0 && g->n < MAX_GAPS) {
                g->s[g->n] = s0;
                g->e[g->n++] = st;
            }
            return st + us;
        }
    }
    st = *sclock > rd ? *sclock : rd;
    if (st > *sclock && g->n < MAX_GAPS) {
        g->s[g->n] = *sclock;
        g->e[g->n++] = st;
    }
    *sclock = st + us;
    return *sclock;
}

/* The scheduled model: when the operands of instruction i are all ready. */
static double operands_ready(const tpu_hlo_comp_t *c, int i, const double *ready)
{
    const tpu_hlo_instr_t *in = &c->instrs[i];
    double t = 0;
    int k;

    for (k = 0; k < in->noperands; k++) {
        int o = in->operands[k];

        if (o >= 0 && o < c->ninstrs && ready[o] > t) {
            t = ready[o];
        }
    }
    return t;
}

static tpu_status_t tl_append(walker_t *w, int64_t from, int64_t n, double shift, int coll,
                              int32_t row, double start, double dur)
{
    tpu_replay_report_t *r = w->rep;
    int64_t k;

    if (!w->record || w->opts == NULL || !w->opts->timeline || r->timeline_truncated) {
        return TPU_OK;
    }
    if (from < 0) {
        n = 1;
    }
    if (r->ntimeline + n > TPU_REPLAY_MAX_TIMELINE) {
        r->timeline_truncated = 1;
        return TPU_OK;
    }
    if (r->ntimeline + n > w->tlcap) {
        int64_t ncap = w->tlcap ? w->tlcap : 256;
        tpu_replay_event_t *nb;

        while (ncap < r->ntimeline + n) {
            ncap *= 2;
        }
        nb = tpu__realloc(r->timeline, (size_t)ncap * sizeof(*nb));
        if (nb == NULL) {
            return tpu__replay_oom(w);
        }
        r->timeline = nb;
        w->tlcap = ncap;
    }
    for (k = 0; k < n; k++) {
        tpu_replay_event_t *e = &r->timeline[r->ntimeline + k];

        if (from >= 0) {
            *e = r->timeline[from + k];
            e->start_us += shift;
        } else {
            e->coll = coll;
            e->row = row;
            e->start_us = start;
            e->dur_us = dur;
        }
    }
    r->ntimeline += n;
    return TPU_OK;
}

static void add_times(times_t *t, const times_t *s, double n)
{
    t->clock += n * s->clock;
    t->compute += n * s->compute;
    t->comm += n * s->comm;
    t->exposed += n * s->exposed;
    t->sched += n * s->sched;
}

static tpu_status_t walk(walker_t *w, int ci, int64_t mult, times_t *out)
{
    const tpu_hlo_comp_t *c = &w->mod->comps[ci];
    double comm_free = 0, *end_at = NULL, base = w->base, *ready = NULL, sclock = 0, scomm = 0;
    gaps_t *gaps = NULL;
    tpu_status_t status = TPU_OK;
    times_t t = {0, 0, 0, 0, 0};
    int i;

    if (++w->depth > MAX_CALL_DEPTH) {
        return tpu_err_set(w->err, TPU_ERR_INVALID,
                           "%s:%d:1: computations call each other deeper than %d (a cycle?) at "
                           "'%s'",
                           w->mod->file, c->line, MAX_CALL_DEPTH, c->name);
    }
    end_at = tpu__malloc((size_t)c->ninstrs * sizeof(double));
    ready = tpu__calloc((size_t)c->ninstrs + 1, sizeof(double));
    gaps = tpu__calloc(1, sizeof(*gaps));
    if (end_at == NULL || ready == NULL || gaps == NULL) {
        status = tpu__replay_oom(w);
        goto out;
    }
    for (i = 0; i < c->ninstrs; i++) {
        end_at[i] = -1;
    }
    for (i = 0; i < c->ninstrs && status == TPU_OK; i++) {
        const tpu_hlo_instr_t *in = &c->instrs[i];
        tpu_hlo_class_t cls = tpu_hlo_op_class(in->op);
        const tpu_hlo_instr_t *attrs = in;
        tpu_replay_coll_t *row = NULL;
        times_t sub;
        double us = 0, rd = operands_ready(c, i, ready), sstart = sclock > rd ? sclock : rd;

        ready[i] = rd;
        if (cls == TPU_HLO_CLASS_ASYNC && in->async == TPU_HLO_START && in->calls_c >= 0) {
            const tpu_hlo_comp_t *cc = &w->mod->comps[in->calls_c];

            attrs = &cc->instrs[cc->root];
            if (tpu_hlo_op_class(attrs->op) == TPU_HLO_CLASS_COLL) {
                cls = TPU_HLO_CLASS_COLL;
            } else {
                /* An async computation that is not a collective: run it in place. */
                w->base = base + t.clock;
                status = walk(w, in->calls_c, mult, &sub);
                w->base = base;
                add_times(&t, &sub, 1);
                sclock = ready[i] = sstart + sub.sched;
                continue;
            }
        } else if (cls == TPU_HLO_CLASS_ASYNC) {
            cls = TPU_HLO_CLASS_COLL; /* async-update / async-done */
        } else if ((cls == TPU_HLO_CLASS_CUSTOM &&
                    tpu__replay_custom_kind(in) == TPU_REPLAY_CUSTOM_MARKER) ||
                   tpu__replay_reshape_free(c, in)) {
            cls = TPU_HLO_CLASS_FREE; /* sharding markers; reshapes that are bitcasts */
        }
        switch (cls) {
        case TPU_HLO_CLASS_COLL:
            if (in->async == TPU_HLO_UPDATE) {
                break;
            }
            if (in->async == TPU_HLO_DONE) {
                int s = tpu__replay_start_of(c, i);
                int *slot;

                if (s >= 0) {
                    ready[i] = ready[s];
                }
                if (s < 0 || end_at[s] < 0) {
                    break;
                }
                if (end_at[s] > t.clock) {
                    slot = tpu__replay_rowslot(w, c, s);
                    if (slot != NULL && *slot >= 0 && w->record) {
                        w->rep->colls[*slot].exposed_us += (end_at[s] - t.clock) * (double)mult;
                    }
                    t.exposed += end_at[s] - t.clock;
                    t.clock = end_at[s];
                }
                end_at[s] = -1;
                break;
            }
            status = tpu__replay_coll_at(w, c, i, attrs, in->async == TPU_HLO_START, mult, &row);
            if (status != TPU_OK) {
                break;
            }
            status = tpu__replay_seq_append(w, -1, 1, (int32_t)(row - w->rep->colls));
            if (status != TPU_OK) {
                break;
            }
            us = row->supported ? row->modeled_us : 0;
            {
                double start = t.clock > comm_free ? t.clock : comm_free;

                if (row->supported) {
                    status =
                        tl_append(w, -1, 1, 0, 1, (int32_t)(row - w->rep->colls), base + start, us);
                }
                comm_free = start + us;
                t.comm += us;
                /* Scheduled: issued when its operands are ready, one at a time on the links. */
                scomm = (rd > scomm ? rd : scomm) + us;
                ready[i] = scomm;
                if (in->async == TPU_HLO_START) {
                    end_at[i] = comm_free;
                } else {
                    if (w->record) {
                        row->exposed_us += (comm_free - t.clock) * (double)mult;
                    }
                    t.exposed += comm_free - t.clock;
                    t.clock = comm_free;
                }
            }
            break;
        case TPU_HLO_CLASS_WHILE: {
            int64_t n = 1;
            times_t cond;

            if (in->body_c < 0 || in->condition_c < 0) {
                break;
            }
            status = tpu__replay_trip_count(w, c, in, &n);
            if (status == TPU_OK && n > 0 && mult > INT64_MAX / 4 / n) {
                status = tpu_err_set(w->err, TPU_ERR_INVALID,
                                     "%s:%d:%d: while '%s' runs %lld times inside loops that run "
                                     "%lld times: too many to count",
                                     w->mod->file, in->line, in->col, in->name, (long long)n,
                                     (long long)mult);
            }
            if (status == TPU_OK && n > 0) {
                int64_t a = w->rep->nseq, b, k, ta = w->rep->ntimeline, tb;

                w->base = base + t.clock;
                status = walk(w, in->body_c, mult * n, &sub);
                if (status == TPU_OK) {
                    w->base = base + t.clock + sub.clock;
                    status = walk(w, in->condition_c, mult * n, &cond);
                }
                w->base = base;
                /* The timeline: the iteration just walked, n - 1 more times. */
                tb = w->rep->ntimeline;
                for (k = 1; k < n && status == TPU_OK && tb > ta && !w->rep->timeline_truncated;
                     k++) {
                    status =
                        tl_append(w, ta, tb - ta, (double)k * (sub.clock + cond.clock), 0, 0, 0, 0);
                }
                if (status == TPU_OK) {
                    add_times(&t, &sub, (double)n);
                    add_times(&t, &cond, (double)n);
                    sclock = ready[i] = sstart + (double)n * (sub.sched + cond.sched);
                    scomm = scomm > sclock ? scomm : sclock;
                }
                /* The sequence: the iteration just walked, n - 1 more times. */
                b = w->rep->nseq;
                for (k = 1; k < n && status == TPU_OK && b > a && !w->rep->seq_truncated; k++) {
                    status = tpu__replay_seq_append(w, a, b - a, 0);
                }
            }
            break;
        }
        case TPU_HLO_CLASS_CALL:
            if (in->to_apply_c >= 0) {
                w->base = base + t.clock;
                status = walk(w, in->to_apply_c, mult, &sub);
                w->base = base;
                add_times(&t, &sub, 1);
                sclock = ready[i] = sstart + sub.sched;
                scomm = scomm > sclock ? scomm : sclock;
            }
            break;
        case TPU_HLO_CLASS_COND: {
            int nb = in->nbranches > 0 ? in->nbranches : 2, b, best = -1, save = w->record;
            double best_t = -1;

            for (b = 0; b < nb && status == TPU_OK; b++) {
                int bc = in->nbranches > 0 ? in->branches[b] : b == 0 ? in->true_c : in->false_c;

                if (bc < 0) {
                    continue;
                }
                w->record = 0;
                status = walk(w, bc, mult, &sub);
                w->record = save;
                if (status == TPU_OK && sub.clock > best_t) {
                    best_t = sub.clock;
                    best = bc;
                }
            }
            if (status == TPU_OK && best >= 0) {
                w->base = base + t.clock;
                status = walk(w, best, mult, &sub);
                w->base = base;
                add_times(&t, &sub, 1);
                sclock = ready[i] = sstart + sub.sched;
                scomm = scomm > sclock ? scomm : sclock;
                if (status == TPU_OK && nb > 1) {
                    status = tpu__replay_warn(
                        w,
                        "%s:%d: conditional '%s': the most expensive of %d branches "
                        "('%s', %.3f us) is counted",
                        w->mod->file, in->line, in->name, nb, w->mod->comps[best].name, sub.clock);
                }
            }
            break;
        }
        case TPU_HLO_CLASS_FREE:
            break;
        case TPU_HLO_CLASS_UNKNOWN:
            status =
                tpu__replay_warn(w, "%s: opcode '%s' is not known to the replay: skipped (costs 0)",
                                 w->mod->file, in->opcode);
            break;
        case TPU_HLO_CLASS_ASYNC:
            break;
        default:
            status = tpu__replay_op_at(w, c, i, mult, &us);
            if (status == TPU_OK) {
                status = tl_append(w, -1, 1, 0, 0, (int32_t)*tpu__replay_rowslot(w, c, i),
                                   base + t.clock, us);
            }
            if (status == TPU_OK) {
                t.clock += us;
                t.compute += us;
                ready[i] = place(gaps, &sclock, rd, us);
                if (w->record) {
                    const tpu_replay_op_t *op = &w->rep->ops[*tpu__replay_rowslot(w, c, i)];

                    w->rep->hbm_bytes += op->bytes * (double)mult;
                    w->rep->flops += op->flops * (double)mult;
                }
            }
            break;
        }
    }
    /* Collectives started and never waited for: the computation ends when they do. */
    for (i = 0; i < c->ninstrs && status == TPU_OK; i++) {
        if (end_at[i] > t.clock) {
            t.exposed += end_at[i] - t.clock;
            t.clock = end_at[i];
        }
        sclock = ready[i] > sclock ? ready[i] : sclock;
    }
    t.sched = sclock > scomm ? sclock : scomm;
    *out = t;
out:
    tpu__free(end_at);
    tpu__free(ready);
    tpu__free(gaps);
    w->depth--;
    return status;
}

void tpu_replay_coll_desc(const tpu_replay_coll_t *row, tpu_groups_t *groups,
                          tpu_coll_desc_t *desc_p)
{
    *desc_p = row->desc;
    if (row->chips != NULL) {
        groups->ngroups = row->ngroups;
        groups->size = row->group_size;
        groups->chips = row->chips;
        desc_p->groups = groups;
    }
    if (row->pairs != NULL) {
        desc_p->pairs = row->pairs;
        desc_p->npairs = row->npairs;
    }
}

void tpu_replay_report_destroy(tpu_replay_report_t *r)
{
    int i;

    if (r == NULL) {
        return;
    }
    for (i = 0; r->colls != NULL && i < r->ncolls; i++) {
        tpu__free(r->colls[i].chips);
        tpu__free(r->colls[i].pairs);
    }
    tpu__free(r->colls);
    tpu__free(r->ops);
    tpu__free(r->warnings);
    tpu__free(r->seq);
    tpu__free(r->timeline);
    tpu__free(r->loops);
    tpu__free(r);
}

/*
 * The ENTRY reached no collective: say so when other computations hold some (a
 * file of test computations behind a dummy ENTRY, as XLA's own tests write them).
 */
static tpu_status_t warn_unreached(walker_t *w)
{
    const tpu_hlo_module_t *mod = w->mod;
    int c, k, n = 0, first = -1;

    for (c = 0; c < mod->ncomps; c++) {
        for (k = 0; k < mod->comps[c].ninstrs; k++) {
            if (tpu_hlo_op_class(mod->comps[c].instrs[k].op) == TPU_HLO_CLASS_COLL) {
                first = first < 0 ? c : first;
                n++;
                break;
            }
        }
    }
    if (n == 0) {
        return TPU_OK;
    }
    return tpu__replay_warn(
        w,
        "the ENTRY '%s' reaches no collective, but %d other computation%s hold%s some "
        "('%s', line %d%s): --entry NAME replays one",
        mod->comps[mod->entry].name, n, n == 1 ? "" : "s", n == 1 ? "s" : "",
        mod->comps[first].name, mod->comps[first].line, n > 1 ? ", ..." : "");
}

tpu_status_t tpu_replay_run(const tpu_hlo_module_t *mod, const tpu_topo_t *topo,
                            const tpu_link_model_t *link, const tpu_chip_spec_t *chip,
                            const tpu_replay_opts_t *opts, tpu_replay_report_t **report_p,
                            tpu_err_t *err)
{
    walker_t w;
    tpu_status_t status;
    times_t t;
    int d, c, entry;

    memset(&w, 0, sizeof(w));
    w.mod = mod;
    w.topo = topo;
    w.link = link;
    w.chip = chip;
    w.opts = opts;
    w.err = err;
    w.record = 1;
    w.ndev = tpu_replay_device_count(mod);
    w.R = mod->replica_count > 0 ? (int)mod->replica_count : 1;
    w.P = mod->num_partitions > 0 ? (int)mod->num_partitions : 1;
    if (w.ndev != topo->nchips) {
        char why[96];

        if (mod->num_partitions > 0 || mod->replica_count > 0) {
            snprintf(why, sizeof(why), "num_partitions %lld x replica_count %lld",
                     (long long)(mod->num_partitions > 0 ? mod->num_partitions : 1),
                     (long long)(mod->replica_count > 0 ? mod->replica_count : 1));
        } else {
            snprintf(why, sizeof(why), "the largest device id in its groups is %d",
                     mod->max_device_id);
        }
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "%s:%d:1: module '%s' runs on %d devices (%s), and the pod has %d "
                           "chips: replay it on a %d-chip topology",
                           mod->file, mod->line, mod->name, w.ndev, why, topo->nchips, w.ndev);
    }
    if (mod->max_device_id >= w.ndev) {
        /* Named precisely by the collective that does it, below. */
    }
    w.rep = tpu__calloc(1, sizeof(*w.rep));
    w.dev2chip = tpu__malloc((size_t)w.ndev * sizeof(int32_t));
    w.rowmap = tpu__calloc((size_t)mod->ncomps, sizeof(int *));
    if (w.rep == NULL || w.dev2chip == NULL || w.rowmap == NULL) {
        status = tpu__replay_oom(&w);
        goto out;
    }
    w.rep->devices = w.ndev;
    for (d = 0; d < w.ndev; d++) {
        w.dev2chip[d] = d;
    }
    if (opts != NULL && opts->device_order != NULL) {
        char *seen = NULL;

        if (opts->ndevice_order != w.ndev) {
            status = tpu_err_set(err, TPU_ERR_INVALID,
                                 "--device-order lists %d chips, and the module has %d devices",
                                 opts->ndevice_order, w.ndev);
            goto out;
        }
        seen = tpu__calloc((size_t)w.ndev, 1);
        if (seen == NULL) {
            status = tpu__replay_oom(&w);
            goto out;
        }
        for (d = 0; d < w.ndev; d++) {
            int32_t chip_id = opts->device_order[d];

            if (chip_id < 0 || chip_id >= w.ndev || seen[chip_id]) {
                tpu__free(seen);
                status = tpu_err_set(err, TPU_ERR_INVALID,
                                     "--device-order is not a permutation of chips 0 to %d "
                                     "(entry %d is %d)",
                                     w.ndev - 1, d, chip_id);
                goto out;
            }
            seen[chip_id] = 1;
            w.dev2chip[d] = chip_id;
        }
        tpu__free(seen);
    }
    entry = mod->entry;
    if (opts != NULL && opts->entry != NULL) {
        entry = tpu_hlo_module_find_comp(mod, opts->entry + (opts->entry[0] == '%'));
        if (entry < 0) {
            status = tpu_err_set(err, TPU_ERR_INVALID,
                                 "--entry: module '%s' has no computation named '%s' (%d "
                                 "computations; the ENTRY is '%s')",
                                 mod->name, opts->entry, mod->ncomps, mod->comps[mod->entry].name);
            goto out;
        }
    }
    status = walk(&w, entry, 1, &t);
    if (status != TPU_OK) {
        goto out;
    }
    if (w.rep->ncolls == 0 && (opts == NULL || opts->entry == NULL)) {
        status = warn_unreached(&w);
        if (status != TPU_OK) {
            goto out;
        }
    }
    w.rep->step_us = t.clock;
    w.rep->compute_us = t.compute;
    w.rep->comm_us = t.comm;
    w.rep->exposed_comm_us = t.exposed;
    w.rep->scheduled_step_us = t.sched;
    w.rep->scheduled_exposed_comm_us = t.sched > t.compute ? t.sched - t.compute : 0;
    w.rep->mfu = t.clock > 0 && chip->bf16_flops > 0
                     ? w.rep->flops / (t.clock * 1e-6 * chip->bf16_flops)
                     : 0;
    w.rep->unknown_opcodes = mod->unknown_opcodes;
    status = tpu__replay_hbm(&w, entry);
    if (status == TPU_OK) {
        status = tpu__replay_backend(&w);
    }
    if (status != TPU_OK) {
        goto out;
    }
    *report_p = w.rep;
    w.rep = NULL;
out:
    if (w.rowmap != NULL) {
        for (c = 0; c < mod->ncomps; c++) {
            tpu__free(w.rowmap[c]);
        }
    }
    tpu__free(w.rowmap);
    tpu__free(w.memo);
    tpu__free(w.dev2chip);
    tpu_replay_report_destroy(w.rep);
    return status;
}
