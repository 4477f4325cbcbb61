/*
 * The replay's reading of the compiler behind a module (replay_backend.c):
 * the backend, what a custom-call is, the warnings about the module's origin.
 * Private to emulator/replay/.
 */
#ifndef TPU_REPLAY_BACKEND_H
#define TPU_REPLAY_BACKEND_H

#include "replay_state.h"

typedef enum {
    TPU_REPLAY_CUSTOM_OTHER = 0, /* unknown: costs 0 or --custom-call-us */
    TPU_REPLAY_CUSTOM_MARKER,    /* a sharding marker: free */
    TPU_REPLAY_CUSTOM_MATMUL,    /* a library matmul (oneDNN, Eigen, cuBLAS): a dot */
    TPU_REPLAY_CUSTOM_KERNEL,    /* a Pallas / Mosaic / Triton kernel */
    TPU_REPLAY_CUSTOM_COMM       /* its name suggests it communicates */
} tpu_replay_custom_t;

/* What custom-call 'in' is, from its target (and name). */
tpu_replay_custom_t tpu__replay_custom_kind(const tpu_hlo_instr_t *in);

/* The module's backend into the report, and the warnings about its origin. */
tpu_status_t tpu__replay_backend(walker_t *w);

#endif /* TPU_REPLAY_BACKEND_H */
