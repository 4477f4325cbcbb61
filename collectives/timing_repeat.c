/*
 * Repeated steps: the timing walk (timing.c) of a ring's compact model schedule,
 * in which one step stands for the floor(G/2) - 2 middle steps of a ring of G
 * members, without holding their G^2 flows.
 *
 * What it does.  A bidirectional ring (allgather_group_ring.c, and the snake over
 * it) repeats one pattern of flows at every step: member i sends one block to
 * i+1 and one to i-1, on the same routes with the same bytes; only the blocks
 * differ, and the link model does not see which block a flow carries.  The last
 * step (half blocks on an even ring) differs, and so does the first (no
 * dependencies).  So the compact form holds steps 1, 2 and T = floor(G/2) of each
 * phase (a reduce-scatter's turned round, a psum's both phases), and step 2 runs
 * T - 2 times, every run's flows depending on the flows of the run before in the
 * same places (tpu__repeat_note() checks the places).  Memory: 2 flows per chip
 * of the model per built step, against G per chip for every step.
 *
 * Exact, in two ways.  The walk of the full schedule gives each run of the step
 * the same work on the same resources, from the previous run's arrivals.
 *   - In general each run is walked here through the link model from the
 *     previous run's arrivals and chains, as the full walk does: the same
 *     additions in the same order, bit for bit, in O(flows of one step) memory
 *     (the time is the full walk's).
 *   - When the first run is uniform in its bytes (every flow of it starts at the
 *     same S and is through at the same S + d, and no resource shares between
 *     flows of unequal size or start), every later run's bytes are the first's
 *     shifted by d: the resources are idle when it starts (everything before
 *     ended by S), so each of its flows is through at S + d by the same sum over
 *     the same bandwidths.  Only the chains of latencies differ from run to run:
 *     a flow's is its predecessor's plus its own hops plus what its message start
 *     waited.  Runs 2 .. T - 3 are then computed without the link model: S += d;
 *     the chains a cycle of the ring at a time (no gather: the cycle is kept
 *     rotated, chains_cycles()); the starts of a port with two or more messages
 *     a run (the turned hops from the ends of an open row, in a reduce-scatter)
 *     one by one on its engine's busy intervals, as the link model starts them;
 *     every other port's start checked to find its engine free; each resource's
 *     busy time and bytes added run by run (one fold per distinct history).  The
 *     last run is walked through the link model again, which leaves its
 *     resources, busy intervals and message starts as the full walk leaves them
 *     for the steps after.  Where a checked start would have waited, or a shared
 *     port's would look back past what was forgotten of its engine, nothing is
 *     kept and every run is walked.  Cost O(T x flows of one step) additions.
 * Both are compared with the walk of every step, ==, by test_ring_repeat (small
 * open, mixed and wrapped pods, every ring collective); the 8,960-chip rings of
 * bench/big_plans.sh take the shortcut (each link carries one flow a step, or
 * two on the open pod, all starting together), and give there the walk run by run
 * (open) and main's walk of every flow (mixed, wrapped), bit for bit.
 */
#include "timing_repeat.h"

#include "alloc.h"
#include "linkmodel_busy.h"

#include <stdlib.h>
#include <string.h>

int tpu__repeat_ring_algo(const char *name)
{
    return strcmp(name, "group_ring") == 0 || strcmp(name, "group_rs_ag") == 0 ||
           strcmp(name, "snake") == 0;
}

int tpu__repeat_ring_steps(int group, int compact)
{
    return compact && group / 2 >= 4 ? 3 : group / 2;
}

/* Flows a (of one run) and b (of the run before) are the same flow, a step apart. */
static int same_flow(const tpu_flow_t *a, const tpu_flow_t *b)
{
    return a->src == b->src && a->dst == b->dst && a->kind == b->kind && a->order == b->order &&
           a->tie == b->tie && a->reduce == b->reduce && a->stream == b->stream;
}

int tpu__repeat_note(tpu_plan_sched_t *ps, int group)
{
    const tpu_sched_t *sc = &ps->s;
    int T = group / 2, s;
    int64_t i, k;

    if (T < 4 || sc->nsteps % 3 != 0) {
        return 0;
    }
    for (s = 1; s < sc->nsteps; s += 3) {
        int64_t pf = ps->step_start[s - 1], first = ps->step_start[s];
        int64_t n = ps->step_start[s + 1] - first;

        if (n != first - pf || n == 0 || (sc->barrier > 0 && s == sc->barrier)) {
            return 0;
        }
        for (i = 0; i < n; i++) {
            const tpu_flow_t *f = &sc->flows[first + i];

            if (!same_flow(f, &sc->flows[pf + i]) || tpu__span_bytes(&f->span) == 0) {
                return 0;
            }
            for (k = 0; k < f->ndeps; k++) {
                int32_t d = sc->deps[f->dep_first + k];

                if (d < pf || d >= first) {
                    return 0;
                }
            }
        }
    }
    ps->repeat = tpu__malloc((size_t)sc->nsteps * sizeof(int64_t));
    if (ps->repeat == NULL) {
        return -1;
    }
    for (s = 0; s < sc->nsteps; s++) {
        ps->repeat[s] = s % 3 == 1 ? T - 2 : 1;
    }
    return 1;
}

int64_t tpu__repeat_steps(const tpu_plan_sched_t *ps)
{
    int64_t n = 0;
    int s;

    if (ps->repeat == NULL) {
        return ps->s.nsteps;
    }
    for (s = 0; s < ps->s.nsteps; s++) {
        n += ps->repeat[s];
    }
    return n;
}

int64_t tpu__repeat_flows(const tpu_plan_sched_t *ps)
{
    int64_t n = ps->s.nflows;
    int s;

    for (s = 0; ps->repeat != NULL && s < ps->s.nsteps; s++) {
        n += (ps->repeat[s] - 1) * (ps->step_start[s + 1] - ps->step_start[s]);
    }
    return n;
}

/*
 * One more run of step s (its 'n' flows from 'first'; the run before holds their
 * arrivals and chains, its flows' dependencies point at the step before, from 'pf'):
 * the walk's own loop (timing.c) with each dependency moved onto the run before.
 */
static tpu_status_t run_again(tpu_timing_t *t, const tpu_sched_t *sc, int64_t first, int64_t n,
                              int64_t pf)
{
    int64_t k, i;

    for (k = 0; k < n; k++) {
        const tpu_flow_t *f = &sc->flows[first + k];
        double ready = t->floor_links, chain = t->floor_chain;

        for (i = 0; i < f->ndeps; i++) {
            int64_t d = first + (sc->deps[f->dep_first + i] - pf);

            ready = t->links[d] > ready ? t->links[d] : ready;
            chain = t->chain[d] > chain ? t->chain[d] : chain;
        }
        t->start[k] = ready;
        t->off[k] = chain;
    }
    if (tpu__linkmodel_step(&t->lm, &sc->flows[first], n, t->start, &t->links[first], t->lat,
                            t->off) != TPU_OK) {
        return TPU_ERR_NO_MEMORY;
    }
    for (k = 0; k < n; k++) {
        t->chain[first + k] = t->off[k] + t->lat[k];
        t->start[k] += t->off[k];
        if (t->chain[first + k] > t->chain_max) {
            t->chain_max = t->chain[first + k];
        }
        if (t->links[first + k] > t->links_max) {
            t->links_max = t->links[first + k];
        }
    }
    return TPU_OK;
}

/*
 * Is the run the link model has just timed (the step's 'n' flows from 'first')
 * uniform in its bytes (see the opening comment)?  Then '*d_p' is its duration.
 */
static int uniform(const tpu_timing_t *t, int64_t first, int64_t n, double *d_p)
{
    const tpu_linkmodel_t *lm = &t->lm;
    double d0 = -1;
    int64_t k, i;
    int ok = !lm->any_mixed && n > 0;

    for (k = 0; ok && k < n; k++) {
        double d = 0;

        ok = lm->lat[k] >= 0 && lm->st[k] == lm->st[0];
        for (i = lm->roff[k]; ok && i < lm->roff[k + 1]; i++) {
            int32_t r = lm->sres[i];

            if (lm->bw[r] > 0 && lm->sum[r] / lm->bw[r] > d) {
                d = lm->sum[r] / lm->bw[r];
            }
        }
        ok = ok && (d0 < 0 || d == d0) && t->links[first + k] == lm->st[k] + d;
        d0 = d;
    }
    *d_p = d0;
    return ok;
}

/* The message starts of a repeated step on its shared ports: the ports that start
 * more than one of its messages per run, each with its flows. */
typedef struct shared_ports {
    int64_t nports;
    int64_t *first; /* port p's flows are flow[first[p] .. first[p + 1]) */
    int64_t *flow;
    int32_t *eng; /* port p's DMA engine (a resource) */
} shared_ports_t;

static void ports_fini(shared_ports_t *sp)
{
    tpu__free(sp->first);
    tpu__free(sp->flow);
    tpu__free(sp->eng);
}

/* The shared ports of the run just timed (lm's step scratch). */
static tpu_status_t ports_init(const tpu_linkmodel_t *lm, int64_t n, shared_ports_t *sp)
{
    int32_t *count = NULL, lim = lm->classes ? lm->port0 : lm->nic0;
    int64_t *fill = NULL, k, p, nf = 0;
    int on = lm->link.msg_cost > 0;

    memset(sp, 0, sizeof(*sp));
    count = tpu__calloc((size_t)lm->nres, sizeof(int32_t));
    fill = tpu__calloc((size_t)(n + 1), sizeof(int64_t));
    sp->first = tpu__malloc((size_t)(n + 1) * sizeof(int64_t));
    sp->flow = tpu__malloc((size_t)(n + 1) * sizeof(int64_t));
    sp->eng = tpu__malloc((size_t)(n + 1) * sizeof(int32_t));
    if (count == NULL || fill == NULL || sp->first == NULL || sp->flow == NULL || sp->eng == NULL) {
        tpu__free(count);
        tpu__free(fill);
        ports_fini(sp);
        return TPU_ERR_NO_MEMORY;
    }
    for (k = 0; on && k < n; k++) {
        count[lm->sres[lm->roff[k]]]++;
    }
    /* A shared port's index p is kept as count = -(p + 1) once it has one. */
    for (k = 0; on && k < n; k++) {
        int32_t port = lm->sres[lm->roff[k]];

        if (port < lim && count[port] >= 2) {
            sp->eng[sp->nports] = lm->eng0 + port;
            sp->first[sp->nports] = nf;
            nf += count[port];
            count[port] = (int32_t) - (++sp->nports);
        }
        if (port < lim && count[port] < 0) {
            p = -count[port] - 1;
            sp->flow[sp->first[p] + fill[p]++] = k;
        }
    }
    sp->first[sp->nports] = nf;
    tpu__free(count);
    tpu__free(fill);
    return TPU_OK;
}

/*
 * The message starts of one run on the shared ports (flow k ready at S + off[k]),
 * as tpu__linkmodel_engine_starts() makes them: a port's batches (its flows ready
 * at one moment) in the order they are ready, each where its engine is idle for
 * msg_cost; what each flow waited into w[k].  Then the engine's intervals that end
 * before this run's first batch, less 'margin', are forgotten (forgot[p]), so that
 * the lists stay short: the starts of later runs come no earlier, but where one
 * would (the chains of its predecessors shrank by a wait), '*bad' is set, and the
 * runs are walked one by one.
 */
static tpu_status_t start_shared(tpu_linkmodel_t *lm, const shared_ports_t *sp, double S,
                                 const double *off, double *w, double margin, double *forgot,
                                 int *bad)
{
    double msg = lm->link.msg_cost;
    int64_t p, i, j;

    for (p = 0; p < sp->nports; p++) {
        int64_t *fl = sp->flow + sp->first[p], m = sp->first[p + 1] - sp->first[p];

        /* By (ready, flow): insertion, a port has a few flows. */
        for (i = 1; i < m; i++) {
            int64_t x = fl[i];

            for (j = i; j > 0 && (S + off[fl[j - 1]] > S + off[x] ||
                                  (S + off[fl[j - 1]] == S + off[x] && fl[j - 1] > x));
                 j--) {
                fl[j] = fl[j - 1];
            }
            fl[j] = x;
        }
        for (i = 0; i < m; i = j) {
            double ready = S + off[fl[i]];
            double at = tpu__linkmodel_busy_fit(lm, sp->eng[p], ready, msg);

            if (tpu__linkmodel_busy_add(lm, sp->eng[p], at, at + msg) != TPU_OK) {
                return TPU_ERR_NO_MEMORY;
            }
            for (j = i; j < m && S + off[fl[j]] == ready; j++) {
                w[fl[j]] = at - ready;
            }
        }
        if (m > 0) {
            /* A start before what was forgotten would need it: not kept (bad). */
            *bad |= S + off[fl[0]] < forgot[p];
            forgot[p] = S + off[fl[0]] - margin;
            tpu__linkmodel_busy_forget(lm, sp->eng[p], forgot[p]);
        }
    }
    return TPU_OK;
}

/* A resource's totals before the runs skipped, and what one run adds. */
typedef struct fold {
    double busy, add, bytes, sum;
    int32_t r;
} fold_t;

static int fold_cmp(const void *pa, const void *pb)
{
    const fold_t *a = pa, *b = pb;

    if (a->busy != b->busy) {
        return a->busy < b->busy ? -1 : 1;
    }
    if (a->add != b->add) {
        return a->add < b->add ? -1 : 1;
    }
    if (a->bytes != b->bytes) {
        return a->bytes < b->bytes ? -1 : 1;
    }
    return a->sum < b->sum ? -1 : a->sum > b->sum;
}

/*
 * Every resource the run just timed loads (lm's step scratch) given m more runs'
 * busy time and bytes, added one run at a time as the walk adds them (once per
 * distinct history: most resources share one).
 */
static tpu_status_t fold_loads(tpu_linkmodel_t *lm, int64_t m)
{
    fold_t *fo = tpu__malloc((size_t)(lm->ntouched > 0 ? lm->ntouched : 1) * sizeof(fold_t));
    int64_t i, j, k, r, nf = 0;

    if (fo == NULL) {
        return TPU_ERR_NO_MEMORY;
    }
    for (i = 0; i < lm->ntouched; i++) {
        int32_t res = lm->touched[i];

        if (lm->bw[res] > 0) {
            fold_t *e = &fo[nf++];

            e->busy = lm->busy[res];
            e->add = lm->sum[res] / lm->bw[res];
            e->bytes = lm->bytes[res];
            e->sum = lm->sum[res];
            e->r = res;
        }
    }
    qsort(fo, (size_t)nf, sizeof(*fo), fold_cmp);
    for (i = 0; i < nf; i = j) {
        double busy = fo[i].busy, bytes = fo[i].bytes;

        for (j = i + 1; j < nf && fold_cmp(&fo[i], &fo[j]) == 0; j++) {
        }
        for (r = 0; r < m; r++) {
            busy += fo[i].add;
            bytes += fo[i].sum;
        }
        for (k = i; k < j; k++) {
            lm->busy[fo[k].r] = busy;
            lm->bytes[fo[k].r] = bytes;
        }
    }
    tpu__free(fo);
    return TPU_OK;
}

/* The chains of a repeated step's runs (skip_runs()): scratch and what stays. */
typedef struct chains {
    tpu_timing_t *t;
    int64_t first, n;
    double *hop;  /* per flow: its hops (and DCN), its latency without a wait */
    double *off;  /* per flow of a shared port: its offset in the current run */
    double *w;    /* per flow of a shared port: what its start waited */
    int32_t *pos; /* per flow with one dependency: that flow's place in the step */
} chains_t;

/* e[j] += h[j] for j < n. */
static void add_hops(double *e, const double *h, int64_t n)
{
    int64_t j;

    for (j = 0; j < n; j++) {
        e[j] = e[j] + h[j];
    }
}

/*
 * add_hops() for runs whose ports with one message a run are watched (not known
 * to be idle when it is ready): flow j is ready at S + e[j] (before the addition),
 * its port's engine is busy until end[j] (-1e300 for the flows not watched, put
 * back after each run); a start that would wait (ready before end[j]) sets
 * '*bad'; last[j] and end[j] then hold its start.
 */
static void add_hops_watch(double *e, const double *h, double *last, double *end, int64_t n,
                           double S, double msg, int *bad)
{
    int64_t j;
    int b = 0;

    for (j = 0; j < n; j++) {
        double ready = S + e[j];

        b |= ready < end[j];
        last[j] = ready;
        end[j] = ready + msg;
        e[j] = e[j] + h[j];
    }
    *bad |= b;
}

/* The busy intervals of the shared ports' engines, kept to be put back. */
typedef struct saved_ivs {
    double *iv;    /* every engine's intervals, one after the other */
    int64_t *at;   /* engine p's from at[p] */
    int32_t *niv;  /* and how many */
    double *ivend; /* its last end */
} saved_ivs_t;

static void saved_fini(saved_ivs_t *sv)
{
    tpu__free(sv->iv);
    tpu__free(sv->at);
    tpu__free(sv->niv);
    tpu__free(sv->ivend);
}

static tpu_status_t save_ivs(const tpu_linkmodel_t *lm, const shared_ports_t *sp, saved_ivs_t *sv)
{
    int64_t p, total = 0;

    memset(sv, 0, sizeof(*sv));
    for (p = 0; p < sp->nports; p++) {
        total += lm->niv[sp->eng[p]];
    }
    sv->iv = tpu__malloc((size_t)(2 * total + 1) * sizeof(double));
    sv->at = tpu__malloc((size_t)(sp->nports + 1) * sizeof(int64_t));
    sv->niv = tpu__malloc((size_t)(sp->nports + 1) * sizeof(int32_t));
    sv->ivend = tpu__malloc((size_t)(sp->nports + 1) * sizeof(double));
    if (sv->iv == NULL || sv->at == NULL || sv->niv == NULL || sv->ivend == NULL) {
        saved_fini(sv);
        return TPU_ERR_NO_MEMORY;
    }
    for (total = 0, p = 0; p < sp->nports; p++) {
        int32_t r = sp->eng[p];

        sv->at[p] = total;
        sv->niv[p] = lm->niv[r];
        sv->ivend[p] = lm->ivend[r];
        memcpy(sv->iv + 2 * total, tpu__linkmodel_busy_list(lm, r),
               (size_t)lm->niv[r] * 2 * sizeof(double));
        total += lm->niv[r];
    }
    return TPU_OK;
}

/* Put the shared ports' intervals back (their lists only grew: room enough). */
static void restore_ivs(tpu_linkmodel_t *lm, const shared_ports_t *sp, const saved_ivs_t *sv)
{
    int64_t p;

    for (p = 0; p < sp->nports; p++) {
        int32_t r = sp->eng[p];

        memcpy(tpu__linkmodel_busy_list(lm, r), sv->iv + 2 * sv->at[p],
               (size_t)sv->niv[p] * 2 * sizeof(double));
        lm->niv[r] = sv->niv[p];
        lm->ivend[r] = sv->ivend[p];
        lm->ivhint[r] = 0;
    }
}

/*
 * m runs of the chains when every flow depends on one flow of the run before and
 * no two on the same one (the rings: pos is a permutation; else 0, and the runs
 * are walked one by one).  Each cycle of pos,
 * k_0, k_1 = the flow after k_0, ..., is kept rotated: e[j] holds the chain of
 * k_((j + r) mod L) at run r, so a run is e[j] += hop(k_((j + r) mod L)), two
 * sweeps per cycle without a gather; a flow whose start waited on a shared port
 * then gets its chain again as the walk adds it, off + (hop + wait).
 */
static int chains_cycles(chains_t *c, const shared_ports_t *sp, double S, double d, int64_t m,
                         double margin, tpu_status_t *status)
{
    tpu_timing_t *t = c->t;
    tpu_linkmodel_t *lm = &t->lm;
    double msg = lm->link.msg_cost;
    int64_t n = c->n, k, j, r, i, nc = 0, at = 0, nfree = 0;
    int64_t *ord = NULL, *slot = NULL, *cst = NULL, *cyc = NULL, *rot = NULL, *freep = NULL;
    double *e = NULL, *hc = NULL, *last = NULL, *end = NULL, *forgot = NULL;
    int32_t *eng = NULL;
    uint8_t *seen = NULL, *trk = NULL;
    int ok = 0, bad = 0;
    /* Every start of a port with one message a run is checked against the port's
     * last one: it must find the engine free (the chains of the runs mostly grow by
     * their hops, and a run of d >= msg_cost frees it, but a predecessor's wait on a
     * shared port may shrink). */
    int watch = msg > 0;
    saved_ivs_t sv;

    memset(&sv, 0, sizeof(sv));
    *status = TPU_ERR_NO_MEMORY;
    ord = tpu__malloc((size_t)n * sizeof(int64_t));  /* the flows, cycle by cycle */
    slot = tpu__malloc((size_t)n * sizeof(int64_t)); /* flow -> its place in ord */
    cst = tpu__malloc((size_t)(n + 1) * sizeof(int64_t));
    cyc = tpu__malloc((size_t)n * sizeof(int64_t)); /* flow -> its cycle */
    rot = tpu__malloc((size_t)(n + 1) * sizeof(int64_t));
    freep = tpu__malloc((size_t)(n + 1) * sizeof(int64_t)); /* the places not watched */
    e = tpu__malloc((size_t)n * sizeof(double));
    hc = tpu__malloc((size_t)n * sizeof(double));
    last = tpu__malloc((size_t)n * sizeof(double)); /* per place: its port's last start */
    end = tpu__malloc((size_t)n * sizeof(double));  /* and when its engine is free */
    forgot = tpu__malloc((size_t)(sp->nports + 1) * sizeof(double)); /* per shared port */
    eng = tpu__malloc((size_t)n * sizeof(int32_t));
    trk = tpu__calloc((size_t)n, 1); /* per place: its port is watched */
    seen = tpu__calloc((size_t)n, 1);
    if (ord == NULL || slot == NULL || cst == NULL || cyc == NULL || rot == NULL || freep == NULL ||
        e == NULL || hc == NULL || last == NULL || end == NULL || forgot == NULL || eng == NULL ||
        trk == NULL || seen == NULL || (sp->nports > 0 && save_ivs(lm, sp, &sv) != TPU_OK)) {
        goto out;
    }
    *status = TPU_OK;
    for (k = 0; k < sp->nports; k++) {
        forgot[k] = -1e300;
    }
    /* A permutation?  (slot first holds the flow after each, the inverse of pos.) */
    for (k = 0; k < n; k++) {
        slot[k] = -1;
    }
    for (k = 0; k < n; k++) {
        if (slot[c->pos[k]] >= 0) {
            goto out;
        }
        slot[c->pos[k]] = k;
    }
    for (k = 0; k < n; k++) {
        if (seen[k]) {
            continue;
        }
        cst[nc] = at;
        for (j = k; !seen[j]; j = slot[j]) {
            seen[j] = 1;
            ord[at++] = j;
        }
        nc++;
    }
    cst[nc] = at;
    memset(seen, 0, (size_t)n); /* now: the flows of shared ports */
    for (k = 0; k < sp->first[sp->nports]; k++) {
        seen[sp->flow[k]] = 1;
    }
    for (i = 0; i < nc; i++) {
        for (j = cst[i]; j < cst[i + 1]; j++) {
            int32_t port = lm->sres[lm->roff[ord[j]]];

            slot[ord[j]] = j;
            cyc[ord[j]] = i;
            e[j] = t->chain[c->first + ord[j]];
            hc[j] = c->hop[ord[j]];
            eng[j] = lm->eng0 + port;
            /* Watched: a port of its own with an engine, free from the end of its
             * engine's last interval (the first run's start). */
            trk[j] = watch && !seen[ord[j]] && port < (lm->classes ? lm->port0 : lm->nic0);
            end[j] = trk[j] && lm->niv[eng[j]] > 0 ? lm->ivend[eng[j]] : -1e300;
            last[j] = 0;
            if (!trk[j]) {
                freep[nfree++] = j;
            }
        }
    }
    ok = 1;
    memset(rot, 0, (size_t)(nc + 1) * sizeof(int64_t)); /* each cycle's rotation: run 0 */
    for (r = 1; r <= m + 1 && !bad; r++) {
        int64_t p;

        if (r == m + 1) {
            /* The last run is walked (tpu__timing_repeat()): are its watched starts
             * free too?  Its flow at place (j + rot) is ready at S + e[j]. */
            for (i = 0; i < nc; i++) {
                int64_t L = cst[i + 1] - cst[i], sh = rot[i] + 1 == L ? 0 : rot[i] + 1;

                for (j = 0; j < L; j++) {
                    int64_t q = cst[i] + (j + sh < L ? j + sh : j + sh - L);

                    bad |= trk[q] && S + e[cst[i] + j] < end[q];
                }
            }
            break;
        }
        /* The shared ports' flows: offsets (their predecessors' chains at run r - 1). */
        for (p = 0; p < sp->first[sp->nports]; p++) {
            int64_t f = sp->flow[p], g = c->pos[f], cg = cyc[g], x = slot[g] - cst[cg] - rot[cg];

            c->off[f] = e[cst[cg] + (x < 0 ? x + cst[cg + 1] - cst[cg] : x)];
        }
        if (sp->nports > 0 &&
            start_shared(lm, sp, S, c->off, c->w, margin, forgot, &bad) != TPU_OK) {
            *status = TPU_ERR_NO_MEMORY;
            goto out;
        }
        for (i = 0; i < nc; i++) {
            int64_t L = cst[i + 1] - cst[i], o = cst[i];

            rot[i] = rot[i] + 1 == L ? 0 : rot[i] + 1; /* run r - 1's, now run r's */
            if (watch) {
                add_hops_watch(e + o, hc + o + rot[i], last + o + rot[i], end + o + rot[i],
                               L - rot[i], S, msg, &bad);
                add_hops_watch(e + o + L - rot[i], hc + o, last + o, end + o, rot[i], S, msg, &bad);
            } else {
                add_hops(e + o, hc + o + rot[i], L - rot[i]);
                add_hops(e + o + L - rot[i], hc + o, rot[i]);
            }
        }
        for (p = 0; p < sp->first[sp->nports]; p++) {
            int64_t f = sp->flow[p], cf = cyc[f], x = slot[f] - cst[cf] - rot[cf];
            double v = c->off[f] + (c->hop[f] + c->w[f]);

            e[cst[cf] + (x < 0 ? x + cst[cf + 1] - cst[cf] : x)] = v;
        }
        for (p = 0; watch && p < nfree; p++) {
            end[freep[p]] = -1e300; /* not watched */
        }
        S = S + d;
    }
    if (bad) {
        /* A watched start would have waited: nothing kept, every run walked. */
        restore_ivs(lm, sp, &sv);
        ok = 0;
        goto out;
    }
    /* Every place's chain only grows (hops and waits are not negative): the longest
     * chain of every run is the longest now. */
    for (j = 0; j < n; j++) {
        t->chain_max = e[j] > t->chain_max ? e[j] : t->chain_max;
    }
    for (k = 0; k < n; k++) {
        int64_t ck = cyc[k], x = slot[k] - cst[ck] - rot[ck];

        t->chain[c->first + k] = e[cst[ck] + (x < 0 ? x + cst[ck + 1] - cst[ck] : x)];
        t->links[c->first + k] = S;
    }
    /* Each watched port's last start, where the walk of the last run looks. */
    for (j = 0; j < n && *status == TPU_OK; j++) {
        if (trk[j] && tpu__linkmodel_busy_add(lm, eng[j], last[j], end[j]) != TPU_OK) {
            *status = TPU_ERR_NO_MEMORY;
        }
    }
out:
    saved_fini(&sv);
    tpu__free(ord);
    tpu__free(slot);
    tpu__free(cst);
    tpu__free(cyc);
    tpu__free(rot);
    tpu__free(freep);
    tpu__free(e);
    tpu__free(hc);
    tpu__free(last);
    tpu__free(end);
    tpu__free(forgot);
    tpu__free(eng);
    tpu__free(trk);
    tpu__free(seen);
    return ok;
}

/*
 * Runs 2 .. m + 1 of a step uniform in its bytes, of duration 'd' (the first just
 * timed): the arrivals shifted by d, each flow's chain its predecessor's plus its
 * own hops and what its start waited (only on a shared port), the loads folded.
 */
static tpu_status_t skip_runs(tpu_timing_t *t, const tpu_sched_t *sc, int64_t first, int64_t n,
                              int64_t pf, double d, int64_t m, int *done_p)
{
    tpu_linkmodel_t *lm = &t->lm;
    double S = t->links[first]; /* the start of the run: the arrivals of the one before */
    double margin = 4 * d + 4 * lm->link.msg_cost + 1e-9;
    int64_t k;
    int single = 1;
    shared_ports_t sp;
    chains_t c;
    tpu_status_t status;

    status = ports_init(lm, n, &sp);
    *done_p = 0;
    if (status != TPU_OK) {
        return status;
    }
    memset(&c, 0, sizeof(c));
    c.t = t;
    c.first = first;
    c.n = n;
    status = TPU_ERR_NO_MEMORY;
    c.hop = tpu__malloc((size_t)n * sizeof(double));
    c.off = tpu__malloc((size_t)n * sizeof(double));
    c.w = tpu__calloc((size_t)n, sizeof(double));
    c.pos = tpu__malloc((size_t)n * sizeof(int32_t));
    if (c.hop == NULL || c.off == NULL || c.w == NULL || c.pos == NULL) {
        goto out;
    }
    for (k = 0; k < n; k++) {
        const tpu_flow_t *f = &sc->flows[first + k];

        c.hop[k] = lm->lat[k];
        single &= f->ndeps == 1;
        c.pos[k] = f->ndeps == 1 ? (int32_t)(sc->deps[f->dep_first] - pf) : 0;
    }
    /* Chains never fall below the barrier's floor (each is an offset plus hops): with
     * one dependency each, the floor never binds. */
    status = TPU_OK;
    *done_p = single && chains_cycles(&c, &sp, S, d, m, margin, &status);
    if (status == TPU_OK && *done_p) {
        status = fold_loads(lm, m);
    }
out:
    ports_fini(&sp);
    tpu__free(c.hop);
    tpu__free(c.off);
    tpu__free(c.w);
    tpu__free(c.pos);
    return status;
}

tpu_status_t tpu__timing_repeat(tpu_timing_t *t, const tpu_plan_sched_t *ps, int s)
{
    const tpu_sched_t *sc = &ps->s;
    int64_t first = ps->step_start[s], n = ps->step_start[s + 1] - first, runs, r = 1;
    int64_t pf = s > 0 ? ps->step_start[s - 1] : 0;
    double d;
    tpu_status_t status = TPU_OK;

    runs = ps->repeat != NULL ? ps->repeat[s] : 1;
    if (runs > 2 && t->obs == NULL && uniform(t, first, n, &d)) {
        int done;

        status = skip_runs(t, sc, first, n, pf, d, runs - 2, &done);
        r = done ? runs - 1 : 1;
    }
    for (; r < runs && status == TPU_OK; r++) {
        status = run_again(t, sc, first, n, pf);
    }
    if (t->links[first] > t->links_max) {
        t->links_max = t->links[first];
    }
    return status;
}
