/*
 * The state of a trace, shared by trace.c, trace_events.c and trace_op.c.
 * Private to launch/output.
 */
#ifndef APP_LAUNCH_OUTPUT_TRACE_INTERNAL_H
#define APP_LAUNCH_OUTPUT_TRACE_INTERNAL_H

#include "tpu/topo.h"

#include "sink.h"
#include "trace.h"

#include <stdint.h>
#include <stdio.h>

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

struct app_trace {
    app_sink_t sink;
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
    char op_args[512]; /* the current collective's arguments (JSON members) */
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
    double part[NCLASS][APP_TRACE_BUCKETS + 1];
    double diff[NCLASS][APP_TRACE_BUCKETS + 2];
    int class_links[NCLASS]; /* links of each class in the pod (NICs for DCN) */
};

#endif /* APP_LAUNCH_OUTPUT_TRACE_INTERNAL_H */
