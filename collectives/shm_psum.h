/*
 * A psum through the memory the chips of one node share (shm_psum.c), and the
 * executor's helpers it names chips and calls with (exec.c).
 */
#ifndef TPU_SHM_PSUM_H
#define TPU_SHM_PSUM_H

#include "tpu/coll.h"
#include "tpu/xport.h"

typedef struct tpu_shm_psum tpu_shm_psum_t;

/*
 * Set up psums of 'plan' through the transport's shared memory, for its one
 * local chip, whose whole group must be on its node.  'first_zero': the host
 * plan is the one-round one (every element's sum starts from member 0's value);
 * else the two-round one (from the value of the block's owner).  Returns
 * TPU_ERR_UNSUPPORTED when it does not apply (no shared memory, a member on
 * another node, more than one local chip), TPU_ERR_NO_MEMORY.
 */
tpu_status_t tpu__shm_psum_create(const tpu_coll_plan_t *plan, tpu_xport_t *x, int first_zero,
                                  tpu_shm_psum_t **s_p);
void tpu__shm_psum_destroy(tpu_shm_psum_t *s);

/* May call 'call' go through shared memory?  Not when the call numbers do not
 * increase on this chip (then every chip takes the message path alike). */
int tpu__shm_psum_usable(const tpu_shm_psum_t *s, uint64_t call);

/* Run the psum of call 'sig->call' from 'in' into 'out' (the user's buffers). */
tpu_status_t tpu__shm_psum_run(tpu_shm_psum_t *s, const tpu_call_sig_t *sig,
                               const tpu_coll_run_opts_t *opts, const void *in, void *out,
                               tpu_err_t *err);

/* exec.c's: "chip 5 (1,1)"; a call in words; the first field two calls differ in. */
void tpu__exec_chip_str(const tpu_topo_t *topo, int chip, char *buf, size_t len);
void tpu__exec_sig_str(const tpu_call_sig_t *s, char *buf, size_t len);
int tpu__exec_sig_diff(const tpu_call_sig_t *a, const tpu_call_sig_t *b, char *buf, size_t len);

#endif /* TPU_SHM_PSUM_H */
