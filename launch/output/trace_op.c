/*
 * One collective in the trace (see trace.h): the observer's callbacks that record
 * its messages, and the events written at its end - per chip its steps, its sends
 * on as few tracks as keep them apart, flow arrows and the bytes in flight on
 * every link (full trace), or the pod-wide steps and the mean bytes in flight per
 * link class (summary).
 */
#include "trace_op.h"

#include "alloc.h"
#include "trace_events.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Summary: 'v' bytes in flight during [s, e) on class c. */
static void add_rect(app_trace_t *tr, int c, int64_t s, int64_t e, double v)
{
    double w = (double)tr->expected / APP_TRACE_BUCKETS;
    int b0, b1;

    if (w <= 0 || e <= s) {
        return;
    }
    b0 = (int)((double)s / w);
    b1 = (int)((double)e / w);
    b0 = b0 < APP_TRACE_BUCKETS ? b0 : APP_TRACE_BUCKETS - 1;
    b1 = b1 < APP_TRACE_BUCKETS ? b1 : APP_TRACE_BUCKETS - 1;
    if (b0 == b1) {
        tr->part[c][b0] += v * (double)(e - s) / w;
        return;
    }
    tr->part[c][b0] += v * ((b0 + 1) * w - (double)s) / w;
    tr->part[c][b1] += v * ((double)e - b1 * w) / w;
    tr->diff[c][b0 + 1] += v;
    tr->diff[c][b1] -= v;
}

static int grow(void **p, int64_t *cap, int64_t need, size_t size)
{
    int64_t n = *cap > 0 ? *cap : 256;
    void *q;

    if (need <= *cap) {
        return 1;
    }
    while (n < need) {
        n *= 2;
    }
    q = tpu__realloc(*p, (size_t)n * size);
    if (q == NULL) {
        return 0;
    }
    *p = q;
    *cap = n;
    return 1;
}

void app_trace_on_flow(void *user, const tpu_coll_flow_event_t *e)
{
    app_trace_t *tr = user;
    int64_t s = app_trace_to_ns(e->start_s), t = app_trace_to_ns(e->end_s);
    int k;

    if (tr->oom) {
        return;
    }
    tr->rep |= e->representative;
    if (tr->summary) {
        int h[NCLASS] = {0}, c;

        if (e->step >= tr->nsteps) {
            int64_t cap = tr->cap_steps, cap2 = tr->cap_steps;

            if (!grow((void **)&tr->step_min, &cap, e->step + 1, sizeof(int64_t)) ||
                !grow((void **)&tr->step_max, &cap2, e->step + 1, sizeof(int64_t))) {
                tr->oom = 1;
                return;
            }
            tr->cap_steps = (int)(cap < cap2 ? cap : cap2);
            for (k = tr->nsteps; k <= e->step; k++) {
                tr->step_min[k] = INT64_MAX;
                tr->step_max[k] = -1;
            }
            tr->nsteps = e->step + 1;
        }
        if (s < tr->step_min[e->step]) {
            tr->step_min[e->step] = s;
        }
        if (t > tr->step_max[e->step]) {
            tr->step_max[e->step] = t;
        }
        for (k = 0; k < e->nlinks; k++) {
            int src, axis, dir, dst;

            tpu_topo_link_ends(&tr->topo, e->links[k], &src, &axis, &dir, &dst);
            h[2 * axis + (dir < 0)]++;
        }
        h[NCLASS - 1] = e->dcn;
        for (c = 0; c < NCLASS; c++) {
            if (h[c] > 0) {
                add_rect(tr, c, s, t, (double)e->bytes * h[c]);
            }
        }
        return;
    }
    if (!grow((void **)&tr->recs, &tr->cap_recs, tr->nrecs + 1, sizeof(rec_t)) ||
        !grow((void **)&tr->links, &tr->cap_links, tr->nlinks + e->nlinks, sizeof(int32_t))) {
        tr->oom = 1;
        return;
    }
    {
        rec_t *r = &tr->recs[tr->nrecs++];

        r->start = s;
        r->end = t;
        r->bytes = e->bytes;
        r->src = e->src;
        r->dst = e->dst;
        r->step = e->step;
        r->link_off = (int32_t)tr->nlinks;
        r->nlinks = e->nlinks;
        r->src_host = e->src_host;
        r->dst_host = e->dst_host;
        r->dcn = e->dcn;
        r->lane = 0;
        for (k = 0; k < e->nlinks; k++) {
            tr->links[tr->nlinks++] = e->links[k];
        }
    }
}

void app_trace_on_link(void *user, const tpu_coll_link_event_t *e)
{
    app_trace_t *tr = user;

    /* The hosts, for the DCN counters: known from the walk's NIC totals. */
    if (e->link < 0 && tr->topo.slices > 1 && e->host + 1 > tr->nhosts && tr->first) {
        tr->nhosts = e->host + 1;
    }
    if (e->link < 0 && tr->summary) {
        tr->class_links[NCLASS - 1] = tr->nhosts;
    }
}

static int cmp_src_step(const void *a, const void *b)
{
    const rec_t *x = a, *y = b;

    if (x->src != y->src) {
        return x->src < y->src ? -1 : 1;
    }
    if (x->step != y->step) {
        return x->step < y->step ? -1 : 1;
    }
    return x->start < y->start ? -1 : x->start > y->start;
}

static int cmp_src_start(const void *a, const void *b)
{
    const rec_t *x = a, *y = b;

    if (x->src != y->src) {
        return x->src < y->src ? -1 : 1;
    }
    if (x->start != y->start) {
        return x->start < y->start ? -1 : 1;
    }
    return x->end < y->end ? -1 : x->end > y->end;
}

static int cmp_cross(const void *a, const void *b)
{
    const cross_t *x = a, *y = b;

    if (x->res != y->res) {
        return x->res < y->res ? -1 : 1;
    }
    return x->t < y->t ? -1 : x->t > y->t;
}

/* The steps of one chip's records [i, j) (sorted by step): a partition of its time. */
static void chip_steps(app_trace_t *tr, int64_t i, int64_t j, int64_t end_op)
{
    int64_t k = i, last_end = 0, b = 0;
    char name[32], args[128];

    for (k = i; k < j; k++) {
        last_end = tr->recs[k].end > last_end ? tr->recs[k].end : last_end;
    }
    /* Inside the collective's slice, which ends a nanosecond early. */
    last_end = last_end < end_op - 1 ? last_end : end_op - 1;
    k = i;
    while (k < j) {
        int64_t m = k, next_b, n = 0;
        uint64_t bytes = 0;
        int step = tr->recs[k].step;

        b = tr->recs[k].start > b ? tr->recs[k].start : b;
        while (m < j && tr->recs[m].step == step) {
            bytes += tr->recs[m].bytes;
            n++;
            m++;
        }
        next_b = m < j ? tr->recs[m].start : last_end;
        next_b = next_b > b ? next_b : b;
        next_b = next_b < last_end ? next_b : last_end;
        if (next_b > b) {
            snprintf(name, sizeof(name), "step %d", step);
            snprintf(args, sizeof(args), "\"step\": %d, \"messages\": %lld, \"bytes\": %llu", step,
                     (long long)n, (unsigned long long)bytes);
            app_trace_slice(tr, app_trace_chip_pid(tr->recs[k].src), TID_COLL, "step", name,
                            tr->now + b, next_b - b, args);
        }
        b = next_b;
        k = m;
    }
}

/* Every message on its source's "sends" tracks, packed so that none overlap. */
static tpu_status_t chip_lanes(app_trace_t *tr, int64_t i, int64_t j)
{
    int64_t *lane_end = NULL, cap = 0, k;
    int nl = 0, l, chip = tr->recs[i].src;
    char name[48], args[160];

    for (k = i; k < j; k++) {
        rec_t *r = &tr->recs[k];

        for (l = 0; l < nl && lane_end[l] > r->start; l++) {
        }
        if (l == nl) {
            if (!grow((void **)&lane_end, &cap, nl + 1, sizeof(int64_t))) {
                tpu__free(lane_end);
                return TPU_ERR_NO_MEMORY;
            }
            nl++;
        }
        lane_end[l] = r->end;
        r->lane = l;
        if (l + 1 > tr->lanes_named[chip]) {
            snprintf(name, sizeof(name), "sends %d", l);
            app_trace_meta(tr, "thread_name", app_trace_chip_pid(chip), TID_LANE0 + l, name);
            tr->lanes_named[chip] = l + 1;
        }
        snprintf(name, sizeof(name), "-> chip %d", r->dst);
        snprintf(args, sizeof(args),
                 "\"bytes\": %llu, \"step\": %d, \"to\": %d, \"hops\": %d, \"dcn\": %s",
                 (unsigned long long)r->bytes, r->step, r->dst, r->nlinks,
                 r->dcn ? "true" : "false");
        app_trace_slice(tr, app_trace_chip_pid(chip), TID_LANE0 + l, "dma", name,
                        tr->now + r->start, r->end - r->start, args);
    }
    tpu__free(lane_end);
    return TPU_OK;
}

static void arrows(app_trace_t *tr)
{
    int64_t k;

    for (k = 0; k < tr->nrecs; k++) {
        const rec_t *r = &tr->recs[k];
        unsigned long long id = (unsigned long long)++tr->arrow_id;
        FILE *f = app_trace_ev(tr);

        fprintf(f,
                "\"name\": \"message\", \"cat\": \"dma\", \"ph\": \"s\", \"id\": %llu, "
                "\"pid\": %d, \"tid\": %d, \"ts\": ",
                id, app_trace_chip_pid(r->src), TID_LANE0 + r->lane);
        app_trace_put_us(f, tr->now + r->start);
        fputs("}", f);
        f = app_trace_ev(tr);
        fprintf(f,
                "\"name\": \"message\", \"cat\": \"dma\", \"ph\": \"f\", \"bp\": \"e\", "
                "\"id\": %llu, \"pid\": %d, \"tid\": %d, \"ts\": ",
                id, app_trace_chip_pid(r->dst), TID_COLL);
        app_trace_put_us(f, tr->now + r->end);
        fputs("}", f);
    }
}

/* The bytes in flight on every link and NIC the collective used. */
static tpu_status_t link_counters(app_trace_t *tr)
{
    cross_t *x;
    int64_t n = 0, k, m;
    int nl = tr->topo.nlinks;
    char name[96];

    for (k = 0; k < tr->nrecs; k++) {
        n += 2 * (tr->recs[k].nlinks + 2 * (tr->recs[k].dcn != 0));
    }
    x = tpu__malloc((size_t)(n + 1) * sizeof(*x));
    if (x == NULL) {
        return TPU_ERR_NO_MEMORY;
    }
    n = 0;
    for (k = 0; k < tr->nrecs; k++) {
        const rec_t *r = &tr->recs[k];
        int q;

        for (q = 0; q < r->nlinks; q++) {
            x[n++] = (cross_t){r->start, (double)r->bytes, tr->links[r->link_off + q]};
            x[n++] = (cross_t){r->end, -(double)r->bytes, tr->links[r->link_off + q]};
        }
        if (r->dcn && r->src_host >= 0 && r->src_host < tr->nhosts && r->dst_host >= 0 &&
            r->dst_host < tr->nhosts) {
            x[n++] = (cross_t){r->start, (double)r->bytes, nl + 2 * r->src_host};
            x[n++] = (cross_t){r->end, -(double)r->bytes, nl + 2 * r->src_host};
            x[n++] = (cross_t){r->start, (double)r->bytes, nl + 2 * r->dst_host + 1};
            x[n++] = (cross_t){r->end, -(double)r->bytes, nl + 2 * r->dst_host + 1};
        }
    }
    qsort(x, (size_t)n, sizeof(*x), cmp_cross);
    for (k = 0; k < n; k = m) {
        int32_t res = x[k].res;
        double v = 0;
        int pid, src;

        if (res < nl) {
            app_trace_link_name(tr, res, name, sizeof(name), &src);
            pid = app_trace_chip_pid(src);
        } else {
            snprintf(name, sizeof(name), "DCN %s", (res - nl) % 2 ? "ingress" : "egress");
            pid = app_trace_host_pid(tr, (res - nl) / 2);
        }
        for (m = k; m < n && x[m].res == res;) {
            int64_t t = x[m].t;

            while (m < n && x[m].res == res && x[m].t == t) {
                v += x[m].delta;
                m++;
            }
            app_trace_counter(tr, pid, name, tr->now + t, fabs(v) < 0.5 ? 0 : v);
        }
    }
    tpu__free(x);
    return TPU_OK;
}

tpu_status_t app_trace_full_op_end(app_trace_t *tr, int64_t dur)
{
    int64_t i, j;
    int c;

    for (c = 0; c < tr->topo.nchips; c++) {
        app_trace_slice(tr, app_trace_chip_pid(c), TID_COLL, "collective", tr->name, tr->now, dur,
                        tr->op_args);
    }
    qsort(tr->recs, (size_t)tr->nrecs, sizeof(rec_t), cmp_src_step);
    for (i = 0; i < tr->nrecs; i = j) {
        for (j = i; j < tr->nrecs && tr->recs[j].src == tr->recs[i].src; j++) {
        }
        chip_steps(tr, i, j, dur);
    }
    /* The links of a record stay where they are: records only point into them. */
    qsort(tr->recs, (size_t)tr->nrecs, sizeof(rec_t), cmp_src_start);
    for (i = 0; i < tr->nrecs && tr->nrecs <= APP_TRACE_SENDS; i = j) {
        for (j = i; j < tr->nrecs && tr->recs[j].src == tr->recs[i].src; j++) {
        }
        if (chip_lanes(tr, i, j) != TPU_OK) {
            return TPU_ERR_NO_MEMORY;
        }
    }
    if (tr->nrecs <= APP_TRACE_ARROWS) {
        arrows(tr);
    }
    return link_counters(tr);
}

void app_trace_summary_op_end(app_trace_t *tr, int64_t dur)
{
    char name[64], args[160];
    int64_t b = 0, last = 0;
    int s, c, k;
    double w = (double)tr->expected / APP_TRACE_BUCKETS;

    app_trace_slice(tr, 1, TID_COLL, "collective", tr->name, tr->now, dur, tr->op_args);
    for (s = 0; s < tr->nsteps; s++) {
        last = tr->step_max[s] > last ? tr->step_max[s] : last;
    }
    last = last < dur - 1 ? last : dur - 1;
    for (s = 0; s < tr->nsteps; s++) {
        int64_t next = last;

        if (tr->step_max[s] < 0) {
            continue;
        }
        b = tr->step_min[s] > b ? tr->step_min[s] : b;
        for (k = s + 1; k < tr->nsteps; k++) {
            if (tr->step_max[k] >= 0) {
                next = tr->step_min[k];
                break;
            }
        }
        next = next > b ? next : b;
        next = next < last ? next : last;
        if (next > b) {
            snprintf(name, sizeof(name), "step %d", s);
            snprintf(args, sizeof(args),
                     "\"step\": %d, \"first_start_us\": %.3f, \"last_arrival_us\": %.3f", s,
                     tr->step_min[s] / 1e3, tr->step_max[s] / 1e3);
            app_trace_slice(tr, 1, TID_COLL, "step", name, tr->now + b, next - b, args);
        }
        b = next;
    }
    for (c = 0; c < NCLASS; c++) {
        double run = 0, prev = -1, div = tr->rep ? 1 : tr->class_links[c];

        if (tr->class_links[c] == 0 || w <= 0) {
            continue;
        }
        for (k = 0; k < APP_TRACE_BUCKETS; k++) {
            double v;

            run += tr->diff[c][k];
            v = (run + tr->part[c][k]) / (div > 0 ? div : 1);
            v = v < 0.5 ? 0 : v;
            if (v != prev) {
                app_trace_counter(tr, 1, app_trace_class_name(c, name, sizeof(name)),
                                  tr->now + (int64_t)(k * w), v);
                prev = v;
            }
        }
        if (prev != 0) {
            app_trace_counter(tr, 1, app_trace_class_name(c, name, sizeof(name)), tr->now + dur, 0);
        }
    }
}
