/*
 * The algorithm registry and the arguments every algorithm takes.
 */
#ifndef TPU_ALGO_H
#define TPU_ALGO_H

#include "tpu/coll.h"
#include "tpu/topo.h"

#include "schedule.h"

typedef struct tpu_algo_args {
    const tpu_topo_t *topo;
    const tpu_link_model_t *link;
    const tpu_coll_desc_t *desc;
    unsigned mask;              /* axes of the collective */
    int group;                  /* chips per group */
    int64_t shard;              /* bytes of one chip's block (all-gather, reduce-scatter, psum) */
    int64_t elem;               /* bytes of one element: blocks split only at element boundaries */
    int chunks;                 /* pipeline chunks per ordering (>= 1) */
    double split;               /* in (0, 1): the data fraction of axis order 0 of a torus
                                   all-gather over two axes (select.c times a few); 0: the
                                   estimate's choice among the rotations of the axis order
                                   (allgather_torus.c, choose_split); TPU_SPLIT_ALL_ORDERS:
                                   over three axes, the shares of all six orders that
                                   balance the axes' loads (balance_orders) */
    int rep;                    /* -1: flows of every chip; else only those chip rep sends (the
                                   representative of a translation-invariant pod, see linkmodel.c) */
    const tpu_groups_t *groups; /* groups that are not whole axes (group algorithms), or NULL */
    const int32_t *member;      /* with groups: chip -> member index */
    const int *period;          /* non-NULL to build only the flows of the chips of a domain (orbit
                                   timing, linkmodel.h): coordinates below period[] on every axis, and
                                   below dims/2 on the axes of 'reflect' */
    unsigned reflect;     /* with period: axes (even, open) folded at their middle, i -> n-1-i */
    const uint8_t *local; /* non-NULL: only the flows that start or end on a chip marked here
                             (a rank's own part of the data schedule; torus family, direct
                             all-to-all and ppermute; the others build every flow) */
} tpu_algo_args_t;

/* args.split: the torus all-gather over three axes splits between all six axis orders. */
#define TPU_SPLIT_ALL_ORDERS 2.0

typedef tpu_status_t (*tpu_algo_fn_t)(const tpu_algo_args_t *args, tpu_sched_t *sched,
                                      tpu_err_t *err);

typedef struct tpu_algo {
    tpu_coll_kind_t kind;
    const char *name;
    tpu_algo_fn_t build;
    int pipelined; /* takes args->chunks */
    int groups;    /* 1: takes any groups (args->groups); the only kind a group plan picks */
    const char *summary;
} tpu_algo_t;

#define TPU_ALGO(kind, name, pipelined, groups, summary)                                    \
    tpu_status_t tpu__algo_##kind##_##name(const tpu_algo_args_t *args, tpu_sched_t *sched, \
                                           tpu_err_t *err);
#include "algorithms.def"
#undef TPU_ALGO

extern const tpu_algo_t tpu__algos[];
extern const int tpu__nalgos;

/*
 * The shared builder of the all-gather family (allgather_torus.c): a DCN phase
 * (direct exchange between slices) followed by one bidirectional ring (line on an
 * open axis) per ICI axis, for 'nord' axis orders with the data split between them
 * so that every axis carries the same load, each split into 'chunks' pipelined
 * chunks.  nord = 1 is the plain axis-by-axis schedule.
 */
tpu_status_t tpu__allgather_phases(const tpu_algo_args_t *args, int nord, tpu_sched_t *sched,
                                   tpu_err_t *err);

/* The most axis orders of the torus family: every permutation of three axes. */
#define TPU_MAX_ORDERS 6

/*
 * The ICI axes of 'mask' with two chips or more into 'axes' ('*d_p' of them) and
 * their axis orders into 'ord' (the d rotations first, then over three axes the
 * other three permutations), as indices into 'axes'; returns how many orders.
 */
int tpu__allgather_orders(const tpu_topo_t *topo, unsigned mask, int *axes, int *d_p,
                          int ord[][TPU_MAX_AXES]);
/*
 * The shares of the 'nord' orders that load every axis in proportion to its
 * bandwidth where the orders can (the linear program of allgather_torus.c:
 * minimise the most loaded axis); 'frac' gets TPU_MAX_ORDERS shares, at most d of
 * them above 0.  Returns the most loaded axis' load, or -1 if none is feasible.
 */
double tpu__allgather_balance(const tpu_topo_t *topo, const int *axes, int d, int nord,
                              int ord[][TPU_MAX_AXES], double *frac);
/*
 * Elements of order 'r' when 'done' of 'elems' are taken by the orders before it:
 * its share 'frac[r]' rounded, the rest for order 'last', none after it.
 */
int64_t tpu__allgather_part(int r, int last, const double *frac, int64_t elems, int64_t done);
/* Ring steps of axis 'axis': floor(n/2) when it wraps, n-1 when it is open. */
int tpu__allgather_steps(const tpu_topo_t *topo, int axis);

/*
 * Build the all-gather 'ag_fn' and write its time reversal, a reduce-scatter,
 * into 'sched'; with 'then_ag', append the all-gather after it (a psum).
 */
tpu_status_t tpu__reversed(const tpu_algo_args_t *args, tpu_algo_fn_t ag_fn, int then_ag,
                           tpu_sched_t *sched, tpu_err_t *err);

/* Is 'chip' in the domain of args->period (always, without a period)? */
int tpu__algo_in_domain(const tpu_algo_args_t *args, int chip);
/* The chip of the domain that stands for 'chip' (itself without a period). */
int tpu__algo_canon(const tpu_algo_args_t *args, int chip);
/* The same, and in '*refl_p' the axes along which the symmetry that maps 'chip' to
 * its stand-in reflects (a flow along such an axis runs the other way there). */
int tpu__algo_canon_refl(const tpu_algo_args_t *args, int chip, unsigned *refl_p);

/*
 * The groups a group algorithm works on (group_args.c): 'gr' is args->groups, or
 * for a request over whole axes the groups of args->mask, built into 'own'.
 * Release with tpu__algo_groups_fini() after success.
 */
typedef struct {
    const tpu_groups_t *gr;
    tpu_groups_t own;
} tpu_algo_groups_t;

tpu_status_t tpu__algo_groups(const tpu_algo_args_t *args, tpu_algo_groups_t *ag, tpu_err_t *err);
void tpu__algo_groups_fini(tpu_algo_groups_t *ag);

/*
 * The bidirectional ring all-gather of allgather_group_ring.c over 'gr', whose
 * groups list their chips in ring order: ring position k of a group holds block
 * blk[k] (the same for every group; NULL: block k).  Honours args->period and
 * args->local.  The group ring passes the plan's groups, the snake ring
 * (allgather_snake.c) the groups of the axes in snake order.
 */
tpu_status_t tpu__ring_allgather(const tpu_algo_args_t *args, const tpu_groups_t *gr,
                                 const int32_t *blk, tpu_sched_t *sched);

/* The flows from member i to member j of the group 'm' (a direct algorithm). */
typedef tpu_status_t (*tpu_algo_pair_fn_t)(const tpu_algo_args_t *args, tpu_sched_t *sched,
                                           const int32_t *m, int i, int j);

/*
 * A one-step, one-stream direct schedule: 'fn' for every ordered pair i != j of
 * members of every group whose sender is in the domain; '*size_p' is the group size.
 * With args->local, only the pairs whose sender or receiver is marked (a rank's own
 * part), in the same order.
 */
tpu_status_t tpu__algo_group_pairs(const tpu_algo_args_t *args, tpu_sched_t *sched,
                                   tpu_algo_pair_fn_t fn, int *size_p, tpu_err_t *err);

/* Keep block k of the input as block k of the output on every chip (a local copy). */
void tpu__algo_keep_own_block(tpu_sched_t *sched, int64_t blk);

/* Give 'sched' one stream whose working layout is the user's: block k (of 'nblocks',
 * 'block' bytes each) at k * block. */
tpu_status_t tpu__algo_user_layout(tpu_sched_t *sched, int64_t block, int nblocks);

/*
 * Add the direct flow of one args->shard block from chip 'src' (at 'src_off') to
 * chip 'dst' (at 'dst_off'): over DCN between slices, else over ICI; when the ICI
 * route (from src's twin in dst's slice) has an axis at the tie distance, the block
 * is split in two halves of whole elements that go both ways round.
 */
tpu_status_t tpu__algo_direct_block(const tpu_algo_args_t *args, tpu_sched_t *sched, int src,
                                    int dst, int64_t src_off, int64_t dst_off);

#endif /* TPU_ALGO_H */
