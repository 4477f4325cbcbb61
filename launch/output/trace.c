/* The Chrome trace-event writer (see trace.h). */
#include "trace.h"

#include "alloc.h"
#include "json.h"
#include "sink.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NCLASS      (2 * TPU_MAX_AXES + 1) /* (axis, direction) classes, then DCN */
#define TID_COMPUTE 1
#define TID_COLL    2
#define TID_LANE0   10

/* One message of the current collective (full trace). */
typedef struct rec {
    int64_t start, end; /* ns from the collective's start */
    uint64_t bytes;
    int32_t src, dst, step;
    int32_t link_off, nlinks;
    int32_t src_host, dst_host;
    int32_t lane;
    int32_t dcn;
} rec_t;

/* A change of the bytes in flight on a resource (link, or NIC after the links). */
typedef struct cross {
    int64_t t;
    double delta;
    int32_t res;
} cross_t;

struct tpu_trace {
    tpu_sink_t sink;
    /* The events of the current call, in memory until they are known to fit. */
    FILE *mem;
    char *membuf;
    size_t memlen;
    long long bytes, budget; /* written to the sink; its limit */
    int truncated;
    int64_t truncated_at; /* ns on the timeline */
    long long dropped;    /* calls left out */
    tpu_topo_t topo;
    int summary, measured, nhosts, first, oom, rep;
    int64_t now;      /* the modeled timeline, ns */
    int64_t expected; /* ns, the summary's intervals */
    uint64_t arrow_id;
    char name[160];
    char title[256];
    /* Full trace: the records of the current collective. */
    rec_t *recs;
    int64_t nrecs, cap_recs;
    int32_t *links;
    int64_t nlinks, cap_links;
    int *lanes_named; /* per chip */
    /* Summary: per step, the first start and the last end (pod-wide). */
    int64_t *step_min, *step_max;
    int nsteps, cap_steps;
    double part[NCLASS][TPU_TRACE_BUCKETS + 1];
    double diff[NCLASS][TPU_TRACE_BUCKETS + 2];
    int class_links[NCLASS]; /* links of each class in the pod (NICs for DCN) */
};

static int64_t to_ns(double s)
{
    double ns = s * 1e9;

    return ns > 0 ? (int64_t)llround(ns) : 0;
}

/* Microseconds to whole nanoseconds, the one rounding of every placed time. */
static int64_t us_ns(double us)
{
    return us > 0 ? (int64_t)llround(us * 1e3) : 0;
}

static void put_us(FILE *f, int64_t ns)
{
    if (ns < 0) {
        ns = 0;
    }
    fprintf(f, "%lld.%03lld", (long long)(ns / 1000), (long long)(ns % 1000));
}

/* Start an event: the separator, then "{". */
static FILE *ev(tpu_trace_t *tr)
{
    FILE *f = tr->mem;

    fputs(tr->first ? "\n{" : ",\n{", f);
    tr->first = 0;
    return f;
}

static void meta(tpu_trace_t *tr, const char *what, int pid, int tid, const char *name)
{
    FILE *f = ev(tr);

    fprintf(f, "\"name\": \"%s\", \"ph\": \"M\", \"pid\": %d, \"tid\": %d, \"args\": {\"name\": ",
            what, pid, tid);
    tpu_json_escape(f, name);
    fputs("}}", f);
}

static void sort_index(tpu_trace_t *tr, int pid, int index)
{
    FILE *f = ev(tr);

    fprintf(f,
            "\"name\": \"process_sort_index\", \"ph\": \"M\", \"pid\": %d, \"tid\": 0, "
            "\"args\": {\"sort_index\": %d}}",
            pid, index);
}

/* A complete slice; 'args' is a JSON object's members, or NULL. */
static void slice(tpu_trace_t *tr, int pid, int tid, const char *name, int64_t ts, int64_t dur,
                  const char *args)
{
    FILE *f = ev(tr);

    /*
     * One nanosecond short: slices that touch (a step and the next, a collective
     * and its last step) would otherwise overlap by a rounding error in viewers
     * that add ts and dur in floating point, and be drawn as nested.
     */
    dur = dur > 1 ? dur - 1 : dur;

    fputs("\"name\": ", f);
    tpu_json_escape(f, name);
    fprintf(f, ", \"ph\": \"X\", \"pid\": %d, \"tid\": %d, \"ts\": ", pid, tid);
    put_us(f, ts);
    fputs(", \"dur\": ", f);
    put_us(f, dur);
    if (args != NULL) {
        fprintf(f, ", \"args\": {%s}", args);
    }
    fputs("}", f);
}

static void counter(tpu_trace_t *tr, int pid, const char *name, int64_t ts, double value)
{
    FILE *f = ev(tr);

    fputs("\"name\": ", f);
    tpu_json_escape(f, name);
    fprintf(f, ", \"ph\": \"C\", \"pid\": %d, \"ts\": ", pid);
    put_us(f, ts);
    fprintf(f, ", \"args\": {\"bytes\": %.0f}}", value);
}

static int chip_pid(int chip)
{
    return chip + 1;
}

static int host_pid(const tpu_trace_t *tr, int host)
{
    return tr->topo.nchips + 1 + host;
}

static int measured_pid(const tpu_trace_t *tr, int chip)
{
    return tr->topo.nchips + tr->nhosts + 1 + chip;
}

/* "ICI x+ link 17 -> chip 6" */
static void link_name(const tpu_trace_t *tr, int link, char *buf, size_t len, int *src_p)
{
    int src, axis, dir, dst;

    tpu_topo_link_ends(&tr->topo, link, &src, &axis, &dir, &dst);
    snprintf(buf, len, "ICI %s%c link %d -> chip %d", tpu_topo_axis_name(axis), dir > 0 ? '+' : '-',
             link, dst);
    *src_p = src;
}

static const char *class_name(int c, char *buf, size_t len)
{
    if (c == NCLASS - 1) {
        snprintf(buf, len, "DCN egress (mean per host NIC)");
    } else {
        snprintf(buf, len, "ICI %s%c (mean per link)", tpu_topo_axis_name(c / 2),
                 c % 2 ? '-' : '+');
    }
    return buf;
}

static void chip_label(const tpu_topo_t *t, int chip, char *buf, size_t len)
{
    int c[TPU_MAX_AXES], a, n;

    tpu_topo_coords(t, chip, c);
    n = snprintf(buf, len, "chip %d (", chip);
    if (t->slices > 1) {
        n += snprintf(buf + n, len - (size_t)n, "slice %d: ", tpu_topo_slice_of(t, chip));
    }
    for (a = 0; a < t->naxes && n < (int)len; a++) {
        n += snprintf(buf + n, len - (size_t)n, "%s%d", a ? "," : "", c[a]);
    }
    if (n < (int)len) {
        snprintf(buf + n, len - (size_t)n, ")");
    }
}

static void write_header(tpu_trace_t *tr, const char *title)
{
    const tpu_topo_t *t = &tr->topo;
    FILE *f = tr->mem;
    char buf[160];
    int c, l, h, src;

    fputs("{\"displayTimeUnit\": \"ns\", \"otherData\": {\"title\": ", f);
    tpu_json_escape(f, title);
    fprintf(f,
            ", \"timeline\": \"modeled TPU time, microseconds\", \"mode\": \"%s\", \"chips\": "
            "%d, \"links\": %d},\n\"traceEvents\": [",
            tr->summary ? "summary" : "full", t->nchips, t->nlinks);
    if (tr->summary) {
        snprintf(buf, sizeof(buf), "pod: %d chips (summary)", t->nchips);
        meta(tr, "process_name", 1, 0, buf);
        meta(tr, "thread_name", 1, TID_COMPUTE, "compute (chip 0)");
        meta(tr, "thread_name", 1, TID_COLL, "collectives (pod-wide steps)");
        for (c = 0; c < NCLASS; c++) {
            if (tr->class_links[c] > 0) {
                counter(tr, 1, class_name(c, buf, sizeof(buf)), 0, 0);
            }
        }
    } else {
        for (c = 0; c < t->nchips; c++) {
            chip_label(t, c, buf, sizeof(buf));
            meta(tr, "process_name", chip_pid(c), 0, buf);
            sort_index(tr, chip_pid(c), c);
            meta(tr, "thread_name", chip_pid(c), TID_COMPUTE, "compute");
            meta(tr, "thread_name", chip_pid(c), TID_COLL, "collectives");
        }
        for (l = 0; l < t->nlinks; l++) {
            link_name(tr, l, buf, sizeof(buf), &src);
            counter(tr, chip_pid(src), buf, 0, 0);
        }
        for (h = 0; h < tr->nhosts; h++) {
            snprintf(buf, sizeof(buf), "TPU host %d (DCN NICs)", h);
            meta(tr, "process_name", host_pid(tr, h), 0, buf);
            sort_index(tr, host_pid(tr, h), t->nchips + h);
            counter(tr, host_pid(tr, h), "DCN egress", 0, 0);
            counter(tr, host_pid(tr, h), "DCN ingress", 0, 0);
        }
    }
    for (c = 0; tr->measured && c < t->nchips; c++) {
        chip_label(t, c, buf, sizeof(buf));
        strncat(buf, " measured", sizeof(buf) - strlen(buf) - 1);
        meta(tr, "process_name", measured_pid(tr, c), 0, buf);
        sort_index(tr, measured_pid(tr, c), 2 * t->nchips + c);
        meta(tr, "thread_name", measured_pid(tr, c), TID_COLL, "collectives (wall clock)");
    }
}

tpu_status_t tpu_trace_open(const char *path, const tpu_topo_t *topo, const char *title,
                            int summary, int measured, tpu_trace_t **tr_p, tpu_err_t *err)
{
    tpu_trace_t *tr = tpu__calloc(1, sizeof(*tr));
    tpu_status_t status;
    int l;

    if (tr == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for the trace");
    }
    tr->topo = *topo;
    tr->summary = summary >= 0 ? summary : topo->nchips > TPU_TRACE_FULL_CHIPS;
    tr->measured = measured;
    tr->first = 1;
    snprintf(tr->title, sizeof(tr->title), "%s", title);
    for (l = 0; l < topo->nlinks; l++) {
        int src, axis, dir, dst;

        tpu_topo_link_ends(topo, l, &src, &axis, &dir, &dst);
        tr->class_links[2 * axis + (dir < 0)]++;
    }
    if (!tr->summary) {
        tr->lanes_named = tpu__calloc((size_t)topo->nchips, sizeof(int));
        if (tr->lanes_named == NULL) {
            tpu__free(tr);
            return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for the trace");
        }
    }
    tr->budget = tr->summary ? TPU_TRACE_SUMMARY_MAX_BYTES : TPU_TRACE_MAX_BYTES;
    tr->mem = open_memstream(&tr->membuf, &tr->memlen);
    if (tr->mem == NULL) {
        tpu__free(tr->lanes_named);
        tpu__free(tr);
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for the trace");
    }
    status = tpu_sink_open(&tr->sink, path, err);
    if (status != TPU_OK) {
        fclose(tr->mem);
        free(tr->membuf);
        tpu__free(tr->lanes_named);
        tpu__free(tr);
        return status;
    }
    *tr_p = tr;
    return TPU_OK;
}

/*
 * Write the events built in memory since the last commit, when they fit the
 * budget ('force': always, for the header); else leave them out and every later
 * call's too.  The memory stream starts again empty.
 */
static void commit(tpu_trace_t *tr, int force)
{
    if (tr->mem == NULL) {
        return;
    }
    fflush(tr->mem);
    if (tr->memlen > 0) {
        if (force || (!tr->truncated && tr->bytes + (long long)tr->memlen <= tr->budget)) {
            fwrite(tr->membuf, 1, tr->memlen, tr->sink.f);
            tr->bytes += (long long)tr->memlen;
        } else {
            if (!tr->truncated) {
                tr->truncated_at = tr->now;
            }
            tr->truncated = 1;
            tr->dropped++;
        }
    }
    fclose(tr->mem);
    free(tr->membuf);
    tr->membuf = NULL;
    tr->memlen = 0;
    tr->mem = open_memstream(&tr->membuf, &tr->memlen);
    if (tr->mem == NULL) {
        tr->oom = 1;
    }
}

int tpu_trace_truncated(const tpu_trace_t *tr)
{
    return tr->truncated;
}

long long tpu_trace_bytes(const tpu_trace_t *tr)
{
    return tr->bytes;
}

/*
 * The header is written lazily, at the first collective, once the number of
 * TPU hosts is known (from the link events of the walk).
 */
static int ensure_header(tpu_trace_t *tr)
{
    if (tr->mem == NULL) {
        return 0;
    }
    if (tr->first) {
        write_header(tr, tr->title);
        commit(tr, 1);
    }
    return tr->mem != NULL;
}

int tpu_trace_summary(const tpu_trace_t *tr)
{
    return tr->summary;
}

double tpu_trace_now_us(const tpu_trace_t *tr)
{
    return (double)tr->now / 1e3;
}

/* Summary: 'v' bytes in flight during [s, e) on class c. */
static void add_rect(tpu_trace_t *tr, int c, int64_t s, int64_t e, double v)
{
    double w = (double)tr->expected / TPU_TRACE_BUCKETS;
    int b0, b1;

    if (w <= 0 || e <= s) {
        return;
    }
    b0 = (int)((double)s / w);
    b1 = (int)((double)e / w);
    b0 = b0 < TPU_TRACE_BUCKETS ? b0 : TPU_TRACE_BUCKETS - 1;
    b1 = b1 < TPU_TRACE_BUCKETS ? b1 : TPU_TRACE_BUCKETS - 1;
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

static void on_flow(void *user, const tpu_coll_flow_event_t *e)
{
    tpu_trace_t *tr = user;
    int64_t s = to_ns(e->start_s), t = to_ns(e->end_s);
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

static void on_link(void *user, const tpu_coll_link_event_t *e)
{
    tpu_trace_t *tr = user;

    /* The hosts, for the DCN counters: known from the walk's NIC totals. */
    if (e->link < 0 && tr->topo.slices > 1 && e->host + 1 > tr->nhosts && tr->first) {
        tr->nhosts = e->host + 1;
    }
    if (e->link < 0 && tr->summary) {
        tr->class_links[NCLASS - 1] = tr->nhosts;
    }
}

void tpu_trace_op_begin(tpu_trace_t *tr, const char *name, double expected_us,
                        tpu_coll_observer_t *obs)
{
    snprintf(tr->name, sizeof(tr->name), "%s", name);
    tr->expected = (int64_t)llround(expected_us * 1e3);
    tr->nrecs = 0;
    tr->nlinks = 0;
    tr->nsteps = 0;
    tr->rep = 0;
    memset(tr->part, 0, sizeof(tr->part));
    memset(tr->diff, 0, sizeof(tr->diff));
    memset(obs, 0, sizeof(*obs));
    obs->on_flow = on_flow;
    obs->on_link = on_link;
    obs->user = tr;
    obs->every_chip = !tr->summary;
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
static void chip_steps(tpu_trace_t *tr, int64_t i, int64_t j, int64_t end_op)
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
            slice(tr, chip_pid(tr->recs[k].src), TID_COLL, name, tr->now + b, next_b - b, args);
        }
        b = next_b;
        k = m;
    }
}

/* Every message on its source's "sends" tracks, packed so that none overlap. */
static tpu_status_t chip_lanes(tpu_trace_t *tr, int64_t i, int64_t j)
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
            meta(tr, "thread_name", chip_pid(chip), TID_LANE0 + l, name);
            tr->lanes_named[chip] = l + 1;
        }
        snprintf(name, sizeof(name), "-> chip %d", r->dst);
        snprintf(args, sizeof(args),
                 "\"bytes\": %llu, \"step\": %d, \"to\": %d, \"hops\": %d, \"dcn\": %s",
                 (unsigned long long)r->bytes, r->step, r->dst, r->nlinks,
                 r->dcn ? "true" : "false");
        slice(tr, chip_pid(chip), TID_LANE0 + l, name, tr->now + r->start, r->end - r->start, args);
    }
    tpu__free(lane_end);
    return TPU_OK;
}

static void arrows(tpu_trace_t *tr)
{
    int64_t k;

    for (k = 0; k < tr->nrecs; k++) {
        const rec_t *r = &tr->recs[k];
        unsigned long long id = (unsigned long long)++tr->arrow_id;
        FILE *f = ev(tr);

        fprintf(f,
                "\"name\": \"message\", \"cat\": \"message\", \"ph\": \"s\", \"id\": %llu, "
                "\"pid\": %d, \"tid\": %d, \"ts\": ",
                id, chip_pid(r->src), TID_LANE0 + r->lane);
        put_us(f, tr->now + r->start);
        fputs("}", f);
        f = ev(tr);
        fprintf(f,
                "\"name\": \"message\", \"cat\": \"message\", \"ph\": \"f\", \"bp\": \"e\", "
                "\"id\": %llu, \"pid\": %d, \"tid\": %d, \"ts\": ",
                id, chip_pid(r->dst), TID_COLL);
        put_us(f, tr->now + r->end);
        fputs("}", f);
    }
}

/* The bytes in flight on every link and NIC the collective used. */
static tpu_status_t link_counters(tpu_trace_t *tr)
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
            link_name(tr, res, name, sizeof(name), &src);
            pid = chip_pid(src);
        } else {
            snprintf(name, sizeof(name), "DCN %s", (res - nl) % 2 ? "ingress" : "egress");
            pid = host_pid(tr, (res - nl) / 2);
        }
        for (m = k; m < n && x[m].res == res;) {
            int64_t t = x[m].t;

            while (m < n && x[m].res == res && x[m].t == t) {
                v += x[m].delta;
                m++;
            }
            counter(tr, pid, name, tr->now + t, fabs(v) < 0.5 ? 0 : v);
        }
    }
    tpu__free(x);
    return TPU_OK;
}

static tpu_status_t full_op_end(tpu_trace_t *tr, int64_t dur)
{
    int64_t i, j;
    int c;

    for (c = 0; c < tr->topo.nchips; c++) {
        slice(tr, chip_pid(c), TID_COLL, tr->name, tr->now, dur, NULL);
    }
    qsort(tr->recs, (size_t)tr->nrecs, sizeof(rec_t), cmp_src_step);
    for (i = 0; i < tr->nrecs; i = j) {
        for (j = i; j < tr->nrecs && tr->recs[j].src == tr->recs[i].src; j++) {
        }
        chip_steps(tr, i, j, dur);
    }
    /* The links of a record stay where they are: records only point into them. */
    qsort(tr->recs, (size_t)tr->nrecs, sizeof(rec_t), cmp_src_start);
    for (i = 0; i < tr->nrecs && tr->nrecs <= TPU_TRACE_SENDS; i = j) {
        for (j = i; j < tr->nrecs && tr->recs[j].src == tr->recs[i].src; j++) {
        }
        if (chip_lanes(tr, i, j) != TPU_OK) {
            return TPU_ERR_NO_MEMORY;
        }
    }
    if (tr->nrecs <= TPU_TRACE_ARROWS) {
        arrows(tr);
    }
    return link_counters(tr);
}

static void summary_op_end(tpu_trace_t *tr, int64_t dur)
{
    char name[64], args[160];
    int64_t b = 0, last = 0;
    int s, c, k;
    double w = (double)tr->expected / TPU_TRACE_BUCKETS;

    slice(tr, 1, TID_COLL, tr->name, tr->now, dur, NULL);
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
            slice(tr, 1, TID_COLL, name, tr->now + b, next - b, args);
        }
        b = next;
    }
    for (c = 0; c < NCLASS; c++) {
        double run = 0, prev = -1, div = tr->rep ? 1 : tr->class_links[c];

        if (tr->class_links[c] == 0 || w <= 0) {
            continue;
        }
        for (k = 0; k < TPU_TRACE_BUCKETS; k++) {
            double v;

            run += tr->diff[c][k];
            v = (run + tr->part[c][k]) / (div > 0 ? div : 1);
            v = v < 0.5 ? 0 : v;
            if (v != prev) {
                counter(tr, 1, class_name(c, name, sizeof(name)), tr->now + (int64_t)(k * w), v);
                prev = v;
            }
        }
        if (prev != 0) {
            counter(tr, 1, class_name(c, name, sizeof(name)), tr->now + dur, 0);
        }
    }
}

/* The collective at 'at' ns after the timeline's position. */
static tpu_status_t op_end(tpu_trace_t *tr, int64_t at, int64_t dur, tpu_err_t *err)
{
    tpu_status_t status = TPU_OK;
    int64_t now = tr->now;

    if (!ensure_header(tr) || tr->oom) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for the trace of %s", tr->name);
    }
    if (tr->truncated) {
        tr->dropped++;
        return TPU_OK;
    }
    tr->now += at; /* the writers place events at tr->now */
    if (tr->summary) {
        summary_op_end(tr, dur);
    } else if (full_op_end(tr, dur) != TPU_OK) {
        status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for the trace of %s", tr->name);
    }
    commit(tr, 0);
    tr->now = now;
    return status;
}

tpu_status_t tpu_trace_op_end(tpu_trace_t *tr, double modeled_us, tpu_err_t *err)
{
    int64_t dur = (int64_t)llround(modeled_us * 1e3);
    tpu_status_t status = op_end(tr, 0, dur, err);

    tr->now += dur;
    return status;
}

tpu_status_t tpu_trace_op_end_at(tpu_trace_t *tr, double at_us, double modeled_us, tpu_err_t *err)
{
    int64_t at = us_ns(at_us);

    return op_end(tr, at, us_ns(at_us + modeled_us) - at, err);
}

void tpu_trace_compute(tpu_trace_t *tr, int chip, const char *name, double at_us, double dur_us)
{
    int64_t at = us_ns(at_us), end = us_ns(at_us + dur_us);
    int c;

    if (!ensure_header(tr) || tr->truncated) {
        tr->dropped += tr->truncated;
        return;
    }
    if (tr->summary || chip >= 0) {
        if (!tr->summary || chip <= 0) {
            slice(tr, tr->summary ? 1 : chip_pid(chip), TID_COMPUTE, name, tr->now + at, end - at,
                  NULL);
        }
    } else {
        for (c = 0; c < tr->topo.nchips; c++) {
            slice(tr, chip_pid(c), TID_COMPUTE, name, tr->now + at, end - at, NULL);
        }
    }
    commit(tr, 0);
}

void tpu_trace_advance(tpu_trace_t *tr, double us)
{
    tr->now += us > 0 ? (int64_t)llround(us * 1e3) : 0;
}

void tpu_trace_measured(tpu_trace_t *tr, int chip, const char *name, double start_us, double dur_us)
{
    int64_t at = us_ns(start_us), end = us_ns(start_us + dur_us);

    if (!ensure_header(tr) || !tr->measured || tr->truncated) {
        tr->dropped += tr->truncated;
        return;
    }
    slice(tr, measured_pid(tr, chip), TID_COLL, name, at, end - at, NULL);
    commit(tr, 0);
}

static void trace_free(tpu_trace_t *tr)
{
    if (tr->mem != NULL) {
        fclose(tr->mem);
    }
    free(tr->membuf);
    tpu__free(tr->recs);
    tpu__free(tr->links);
    tpu__free(tr->lanes_named);
    tpu__free(tr->step_min);
    tpu__free(tr->step_max);
    tpu__free(tr);
}

void tpu_trace_discard(tpu_trace_t *tr)
{
    if (tr != NULL) {
        tpu_sink_discard(&tr->sink);
        trace_free(tr);
    }
}

tpu_status_t tpu_trace_close(tpu_trace_t *tr, tpu_err_t *err)
{
    tpu_status_t status;

    if (tr == NULL) {
        return TPU_OK;
    }
    ensure_header(tr);
    commit(tr, 0);
    if (tr->truncated) {
        /* Outside the budget: at most a few hundred bytes. */
        fprintf(tr->sink.f,
                ",\n{\"name\": \"trace truncated: the %lld-byte limit was reached here; what "
                "follows is not shown\", \"ph\": \"i\", \"s\": \"g\", \"pid\": 1, \"tid\": 0, "
                "\"ts\": ",
                tr->budget);
        put_us(tr->sink.f, tr->truncated_at);
        fputs("}", tr->sink.f);
    }
    fputs("\n]}\n", tr->sink.f);
    status = tpu_sink_close(&tr->sink, err);
    trace_free(tr);
    return status;
}
