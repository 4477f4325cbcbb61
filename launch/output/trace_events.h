/* The trace's event writer (trace_events.c).  Private to launch/output. */
#ifndef APP_LAUNCH_OUTPUT_TRACE_EVENTS_H
#define APP_LAUNCH_OUTPUT_TRACE_EVENTS_H

#include "trace_internal.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Seconds to whole nanoseconds (0 for a negative time). */
int64_t app_trace_to_ns(double s);
/* Microseconds to whole nanoseconds, the one rounding of every placed time. */
int64_t app_trace_us_ns(double us);
/* 'ns' as microseconds with three decimals. */
void app_trace_put_us(FILE *f, int64_t ns);
/* Start an event: the separator, then "{". */
FILE *app_trace_ev(app_trace_t *tr);
/* A metadata event 'what' (process_name, thread_name) naming 'pid'/'tid'. */
void app_trace_meta(app_trace_t *tr, const char *what, int pid, int tid, const char *name);
/*
 * A complete slice of category 'cat' (step, collective, compute, link, dma, input); 'args' is
 * a JSON object's members, or NULL (an empty object).  A slice of no duration is written as
 * an instant event.
 */
void app_trace_slice(app_trace_t *tr, int pid, int tid, const char *cat, const char *name,
                     int64_t ts, int64_t dur, const char *args);
/* A counter event of 'value' bytes. */
void app_trace_counter(app_trace_t *tr, int pid, const char *name, int64_t ts, double value);
/* The process ids of a chip, a TPU host and a chip's measured slices. */
int app_trace_chip_pid(int chip);
int app_trace_host_pid(const app_trace_t *tr, int host);
int app_trace_measured_pid(const app_trace_t *tr, int chip);
/* "ICI x+ link 17 -> chip 6"; '*src_p' gets the chip the link leaves. */
void app_trace_link_name(const app_trace_t *tr, int link, char *buf, size_t len, int *src_p);
/* The counter name of link class 'c' (axis and direction, or DCN); returns 'buf'. */
const char *app_trace_class_name(int c, char *buf, size_t len);
/* The document's header and the names of every process and track. */
void app_trace_write_header(app_trace_t *tr, const char *title);

#endif /* APP_LAUNCH_OUTPUT_TRACE_EVENTS_H */
