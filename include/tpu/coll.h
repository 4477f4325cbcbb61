/*
 * Collectives: psum, all-gather, reduce-scatter, all-to-all, ppermute and p2p
 * over any subset of the torus axes (and 'dcn'), with real data and modeled time.
 *
 * A collective flows one way: a description (tpu_coll_desc_t) -> a plan
 * (tpu_coll_plan_create: the request checked, the algorithm chosen, its schedule
 * built; immutable from then on) -> its modeled time (tpu_coll_plan_model, the
 * link-model walk without moving data) -> runs with data over a transport
 * (tpu_coll_exec_create, then tpu_coll_exec_run as often as needed: the run
 * object keeps the per-run state and buffers).  The model and every run give the
 * same modeled time, bit for bit.
 *
 * Sizes follow the reference conventions: 'bytes' is the all-gather's output per
 * chip, the reduce-scatter's input per chip, the psum's and all-to-all's buffer
 * per chip, and the bytes each chip sends in a ppermute or a p2p.
 */
#ifndef TPU_COLL_H
#define TPU_COLL_H

#include "tpu/dtype.h"
#include "tpu/fault.h"
#include "tpu/groups.h"
#include "tpu/link.h"
#include "tpu/redop.h"
#include "tpu/status.h"
#include "tpu/topo.h"
#include "tpu/xport.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TPU_COLL_MAP(X)                                             \
    X(PSUM, "psum", "MPI_Allreduce")                                \
    X(ALL_GATHER, "all-gather", "MPI_Allgather")                    \
    X(REDUCE_SCATTER, "reduce-scatter", "MPI_Reduce_scatter_block") \
    X(ALL_TO_ALL, "all-to-all", "MPI_Alltoall")                     \
    X(PPERMUTE, "ppermute", "MPI_Sendrecv")                         \
    X(P2P, "p2p", "MPI_Send")

typedef enum {
#define X(name, str, mpi) TPU_COLL_##name,
    TPU_COLL_MAP(X)
#undef X
    TPU_COLL_COUNT
} tpu_coll_kind_t;

/*
 * The largest collective the model represents: 2^48 bytes (256 TiB) per chip.
 * Offsets and times stay exact well below it (int64 byte offsets scaled by the
 * working type, doubles exact to 2^53); larger requests are refused.
 */
#define TPU_COLL_MAX_BYTES ((uint64_t)1 << 48)

/* The deepest pipeline a torus algorithm takes (--chunks). */
#define TPU_MAX_CHUNKS 64

typedef struct tpu_coll_desc {
    tpu_coll_kind_t kind;
    unsigned axes;  /* mask of axes (bit TPU_AXIS_DCN for dcn); ignored by p2p */
    uint64_t bytes; /* see the conventions above */
    tpu_dtype_t dtype;
    tpu_redop_t op;
    int shift;     /* ppermute: every chip sends to the chip 'shift' ahead on the axis */
    int src;       /* p2p: source chip; -1 for chip 0 */
    int dst;       /* p2p: destination chip; -1 for the farthest chip from src */
    char algo[32]; /* "" to let the cost model choose, or a registry name */
    int chunks;    /* pipeline chunks, 1 to TPU_MAX_CHUNKS; 0 to let the cost model choose */
    /*
     * Any groups of chips (tpu/groups.h), for every collective but p2p and ppermute;
     * NULL: the groups of 'axes'.  A set equal to the groups of whole torus axes
     * (same members, same member order) runs on the torus algorithms, any other on
     * the general group algorithms.  The plan copies it.
     */
    const tpu_groups_t *groups; /* NULL: the groups of 'axes' */
    /*
     * ppermute over explicit pairs (source, target chip ids, 2*npairs entries;
     * sources unique, targets unique; a chip that is no target gets nothing):
     * XLA's collective-permute.  NULL: the shift along 'axes'.  The plan copies them.
     */
    const int32_t *pairs;
    int npairs;
} tpu_coll_desc_t;

/* Per-axis link use of a modeled collective. */
typedef struct tpu_coll_axis_stat {
    double bytes;       /* bytes carried by the busiest directed link of the axis */
    double busy_us;     /* that link's busy time */
    double utilisation; /* busy time over the collective's time */
} tpu_coll_axis_stat_t;

typedef struct tpu_coll_result {
    double modeled_us; /* first chip starts to last chip finishes */
    char algorithm[64];
    int64_t flows;
    int32_t steps;
    tpu_coll_axis_stat_t axis[TPU_MAX_AXES + 1]; /* x, y, z, dcn */
} tpu_coll_result_t;

typedef struct tpu_coll_plan tpu_coll_plan_t;

/* Fill 'desc' with defaults: psum, f32, sum, auto algorithm, p2p chip 0 to farthest. */
TPU_API void tpu_coll_desc_init(tpu_coll_desc_t *desc);

/* Names: "psum", "all-gather", ...; the MPI call that does the same. */
TPU_API const char *tpu_coll_name(tpu_coll_kind_t kind);
TPU_API const char *tpu_coll_mpi_name(tpu_coll_kind_t kind);
TPU_API tpu_status_t tpu_coll_parse(const char *text, tpu_coll_kind_t *kind_p, tpu_err_t *err);

/*
 * Choose the algorithm and build the schedule.  Checks the request against the
 * topology: axes, divisibility of 'bytes' into the group's shards (naming a size
 * that would divide), shift, p2p chips.  The caller owns '*plan_p' and frees it
 * with tpu_coll_plan_destroy().
 * @return TPU_OK, TPU_ERR_INVALID (bad request), TPU_ERR_NO_MEMORY.
 */
TPU_API tpu_status_t tpu_coll_plan_create(const tpu_topo_t *topo, const tpu_link_model_t *link,
                                          const tpu_coll_desc_t *desc, tpu_coll_plan_t **plan_p,
                                          tpu_err_t *err);
TPU_API void tpu_coll_plan_destroy(tpu_coll_plan_t *plan);

/* The bytes of the input and output buffers each chip passes to tpu_coll_exec_run(). */
TPU_API void tpu_coll_plan_sizes(const tpu_coll_plan_t *plan, uint64_t *in_bytes_p,
                                 uint64_t *out_bytes_p);
/* The request as the plan resolved it (p2p chips filled in, axes checked). */
TPU_API const tpu_coll_desc_t *tpu_coll_plan_desc(const tpu_coll_plan_t *plan);
/* The algorithm chosen, as "torus chunks=4". */
TPU_API const char *tpu_coll_plan_algo(const tpu_coll_plan_t *plan);
/* The number of chips in each group of the collective. */
TPU_API int tpu_coll_plan_group_size(const tpu_coll_plan_t *plan);
/*
 * The flows the plan's model schedule holds: what the plan built and walked to
 * choose and time the collective (one chip's flows, one domain's of a symmetry,
 * every chip's; 0 for the line form of an all-to-all), not the pod's, which
 * tpu_coll_result_t.flows gives.  A measure of the plan's size (bench_scale).
 */
TPU_API int64_t tpu_coll_plan_model_flows(const tpu_coll_plan_t *plan);

/* Model the plan without moving data (the sim path of 'tpuemu model'). */
TPU_API tpu_status_t tpu_coll_plan_model(const tpu_coll_plan_t *plan, tpu_coll_result_t *res_p,
                                         tpu_err_t *err);

/*
 * The plan's schedule (its algorithm and pipeline depth, as chosen with the
 * plan's own constants) timed with the link constants 'link' instead: one walk,
 * no second selection.  'link' must carry the plan's faults (the same pointer);
 * its other constants may differ (e.g. tpu_link_model_calibrate()).  A plan
 * created with 'link' may choose another depth and model a little faster.
 * @return TPU_OK, TPU_ERR_INVALID (other faults), TPU_ERR_NO_MEMORY.
 */
TPU_API tpu_status_t tpu_coll_plan_model_link(const tpu_coll_plan_t *plan,
                                              const tpu_link_model_t *link,
                                              tpu_coll_result_t *res_p, tpu_err_t *err);

/*
 * Observers: what the timing walk did, flow by flow and link by link, for traces
 * and heatmaps.  The walk calls 'on_flow' once for every timed flow that carries
 * bytes (in the model, every flow; in a run, the flows the transport's local
 * chips send), in the walk's order, and at the end 'on_link' once for every
 * resource: each directed ICI link (by id, see tpu_topo_link()) and each host's
 * DCN egress and ingress NIC.  Times are modeled seconds from the start of the
 * collective.  Callbacks may be NULL; the event and its arrays are valid only
 * during the call.  Without an observer the walk does no extra work.
 */
typedef struct tpu_coll_flow_event {
    int64_t flow;         /* index of the flow in the schedule */
    int32_t src;          /* chip that sends */
    int32_t dst;          /* chip that receives */
    int32_t step;         /* schedule step (flows of one step share links) */
    int32_t stream;       /* pipeline stream (ordering x chunk) */
    double start_s;       /* modeled: the flow leaves src */
    double end_s;         /* modeled: the flow has arrived at dst */
    uint64_t bytes;       /* bytes the flow carries */
    int dcn;              /* 1: over DCN (src_host's egress, dst_host's ingress), then ICI */
    int src_host;         /* DCN: the host whose egress NIC it used, else -1 */
    int dst_host;         /* DCN: the host whose ingress NIC it used, else -1 */
    int nlinks;           /* directed ICI links crossed */
    const int32_t *links; /* their ids, in the order crossed */
    int representative;   /* 1: the walk timed one chip's flows, or one period's of a
                             periodic group set (the others do the same, translated;
                             see 'every_chip') */
} tpu_coll_flow_event_t;

typedef struct tpu_coll_link_event {
    int link;      /* directed ICI link id, or -1 for a host NIC */
    int host;      /* NIC: the host; ICI link: -1 */
    int egress;    /* NIC: 1 the host's egress, 0 its ingress; ICI link: 0 */
    double bytes;  /* bytes the resource carried over the whole collective */
    double busy_s; /* modeled seconds it was busy (bytes over its bandwidth) */
} tpu_coll_link_event_t;

typedef struct tpu_coll_observer {
    void (*on_flow)(void *user, const tpu_coll_flow_event_t *ev);
    void (*on_link)(void *user, const tpu_coll_link_event_t *ev);
    void *user;
    /*
     * tpu_coll_plan_model_observed() on a translation-invariant collective walks
     * one chip's flows (or one period's, for periodic groups) and reports them
     * with 'representative' set, with every link's totals all the same (each
     * link gets the load of its class or orbit).  1: build and walk every chip's
     * flows instead
     * (the same modeled time; costs the whole schedule, fine up to a few thousand
     * flows per step).
     */
    int every_chip;
} tpu_coll_observer_t;

/*
 * tpu_coll_plan_model() with an observer ('obs' may be NULL).
 * @return TPU_OK, TPU_ERR_NO_MEMORY.
 */
TPU_API tpu_status_t tpu_coll_plan_model_observed(const tpu_coll_plan_t *plan,
                                                  const tpu_coll_observer_t *obs,
                                                  tpu_coll_result_t *res_p, tpu_err_t *err);

/* Options of one execution. */
typedef struct tpu_coll_run_opts {
    uint64_t call;    /* call number, part of the mismatch signature and of the message
                         tags: number the calls of a program 0, 1, 2, ... so that what a
                         failed call left in flight never matches a later one */
    double timeout_s; /* watchdog: give up after this many seconds (0: never) */
    int check_peers;  /* first compare every chip's call (one small exchange) */
    int local_time;   /* report this chip's own finish time, skipping the max over chips */
    /* NULL, or told of the local chips' sends and, at the end, of every resource's
     * totals over the steps in which a local chip sends (the model path,
     * tpu_coll_plan_model_observed(), gives the whole pod's). */
    const tpu_coll_observer_t *observer;
    /* NULL, or called whenever a round of the run makes no progress, with the chip
     * of the oldest receive still open (-1: only sends are open), so that a caller
     * can tell a watchdog whom this chip waits for.  It must return quickly. */
    void (*on_wait)(void *arg, int chip);
    void *on_wait_arg;
} tpu_coll_run_opts_t;

/* The state of runs of one plan over one transport (buffers kept across runs). */
typedef struct tpu_coll_exec tpu_coll_exec_t;

/*
 * Prepare runs of 'plan' over 'x' (the plan must outlive the run object): builds
 * the schedule of every chip when the model needed only one chip's, and the
 * working buffers of the transport's local chips.
 * @return TPU_OK, TPU_ERR_INVALID (the transport hosts another pod),
 *         TPU_ERR_NO_MEMORY.
 */
TPU_API tpu_status_t tpu_coll_exec_create(const tpu_coll_plan_t *plan, tpu_xport_t *x,
                                          tpu_coll_exec_t **exec_p, tpu_err_t *err);
TPU_API void tpu_coll_exec_destroy(tpu_coll_exec_t *exec);

/*
 * Run the collective over the transport's local chips: 'in[i]' and 'out[i]' are
 * the buffers of local chip i (sizes from tpu_coll_plan_sizes()).  On return
 * '*modeled_us_p' is the collective's modeled time (the same on every chip).
 * In place: 'in[i]' may overlap 'out[i]', as in NCCL (see
 * tpu_coll_in_place_offsets() for NCCL's forms); the result is the same as
 * out of place, bit for bit.  The paths that work in a buffer of their own or
 * copy each piece of the input before writing that piece of the output need no
 * copy; the message path that sends from the user's input first copies an
 * overlapping input aside (one copy of the input per call).
 * @return TPU_OK, TPU_ERR_MISMATCH (chips in different collectives),
 *         TPU_ERR_TIMEOUT (watchdog; the message names the chips waited for),
 *         TPU_ERR_TRANSPORT, TPU_ERR_NO_MEMORY.
 */
TPU_API tpu_status_t tpu_coll_exec_run(tpu_coll_exec_t *exec, const tpu_coll_run_opts_t *opts,
                                       void *const *in, void *const *out, double *modeled_us_p,
                                       tpu_err_t *err);

/*
 * NCCL's in-place form of the collective for 'chip': one buffer of '*bytes_p'
 * bytes holds the input at byte '*in_off_p' and receives the output at byte
 * '*out_off_p'.  psum, all-to-all, ppermute, p2p: both at 0 (input == output);
 * all-gather: the input at the chip's block of the output (its index in the
 * group times the input bytes, NCCL's recvbuff + rank * sendcount); reduce-
 * scatter: the output at the chip's block of the input (NCCL's sendbuff + rank *
 * recvcount).  Pass 'buf + *in_off_p' and 'buf + *out_off_p' to
 * tpu_coll_exec_run().
 * @return TPU_OK, TPU_ERR_INVALID ('chip' is not a chip of the pod).
 */
TPU_API tpu_status_t tpu_coll_in_place_offsets(const tpu_coll_plan_t *plan, int chip,
                                               uint64_t *in_off_p, uint64_t *out_off_p,
                                               uint64_t *bytes_p, tpu_err_t *err);

/*
 * How the host moved the bytes of the last run: "shm" (through the memory the
 * chips of one node share; the mpi transport, every member of the group on the
 * node) or "messages" (the transport's messages, also before any run).
 */
TPU_API const char *tpu_coll_exec_host_path(const tpu_coll_exec_t *exec);

/*
 * The reference result of the collective for local chip 'chip', computed directly
 * from every chip's input as 'fill' produces it: 'fill(chip, buf, bytes, arg)'
 * writes the input of any chip.  Used to verify results.
 */
typedef void (*tpu_coll_fill_fn_t)(int chip, void *buf, uint64_t bytes, void *arg);
TPU_API tpu_status_t tpu_coll_reference(const tpu_coll_plan_t *plan, int chip,
                                        tpu_coll_fill_fn_t fill, void *arg, void *out,
                                        tpu_err_t *err);

/*
 * Verification data (a tpu_coll_fill_fn_t; 'dtype_arg' points to a tpu_dtype_t):
 * small integers that vary with the chip and the index, whose sums are exact in
 * every dtype whatever the reduction order (bf16: up to 16 chips), so results
 * compare bit for bit with tpu_coll_reference().
 */
TPU_API void tpu_coll_fill_exact(int chip, void *buf, uint64_t bytes, void *dtype_arg);
/* Elements of 'bytes' of 'dtype' that differ between 'got' and 'want'. */
TPU_API uint64_t tpu_coll_count_wrong(const void *got, const void *want, uint64_t bytes,
                                      tpu_dtype_t dtype);

/*
 * The published-formula ("ideal") time of the collective in microseconds: the
 * reference of shared/reference/fidelity.md, what the torus could do at best by
 * the book (for the "vs ideal" columns), computed from the formulas, not from a
 * schedule:
 *   all-gather, reduce-scatter  (N-1)/N * V / (W * sum_i f_i) + D * alpha
 *   psum                        twice that
 *   all-to-all                  max_i V * floor(n_i^2/4) / (n_i * W * f_i) + D * alpha
 *   ppermute                    V / (W/2) + alpha
 *   p2p                         V / (P * W/2) + hops * alpha  (P disjoint routes)
 * with f_i = 1 on a wrapped axis and 1/2 on an open one, D the diameter of the
 * axes, and across slices the DCN stage (S-1)/S * (V/N) / W_dcn added (twice for
 * a psum).  p2p across slices is V / W_dcn.
 */
TPU_API double tpu_coll_ideal_us(const tpu_topo_t *topo, const tpu_link_model_t *link,
                                 const tpu_coll_desc_t *desc);

/* The registry: number of algorithms, and the collective and name of algorithm 'i'. */
TPU_API int tpu_coll_algo_count(void);
TPU_API void tpu_coll_algo_at(int i, tpu_coll_kind_t *kind_p, const char **name_p,
                              const char **summary_p);

#ifdef __cplusplus
}
#endif

#endif /* TPU_COLL_H */
