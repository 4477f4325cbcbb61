/*
 * The SPMD layer: a runtime that runs JAX-style collectives over named mesh
 * axes, sharded arrays, and local kernels in the shard_map style.
 *
 * A runtime (tpu_spmd_t) ties together the pod (topology, link model, chip),
 * a mesh (tpu/mesh.h) and a transport that hosts some of its chips:
 *   - mpi:      one local chip per rank (tpu/mpi.h), real bytes;
 *   - loopback: every chip in this process, real bytes;
 *   - sim, or NULL: every chip, sizes only, no payload (model-only runs).
 * Every call is SPMD: every chip of the pod makes it, in the same order (under
 * MPI, every rank calls with its own local chip).  Buffers are given per local
 * chip: 'in[i]' and 'out[i]' belong to local chip i (tpu_spmd_local_chip()).
 * Without data (sim), buffers are ignored and may be NULL.
 *
 * Collectives follow jax.lax over a tuple of mesh axes, written "data" or
 * "data,model".  The members of a group are ordered row-major over the axes as
 * written, the last fastest (JAX's member order), so chunk k of an all-gather is
 * the block of the member whose index over the axes is k.  Groups that are whole
 * torus axes run on the torus algorithms, any other on the general group
 * algorithm; the modeled time is the same over every transport.
 *
 * Every collective and kernel is logged (tpu_spmd_call_t) and its modeled time
 * added to the runtime's communication or compute total.
 *
 * Ownership: tpu_spmd_create() borrows the mesh and the transport (they must
 * outlive the runtime) and copies the rest.  Arrays are created on a runtime and
 * destroyed before it.  Not thread-safe: one runtime per thread.
 */
#ifndef TPU_SPMD_H
#define TPU_SPMD_H

#include "tpu/chip.h"
#include "tpu/coll.h"
#include "tpu/hbm.h"
#include "tpu/mesh.h"
#include "tpu/mxu.h"
#include "tpu/pod.h"
#include "tpu/status.h"
#include "tpu/topo.h"
#include "tpu/xport.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tpu_spmd tpu_spmd_t;

typedef struct tpu_spmd_opts {
    double timeout_s; /* watchdog of each collective, seconds (0: none) */
    int check_peers;  /* compare every chip's call before each collective (1 by default) */
    /* Called while a collective waits on a peer (tpu_coll_run_opts_t.on_wait); NULL: none. */
    void (*on_wait)(void *arg, int chip);
    void *on_wait_arg;
} tpu_spmd_opts_t;

/* Defaults: no watchdog, peers checked. */
TPU_API void tpu_spmd_opts_init(tpu_spmd_opts_t *opts);

/*
 * Create a runtime over 'mesh' (of 'topo') with transport 'x' (NULL: model only,
 * as the sim transport).  'opts' may be NULL.  Each local chip gets its HBM
 * (capacity from 'chip').
 * @return TPU_OK, TPU_ERR_INVALID (the mesh, topology and transport disagree on
 *         the number of chips), TPU_ERR_NO_MEMORY.
 */
TPU_API tpu_status_t tpu_spmd_create(const tpu_topo_t *topo, const tpu_link_model_t *link,
                                     const tpu_chip_spec_t *chip, const tpu_mesh_t *mesh,
                                     tpu_xport_t *x, const tpu_spmd_opts_t *opts,
                                     tpu_spmd_t **spmd_p, tpu_err_t *err);
/* The same from a pod (tpu/pod.h): its topology, link model and chip (copied). */
TPU_API tpu_status_t tpu_spmd_create_pod(const tpu_pod_t *pod, const tpu_mesh_t *mesh,
                                         tpu_xport_t *x, const tpu_spmd_opts_t *opts,
                                         tpu_spmd_t **spmd_p, tpu_err_t *err);
/* Free the runtime (its plans, logs, HBM and VMEM); NULL is a no-op. */
TPU_API void tpu_spmd_destroy(tpu_spmd_t *spmd);

TPU_API const tpu_mesh_t *tpu_spmd_mesh(const tpu_spmd_t *spmd);
TPU_API const tpu_topo_t *tpu_spmd_topo(const tpu_spmd_t *spmd);
TPU_API const tpu_chip_spec_t *tpu_spmd_chip(const tpu_spmd_t *spmd);
TPU_API const tpu_link_model_t *tpu_spmd_link(const tpu_spmd_t *spmd);
/* 1 when buffers carry data (mpi, loopback), 0 for model-only runs. */
TPU_API int tpu_spmd_moves_data(const tpu_spmd_t *spmd);
/* The chips hosted here, and the chip id of local chip 'i'. */
TPU_API int tpu_spmd_nlocal(const tpu_spmd_t *spmd);
TPU_API int tpu_spmd_local_chip(const tpu_spmd_t *spmd, int i);
/* The HBM of local chip 'i' (for peaks: tpu_hbm_peak()). */
TPU_API tpu_hbm_t *tpu_spmd_hbm(const tpu_spmd_t *spmd, int i);
/* The largest HBM peak over the local chips. */
TPU_API uint64_t tpu_spmd_hbm_peak(const tpu_spmd_t *spmd);

/* ---- flat collectives: per local chip, contiguous buffers of 'count' elements ---- */

/*
 * jax.lax.psum (op SUM), pmax (MAX), pmin (MIN): every member gets the reduction
 * of its group's buffers; 'count' elements in and out ('in' may equal 'out').
 */
TPU_API tpu_status_t tpu_spmd_psum(tpu_spmd_t *spmd, const char *axes, tpu_dtype_t dtype,
                                   tpu_redop_t op, uint64_t count, void *const *in,
                                   void *const *out, tpu_err_t *err);
/* jax.lax.pmean: the psum divided by the group size (f32 and bf16 only). */
TPU_API tpu_status_t tpu_spmd_pmean(tpu_spmd_t *spmd, const char *axes, tpu_dtype_t dtype,
                                    uint64_t count, void *const *in, void *const *out,
                                    tpu_err_t *err);
/* all_gather(tiled=True) along the leading dim: 'count' in, count*G out, member order. */
TPU_API tpu_status_t tpu_spmd_all_gather(tpu_spmd_t *spmd, const char *axes, tpu_dtype_t dtype,
                                         uint64_t count, void *const *in, void *const *out,
                                         tpu_err_t *err);
/* psum_scatter(tiled=True) along the leading dim: 'count' in (G divides it), count/G out. */
TPU_API tpu_status_t tpu_spmd_psum_scatter(tpu_spmd_t *spmd, const char *axes, tpu_dtype_t dtype,
                                           tpu_redop_t op, uint64_t count, void *const *in,
                                           void *const *out, tpu_err_t *err);
/* all_to_all(split_axis=0, concat_axis=0, tiled=True): chunk k of 'count' to member k. */
TPU_API tpu_status_t tpu_spmd_all_to_all(tpu_spmd_t *spmd, const char *axes, tpu_dtype_t dtype,
                                         uint64_t count, void *const *in, void *const *out,
                                         tpu_err_t *err);
/*
 * jax.lax.ppermute: 'perm' holds 'npairs' pairs (source, target) of indices along
 * 'axes' (0..G-1); every group moves its buffers the same way; a member that is
 * no pair's target gets zeros.  Sources unique, targets unique.
 */
TPU_API tpu_status_t tpu_spmd_ppermute(tpu_spmd_t *spmd, const char *axes, tpu_dtype_t dtype,
                                       uint64_t count, const int *perm, int npairs, void *const *in,
                                       void *const *out, tpu_err_t *err);
/* jax.lax.axis_index over 'axes' for local chip 'i' (and the group size G). */
TPU_API tpu_status_t tpu_spmd_axis_index(const tpu_spmd_t *spmd, const char *axes, int i,
                                         int *index_p, int *size_p, tpu_err_t *err);

/* ---- the cost log ---- */

typedef struct tpu_spmd_call {
    tpu_coll_kind_t kind; /* TPU_COLL_PSUM, ...; psum also for pmean, pmax, pmin;
                             TPU_COLL_COUNT for a kernel (tpu_spmd_run, algorithm "compute") */
    char name[24];        /* "psum", "pmean", "all_gather", "psum_scatter", ... */
    char axes[64];        /* the mesh axes as given, "data" or "data,model" */
    int group_size;
    uint64_t bytes;     /* V as DESIGN.md s3: all-gather output, reduce-scatter input, ... */
    double modeled_us;  /* the collective's modeled time */
    double measured_us; /* wall time of the call on this process */
    char algorithm[64]; /* "torus chunks=2", "group_ring", ... */
    /* The collective's plan (the runtime's, valid while it lives); NULL for a kernel.
     * Its modeled walk (tpu_coll_plan_model_observed) is the call's timeline. */
    const tpu_coll_plan_t *plan;
} tpu_spmd_call_t;

/* Calls logged since the last clear, and call 'i'. */
TPU_API int64_t tpu_spmd_call_count(const tpu_spmd_t *spmd);
TPU_API const tpu_spmd_call_t *tpu_spmd_call_at(const tpu_spmd_t *spmd, int64_t i);
/* Modeled communication and compute time (µs) since the last clear. */
TPU_API double tpu_spmd_comm_us(const tpu_spmd_t *spmd);
TPU_API double tpu_spmd_compute_us(const tpu_spmd_t *spmd);
/* Useful FLOPs of the kernels' matmuls per chip (max over chips) since the last clear. */
TPU_API double tpu_spmd_flops(const tpu_spmd_t *spmd);
/* Forget the log and the totals (HBM peaks are kept). */
TPU_API void tpu_spmd_log_clear(tpu_spmd_t *spmd);

/* ---- local kernels (shard_map) ---- */

/* What a kernel sees on one chip. */
typedef struct tpu_spmd_local {
    tpu_spmd_t *spmd;
    int local;         /* index among the local chips (buffers, tpu_array_local()) */
    int chip;          /* chip id */
    int pos;           /* mesh position */
    double compute_us; /* modeled compute time of this chip in this kernel so far */
    double flops;      /* useful FLOPs of this chip in this kernel so far */
} tpu_spmd_local_t;

typedef tpu_status_t (*tpu_spmd_kernel_fn_t)(tpu_spmd_local_t *loc, void *arg, tpu_err_t *err);

/*
 * Run 'fn' once per local chip (in SPMD: every chip of the pod runs it).  The
 * kernel's modeled time is the largest 'compute_us' over all chips of the pod
 * (a max over the transport when chips live in other processes), added to the
 * runtime's compute total.  'name' labels the log entry.
 */
TPU_API tpu_status_t tpu_spmd_run(tpu_spmd_t *spmd, const char *name, tpu_spmd_kernel_fn_t fn,
                                  void *arg, tpu_err_t *err);

/*
 * In a kernel: C = A @ B on the chip's MXU (tpu_mxu_matmul; bf16 or f32 inputs,
 * row-major), adding the roofline time (tpu_mxu_roofline) to loc->compute_us.
 * Without data (model-only) only the time is added; a, b, c may be NULL.
 */
TPU_API tpu_status_t tpu_spmd_matmul(tpu_spmd_local_t *loc, const tpu_mxu_desc_t *desc,
                                     const void *a, const void *b, void *c, tpu_err_t *err);
/* In a kernel: add modeled seconds of work done on the host side (VPU ops etc.). */
TPU_API void tpu_spmd_local_add_seconds(tpu_spmd_local_t *loc, double seconds);

/* ---- sharded arrays ---- */

#define TPU_ARRAY_MAX_DIMS 4

typedef struct tpu_array tpu_array_t;

/*
 * Create a sharded array of global 'shape' (ndims 1..4) and 'dtype' with the
 * partition spec 'spec', one entry per dimension separated by commas: a mesh
 * axis, a tuple of axes "(data,model)" or "data+model" (the last fastest), or
 * "None" / "_" / "" for replicated.  Fewer entries than dimensions leave the
 * rest replicated ("" replicates everything).  Every dimension must divide by
 * the product of its axes.  Each local chip's shard is allocated (zeroed) in its
 * HBM; model-only runs reserve the bytes.
 * @return TPU_OK, TPU_ERR_INVALID (bad spec; a dimension that does not divide,
 *         naming both sizes), TPU_ERR_RESOURCE_EXHAUSTED (HBM: the message gives
 *         requested, in use and capacity), TPU_ERR_NO_MEMORY.
 */
TPU_API tpu_status_t tpu_array_create(tpu_spmd_t *spmd, int ndims, const int64_t *shape,
                                      tpu_dtype_t dtype, const char *spec, tpu_array_t **arr_p,
                                      tpu_err_t *err);
/* Free the shards (back to HBM) and the array; NULL is a no-op. */
TPU_API void tpu_array_destroy(tpu_array_t *arr);

TPU_API int tpu_array_ndims(const tpu_array_t *arr);
TPU_API tpu_dtype_t tpu_array_dtype(const tpu_array_t *arr);
/* Global shape, and the shape of every chip's shard (ndims entries each). */
TPU_API void tpu_array_shape(const tpu_array_t *arr, int64_t *shape);
TPU_API void tpu_array_local_shape(const tpu_array_t *arr, int64_t *shape);
/* Elements and bytes of one shard. */
TPU_API int64_t tpu_array_local_count(const tpu_array_t *arr);
TPU_API uint64_t tpu_array_local_bytes(const tpu_array_t *arr);
/* The spec as "data,None" / "(data,model),None". */
TPU_API void tpu_array_spec_str(const tpu_array_t *arr, char *buf, int len);
/* The shard of local chip 'i' (row-major, its local shape), or NULL without data. */
TPU_API void *tpu_array_local(const tpu_array_t *arr, int i);

/*
 * Copy the global array 'host' (row-major, every process holds all of it) into
 * the shards of the local chips (jax.device_put).  No modeled time.
 */
TPU_API tpu_status_t tpu_array_place(tpu_array_t *arr, const void *host, tpu_err_t *err);
/*
 * Assemble the global array into 'host' on every process.  Chips in other
 * processes send theirs (an exchange outside the modeled time).  A dimension's
 * blocks come from the chips at coordinate 0 of the mesh axes the spec leaves out.
 * @return TPU_ERR_UNSUPPORTED without data.
 */
TPU_API tpu_status_t tpu_array_gather(const tpu_array_t *arr, void *host, tpu_err_t *err);

/*
 * A new array with the same global values and the spec 'spec': all-gathers (logged,
 * modeled) over the axes the old spec has and the new one moves or drops, then a
 * local slice for the axes the new spec adds.
 */
TPU_API tpu_status_t tpu_array_reshard(const tpu_array_t *arr, const char *spec,
                                       tpu_array_t **out_p, tpu_err_t *err);

/*
 * Collectives on arrays, with JAX's semantics on the shards (shard_map): each
 * returns a new array whose shards are the collective's results, and whose spec
 * and global shape are what shard_map would give with the natural out_specs:
 *   psum/pmean(axes):              shards unchanged in shape; 'axes' leave the spec.
 *   all_gather(axes, axis, tiled): dim 'axis' grows G x (tiled) or a new dim of G
 *                                  is inserted at 'axis'; 'axes' leave the spec.
 *   psum_scatter(axes, dim, tiled): dim shrinks G x (tiled; untiled: it must be G
 *                                  and is removed); 'axes' move to that dim, fastest.
 *   all_to_all(axes, split, concat, tiled): split dim shrinks G x, concat dim grows
 *                                  G x; 'axes' move from concat to split (untiled: the
 *                                  shape is insert(delete(shape, split), concat, G)).
 *   ppermute(axes, perm):          shards move between members; non-targets get zeros.
 * Shapes that do not divide are TPU_ERR_INVALID naming the sizes.
 */
TPU_API tpu_status_t tpu_array_psum(const tpu_array_t *arr, const char *axes, tpu_redop_t op,
                                    tpu_array_t **out_p, tpu_err_t *err);
TPU_API tpu_status_t tpu_array_pmean(const tpu_array_t *arr, const char *axes, tpu_array_t **out_p,
                                     tpu_err_t *err);
TPU_API tpu_status_t tpu_array_all_gather(const tpu_array_t *arr, const char *axes, int axis,
                                          int tiled, tpu_array_t **out_p, tpu_err_t *err);
TPU_API tpu_status_t tpu_array_psum_scatter(const tpu_array_t *arr, const char *axes,
                                            int scatter_dimension, int tiled, tpu_array_t **out_p,
                                            tpu_err_t *err);
TPU_API tpu_status_t tpu_array_all_to_all(const tpu_array_t *arr, const char *axes, int split_axis,
                                          int concat_axis, int tiled, tpu_array_t **out_p,
                                          tpu_err_t *err);
TPU_API tpu_status_t tpu_array_ppermute(const tpu_array_t *arr, const char *axes, const int *perm,
                                        int npairs, tpu_array_t **out_p, tpu_err_t *err);

#ifdef __cplusplus
}
#endif

#endif /* TPU_SPMD_H */
