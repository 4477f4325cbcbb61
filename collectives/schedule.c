/* Schedule containers, sorting, time reversal and concatenation.  See sched.h. */
#include "schedule.h"

#include "alloc.h"

#include <string.h>

const int tpu__axis_orders[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                    {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};

int tpu__axis_order_index(const int *order, int naxes)
{
    int full[3], used = 0, i, a;

    for (i = 0; i < naxes; i++) {
        full[i] = order[i];
        used |= 1 << order[i];
    }
    for (a = 0; a < 3 && i < 3; a++) {
        if (!(used & (1 << a))) {
            full[i++] = a;
        }
    }
    for (i = 0; i < 6; i++) {
        if (memcmp(tpu__axis_orders[i], full, sizeof(full)) == 0) {
            return i;
        }
    }
    return 0;
}

void tpu__sched_init(tpu_sched_t *sched)
{
    memset(sched, 0, sizeof(*sched));
}

void tpu__sched_fini(tpu_sched_t *sched)
{
    tpu__free(sched->flows);
    tpu__free(sched->deps);
    tpu__free(sched->layout);
    memset(sched, 0, sizeof(*sched));
}

tpu_status_t tpu__sched_reserve(tpu_sched_t *sched, int64_t nflows, int64_t ndeps)
{
    if (sched->nflows + nflows > sched->cap_flows) {
        int64_t cap = sched->nflows + nflows;
        tpu_flow_t *flows = tpu__realloc(sched->flows, (size_t)cap * sizeof(*flows));

        if (flows == NULL) {
            return TPU_ERR_NO_MEMORY;
        }
        sched->flows = flows;
        sched->cap_flows = cap;
    }
    if (sched->ndeps + ndeps > sched->cap_deps) {
        int64_t cap = sched->ndeps + ndeps;
        int32_t *d = tpu__realloc(sched->deps, (size_t)cap * sizeof(*d));

        if (d == NULL) {
            return TPU_ERR_NO_MEMORY;
        }
        sched->deps = d;
        sched->cap_deps = cap;
    }
    return TPU_OK;
}

int64_t tpu__sched_add(tpu_sched_t *sched, const tpu_flow_t *flow)
{
    if (sched->nflows == sched->cap_flows) {
        int64_t cap = sched->cap_flows ? sched->cap_flows * 2 : 256;
        tpu_flow_t *flows = tpu__realloc(sched->flows, (size_t)cap * sizeof(*flows));

        if (flows == NULL) {
            return -1;
        }
        sched->flows = flows;
        sched->cap_flows = cap;
    }
    sched->flows[sched->nflows] = *flow;
    sched->flows[sched->nflows].dep_first = (int32_t)sched->ndeps;
    sched->flows[sched->nflows].ndeps = 0;
    if (flow->step + 1 > sched->nsteps) {
        sched->nsteps = flow->step + 1;
    }
    if (flow->stream + 1 > sched->nstreams) {
        sched->nstreams = flow->stream + 1;
    }
    return sched->nflows++;
}

tpu_status_t tpu__sched_add_deps(tpu_sched_t *sched, int64_t f, const int32_t *deps, int n)
{
    if (n == 0) {
        return TPU_OK;
    }
    if (sched->ndeps + n > sched->cap_deps) {
        int64_t cap = sched->cap_deps ? sched->cap_deps * 2 : 256;
        int32_t *d;

        while (cap < sched->ndeps + n) {
            cap *= 2;
        }
        d = tpu__realloc(sched->deps, (size_t)cap * sizeof(*d));
        if (d == NULL) {
            return TPU_ERR_NO_MEMORY;
        }
        sched->deps = d;
        sched->cap_deps = cap;
    }
    memcpy(sched->deps + sched->ndeps, deps, (size_t)n * sizeof(*deps));
    sched->ndeps += n;
    sched->flows[f].ndeps += n;
    return TPU_OK;
}

/*
 * Move every flow i to position newidx[i] in place (the cycles of the
 * permutation, each flow copied once): no second flow array.  newidx is used up
 * (its entries are set to -1).
 */
static void permute_flows(tpu_sched_t *sched, int64_t *newidx)
{
    int64_t i, j;

    for (i = 0; i < sched->nflows; i++) {
        tpu_flow_t carry;

        if (newidx[i] < 0 || newidx[i] == i) {
            continue;
        }
        carry = sched->flows[i];
        j = newidx[i];
        newidx[i] = -1;
        while (j != i) {
            tpu_flow_t next = sched->flows[j];
            int64_t k = newidx[j];

            sched->flows[j] = carry;
            newidx[j] = -1;
            carry = next;
            j = k;
        }
        sched->flows[i] = carry;
    }
}

/* Does flow old[i] have the same (shared) dependency list as flow old[i - 1]? */
static int shares_prev(const tpu_sched_t *sched, const int64_t *old, int64_t i)
{
    const tpu_flow_t *f, *g;

    if (i == 0 || !sched->shared_deps) {
        return 0;
    }
    f = &sched->flows[old[i]];
    g = &sched->flows[old[i - 1]];
    return f->ndeps > 0 && f->ndeps == g->ndeps && f->dep_first == g->dep_first;
}

/*
 * Stable counting sort of the flows by step.  Dependencies are renumbered, and
 * the dependency lists are rewritten in the new flow order so that each flow's
 * list stays contiguous.  The flows move in place; the dependencies are copied.
 */
tpu_status_t tpu__sched_sort(tpu_sched_t *sched)
{
    int64_t n = sched->nflows, i, j, m;
    int64_t *pos = NULL, *newidx = NULL, *old = NULL;
    int32_t *deps = NULL;
    int64_t nd = 0;
    tpu_status_t status = TPU_ERR_NO_MEMORY;
    int s;

    /* Already in step order (a concatenation of sorted schedules): the stable sort
     * is the identity. */
    for (i = 1; i < n && sched->flows[i - 1].step <= sched->flows[i].step; i++) {
    }
    if (i >= n) {
        return TPU_OK;
    }
    pos = tpu__calloc((size_t)sched->nsteps + 1, sizeof(*pos));
    newidx = tpu__malloc((size_t)(n ? n : 1) * sizeof(*newidx));
    old = tpu__malloc((size_t)(n ? n : 1) * sizeof(*old));
    if (pos == NULL || newidx == NULL || old == NULL) {
        goto out;
    }
    for (i = 0; i < n; i++) {
        pos[sched->flows[i].step + 1]++;
    }
    for (s = 0; s < sched->nsteps; s++) {
        pos[s + 1] += pos[s];
    }
    for (i = 0; i < n; i++) {
        newidx[i] = pos[sched->flows[i].step]++;
        old[newidx[i]] = i;
    }
    /* The dependency lists in the new flow order, renumbered; a list that the flow
     * before shares (tpu__sched_concat()) stays shared.  Counted first: a shared list
     * whose flows the sort separates is written once per run of them. */
    for (i = 0; i < n && sched->shared_deps; i++) {
        if (!shares_prev(sched, old, i)) {
            nd += sched->flows[old[i]].ndeps;
        }
    }
    nd = sched->shared_deps ? nd : sched->ndeps;
    deps = tpu__malloc((size_t)(nd ? nd : 1) * sizeof(*deps));
    if (deps == NULL) {
        goto out;
    }
    for (nd = 0, i = 0; i < n; i = j) {
        tpu_flow_t *f = &sched->flows[old[i]];
        int32_t k, first = f->dep_first;

        for (k = 0; k < f->ndeps; k++) {
            deps[nd + k] = (int32_t)newidx[sched->deps[first + k]];
        }
        /* This flow and the run of those after it with the same list. */
        for (j = i + 1; j < n && shares_prev(sched, old, j); j++) {
        }
        for (m = i; m < j; m++) {
            sched->flows[old[m]].dep_first = (int32_t)nd;
        }
        nd += f->ndeps;
    }
    permute_flows(sched, newidx);
    tpu__free(sched->deps);
    sched->deps = deps;
    sched->ndeps = nd;
    sched->cap_deps = nd;
    deps = NULL;
    status = TPU_OK;
out:
    tpu__free(deps);
    tpu__free(old);
    tpu__free(newidx);
    tpu__free(pos);
    return status;
}

tpu_status_t tpu__sched_copy_layout(tpu_sched_t *to, const tpu_sched_t *from)
{
    tpu__free(to->layout);
    to->layout = NULL;
    to->nlayout = 0;
    if (from->nlayout == 0) {
        return TPU_OK;
    }
    to->layout = tpu__malloc((size_t)from->nlayout * sizeof(*to->layout));
    if (to->layout == NULL) {
        return TPU_ERR_NO_MEMORY;
    }
    memcpy(to->layout, from->layout, (size_t)from->nlayout * sizeof(*to->layout));
    to->nlayout = from->nlayout;
    return TPU_OK;
}

tpu_status_t tpu__sched_reverse(const tpu_sched_t *ag, tpu_sched_t *rs, int64_t room)
{
    int64_t n = ag->nflows, i, p, nd = 0;
    int32_t *ndependents = NULL, *first = NULL, *fill = NULL, *list = NULL;
    int64_t *pos = NULL, *newidx = NULL, *old = NULL;
    tpu_status_t status = TPU_ERR_NO_MEMORY;

    tpu__sched_init(rs);
    ndependents = tpu__calloc((size_t)n + 1, sizeof(*ndependents));
    first = tpu__calloc((size_t)n + 1, sizeof(*first));
    fill = tpu__calloc((size_t)n + 1, sizeof(*fill));
    list = tpu__malloc((size_t)(ag->ndeps ? ag->ndeps : 1) * sizeof(*list));
    pos = tpu__calloc((size_t)ag->nsteps + 1, sizeof(*pos));
    newidx = tpu__malloc((size_t)(n ? n : 1) * sizeof(*newidx));
    old = tpu__malloc((size_t)(n ? n : 1) * sizeof(*old));
    if (ndependents == NULL || first == NULL || fill == NULL || list == NULL || pos == NULL ||
        newidx == NULL || old == NULL) {
        goto out;
    }
    for (i = 0; i < ag->ndeps; i++) {
        ndependents[ag->deps[i]]++;
    }
    for (i = 0; i < n; i++) {
        first[i + 1] = first[i] + ndependents[i];
    }
    for (i = 0; i < n; i++) {
        const tpu_flow_t *g = &ag->flows[i];
        int32_t k;

        for (k = 0; k < g->ndeps; k++) {
            int32_t f = ag->deps[g->dep_first + k];

            list[first[f] + fill[f]++] = (int32_t)i;
        }
    }
    /* Where flow i goes: a stable counting sort by its reversed step, so the result
     * is in step order as it is written (flows of one step keep their order). */
    for (i = 0; i < n; i++) {
        pos[ag->nsteps - ag->flows[i].step]++;
    }
    for (i = 0; i < ag->nsteps; i++) {
        pos[i + 1] += pos[i];
    }
    for (i = 0; i < n; i++) {
        newidx[i] = pos[ag->nsteps - 1 - ag->flows[i].step]++;
        old[newidx[i]] = i;
    }
    if (tpu__sched_reserve(rs, n + room, ag->ndeps) != TPU_OK) {
        goto out;
    }
    for (p = 0; p < n; p++) {
        const tpu_flow_t *f = &ag->flows[old[p]];
        tpu_flow_t *r = &rs->flows[p];
        const int *ord = tpu__axis_orders[f->order];
        int rev[3] = {ord[2], ord[1], ord[0]};
        int32_t k;

        i = old[p];
        *r = *f;
        r->src = f->dst;
        r->dst = f->src;
        r->step = ag->nsteps - 1 - f->step;
        r->reduce = 1;
        r->order = (uint8_t)tpu__axis_order_index(rev, 3);
        r->tie = (int8_t)-f->tie;
        r->span.off = f->span.dst_off;
        r->span.dst_off = f->span.off;
        /* It depends on the flows that depended on it, renumbered. */
        r->dep_first = (int32_t)nd;
        r->ndeps = ndependents[i];
        for (k = 0; k < ndependents[i]; k++) {
            rs->deps[nd++] = (int32_t)newidx[list[first[i] + k]];
        }
    }
    rs->nflows = n;
    rs->ndeps = nd;
    rs->nsteps = ag->nsteps;
    rs->nstreams = ag->nstreams;
    status = tpu__sched_copy_layout(rs, ag);
out:
    tpu__free(old);
    tpu__free(newidx);
    tpu__free(pos);
    tpu__free(list);
    tpu__free(fill);
    tpu__free(first);
    tpu__free(ndependents);
    if (status != TPU_OK) {
        tpu__sched_fini(rs);
    }
    return status;
}

tpu_status_t tpu__sched_reverse_in_place(tpu_sched_t *s)
{
    int64_t n = s->nflows, i, p, nd = 0;
    int32_t *ndependents = NULL, *first = NULL, *fill = NULL, *list = NULL, *deps = NULL;
    int64_t *pos = NULL, *newidx = NULL, *old = NULL;
    tpu_status_t status = TPU_ERR_NO_MEMORY;

    ndependents = tpu__calloc((size_t)n + 1, sizeof(*ndependents));
    first = tpu__calloc((size_t)n + 1, sizeof(*first));
    fill = tpu__calloc((size_t)n + 1, sizeof(*fill));
    list = tpu__malloc((size_t)(s->ndeps ? s->ndeps : 1) * sizeof(*list));
    deps = tpu__malloc((size_t)(s->ndeps ? s->ndeps : 1) * sizeof(*deps));
    pos = tpu__calloc((size_t)s->nsteps + 1, sizeof(*pos));
    newidx = tpu__malloc((size_t)(n ? n : 1) * sizeof(*newidx));
    old = tpu__malloc((size_t)(n ? n : 1) * sizeof(*old));
    if (ndependents == NULL || first == NULL || fill == NULL || list == NULL || deps == NULL ||
        pos == NULL || newidx == NULL || old == NULL) {
        goto out;
    }
    /* The same lists and order as tpu__sched_reverse(). */
    for (i = 0; i < s->ndeps; i++) {
        ndependents[s->deps[i]]++;
    }
    for (i = 0; i < n; i++) {
        first[i + 1] = first[i] + ndependents[i];
    }
    for (i = 0; i < n; i++) {
        const tpu_flow_t *g = &s->flows[i];
        int32_t k;

        for (k = 0; k < g->ndeps; k++) {
            int32_t f = s->deps[g->dep_first + k];

            list[first[f] + fill[f]++] = (int32_t)i;
        }
    }
    for (i = 0; i < n; i++) {
        pos[s->nsteps - s->flows[i].step]++;
    }
    for (i = 0; i < s->nsteps; i++) {
        pos[i + 1] += pos[i];
    }
    for (i = 0; i < n; i++) {
        newidx[i] = pos[s->nsteps - 1 - s->flows[i].step]++;
        old[newidx[i]] = i;
    }
    for (p = 0; p < n; p++) {
        tpu_flow_t *r = &s->flows[old[p]];
        int32_t k;

        i = old[p];
        r->dep_first = (int32_t)nd;
        r->ndeps = ndependents[i];
        for (k = 0; k < ndependents[i]; k++) {
            deps[nd++] = (int32_t)newidx[list[first[i] + k]];
        }
    }
    for (i = 0; i < n; i++) {
        tpu_flow_t *r = &s->flows[i];
        const int *ord = tpu__axis_orders[r->order];
        int rev[3] = {ord[2], ord[1], ord[0]}, src = r->src;
        int64_t off = r->span.off;

        r->src = r->dst;
        r->dst = src;
        r->step = s->nsteps - 1 - r->step;
        r->reduce = 1;
        r->order = (uint8_t)tpu__axis_order_index(rev, 3);
        r->tie = (int8_t)-r->tie;
        r->span.off = r->span.dst_off;
        r->span.dst_off = off;
    }
    permute_flows(s, newidx);
    tpu__free(s->deps);
    s->deps = deps;
    s->ndeps = nd;
    s->cap_deps = s->ndeps > 0 ? s->ndeps : 1;
    deps = NULL;
    /* Only the flows, the steps, the streams and the layout carry over, as in
     * tpu__sched_reverse(). */
    memset(s->local, 0, sizeof(s->local));
    s->nlocal = 0;
    s->local_src_shift = s->local_dst_shift = 0;
    memset(s->algo, 0, sizeof(s->algo));
    status = TPU_OK;
out:
    tpu__free(old);
    tpu__free(newidx);
    tpu__free(pos);
    tpu__free(deps);
    tpu__free(list);
    tpu__free(fill);
    tpu__free(first);
    tpu__free(ndependents);
    return status;
}

tpu_status_t tpu__sched_concat(tpu_sched_t *first, const tpu_sched_t *second, const uint8_t *local)
{
    int64_t base = first->nflows, i;
    int32_t step0 = first->nsteps;
    int nkeys = 0;
    int32_t *count = NULL, *start = NULL, *fill = NULL, *byk = NULL;
    int32_t maxchip = 0;
    tpu_status_t status = TPU_ERR_NO_MEMORY;

    /* Bucket the first schedule's flows by (dst, stream). */
    for (i = 0; i < first->nflows; i++) {
        if (first->flows[i].dst > maxchip) {
            maxchip = first->flows[i].dst;
        }
    }
    for (i = 0; i < second->nflows; i++) {
        if (second->flows[i].src > maxchip) {
            maxchip = second->flows[i].src;
        }
    }
    {
        int nstreams = first->nstreams > second->nstreams ? first->nstreams : second->nstreams;

        if (nstreams < 1) {
            nstreams = 1;
        }
        nkeys = (maxchip + 1) * nstreams;
        count = tpu__calloc((size_t)nkeys + 1, sizeof(*count));
        start = tpu__calloc((size_t)nkeys + 1, sizeof(*start));
        fill = tpu__calloc((size_t)nkeys + 1, sizeof(*fill));
        byk = tpu__malloc((size_t)(base ? base : 1) * sizeof(*byk));
        if (count == NULL || start == NULL || fill == NULL || byk == NULL) {
            goto out;
        }
        for (i = 0; i < base; i++) {
            count[first->flows[i].dst * nstreams + first->flows[i].stream]++;
        }
        for (i = 0; i < nkeys; i++) {
            start[i + 1] = start[i] + count[i];
        }
        for (i = 0; i < base; i++) {
            int k = first->flows[i].dst * nstreams + first->flows[i].stream;

            byk[start[k] + fill[k]++] = (int32_t)i;
        }
        {
            int64_t nd = second->ndeps;

            /* Each (src, stream) list is written once; 'fill' now marks the written. */
            memset(fill, 0, ((size_t)nkeys + 1) * sizeof(*fill));
            for (i = 0; i < second->nflows; i++) {
                int key = second->flows[i].src * nstreams + second->flows[i].stream;

                if (second->flows[i].ndeps == 0 && (local == NULL || local[second->flows[i].src]) &&
                    !fill[key]) {
                    nd += count[key];
                    fill[key] = 1;
                }
            }
            if (tpu__sched_reserve(first, second->nflows, nd) != TPU_OK) {
                goto out;
            }
            memset(fill, 0, ((size_t)nkeys + 1) * sizeof(*fill));
        }
        for (i = 0; i < second->nflows; i++) {
            tpu_flow_t f = second->flows[i];
            int64_t idx;

            f.step += step0;
            idx = tpu__sched_add(first, &f);
            if (idx < 0) {
                goto out;
            }
            if (f.ndeps > 0) {
                int32_t k;

                for (k = 0; k < f.ndeps; k++) {
                    int32_t d = second->deps[second->flows[i].dep_first + k] + (int32_t)base;

                    if (tpu__sched_add_deps(first, idx, &d, 1) != TPU_OK) {
                        goto out;
                    }
                }
            } else if (local == NULL || local[f.src]) {
                int key = f.src * nstreams + f.stream;

                if (fill[key] > 0) {
                    /* The list of an earlier flow from the same chip and stream. */
                    first->shared_deps = 1;
                    first->flows[idx].dep_first = fill[key] - 1;
                    first->flows[idx].ndeps = count[key];
                } else if (count[key] > 0) {
                    fill[key] = (int32_t)first->ndeps + 1;
                    if (tpu__sched_add_deps(first, idx, byk + start[key], count[key]) != TPU_OK) {
                        goto out;
                    }
                }
            }
        }
    }
    status = TPU_OK;
out:
    tpu__free(byk);
    tpu__free(fill);
    tpu__free(start);
    tpu__free(count);
    return status;
}

tpu_status_t tpu__plan_sched_index(tpu_plan_sched_t *ps)
{
    int64_t i;
    int s;

    tpu__free(ps->step_start);
    ps->step_start = tpu__calloc((size_t)ps->s.nsteps + 2, sizeof(int64_t));
    if (ps->step_start == NULL) {
        return TPU_ERR_NO_MEMORY;
    }
    for (i = 0; i < ps->s.nflows; i++) {
        ps->step_start[ps->s.flows[i].step + 1]++;
    }
    for (s = 0; s < ps->s.nsteps; s++) {
        ps->step_start[s + 1] += ps->step_start[s];
    }
    return TPU_OK;
}

void tpu__plan_sched_fini(tpu_plan_sched_t *ps)
{
    tpu__sched_fini(&ps->s);
    tpu__free(ps->step_start);
    ps->step_start = NULL;
    tpu__free(ps->ends);
    ps->ends = NULL;
    tpu__free(ps->repeat);
    ps->repeat = NULL;
}
