/*
 * Replay of an HLO module on the emulated pod: what one step of the module
 * would cost.
 *
 * Collectives (all-reduce, all-gather, reduce-scatter, all-to-all,
 * collective-permute, collective-broadcast, their -start/-done forms and
 * async-start/-done with calls=) become the engine's collectives (coll.h) over
 * the chips their replica groups name, with the bytes of the engine's
 * convention, and are timed by tpu_coll_plan_create() + tpu_coll_plan_model():
 * the numbers of 'tpuemu model'.  Compute goes through the chip's roofline
 * (ops.h): dot and convolution as matmuls, elementwise ops and reductions by
 * their VPU work and HBM bytes, fusions by their fused computation's FLOPs and
 * their operand and result bytes, custom-calls at zero or a given time.
 * Control flow: while loops times their trip count, call inline, conditional
 * the most expensive branch.  Instructions run in text order on one compute
 * stream; collectives run one at a time on one communication stream, and an
 * async collective overlaps the instructions between its start and its done.
 * Beside that step: the latency-hiding estimate of the same dataflow
 * (scheduled_step_us), the HBM peak of live buffers per chip and the largest
 * of them, every loop's trip count and how it was found, the compiler that
 * produced the module, the MFU.
 *
 * Ownership: the report is the caller's, freed with tpu_replay_report_destroy();
 * it points into the module (names), which must outlive it.
 */
#ifndef TPU_REPLAY_H
#define TPU_REPLAY_H

#include "tpu/chip.h"
#include "tpu/coll.h"
#include "tpu/groups.h"
#include "tpu/hlo.h"
#include "tpu/status.h"
#include "tpu/topo.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tpu_replay_opts {
    const int32_t *device_order; /* device (mesh position) -> chip id; NULL: identity */
    int ndevice_order;
    int ntrips; /* --trip-count NAME=K: while instruction name -> trip count */
    const char *const *trip_names;
    const int64_t *trip_counts;
    int ncustom; /* --custom-call-us NAME=US: instruction name or custom_call_target */
    const char *const *custom_names;
    const double *custom_us;
    int timeline; /* 1: record the step's timeline (tpu_replay_report_t.timeline) */
    /* The computation to replay as the step ('%' optional); NULL: the ENTRY. */
    const char *entry;
} tpu_replay_opts_t;

/* One collective instruction of the module. */
typedef struct tpu_replay_coll {
    const char *name;   /* the instruction (the -start of an async pair) */
    const char *opcode; /* as written: "all-to-all-start" */
    const char *groups; /* replica groups as written ("" when none), or "pairs" */
    int line;
    int async;          /* 1 for a start/done pair */
    int ngroups;        /* groups of chips */
    int group_size;     /* chips per group */
    uint64_t bytes;     /* engine convention (coll.h), padded to whole blocks */
    uint64_t hlo_bytes; /* bytes of the HLO shape the convention reads */
    int64_t executions;
    double modeled_us;    /* one execution */
    double exposed_us;    /* waited for, over all executions */
    int supported;        /* 0: not timed; 'note' says why */
    tpu_coll_desc_t desc; /* the engine request (groups and pairs: tpu_replay_coll_desc()) */
    int32_t *chips;       /* ngroups x group_size chips when the groups are not whole axes */
    int32_t *pairs;       /* npairs (source, target) chips of a collective-permute */
    int npairs;
    char algorithm[64];
    char axes[16];
    char note[128];
    const char *source; /* metadata op_name (the JAX op path); NULL */
} tpu_replay_coll_t;

/* One compute instruction of the module. */
typedef struct tpu_replay_op {
    const char *name;
    const char *opcode;
    const char *detail; /* fusion: the called computation; custom-call: the target */
    int line;
    double flops;      /* one execution */
    double bytes;      /* HBM bytes of one execution */
    double modeled_us; /* one execution */
    int64_t executions;
    int compute_bound;
    int custom;         /* a custom-call (time given by --custom-call-us or zero) */
    const char *source; /* metadata op_name (the JAX op path); NULL */
} tpu_replay_op_t;

/* A buffer live at the HBM peak. */
typedef struct tpu_replay_buffer {
    const char *name;
    const char *source; /* metadata op_name; NULL */
    uint64_t bytes;
    char shape[64]; /* "bf16[8192,4096]" */
} tpu_replay_buffer_t;

/* A while loop and how its trip count was found. */
typedef struct tpu_replay_loop {
    const char *name;
    int line;
    int64_t trips; /* as counted (1 when unknown) */
    int known;     /* 0: not found, counted once; 'how' says why */
    char how[160]; /* "--trip-count", "known_trip_count", "induction ..." or the reason */
} tpu_replay_loop_t;

/* Largest buffers listed at the HBM peak. */
#define TPU_REPLAY_HBM_TOP 8

/*
 * One execution on the step's timeline: a compute op on the compute stream or a
 * collective on the communication stream (loops unrolled, in the order the
 * replay runs them; a collective may start before compute recorded ahead of it
 * ends, when it is asynchronous).
 */
typedef struct tpu_replay_event {
    int32_t coll; /* 1: colls[row]; 0: ops[row] */
    int32_t row;
    double start_us; /* from the start of the step */
    double dur_us;
} tpu_replay_event_t;

#define TPU_REPLAY_WARNING_LEN 320
/* Most events the timeline holds (timeline_truncated past them). */
#define TPU_REPLAY_MAX_TIMELINE (1 << 18)
/* Most collective executions the report lists in order (seq). */
#define TPU_REPLAY_MAX_SEQ (1 << 24)

typedef struct tpu_replay_report {
    int devices;            /* partitions x replicas of the module (= chips) */
    double step_us;         /* critical path of one step */
    double compute_us;      /* sum of compute time */
    double comm_us;         /* sum of collective time */
    double exposed_comm_us; /* collective time not hidden behind compute */
    double hbm_bytes;       /* HBM traffic of one step */
    double flops;           /* useful FLOPs of one step */
    int ncolls;
    tpu_replay_coll_t *colls;
    int nops;
    tpu_replay_op_t *ops;
    int nwarnings;
    char (*warnings)[TPU_REPLAY_WARNING_LEN];
    int64_t nseq;      /* collective executions in order, loops unrolled */
    int32_t *seq;      /* nseq indices into colls */
    int seq_truncated; /* 1: more than TPU_REPLAY_MAX_SEQ executions; seq holds the first */
    int64_t ntimeline; /* with opts->timeline: the step's events in order */
    tpu_replay_event_t *timeline;
    int timeline_truncated; /* 1: more than TPU_REPLAY_MAX_TIMELINE; the first are kept */
    int custom_calls;       /* custom-call instructions met */
    int unknown_opcodes;    /* instructions skipped */
    int unsupported;        /* collectives not timed */
    /* HBM fit: the peak of live bytes per chip over the module's order. */
    double hbm_peak_bytes;
    double hbm_capacity_bytes; /* the chip's HBM */
    int hbm_over;              /* 1: peak > capacity (XLA would fail RESOURCE_EXHAUSTED) */
    const char *hbm_peak_at;   /* the instruction at the peak */
    int nbuffers;              /* the largest buffers live at the peak, largest first */
    tpu_replay_buffer_t buffers[TPU_REPLAY_HBM_TOP];
    int nloops; /* every while loop walked, with its trip count */
    tpu_replay_loop_t *loops;
    /* The latency-hiding estimate: every collective asynchronous, started when its
     * operands are ready and waited for by its first user; compute in text order. */
    double scheduled_step_us;
    double scheduled_exposed_comm_us;
    const char *backend;  /* "TPU", "GPU", "CPU" or "unknown" */
    char backend_why[96]; /* the evidence */
    double mfu;           /* flops / (step x chip peak) */
} tpu_replay_report_t;

/*
 * The number of devices of 'mod': replica_count x num_partitions, or when the
 * header gives neither, the largest device id its groups and pairs name, + 1.
 */
TPU_API int tpu_replay_device_count(const tpu_hlo_module_t *mod);

/*
 * Replay the entry computation of 'mod' on the pod (topo, link, chip).  The
 * module's device count must equal the pod's chips.
 * @return TPU_OK, TPU_ERR_INVALID ("FILE:LINE:COL: message": device count,
 *         a group naming a missing device, a bad device order, recursion),
 *         TPU_ERR_NO_MEMORY.
 */
TPU_API tpu_status_t tpu_replay_run(const tpu_hlo_module_t *mod, const tpu_topo_t *topo,
                                    const tpu_link_model_t *link, const tpu_chip_spec_t *chip,
                                    const tpu_replay_opts_t *opts, tpu_replay_report_t **report_p,
                                    tpu_err_t *err);
/*
 * The engine request of collective row 'row' ('desc_p'), pointing its groups or
 * pairs at the row's chips through 'groups' (caller storage that must outlive the
 * request; the plan copies both).
 */
TPU_API void tpu_replay_coll_desc(const tpu_replay_coll_t *row, tpu_groups_t *groups,
                                  tpu_coll_desc_t *desc_p);
/* Free a report; NULL is a no-op. */
TPU_API void tpu_replay_report_destroy(tpu_replay_report_t *report);

/*
 * The chip groups of a collective instruction of 'mod' (device ids mapped to
 * chips through 'device_order', NULL for identity): '*ngroups_p' groups of
 * '*size_p' chips in 'chips' (room for the module's device count).  Uneven
 * groups give TPU_ERR_UNSUPPORTED.  Used by the replay and its tests.
 */
TPU_API tpu_status_t tpu_replay_groups_get(const tpu_hlo_module_t *mod, const tpu_hlo_instr_t *in,
                                           const int32_t *device_order, int32_t *chips,
                                           int *ngroups_p, int *size_p, tpu_err_t *err);

#ifdef __cplusplus
}
#endif

#endif /* TPU_REPLAY_H */
