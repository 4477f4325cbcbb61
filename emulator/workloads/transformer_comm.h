/*
 * The transformer's collectives over the mesh axes dcn, data, fsdp, sequence
 * and tensor (private to emulator/workloads, as mlp_comm.h is for the MLP): lay the mesh
 * out on the torus, give each chip its shard view (tpu_xfmr_config_t) from its
 * mesh coordinates, and answer the shard view's hooks (tpu_xfmr_hook_t) with
 * the engine's collectives over the groups of the right mesh axis, through the
 * SPMD runtime (tpu/spmd.h), so that each one is timed by the link model.
 * Every collective is recorded (hook, mesh axes, kind, bytes, modeled time,
 * algorithm) in a log the caller reads.
 *
 * Buffers are per local chip: the local chips of the transport run their
 * models in lock step, one thread each (tpu__xfmr_comm_run), and a hook is one
 * collective call of the runtime with every local chip's buffer (see
 * transformer_comm.c for why).
 */
#ifndef TPU_TRANSFORMER_COMM_H
#define TPU_TRANSFORMER_COMM_H

#include "tpu/chip.h"
#include "tpu/coll.h"
#include "tpu/mesh.h"
#include "tpu/spmd.h"
#include "tpu/status.h"
#include "tpu/topo.h"
#include "tpu/transformer.h"
#include "tpu/xport.h"

#include "transformer_layout.h"

#include <pthread.h>
#include <stdint.h>

/* One collective of the log (one call for every local chip). */
typedef struct xfmr_comm_entry {
    tpu_xfmr_hook_t hook;
    int index;            /* the hook's index: layer, parameter number or -1 */
    int axes;             /* a bit per XFMR_AXIS_* the groups span */
    char axes_name[32];   /* "tensor", "data,sequence" */
    tpu_coll_kind_t kind; /* psum (also max), all-gather, reduce-scatter */
    tpu_redop_t op;       /* sum or max */
    int group_size;
    uint64_t bytes;     /* as tpu_spmd_call_t: psum buffer, all-gather output, ... */
    double modeled_us;  /* the collective's modeled time */
    char algorithm[64]; /* the runtime's */
} xfmr_comm_entry_t;

struct xfmr_comm;

/* What a hook knows of its chip (the config's hook_arg). */
typedef struct xfmr_comm_chip {
    struct xfmr_comm *c;
    int local, chip;       /* index among the local chips, chip id */
    int coord[XFMR_NAXES]; /* the chip's mesh coordinates */
    tpu_xfmr_config_t cfg; /* its shard view */
    void *in, *out;        /* this hook's buffers for the runtime */
    float *pack, *unpack;  /* scratch of the sequence collectives */
    int64_t pack_n;        /* floats in each */
    tpu_xfmr_hook_t hook;  /* the hook this chip waits in, for the check */
    int64_t count;
} xfmr_comm_chip_t;

typedef struct xfmr_comm {
    tpu_mesh_t *mesh;
    tpu_spmd_t *spmd;
    tpu_xfmr_config_t model;     /* the whole model; batch is the global batch */
    int size[XFMR_NAXES];        /* dcn, data, fsdp, sequence, tensor */
    int axis[XFMR_NAXES];        /* their indices in the mesh (-1: left out) */
    char name[XFMR_NAXES][32];   /* the name written in the spec ("tensor" or "model") */
    char layout[XFMR_NAXES][32]; /* how each lies on the torus: "x", "y*z" */
    char groups[XFMR_NAXES][64]; /* its groups as chip ids */
    int nlocal;
    xfmr_comm_chip_t *chips; /* [nlocal] */
    /* The log. */
    xfmr_comm_entry_t *log;
    int64_t nlog, cap_log;
    /* The lock step of the local chips (tpu__xfmr_comm_run). */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int arrived, generation, failed;
    tpu_status_t status; /* the last collective's, or the first failure's */
    tpu_err_t err;
} xfmr_comm_t;

/*
 * Lay the mesh 'mesh_spec' (tpu/mesh.h; axis names dcn, data, fsdp, sequence,
 * tensor or its alias model, each at most once; the product the number of
 * chips; dcn the number of slices) over 'topo' for the model 'model' (its
 * batch the global batch, its ranges, fsdp part and hook ignored), and make
 * the runtime over transport 'x', which must move data (loopback or mpi).
 * 'opts' may be NULL.  Checks first that every dimension divides: batch over
 * dcn x data x fsdp, heads, d_ff and vocab over tensor, seq over sequence,
 * then every parameter's first dimension (after tensor and sequence) over
 * fsdp, each refused in one line naming the dimension (the parameter) and the
 * axis.
 * @return TPU_OK, TPU_ERR_INVALID, TPU_ERR_UNSUPPORTED (a transport without
 *         data), TPU_ERR_NO_MEMORY.
 */
tpu_status_t tpu__xfmr_comm_init(xfmr_comm_t *c, const tpu_topo_t *topo,
                                 const tpu_link_model_t *link, const tpu_chip_spec_t *chip,
                                 tpu_xport_t *x, const char *mesh_spec,
                                 const tpu_xfmr_config_t *model, const tpu_spmd_opts_t *opts,
                                 tpu_err_t *err);
void tpu__xfmr_comm_fini(xfmr_comm_t *c);

/* The shard view of local chip 'i': its ranges and batch, the hook wired to 'c'. */
const tpu_xfmr_config_t *tpu__xfmr_comm_config(const xfmr_comm_t *c, int i);

/*
 * The local chip i's tokens [batch, local seq] of a step's global batch 'tok'
 * [B, S] (rows of its data index, columns of its positions) into 'out'.
 */
void tpu__xfmr_comm_slice(const xfmr_comm_t *c, int i, const int32_t *tok, int32_t *out);
/* Local chip i's window of the global batch [B, S]: rows row0_p[0] + [0, rows), columns
 * col0_p[0] + [0, cols). */
void tpu__xfmr_comm_window(const xfmr_comm_t *c, int i, int64_t *row0_p, int64_t *rows_p,
                           int64_t *col0_p, int64_t *cols_p);

/* Work of one local chip, run on its own thread by tpu__xfmr_comm_run. */
typedef tpu_status_t (*xfmr_comm_fn_t)(void *arg, int local, tpu_err_t *err);

/*
 * Run 'fn' for every local chip at once, one thread each, so that their hooks
 * meet: a hook returns when every local chip has reached it and the
 * collective is done.  A chip that fails ends the others' waits; the first
 * error is returned.
 */
tpu_status_t tpu__xfmr_comm_run(xfmr_comm_t *c, xfmr_comm_fn_t fn, void *arg, tpu_err_t *err);

/*
 * One training step of every local chip (tpu_xfmr_step on xfs[i], made from
 * tpu__xfmr_comm_config(c, i)) on the step's global batch 'x', 'y' [B, S];
 * reps[i] (may be NULL) gets each chip's report.
 */
tpu_status_t tpu__xfmr_comm_step(xfmr_comm_t *c, tpu_xfmr_t *const *xfs, const int32_t *x,
                                 const int32_t *y, double lr, tpu_xfmr_report_t *reps,
                                 tpu_err_t *err);

/* The log since the last clear: its length, entry 'k', and the clear. */
int64_t tpu__xfmr_comm_log_count(const xfmr_comm_t *c);
const xfmr_comm_entry_t *tpu__xfmr_comm_log_at(const xfmr_comm_t *c, int64_t k);
void tpu__xfmr_comm_log_clear(xfmr_comm_t *c);

#endif
