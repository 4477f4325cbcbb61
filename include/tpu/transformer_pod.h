/*
 * The transformer (tpu/transformer.h) trained on a pod: the public face of
 * its collectives over the mesh axes dcn, data, fsdp, sequence and tensor,
 * for the command line.  One object holds the local chips of a transport (every chip
 * over loopback; one chip per rank over MPI), each chip's shard view of the
 * model with its hooks wired to the pod's collective engine, and the log of
 * every collective of the last steps.
 *
 *   tpu_xfmr_pod_create(pod, x, "data=2,tensor=2", &model, &opts, &p, &err);
 *   for each local chip i: tpu_xfmr_init_random(tpu_xfmr_pod_chip(p, i), seed);
 *   tpu_xfmr_pod_step(p, x_tokens, y_tokens, lr, &rep, &err);   (global [B, S])
 *   tpu_xfmr_pod_coll(p, k, &row) for k < tpu_xfmr_pod_colls(p)
 *
 * Ownership: the pod and the transport are borrowed and must outlive the
 * object; the models belong to it until tpu_xfmr_pod_destroy().  Not
 * thread-safe.
 */
#ifndef TPU_TRANSFORMER_POD_H
#define TPU_TRANSFORMER_POD_H

#include "tpu/pod.h"
#include "tpu/spmd.h"
#include "tpu/status.h"
#include "tpu/transformer.h"
#include "tpu/xport.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tpu_xfmr_pod tpu_xfmr_pod_t;

/* One collective of the log (one call of every local chip). */
typedef struct tpu_xfmr_coll {
    const char *hook;      /* "embed", "kv", "grad", ... (tpu_xfmr_hook_name) */
    int index;             /* layer, parameter number, or -1 */
    const char *kind;      /* "psum", "all-gather", "reduce-scatter" (tpu_coll_name) */
    const char *op;        /* "sum" or "max" */
    const char *axes;      /* the mesh axes: "tensor", "data,sequence" */
    int group_size;        /* chips per group */
    uint64_t bytes;        /* as tpu_spmd_call_t: psum buffer, all-gather output, ... */
    double modeled_us;     /* the link model's time */
    const char *algorithm; /* the runtime's choice */
} tpu_xfmr_coll_t;

/*
 * Lay 'mesh' (axes dcn, data, fsdp, sequence, tensor or its alias model; the
 * product the pod's chips, dcn its slices) over 'pod' for 'model' (its batch
 * the global batch) and make the shard view of every local chip of transport
 * 'x' (which must move data), every parameter zero.  'opts' may be NULL (no
 * watchdog).
 * @return TPU_OK, TPU_ERR_INVALID (the mesh; a dimension or a parameter that
 *         does not divide over its axis, named), TPU_ERR_UNSUPPORTED (a
 *         transport without data), TPU_ERR_NO_MEMORY.
 */
TPU_API tpu_status_t tpu_xfmr_pod_create(const tpu_pod_t *pod, tpu_xport_t *x, const char *mesh,
                                         const tpu_xfmr_config_t *model,
                                         const tpu_spmd_opts_t *opts, tpu_xfmr_pod_t **p_p,
                                         tpu_err_t *err);
/* Free it; NULL is a no-op. */
TPU_API void tpu_xfmr_pod_destroy(tpu_xfmr_pod_t *p);

/* The local chips, local chip i's model (its shard view) and its chip id. */
TPU_API int tpu_xfmr_pod_nlocal(const tpu_xfmr_pod_t *p);
TPU_API tpu_xfmr_t *tpu_xfmr_pod_chip(tpu_xfmr_pod_t *p, int i);
TPU_API int tpu_xfmr_pod_chip_id(const tpu_xfmr_pod_t *p, int i);
/* The sizes of the mesh axes data, sequence and tensor (1 when left out). */
TPU_API void tpu_xfmr_pod_mesh(const tpu_xfmr_pod_t *p, int *data, int *sequence, int *tensor);
/* The size of mesh axis 'name' ("dcn", "data", "fsdp", "sequence", "tensor"; 1 when left
 * out), or 0 for another name. */
TPU_API int tpu_xfmr_pod_axis(const tpu_xfmr_pod_t *p, const char *name);

/*
 * Local chip i's piece of the model: '*piece_p' numbers the pieces (the chip's
 * fsdp, sequence and tensor coordinates, row-major), so that the chips of one
 * piece are the replicas over dcn and data, which must hold the same bits;
 * '*hash_p' is the FNV-1a hash of the bytes of every parameter piece the chip
 * holds (tpu_xfmr_param).  -1 for an i out of range, else 0.
 */
TPU_API int tpu_xfmr_pod_piece(tpu_xfmr_pod_t *p, int i, int *piece_p, uint64_t *hash_p);

/*
 * One training step of every local chip on the global batch 'x', 'y' ([B, S]
 * int32 each, ids in [0, V)) at 'lr'; '*rep_p' (may be NULL) gets local chip
 * 0's report (the loss is the global batch's).  The log is cleared first.
 */
TPU_API tpu_status_t tpu_xfmr_pod_step(tpu_xfmr_pod_t *p, const int32_t *x, const int32_t *y,
                                       double lr, tpu_xfmr_report_t *rep_p, tpu_err_t *err);

/*
 * Local chip i's window of the global batch [B, S] (what it reads of a step's
 * tokens): rows *row0_p + [0, *rows_p), columns *col0_p + [0, *cols_p).  -1
 * for an i out of range, else 0.
 */
TPU_API int tpu_xfmr_pod_shard(const tpu_xfmr_pod_t *p, int i, int64_t *row0_p, int64_t *rows_p,
                               int64_t *col0_p, int64_t *cols_p);

/*
 * tpu_xfmr_pod_step with each local chip's own window instead of the global
 * batch: x[i], y[i] are local chip i's [rows, cols] of tpu_xfmr_pod_shard (a
 * rank holds its share of the batch, never the whole); the same step, bit for
 * bit.
 */
TPU_API tpu_status_t tpu_xfmr_pod_step_shards(tpu_xfmr_pod_t *p, const int32_t *const *x,
                                              const int32_t *const *y, double lr,
                                              tpu_xfmr_report_t *rep_p, tpu_err_t *err);

/* The collectives of the last step: their number and row k (0 <= k < count). */
TPU_API int64_t tpu_xfmr_pod_colls(const tpu_xfmr_pod_t *p);
TPU_API void tpu_xfmr_pod_coll(const tpu_xfmr_pod_t *p, int64_t k, tpu_xfmr_coll_t *row);

#ifdef __cplusplus
}
#endif

#endif /* TPU_TRANSFORMER_POD_H */
