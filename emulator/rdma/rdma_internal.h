/*
 * The RDMA runtime's state, shared by the files of emulator/rdma/: message tags
 * and kinds, semaphore signals, copies in flight, a chip's context, a run, the
 * runtime; and the names rdma.c gives kernels, semaphores and buffers in
 * messages.  Private to emulator/rdma/.
 */
#ifndef TPU_RDMA_INTERNAL_H
#define TPU_RDMA_INTERNAL_H

#include "tpu/coll.h"
#include "tpu/rdma.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define TAG_CTRL 0x400000
#define TAG_DATA 0x400001

enum {
    MSG_COPY = 1,
    MSG_DONE = 2,
    MSG_ABORT = 3
};
enum {
    ST_RUNNING = 0,
    ST_WAITING,
    ST_DRAINING,
    ST_FINISHED
};

#define DEFAULT_TIMEOUT_S 30.0

/* A signal of a semaphore: its modeled time, and for a receive what it wrote. */
typedef struct signal {
    double t;
    int src;      /* chip that sent it (the chip itself for a send signal) */
    uint64_t seq; /* order among the signals of 'src' */
    int recv;     /* 1: a receive signal (the landed range below is not yet waited for) */
    int buf;
    uint64_t off, bytes;
    void *data; /* a receive's bytes, written into the buffer when it is waited for */
} signal_t;

typedef struct sem {
    signal_t *sig;
    int n, cap;
} sem_t_;

/* A copy this chip sent, until its DATA send completed. */
typedef struct out_copy {
    tpu_xport_req_t *ctrl_req;
    tpu_xport_req_t *data_req;
    tpu_msg_hdr_t ctrl_hdr;
    tpu_msg_hdr_t data_hdr;
    int send_sem;
    double left;
    uint64_t seq;
    void *stage; /* the source bytes as they were when the copy started */
} out_copy_t;

/* A copy coming in: DATA receive posted. */
typedef struct in_copy {
    tpu_xport_req_t *req;
    tpu_msg_hdr_t hdr;
    int src;
    int buf;
    uint64_t off, bytes;
    int recv_sem;
    double arrival;
    uint64_t seq;
    void *stage; /* the bytes, until the receiver waits for them */
} in_copy_t;

/* The CTRL receive from one peer. */
typedef struct peer {
    tpu_xport_req_t *req; /* NULL once DONE came */
    tpu_msg_hdr_t hdr;
    int done;       /* DONE received */
    uint64_t nrecv; /* COPY messages received */
    uint64_t nsent; /* copies sent to it */
} peer_t;

typedef struct run_state run_state_t;

struct tpu_rdma_ctx {
    tpu_rdma_t *rdma;
    run_state_t *run;
    int chip;
    int li;
    double clock;
    double compute;
    double waited;
    double local_free; /* the local DMA queue is free from */
    void *bufs[TPU_RDMA_MAX_BUFS];
    int owned[TPU_RDMA_MAX_BUFS];
    sem_t_ sems[TPU_RDMA_MAX_SEMS];
    out_copy_t **outs;
    int nouts, cap_outs;
    in_copy_t **ins;
    int nins, cap_ins;
    peer_t *peers;
    uint64_t seq;
    int state;
    int wait_sem;
    int wait_count;
    int aborted_by; /* a peer that sent ABORT, or -1 */
    int drained;    /* the body returned and DONE came from every peer */
    int64_t copies;
    double bytes;
    tpu_coll_link_timer_t *timer;
    tpu_status_t status;
    int primary;   /* the error was found on this chip */
    int secondary; /* the error is another chip's failure */
    tpu_err_t err;
    pthread_t thread;
};

struct run_state {
    const tpu_rdma_kernel_t *kernel;
    double timeout_s;
    void (*on_wait)(void *arg, int chip); /* tpu_rdma_opts_t.on_wait (NULL: none) */
    void *on_wait_arg;
    int failed;   /* a local chip failed (loopback: tell the waiting threads) */
    int deadlock; /* a deadlock was found; 'deadlock_msg' names it */
    char deadlock_msg[TPU_ERR_MSG_LEN];
};

struct tpu_rdma {
    const tpu_pod_t *pod;
    const tpu_topo_t *topo;
    tpu_link_model_t link;
    tpu_chip_spec_t spec;
    tpu_xport_t *x;
    tpu_vmem_t **vmem; /* per local chip */
    tpu_rdma_ctx_t *ctx;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* in-process chips: something changed */
};

/* The kernel's name, and a semaphore's or a buffer's (its number when unnamed) for messages. */
const char *tpu__rdma_kname(const run_state_t *run);
const char *tpu__rdma_sem_name(const run_state_t *run, int s, char *buf, size_t len);
const char *tpu__rdma_buf_name(const run_state_t *run, int b, char *buf, size_t len);

#endif /* TPU_RDMA_INTERNAL_H */
