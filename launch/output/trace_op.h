/* One collective in the trace (trace_op.c).  Private to launch/output. */
#ifndef APP_LAUNCH_OUTPUT_TRACE_OP_H
#define APP_LAUNCH_OUTPUT_TRACE_OP_H

#include "tpu/coll.h"
#include "tpu/status.h"

#include "trace_internal.h"

#include <stdint.h>

/* The observer's callbacks ('user' is the trace): record a message, learn the hosts. */
void app_trace_on_flow(void *user, const tpu_coll_flow_event_t *e);
void app_trace_on_link(void *user, const tpu_coll_link_event_t *e);
/* Write the recorded collective, 'dur' ns long, at the timeline's position: full
 * trace (TPU_ERR_NO_MEMORY when out of memory) or summary. */
tpu_status_t app_trace_full_op_end(app_trace_t *tr, int64_t dur);
void app_trace_summary_op_end(app_trace_t *tr, int64_t dur);

#endif /* APP_LAUNCH_OUTPUT_TRACE_OP_H */
