/*
 * Schedules: a collective as pure data.
 *
 * An algorithm turns (topology, axes, bytes, ...) into a tpu_sched_t: a list of
 * flows, each "chip 'src' sends the bytes 'span' of its send buffer to chip 'dst',
 * which copies (or adds) them into 'span' of its receive buffer at step 'step',
 * once the flows listed in its deps have arrived at 'src'".  The schedule covers
 * the whole pod (every group of the collective at once), so link sharing between
 * groups, and host NIC sharing over DCN, are counted from it like everything else.
 *
 * The pipeline is one way: plan.c validates a request and select.c picks an
 * algorithm of the registry, build.c builds its schedule, timing.c walks the
 * schedule through the link model (linkmodel.c) for its modeled time, and
 * exec.c runs it over a transport with real bytes, timing each send through the
 * same timing.c.  Nothing in a schedule depends on the transport, so the modeled
 * time cannot either.
 */
#ifndef TPU_SCHEDULE_H
#define TPU_SCHEDULE_H

#include "tpu/coll.h"
#include "tpu/topo.h"

#include <stdint.h>

/*
 * Byte ranges of a chip's buffer: 'count[0] * count[1] * count[2]' blocks of
 * 'len' bytes; block (i, j, k) starts at off + i*stride[0] + j*stride[1] + k*stride[2].
 * The destination uses the same pattern from 'dst_off'.
 */
typedef struct tpu_span {
    int64_t off;
    int64_t dst_off;
    int64_t len;
    int64_t stride[3];
    int32_t count[3];
} tpu_span_t;

/* How a flow travels. */
enum {
    TPU_ROUTE_ICI = 0, /* a minimal ICI route in one slice; 'order' and 'tie' choose it */
    TPU_ROUTE_DCN = 1  /* over DCN to the chip with the same coordinates in dst's slice */
};

typedef struct tpu_flow {
    int32_t src;       /* chip id */
    int32_t dst;       /* chip id */
    int32_t step;      /* flows of one step share links; steps run in order */
    int32_t dep_first; /* index of the first dependency in sched->deps (flows may share a
                        * list: a psum's gather flows from one chip, tpu__sched_concat()) */
    int32_t ndeps;     /* number of dependencies (flows that must arrive at src first) */
    int32_t stream;    /* the pipeline stream (ordering x chunk) the flow belongs to */
    uint8_t reduce;    /* 1: dst adds into its buffer; 0: dst copies */
    uint8_t kind;      /* TPU_ROUTE_ICI or TPU_ROUTE_DCN */
    uint8_t order;     /* axis order of the ICI route: index into tpu__axis_orders */
    int8_t tie;        /* direction taken by axes at the tie distance: +1 or -1 */
    tpu_span_t span;
} tpu_flow_t;

/* A local copy done by every chip before the flows start (e.g. its own block). */
typedef struct tpu_copy {
    int64_t src_off;
    int64_t dst_off;
    int64_t len;
} tpu_copy_t;

/*
 * The working layout of one stream of the all-gather family.  A stream carries
 * the part [sub_off, sub_off + sub_len) of every block.  In the working buffer
 * the stream owns [base, base + blocks * sub_len), and there block g sits at
 *     base + w(g) * sub_len,   w(g) = d0 + n0 * (d1 + n1 * (d2 + ...)),
 * where the digits d_i are g's coordinates on the stream's axes in the order of
 * its phases (DCN first, then its axis order).  The axes a phase has gathered
 * are then the fastest digits, so every piece a chip forwards is one
 * contiguous range: no strided message, no staging copy.  The executor permutes
 * between the user's layout (block g at g * shard) and this one at the start
 * and the end of a run.
 */
typedef struct tpu_layout {
    int64_t base;
    int64_t sub_off;
    int64_t sub_len;
    int ndigits;
    int32_t n[TPU_MAX_AXES + 1];       /* digit sizes, fastest first */
    int64_t gstride[TPU_MAX_AXES + 1]; /* stride of each digit in the group index */
} tpu_layout_t;

typedef struct tpu_sched {
    tpu_flow_t *flows; /* sorted by step, then src */
    int64_t nflows;
    int64_t cap_flows;
    int32_t *deps;
    int64_t ndeps;
    int64_t cap_deps;
    int32_t nsteps;
    int32_t nstreams;
    int shared_deps; /* 1: some flows share a dependency list (tpu__sched_concat()) */
    /* Per-chip preparation: copy [src_off, +len) of the send buffer into the receive
     * buffer at dst_off.  Offsets are relative to the chip's own group position: the
     * executor adds copy_shift * (index of the chip in its group) to both. */
    tpu_copy_t local[2];
    int nlocal;
    int64_t local_src_shift;
    int64_t local_dst_shift;
    /* 0, or the first step of a second collective that starts once the first has
     * ended on every chip (a psum's all-gather after its reduce-scatter): the walk
     * starts no flow of it before every flow of the steps before has arrived. */
    int32_t barrier;
    tpu_layout_t *layout; /* one per stream for the all-gather family, else NULL */
    int nlayout;
    char algo[64]; /* "torus chunks=2" */
} tpu_sched_t;

/* A built schedule with its step index. */
/*
 * Per chip, the latest arrival at or from it in the first walk of a model
 * schedule (timing.c; an O(chips) table): the walk that the selector does with the
 * plan's own link constants, kept so that a run object (exec.c) reads its chips'
 * ends instead of walking every flow again.  The same maxima of the same doubles:
 * bit for bit what a second walk gives.
 */
typedef struct tpu_chip_ends {
    int filled;    /* 0 until the first walk without an observer has written it */
    double chain;  /* that walk's longest chain of latencies (added once), */
    double launch; /* and its launch cost (added once, after it, as the walk does) */
    double end[];  /* per chip: when the bytes of the flows it sends or receives are through */
} tpu_chip_ends_t;

typedef struct tpu_plan_sched {
    tpu_sched_t s;
    int64_t *step_start;      /* flows of step s are [step_start[s], step_start[s+1]) */
    int rep;                  /* representative chip (link-class timing), or -1: every chip */
    int orbit;                /* 1: the flows of the chips of a domain only (orbit timing): */
    int period[TPU_MAX_AXES]; /* coordinates below period[a] on every axis, */
    unsigned reflect;         /* and below dims[a] / 2 on these (folded) axes */
    int lines;                /* 1: no flows, the line form of lines.c (direct flows) of: */
    unsigned lines_mask;      /* its axes, */
    int64_t lines_blk;        /* its block bytes, */
    int64_t lines_elem;       /* and its element bytes */
    int lines_form;           /* which schedule the lines stand for (lines.h, TPU_LINES_*) */
    int bound;                /* 1: no flows, the tree's bound form (tree_bound.c) of: */
    int bound_halves;         /* 1, or 2 for a psum (reduce-scatter, then all-gather), */
    int bound_hops;           /* the farthest chip's hops in one half, */
    int64_t bound_half[TPU_MAX_AXES]; /* per axis: its busiest link's bytes in one half, */
    int64_t bound_link[TPU_MAX_AXES]; /* and in the whole collective, */
    int64_t bound_flows;              /* and the flows of the whole pod it stands for */
    tpu_chip_ends_t *ends; /* every-chip and orbit model schedules: per-chip ends, or NULL */
    int64_t *repeat;       /* NULL, or per step of s how many times it runs, each time on
                            * the flows of its previous run (a ring's compact form,
                            * timing_repeat.c) */
} tpu_plan_sched_t;

/* Permutations of (0, 1, 2), the axis orders a route can take; index 0 is x, y, z. */
extern const int tpu__axis_orders[6][3];
/* The index of 'order' (naxes entries, the rest completed in increasing order). */
int tpu__axis_order_index(const int *order, int naxes);

void tpu__sched_init(tpu_sched_t *sched);
void tpu__sched_fini(tpu_sched_t *sched);
/* Make room for 'nflows' more flows and 'ndeps' more dependencies. */
tpu_status_t tpu__sched_reserve(tpu_sched_t *sched, int64_t nflows, int64_t ndeps);
/* Append a flow; returns its index, or -1 when out of memory. */
int64_t tpu__sched_add(tpu_sched_t *sched, const tpu_flow_t *flow);
/* Append 'n' dependencies to flow 'f' (which must be the last flow added). */
tpu_status_t tpu__sched_add_deps(tpu_sched_t *sched, int64_t f, const int32_t *deps, int n);
/* Sort flows by (step, src, dst) and renumber dependencies. */
tpu_status_t tpu__sched_sort(tpu_sched_t *sched);
/*
 * Turn the all-gather 'ag' (whose flows share no dependency list) into the
 * reduce-scatter that is its time reversal
 * (each flow runs backwards, reducing, and depends on the flows that depended on
 * it), written in step order.  Writes a new schedule into 'rs', with room for
 * 'room' more flows (a concatenation to come) so that they are added without a copy.
 */
tpu_status_t tpu__sched_reverse(const tpu_sched_t *ag, tpu_sched_t *rs, int64_t room);
/* The same reversal done in place in 's' (its flows are not copied). */
tpu_status_t tpu__sched_reverse_in_place(tpu_sched_t *s);
/*
 * Append 'second' after 'first' (in place in 'first').  Flows of 'second' without
 * dependencies are made to depend on the flows of 'first' that arrived at their
 * src in the same stream.  With 'local' (a rank's part: chips marked 1), only the
 * flows that start on a marked chip get them: a flow from another chip lost its
 * dependencies when the part was built (they are that chip's), and only a send
 * waits for its dependencies (exec_engine.c).  Without this, every flow into a chip
 * would depend on all the first part's flows into its sender: N^2 dependencies
 * for the tree psum's part on N chips.  The flows of 'second' from one chip and
 * stream share one list (a direct psum over groups of G: one list of G - 1 for
 * the G - 1 gather flows of a chip, not G - 1 copies).
 */
tpu_status_t tpu__sched_concat(tpu_sched_t *first, const tpu_sched_t *second, const uint8_t *local);

/* Where block 'g' of stream 'l' sits in the working buffer. */
static inline int64_t tpu__layout_offset(const tpu_layout_t *l, int64_t g)
{
    int64_t w = 0, scale = 1;
    int i;

    for (i = 0; i < l->ndigits; i++) {
        w += ((g / l->gstride[i]) % l->n[i]) * scale;
        scale *= l->n[i];
    }
    return l->base + w * l->sub_len;
}

/* Index the steps of 'ps->s' into 'ps->step_start'. */
tpu_status_t tpu__plan_sched_index(tpu_plan_sched_t *ps);
/* Free the schedule and its index (safe on a zeroed or freed one). */
void tpu__plan_sched_fini(tpu_plan_sched_t *ps);

/* Copy the layout table of 'from' into 'to'. */
tpu_status_t tpu__sched_copy_layout(tpu_sched_t *to, const tpu_sched_t *from);

/* Total bytes of a span. */
static inline int64_t tpu__span_bytes(const tpu_span_t *s)
{
    return s->len * s->count[0] * s->count[1] * s->count[2];
}

#endif /* TPU_SCHEDULE_H */
