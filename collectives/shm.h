/*
 * Collectives through the memory the chips of one node share (the transport's
 * shm_region), and the machinery they share (shm.c): the regions' control
 * blocks, the stamped phase counters, the signature check and the one back-off
 * of every wait.  The algorithms: shm_psum.c, shm_all_gather.c,
 * shm_reduce_scatter.c; shm_run.c picks one for a call.
 */
#ifndef TPU_SHM_H
#define TPU_SHM_H

#include "tpu/coll.h"
#include "tpu/xport.h"

#include <stdatomic.h>

typedef struct shm_ctl shm_ctl_t;

typedef struct tpu_shm {
    const tpu_coll_plan_t *plan;
    tpu_xport_t *x;
    int n, mi;           /* members, and mine */
    int one_round;       /* psum: the one-round plan (every element from member 0) */
    int wide;            /* bf16 words, f32 accumulation */
    int esz;             /* user bytes per element */
    int64_t piece;       /* bytes per piece (per member's block: reduce-scatter) */
    int *chips;          /* the members' chips, group order */
    shm_ctl_t **ctl;     /* per member: its control block */
    unsigned char **in;  /* per member: its input area */
    unsigned char **res; /* per member: its result area (psum) */
    float *acc;          /* wide: the accumulator */
    double deadline;     /* of the current call (0: none) */
} tpu_shm_t;

/*
 * Set up collectives of 'plan' through the transport's shared memory, for its
 * one local chip, whose whole group must be on its node: psum, all-gather and
 * reduce-scatter.  'first_zero' (psum): the host plan is the one-round one (every
 * element's sum starts from member 0's value); else the two-round one (from the
 * value of the block's owner).  Returns TPU_ERR_UNSUPPORTED when it does not
 * apply (no shared memory, a member on another node, more than one local chip,
 * another collective), TPU_ERR_NO_MEMORY.
 */
tpu_status_t tpu__shm_create(const tpu_coll_plan_t *plan, tpu_xport_t *x, int first_zero,
                             tpu_shm_t **s_p);
void tpu__shm_destroy(tpu_shm_t *s);

/* May call 'call' go through shared memory?  Not when the call numbers do not
 * increase on this chip (then every chip takes the message path alike). */
int tpu__shm_usable(const tpu_shm_t *s, uint64_t call);

/* The machinery.  A call: begin (wait for the readers of my areas in my last call,
 * write my call's signature), phases (publish; wait for every other member),
 * end (the phase my readers publish when done: the next call waits for it). */
tpu_status_t tpu__shm_begin(tpu_shm_t *s, const tpu_call_sig_t *sig,
                            const tpu_coll_run_opts_t *opts, tpu_err_t *err);
void tpu__shm_publish(tpu_shm_t *s, uint64_t v);
/* Wait for every other member's phase 'want'; 'check': then compare its call. */
tpu_status_t tpu__shm_wait_all(tpu_shm_t *s, const tpu_call_sig_t *sig, uint64_t want, int check,
                               const tpu_coll_run_opts_t *opts, tpu_err_t *err);
void tpu__shm_end(tpu_shm_t *s, uint64_t want);

/*
 * The one-round exchange of all-gather, reduce-scatter and the small psum: per
 * piece i of 'total' bytes ('step' bytes a piece): fill(my areas) -> publish
 * 2i+1 -> wait for every member's 2i+1 (the first time: check its call) ->
 * use(the members' areas) -> publish 2i+2 [-> wait for every member's 2i+2, but
 * after the last piece: the next call's begin waits for it].
 */
typedef void (*tpu_shm_piece_fn)(tpu_shm_t *s, int64_t a, int64_t len, const void *in, void *out);
tpu_status_t tpu__shm_exchange(tpu_shm_t *s, const tpu_call_sig_t *sig,
                               const tpu_coll_run_opts_t *opts, int64_t total, int64_t step,
                               tpu_shm_piece_fn fill, tpu_shm_piece_fn use, const void *in,
                               void *out, tpu_err_t *err);

/* 'len' bytes from offset 'off' of every member's input area, reduced in group
 * order starting from member 'first''s value (the others added in group order),
 * into 'dst' (bf16: accumulated in f32, rounded once). */
void tpu__shm_add(tpu_shm_t *s, int first, int64_t off, int64_t len, unsigned char *dst);

#endif /* TPU_SHM_H */
