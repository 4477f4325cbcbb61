/*
 * '--trace FILE': a Chrome trace-event JSON file (opens in Perfetto's UI and in
 * chrome://tracing) of what a command ran, on the modeled timeline, written
 * collective by collective from the events of the library's timing walk
 * (tpu_coll_observer_t).  Private to launch/.
 *
 * Full trace (pods of up to APP_TRACE_FULL_CHIPS chips): one process per chip
 * with a "compute" track, a "collectives" track (each collective, its steps
 * nested in it: step s on a chip runs from its first send of step s to its
 * first send of the next step), "sends k" tracks (every message as a slice, on
 * as few tracks as keep them from overlapping; only for collectives of at most
 * APP_TRACE_SENDS messages, to keep sweeps small), a counter per directed ICI link
 * (bytes of the messages in flight over it, on the process of the chip it
 * leaves) and, with slices, one process per TPU host with its DCN egress and
 * ingress counters; flow arrows from each send to its receiver when a
 * collective has at most APP_TRACE_ARROWS messages.
 *
 * Summarised trace (larger pods): one "pod" process with the collectives and
 * their pod-wide steps, and one counter per link class (axis and direction, and
 * DCN): the mean bytes in flight per link of the class over APP_TRACE_BUCKETS
 * intervals of each collective.  Its size grows with the number of collectives
 * and steps, not with the pod: a few kB per collective.
 *
 * With 'measured', a second set of processes, "chip N (measured)", carries the
 * wall-clock slices the command measured (microseconds since the job started: a
 * clock of its own, starting at 0 as the modeled one does; otherData's
 * "measured_pid0" is the first of them, so that a viewer can scale each clock
 * apart).  Every slice has a "cat" (step, collective, compute, link, dma, input)
 * and "args"; a slice of no duration is an instant event.
 * Times are written in microseconds with nanosecond resolution, rounded once to
 * whole nanoseconds so that nested slices stay nested.
 *
 * Size: every call's events are built in memory and written only when the file
 * stays within its budget, APP_TRACE_MAX_BYTES for a full trace and
 * APP_TRACE_SUMMARY_MAX_BYTES for a summarised one; the first call that would
 * pass it, and every call after, is left out, and the trace ends with an
 * instant event "trace truncated ..." (under 512 bytes, with the closing).  So
 * a file is never larger than its budget plus 512 bytes, and what it holds is
 * whole: no collective is cut in the middle.
 */
#ifndef APP_LAUNCH_OUTPUT_TRACE_H
#define APP_LAUNCH_OUTPUT_TRACE_H

#include "tpu/coll.h"
#include "tpu/status.h"
#include "tpu/topo.h"

#define APP_TRACE_FULL_CHIPS        256
#define APP_TRACE_ARROWS            128
#define APP_TRACE_SENDS             2048
#define APP_TRACE_BUCKETS           100
#define APP_TRACE_MAX_BYTES         64000000
#define APP_TRACE_SUMMARY_MAX_BYTES 4000000

typedef struct app_trace app_trace_t;

/*
 * Open 'path' and write the header and the process names.  'title' names the
 * run (the pod, the command).  'summary' -1 chooses by the pod's size.
 * Error: "cannot write 'PATH': REASON", or out of memory.
 */
tpu_status_t app_trace_open(const char *path, const tpu_topo_t *topo, const char *title,
                            int summary, int measured, app_trace_t **tr_p, tpu_err_t *err);
/* 1 when the trace is summarised (then observe with every_chip 0). */
int app_trace_summary(const app_trace_t *tr);
/*
 * The next collective, 'name', expected to take 'expected_us' (the summary's
 * counter intervals; 0 when unknown): fills 'obs' with the observer that records
 * it.  Then app_trace_op_end() with its modeled time.
 */
void app_trace_op_begin(app_trace_t *tr, const char *name, double expected_us,
                        tpu_coll_observer_t *obs);
/* The arguments of the collective's slice (JSON members: bytes, axes, algorithm, ...). */
void app_trace_op_args(app_trace_t *tr, const char *args);
/* Write the collective's events and move the timeline past it; TPU_ERR_NO_MEMORY. */
tpu_status_t app_trace_op_end(app_trace_t *tr, double modeled_us, tpu_err_t *err);
/*
 * The same, the collective starting 'at_us' after the timeline's position, which
 * does not move (collectives that overlap compute: app_trace_advance() after).
 */
tpu_status_t app_trace_op_end_at(app_trace_t *tr, double at_us, double modeled_us, tpu_err_t *err);
/*
 * A slice on chip's compute track from 'at_us' to 'at_us' + 'dur_us' after the
 * timeline's position (the end rounded on its own, so that slices whose ends
 * are equal sums stay nested); chip -1: on every chip (the pod process of a
 * summary).  'cat' its category (compute, step, input), 'args' its arguments
 * (JSON members, or NULL).
 */
void app_trace_compute(app_trace_t *tr, int chip, const char *cat, const char *name, double at_us,
                       double dur_us, const char *args);
/* 1 once the size budget is reached: later events are left out (callers may stop). */
int app_trace_truncated(const app_trace_t *tr);
/* Bytes written so far (the header and every event kept). */
long long app_trace_bytes(const app_trace_t *tr);
/* Move the timeline on by 'us' (compute between collectives). */
void app_trace_advance(app_trace_t *tr, double us);
/*
 * A measured slice of chip 'chip' (wall clock, microseconds since the job's start: the
 * measured processes' own clock, beside the modeled one), of category 'cat'.
 */
void app_trace_measured(app_trace_t *tr, int chip, const char *cat, const char *name,
                        double start_us, double dur_us);
/* The position of the modeled timeline, in microseconds. */
double app_trace_now_us(const app_trace_t *tr);
/*
 * End the document, close the file (a write error is reported here: "cannot
 * write 'PATH': REASON") and free everything.  NULL does nothing.
 */
tpu_status_t app_trace_close(app_trace_t *tr, tpu_err_t *err);
/* The command failed: free everything and remove the file (app_sink_discard). */
void app_trace_discard(app_trace_t *tr);

#endif /* APP_LAUNCH_OUTPUT_TRACE_H */
