/*
 * The replay walk's state (walker_t) and its bookkeeping (replay_state.c), for
 * the replay's files.  Private to emulator/replay/.
 */
#ifndef TPU_REPLAY_STATE_H
#define TPU_REPLAY_STATE_H

#include "tpu/replay.h"

#include <stdint.h>

#define MAX_CALL_DEPTH 64

typedef struct walker {
    const tpu_hlo_module_t *mod;
    const tpu_topo_t *topo;
    const tpu_link_model_t *link;
    const tpu_chip_spec_t *chip;
    const tpu_replay_opts_t *opts;
    tpu_replay_report_t *rep;
    int32_t *dev2chip; /* device -> chip */
    int ndev, R, P;
    int **rowmap; /* [comp][instr] -> row (colls: >= 0; ops: -(row + 2)); -1 none */
    int collcap, opcap, warncap, loopcap;
    int64_t seqcap;
    int64_t tlcap;
    double base;   /* the timeline: when the computation being walked started */
    int32_t *memo; /* rows already timed, by their engine request (open addressing, index + 1) */
    uint32_t memo_mask;
    int memo_n;
    int record; /* record rows (0 while sizing conditional branches) */
    int depth;
    tpu_err_t *err;
} walker_t;

/* Out of memory, TPU_ERR_NO_MEMORY, naming the module. */
tpu_status_t tpu__replay_oom(walker_t *w);
/* Add a warning to the report (once per text). */
tpu_status_t tpu__replay_warn(walker_t *w, const char *fmt, ...) TPU_PRINTF(2, 3);
/* The row slot of instruction 'i' of 'c' (NULL when out of memory). */
int *tpu__replay_rowslot(walker_t *w, const tpu_hlo_comp_t *c, int i);
/* A new zeroed collective row / op row of the report (NULL when out of memory). */
tpu_replay_coll_t *tpu__replay_new_coll(walker_t *w);
tpu_replay_op_t *tpu__replay_new_op(walker_t *w);
/* A row timed before for the same request; -1 when none. */
int tpu__replay_memo_find(const walker_t *w, const tpu_coll_desc_t *d);
/* Remember collective row 'row' by its request. */
tpu_status_t tpu__replay_memo_add(walker_t *w, int row);
/* Append 'n' entries to the execution sequence: a copy of seq[from, from + n), or 'row' when
 * from < 0. */
tpu_status_t tpu__replay_seq_append(walker_t *w, int64_t from, int64_t n, int32_t row);

#endif /* TPU_REPLAY_STATE_H */
