/*
 * The Chrome trace-event writer (see trace.h): opening and closing the file, the
 * size budget (each call's events kept in memory until they are known to fit),
 * the modeled timeline, and the calls that place events on it.  The records
 * themselves are trace_events.c's; a collective's events are trace_op.c's.
 */
#include "trace.h"

#include "alloc.h"
#include "json.h"
#include "sink.h"
#include "trace_events.h"
#include "trace_internal.h"
#include "trace_op.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

tpu_status_t app_trace_open(const char *path, const tpu_topo_t *topo, const char *title,
                            int summary, int measured, app_trace_t **tr_p, tpu_err_t *err)
{
    app_trace_t *tr = tpu__calloc(1, sizeof(*tr));
    tpu_status_t status;
    int l;

    if (tr == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for the trace");
    }
    tr->topo = *topo;
    tr->summary = summary >= 0 ? summary : topo->nchips > APP_TRACE_FULL_CHIPS;
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
    tr->budget = tr->summary ? APP_TRACE_SUMMARY_MAX_BYTES : APP_TRACE_MAX_BYTES;
    tr->mem = open_memstream(&tr->membuf, &tr->memlen);
    if (tr->mem == NULL) {
        tpu__free(tr->lanes_named);
        tpu__free(tr);
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for the trace");
    }
    status = app_sink_open(&tr->sink, path, err);
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
static void commit(app_trace_t *tr, int force)
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

int app_trace_truncated(const app_trace_t *tr)
{
    return tr->truncated;
}

long long app_trace_bytes(const app_trace_t *tr)
{
    return tr->bytes;
}

/*
 * The header is written lazily, at the first collective, once the number of
 * TPU hosts is known (from the link events of the walk).
 */
static int ensure_header(app_trace_t *tr)
{
    if (tr->mem == NULL) {
        return 0;
    }
    if (tr->first) {
        app_trace_write_header(tr, tr->title);
        commit(tr, 1);
    }
    return tr->mem != NULL;
}

int app_trace_summary(const app_trace_t *tr)
{
    return tr->summary;
}

double app_trace_now_us(const app_trace_t *tr)
{
    return (double)tr->now / 1e3;
}


void app_trace_op_begin(app_trace_t *tr, const char *name, double expected_us,
                        tpu_coll_observer_t *obs)
{
    snprintf(tr->name, sizeof(tr->name), "%s", name);
    tr->op_args[0] = '\0';
    tr->expected = (int64_t)llround(expected_us * 1e3);
    tr->nrecs = 0;
    tr->nlinks = 0;
    tr->nsteps = 0;
    tr->rep = 0;
    memset(tr->part, 0, sizeof(tr->part));
    memset(tr->diff, 0, sizeof(tr->diff));
    memset(obs, 0, sizeof(*obs));
    obs->on_flow = app_trace_on_flow;
    obs->on_link = app_trace_on_link;
    obs->user = tr;
    obs->every_chip = !tr->summary;
}


void app_trace_op_args(app_trace_t *tr, const char *args)
{
    snprintf(tr->op_args, sizeof(tr->op_args), "%s", args);
}

/* The collective at 'at' ns after the timeline's position. */
static tpu_status_t op_end(app_trace_t *tr, int64_t at, int64_t dur, tpu_err_t *err)
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
        app_trace_summary_op_end(tr, dur);
    } else if (app_trace_full_op_end(tr, dur) != TPU_OK) {
        status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for the trace of %s", tr->name);
    }
    commit(tr, 0);
    tr->now = now;
    return status;
}

tpu_status_t app_trace_op_end(app_trace_t *tr, double modeled_us, tpu_err_t *err)
{
    int64_t dur = (int64_t)llround(modeled_us * 1e3);
    tpu_status_t status = op_end(tr, 0, dur, err);

    tr->now += dur;
    return status;
}

tpu_status_t app_trace_op_end_at(app_trace_t *tr, double at_us, double modeled_us, tpu_err_t *err)
{
    int64_t at = app_trace_us_ns(at_us);

    return op_end(tr, at, app_trace_us_ns(at_us + modeled_us) - at, err);
}

void app_trace_compute(app_trace_t *tr, int chip, const char *cat, const char *name, double at_us,
                       double dur_us, const char *args)
{
    int64_t at = app_trace_us_ns(at_us), end = app_trace_us_ns(at_us + dur_us);
    int c;

    if (!ensure_header(tr) || tr->truncated) {
        tr->dropped += tr->truncated;
        return;
    }
    if (tr->summary || chip >= 0) {
        if (!tr->summary || chip <= 0) {
            app_trace_slice(tr, tr->summary ? 1 : app_trace_chip_pid(chip), TID_COMPUTE, cat, name,
                            tr->now + at, end - at, args);
        }
    } else {
        for (c = 0; c < tr->topo.nchips; c++) {
            app_trace_slice(tr, app_trace_chip_pid(c), TID_COMPUTE, cat, name, tr->now + at,
                            end - at, args);
        }
    }
    commit(tr, 0);
}

void app_trace_advance(app_trace_t *tr, double us)
{
    tr->now += us > 0 ? (int64_t)llround(us * 1e3) : 0;
}

void app_trace_measured(app_trace_t *tr, int chip, const char *cat, const char *name,
                        double start_us, double dur_us)
{
    int64_t at = app_trace_us_ns(start_us), end = app_trace_us_ns(start_us + dur_us);
    char args[96], us[40];

    if (!ensure_header(tr) || !tr->measured || tr->truncated) {
        tr->dropped += tr->truncated;
        return;
    }
    app_json_number_text(dur_us, us, sizeof(us));
    snprintf(args, sizeof(args), "\"clock\": \"measured\", \"measured_us\": %s", us);
    app_trace_slice(tr, app_trace_measured_pid(tr, chip), TID_COLL, cat, name, at, end - at, args);
    commit(tr, 0);
}

static void trace_free(app_trace_t *tr)
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

void app_trace_discard(app_trace_t *tr)
{
    if (tr != NULL) {
        app_sink_discard(&tr->sink);
        trace_free(tr);
    }
}

tpu_status_t app_trace_close(app_trace_t *tr, tpu_err_t *err)
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
                "\"cat\": \"trace\", \"args\": {}, \"ts\": ",
                tr->budget);
        app_trace_put_us(tr->sink.f, tr->truncated_at);
        fputs("}", tr->sink.f);
    }
    fputs("\n]}\n", tr->sink.f);
    status = app_sink_close(&tr->sink, err);
    trace_free(tr);
    return status;
}
