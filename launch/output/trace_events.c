/*
 * The trace's event writer (see trace.h): Chrome trace-event records (metadata,
 * complete slices with their category and arguments, instant events for what has
 * no duration, counters) into the memory stream of the current call, the
 * process ids of chips, hosts and measured chips, their names, and the header
 * that names every process and track.
 */
#include "trace_events.h"

#include "json.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int64_t app_trace_to_ns(double s)
{
    double ns = s * 1e9;

    return ns > 0 ? (int64_t)llround(ns) : 0;
}

/* Microseconds to whole nanoseconds, the one rounding of every placed time. */
int64_t app_trace_us_ns(double us)
{
    return us > 0 ? (int64_t)llround(us * 1e3) : 0;
}

void app_trace_put_us(FILE *f, int64_t ns)
{
    if (ns < 0) {
        ns = 0;
    }
    fprintf(f, "%lld.%03lld", (long long)(ns / 1000), (long long)(ns % 1000));
}

/* Start an event: the separator, then "{". */
FILE *app_trace_ev(app_trace_t *tr)
{
    FILE *f = tr->mem;

    fputs(tr->first ? "\n{" : ",\n{", f);
    tr->first = 0;
    return f;
}

void app_trace_meta(app_trace_t *tr, const char *what, int pid, int tid, const char *name)
{
    FILE *f = app_trace_ev(tr);

    fprintf(f, "\"name\": \"%s\", \"ph\": \"M\", \"pid\": %d, \"tid\": %d, \"args\": {\"name\": ",
            what, pid, tid);
    app_json_escape(f, name);
    fputs("}}", f);
}

static void sort_index(app_trace_t *tr, int pid, int index)
{
    FILE *f = app_trace_ev(tr);

    fprintf(f,
            "\"name\": \"process_sort_index\", \"ph\": \"M\", \"pid\": %d, \"tid\": 0, "
            "\"args\": {\"sort_index\": %d}}",
            pid, index);
}

void app_trace_slice(app_trace_t *tr, int pid, int tid, const char *cat, const char *name,
                     int64_t ts, int64_t dur, const char *args)
{
    FILE *f = app_trace_ev(tr);

    /*
     * One nanosecond short: slices that touch (a step and the next, a collective
     * and its last step) would otherwise overlap by a rounding error in viewers
     * that add ts and dur in floating point, and be drawn as nested.
     */
    dur = dur > 1 ? dur - 1 : dur;

    fputs("\"name\": ", f);
    app_json_escape(f, name);
    fprintf(f, ", \"cat\": \"%s\", \"ph\": \"%s\", \"pid\": %d, \"tid\": %d, \"ts\": ", cat,
            dur > 0 ? "X" : "i", pid, tid);
    app_trace_put_us(f, ts);
    if (dur > 0) {
        fputs(", \"dur\": ", f);
        app_trace_put_us(f, dur);
    } else {
        fputs(", \"s\": \"t\"", f); /* an instant event on its track */
    }
    fprintf(f, ", \"args\": {%s}}", args != NULL ? args : "");
}

void app_trace_counter(app_trace_t *tr, int pid, const char *name, int64_t ts, double value)
{
    FILE *f = app_trace_ev(tr);

    fputs("\"name\": ", f);
    app_json_escape(f, name);
    fprintf(f, ", \"cat\": \"link\", \"ph\": \"C\", \"pid\": %d, \"ts\": ", pid);
    app_trace_put_us(f, ts);
    fprintf(f, ", \"args\": {\"bytes\": %.0f}}", value);
}

int app_trace_chip_pid(int chip)
{
    return chip + 1;
}

int app_trace_host_pid(const app_trace_t *tr, int host)
{
    return tr->topo.nchips + 1 + host;
}

int app_trace_measured_pid(const app_trace_t *tr, int chip)
{
    return tr->topo.nchips + tr->nhosts + 1 + chip;
}

/* "ICI x+ link 17 -> chip 6" */
void app_trace_link_name(const app_trace_t *tr, int link, char *buf, size_t len, int *src_p)
{
    int src, axis, dir, dst;

    tpu_topo_link_ends(&tr->topo, link, &src, &axis, &dir, &dst);
    snprintf(buf, len, "ICI %s%c link %d -> chip %d", tpu_topo_axis_name(axis), dir > 0 ? '+' : '-',
             link, dst);
    *src_p = src;
}

const char *app_trace_class_name(int c, char *buf, size_t len)
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

void app_trace_write_header(app_trace_t *tr, const char *title)
{
    const tpu_topo_t *t = &tr->topo;
    FILE *f = tr->mem;
    char buf[160];
    int c, l, h, src;

    fputs("{\"displayTimeUnit\": \"ns\", \"otherData\": {\"title\": ", f);
    app_json_escape(f, title);
    fprintf(f,
            ", \"timeline\": \"modeled TPU time, microseconds\", \"mode\": \"%s\", \"chips\": "
            "%d, \"links\": %d, \"clocks\": {\"modeled\": \"modeled TPU time, microseconds from "
            "0\", \"measured\": \"this host's wall clock, microseconds from the job's start\"}, "
            "\"measured_pid0\": %d},\n\"traceEvents\": [",
            tr->summary ? "summary" : "full", t->nchips, t->nlinks,
            tr->measured ? app_trace_measured_pid(tr, 0) : 0);
    if (tr->summary) {
        snprintf(buf, sizeof(buf), "pod: %d chips (summary)", t->nchips);
        app_trace_meta(tr, "process_name", 1, 0, buf);
        app_trace_meta(tr, "thread_name", 1, TID_COMPUTE, "compute (chip 0)");
        app_trace_meta(tr, "thread_name", 1, TID_COLL, "collectives (pod-wide steps)");
        for (c = 0; c < NCLASS; c++) {
            if (tr->class_links[c] > 0) {
                app_trace_counter(tr, 1, app_trace_class_name(c, buf, sizeof(buf)), 0, 0);
            }
        }
    } else {
        for (c = 0; c < t->nchips; c++) {
            chip_label(t, c, buf, sizeof(buf));
            app_trace_meta(tr, "process_name", app_trace_chip_pid(c), 0, buf);
            sort_index(tr, app_trace_chip_pid(c), c);
            app_trace_meta(tr, "thread_name", app_trace_chip_pid(c), TID_COMPUTE, "compute");
            app_trace_meta(tr, "thread_name", app_trace_chip_pid(c), TID_COLL, "collectives");
        }
        for (l = 0; l < t->nlinks; l++) {
            app_trace_link_name(tr, l, buf, sizeof(buf), &src);
            app_trace_counter(tr, app_trace_chip_pid(src), buf, 0, 0);
        }
        for (h = 0; h < tr->nhosts; h++) {
            snprintf(buf, sizeof(buf), "TPU host %d (DCN NICs)", h);
            app_trace_meta(tr, "process_name", app_trace_host_pid(tr, h), 0, buf);
            sort_index(tr, app_trace_host_pid(tr, h), t->nchips + h);
            app_trace_counter(tr, app_trace_host_pid(tr, h), "DCN egress", 0, 0);
            app_trace_counter(tr, app_trace_host_pid(tr, h), "DCN ingress", 0, 0);
        }
    }
    for (c = 0; tr->measured && c < t->nchips; c++) {
        chip_label(t, c, buf, sizeof(buf));
        strncat(buf, " measured", sizeof(buf) - strlen(buf) - 1);
        app_trace_meta(tr, "process_name", app_trace_measured_pid(tr, c), 0, buf);
        sort_index(tr, app_trace_measured_pid(tr, c), 2 * t->nchips + c);
        app_trace_meta(tr, "thread_name", app_trace_measured_pid(tr, c), TID_COLL,
                       "collectives (wall clock)");
    }
}
