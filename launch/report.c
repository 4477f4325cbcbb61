/* Traces and heatmaps from the timing walk (see report.h). */
#include "report.h"

#include "alloc.h"
#include "json.h"
#include "sink.h"
#include "svg.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static int is_stdout(const char *p)
{
    return p != NULL && strcmp(p, "-") == 0;
}

tpu_status_t app_report_open(app_report_t *r, const app_opts_t *o, const tpu_pod_t *pod,
                             const char *title, tpu_err_t *err)
{
    const tpu_topo_t *t = tpu_pod_topo(pod);
    tpu_status_t status;

    memset(r, 0, sizeof(*r));
    r->topo = t;
    r->faults = tpu_pod_faults(pod);
    snprintf(r->title, sizeof(r->title), "%s", title);
    if (o->trace_measured && o->trace == NULL) {
        return tpu_err_set(err, TPU_ERR_INVALID, "--trace-measured needs --trace FILE");
    }
    if ((is_stdout(o->trace) || is_stdout(o->heatmap)) &&
        (is_stdout(o->json) || is_stdout(o->csv) ||
         (is_stdout(o->trace) && is_stdout(o->heatmap)))) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "two documents would go to stdout (-); give all but one a file");
    }
    if (o->heatmap != NULL) {
        r->link_bytes = tpu__calloc(2 * (size_t)t->nlinks + 1, sizeof(double));
        r->link_busy_s = r->link_bytes != NULL ? r->link_bytes + t->nlinks : NULL;
        if (r->link_bytes == NULL) {
            return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for the heatmap");
        }
        /* Refuse a path that cannot be written now, not after the work: opened here
         * (without blocking: a FIFO that no process reads is refused), written at
         * app_report_close(). */
        status = app_sink_check_target("heatmap", o->heatmap, err);
        if (status == TPU_OK) {
            status = app_sink_open(&r->heat_sink, o->heatmap, err);
        }
        if (status != TPU_OK) {
            tpu__free(r->link_bytes);
            r->link_bytes = NULL;
            return status;
        }
        r->heatmap = o->heatmap;
    }
    if (o->trace != NULL) {
        status = app_trace_open(o->trace, t, title, -1, o->trace_measured, &r->trace, err);
        if (status != TPU_OK) {
            tpu__free(r->link_bytes);
            r->link_bytes = NULL;
            if (r->heatmap != NULL) {
                app_sink_discard(&r->heat_sink);
            }
            r->heatmap = NULL;
            return status;
        }
    }
    return TPU_OK;
}

int app_report_active(const app_report_t *r)
{
    return r->trace != NULL || r->heatmap != NULL;
}

static void fan_flow(void *user, const tpu_coll_flow_event_t *ev)
{
    app_report_t *r = user;

    if (r->tracing) {
        r->trace_obs.on_flow(r->trace_obs.user, ev);
    }
}

static void fan_link(void *user, const tpu_coll_link_event_t *ev)
{
    app_report_t *r = user;

    if (r->tracing) {
        r->trace_obs.on_link(r->trace_obs.user, ev);
    }
    if (r->link_bytes == NULL || r->heat_times == 0) {
        return;
    }
    if (ev->link >= 0) {
        r->link_bytes[ev->link] += ev->bytes * r->heat_times;
        r->link_busy_s[ev->link] += ev->busy_s * r->heat_times;
        return;
    }
    if (ev->host >= r->cap_hosts) {
        int cap = r->cap_hosts ? 2 * r->cap_hosts : 64, h;
        double *n;

        while (cap <= ev->host) {
            cap *= 2;
        }
        n = tpu__realloc(r->nic_bytes, (size_t)cap * 2 * sizeof(double));
        if (n == NULL) {
            r->oom = 1;
            return;
        }
        for (h = r->cap_hosts; h < cap; h++) {
            n[2 * h] = n[2 * h + 1] = 0;
        }
        r->nic_bytes = n;
        r->cap_hosts = cap;
    }
    r->nic_bytes[2 * ev->host + (ev->egress ? 0 : 1)] += ev->bytes * r->heat_times;
    r->nhosts = ev->host + 1 > r->nhosts ? ev->host + 1 : r->nhosts;
}

/* A number as the JSON documents write it. */
static const char *num(double v, char *buf, size_t len)
{
    app_json_number_text(v, buf, len);
    return buf;
}

/* 's' as a JSON string, quotes included, cut to fit 'len' (a name in a slice's arguments). */
static const char *quoted(const char *s, char *buf, size_t len)
{
    FILE *f = fmemopen(buf, len, "w");
    int bad = f == NULL;

    buf[0] = '\0';
    if (f != NULL) {
        setvbuf(f, NULL, _IONBF, 0);
        app_json_escape(f, s);
        bad = ferror(f) != 0;
        fclose(f);
    }
    if (bad || strlen(buf) < 2) {
        snprintf(buf, len, "\"(name too long)\"");
    }
    return buf;
}

/* The collective slice's arguments: what it moves, over which axes and groups, how, how long. */
static void op_args(app_report_t *r, const tpu_coll_plan_t *plan, double modeled_us)
{
    const tpu_coll_desc_t *d = tpu_coll_plan_desc(plan);
    int group = d->kind == TPU_COLL_P2P ? 2 : tpu_coll_plan_group_size(plan);
    char axes[32], args[512], us[40];

    tpu_topo_axes_str(d->kind == TPU_COLL_P2P ? 0 : d->axes, axes, sizeof(axes));
    snprintf(args, sizeof(args),
             "\"collective\": \"%s\", \"bytes\": %llu, \"dtype\": \"%s\", \"axes\": \"%s\", "
             "\"group_size\": %d, \"group_count\": %d, \"algorithm\": \"%s\", \"modeled_us\": %s",
             tpu_coll_name(d->kind), (unsigned long long)d->bytes, tpu_dtype_name(d->dtype), axes,
             group, d->kind == TPU_COLL_P2P ? 1 : r->topo->nchips / (group > 0 ? group : 1),
             tpu_coll_plan_algo(plan), num(modeled_us, us, sizeof(us)));
    app_trace_op_args(r->trace, args);
}

/* One walk of 'plan' feeding the trace ('at_us' < 0: at the position, which moves past it). */
static tpu_status_t model(app_report_t *r, const tpu_coll_plan_t *plan, const char *name,
                          double at_us, double modeled_us, double heat_times, tpu_err_t *err)
{
    tpu_coll_observer_t obs;
    tpu_coll_result_t res;
    tpu_status_t status;
    int trace = name != NULL && r->trace != NULL && !app_trace_truncated(r->trace);

    r->heat_times = r->link_bytes != NULL ? heat_times : 0;
    if (!trace && r->heat_times == 0) {
        if (r->trace != NULL && at_us < 0) {
            app_trace_advance(r->trace, modeled_us);
        }
        return TPU_OK;
    }
    memset(&obs, 0, sizeof(obs));
    obs.on_flow = fan_flow;
    obs.on_link = fan_link;
    obs.user = r;
    if (trace) {
        app_trace_op_begin(r->trace, name, modeled_us, &r->trace_obs);
        obs.every_chip = r->trace_obs.every_chip;
    } else {
        memset(&r->trace_obs, 0, sizeof(r->trace_obs));
    }
    r->tracing = trace;
    status = tpu_coll_plan_model_observed(plan, &obs, &res, err);
    r->tracing = 0;
    if (status != TPU_OK) {
        return status;
    }
    if (r->oom) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for the heatmap");
    }
    r->heat_s += res.modeled_us * 1e-6 * r->heat_times;
    if (trace) {
        op_args(r, plan, res.modeled_us);
        return at_us < 0 ? app_trace_op_end(r->trace, res.modeled_us, err)
                         : app_trace_op_end_at(r->trace, at_us, res.modeled_us, err);
    }
    if (r->trace != NULL && at_us < 0) {
        app_trace_advance(r->trace, res.modeled_us);
    }
    return TPU_OK;
}

tpu_status_t app_report_model(app_report_t *r, const tpu_coll_plan_t *plan, const char *name,
                              double modeled_us, tpu_err_t *err)
{
    if (!app_report_active(r)) {
        return TPU_OK;
    }
    return model(r, plan, name, -1, modeled_us, 1, err);
}

tpu_status_t app_report_model_at(app_report_t *r, const tpu_coll_plan_t *plan, const char *name,
                                 double at_us, double modeled_us, double heat_times, tpu_err_t *err)
{
    if (!app_report_active(r)) {
        return TPU_OK;
    }
    return model(r, plan, name, at_us > 0 ? at_us : 0, modeled_us, heat_times, err);
}

void app_report_compute_op(app_report_t *r, const char *name, double at_us, double dur_us,
                           double flops, double bytes, const char *bound)
{
    char args[640], us[40], f[40], b[40], q[400];

    if (r->trace != NULL) {
        snprintf(args, sizeof(args),
                 "\"op_name\": %s, \"flops\": %s, \"bytes\": %s, \"bound\": \"%s\", "
                 "\"modeled_us\": %s",
                 quoted(name, q, sizeof(q)), num(flops, f, sizeof(f)), num(bytes, b, sizeof(b)),
                 bound, num(dur_us, us, sizeof(us)));
        app_trace_compute(r->trace, -1, "compute", name, at_us, dur_us, args);
    }
}

void app_report_step(app_report_t *r, const char *name, double at_us, double dur_us)
{
    char args[64], us[40];

    if (r->trace != NULL) {
        snprintf(args, sizeof(args), "\"step_us\": %s", num(dur_us, us, sizeof(us)));
        app_trace_compute(r->trace, -1, "step", name, at_us, dur_us, args);
    }
}

void app_report_advance(app_report_t *r, double us)
{
    if (r->trace != NULL) {
        app_trace_advance(r->trace, us);
    }
}

int app_report_trace_done(const app_report_t *r)
{
    return r->trace == NULL || app_trace_truncated(r->trace);
}

void app_report_measured(app_report_t *r, int chip, const char *name, double start_us,
                         double dur_us)
{
    if (r->trace != NULL) {
        app_trace_measured(r->trace, chip, "collective", name, start_us, dur_us);
    }
}

void app_report_measured_step(app_report_t *r, int chip, const char *name, double start_us,
                              double dur_us)
{
    if (r->trace != NULL) {
        app_trace_measured(r->trace, chip, "step", name, start_us, dur_us);
    }
}

void app_report_measured_input(app_report_t *r, int chip, const char *name, double start_us,
                               double dur_us)
{
    if (r->trace != NULL) {
        app_trace_measured(r->trace, chip, "input", name, start_us, dur_us);
    }
}

tpu_status_t app_report_close(app_report_t *r, tpu_err_t *err)
{
    tpu_status_t status = TPU_OK, s2;
    tpu_err_t e2 = {0};

    if (err == NULL) {
        app_trace_discard(r->trace);
        r->trace = NULL;
        if (r->heatmap != NULL) {
            app_sink_discard(&r->heat_sink);
            r->heatmap = NULL;
        }
    }
    if (r->trace != NULL) {
        status = app_trace_close(r->trace, err);
        r->trace = NULL;
    }
    if (r->heatmap != NULL) {
        s2 = app_svg_heatmap_busy_sink(&r->heat_sink, r->topo, r->faults, r->link_bytes,
                                       r->link_busy_s, r->heat_s, r->nic_bytes, r->nhosts, r->title,
                                       status == TPU_OK ? err : &e2);
        status = status != TPU_OK ? status : s2;
        r->heatmap = NULL;
    }
    tpu__free(r->link_bytes);
    tpu__free(r->nic_bytes);
    r->link_bytes = r->nic_bytes = r->link_busy_s = NULL;
    return status;
}
