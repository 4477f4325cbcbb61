/*
 * The link model: how long the flows of a schedule take.  See linkmodel.c (the
 * resources, a step's timing), linkmodel_busy.c (busy intervals),
 * linkmodel_share.c (processor sharing), linkmodel_starts.c (message starts),
 * linkmodel_loads.c (the loads of line timing).
 */
#ifndef TPU_LINKMODEL_H
#define TPU_LINKMODEL_H

#include "tpu/coll.h"
#include "tpu/topo.h"

#include "schedule.h"

/* One (flow, resource) crossing of the current step on a resource whose flows do not
 * all start together with the same bytes (see linkmodel.c, processor sharing). */
typedef struct tpu_lm_entry {
    int32_t res; /* the resource */
    int32_t k;   /* the flow, as its index in the step */
    double st;   /* the flow's start */
    double end;  /* when its bytes are through there (share()) */
    double m;    /* copies of the flow it stands for (hops in the class, or 1) */
    double rem;  /* seconds of the resource one copy needs at full bandwidth (share(): its tag) */
} tpu_lm_entry_t;

/* A flow of the current step as its port's DMA engine sees it (engine_starts()). */
typedef struct tpu_lm_batch {
    int32_t eng; /* the engine: eng0 + the flow's port */
    double st;   /* when its data is ready, in real time */
    int64_t k;   /* the flow, as its index in the step */
} tpu_lm_batch_t;

typedef struct tpu_linkmodel {
    const tpu_topo_t *topo;
    tpu_link_model_t link;
    int classes;            /* 1: ICI resources are link classes (axis, direction) */
    int32_t *orbit;         /* orbit mode: link -> the link that stands for its orbit, or NULL */
    int32_t *orbit_chip;    /* orbit mode: chip -> the chip of the domain that stands for it */
    int32_t *route_scratch; /* with failed links: the search of tpu_faults_route(), or NULL */
    int16_t *xyz;           /* per chip: its coordinates (TPU_MAX_AXES each), counted once */
    int nres;               /* ICI links (or classes), host ports, host NICs, VPUs */
    int port0;              /* first chip host port (PCIe; 2 per chip: out, in) */
    int nic0;               /* first host NIC (2 per host: out, in) */
    int vpu0;               /* first VPU (one per chip; one in representative mode) */
    int eng0;               /* first DMA engine: eng0 + r starts the messages of port r */
    tpu_lm_batch_t *batch;  /* scratch: the step's flows by (engine, start, flow) */
    int64_t cap_batch;
    tpu_lm_batch_t *batch2; /* sort_batches(): the other buffer, */
    int64_t cap_batch2;
    int64_t *eslot;  /* per resource: its count, then its place */
    int32_t *estamp; /* per resource: the sort that last saw it */
    int32_t ebatch_id;
    int32_t *engs;   /* the engines of the step, sorted (then the sort's room), */
    int64_t *bgroup; /* and where each one's group starts (one more) */
    int64_t cap_engs;
    double *bw;      /* bytes/s of each resource (0: not modeled) */
    double *free;    /* when each resource has drained what it was given so far */
    double *iv;      /* per resource: room for TPU_LM_IV_INLINE busy intervals (a, b) */
    double **ivx;    /* per resource: its intervals on the heap when more, or NULL */
    int32_t *niv;    /* per resource: how many */
    int32_t *civ;    /* per resource: room for how many on the heap */
    int32_t *ivhint; /* per resource: where its last search landed (a hint) */
    double *ivend;   /* per resource: the end of its last interval (read while niv > 0): the
                      * walk's most common question, answered from one dense array */
    double *busy;    /* total busy seconds of each resource */
    double *bytes;   /* total bytes of each resource */
    /* Scratch of the current step, per resource: */
    double *sum, *s0, *e0, *nfree; /* s0, e0: the first flow's start and bytes there */
    int32_t *stamp;
    uint8_t *mixed; /* 1: its flows do not all start together with the same bytes */
    int32_t *touched;
    int ntouched, step_id, any_mixed;
    /* Scratch per flow of the current step: */
    double *st, *lat, *md;
    double *wait; /* per flow: how long its start waited for its DMA engine */
    int64_t cap_step;
    tpu_lm_entry_t *ent;
    int64_t nent, cap_ent;
    tpu_lm_entry_t *ent2; /* the entries grouped by resource (sort_entries()) */
    int64_t *bstart;      /* and where each group starts */
    int32_t *slot;        /* per resource: its group (valid while mixed[r] is 2) */
    int64_t cap_ent2, cap_bstart;
    int32_t *rres; /* one flow's resources (route order, the port first) */
    double *rw;    /* and the bytes it puts on each */
    /* The resources of every flow of the current step, found once: flow k's are
     * [roff[k], roff[k + 1]) of sres / sw. */
    int64_t *roff;
    int32_t *sres;
    double *sw;
    int64_t cap_sres;
    int64_t *act; /* share(): the entries being served */
    double *segs; /* share(): the intervals served */
    int64_t cap_act, cap_segs;
    void *sortbuf; /* tpu__linkmodel_sort_group(): the merge's other buffer (bytes), */
    int64_t *runs; /* and where the runs start */
    int64_t cap_sortbuf, cap_runs;
    /* Line timing (lines.c): per resource, the sizes of the step's messages (smallest
     * first) and their bytes, TPU_LM_SIZES pairs; how many. */
    double *szl;
    uint8_t *nsz;
} tpu_linkmodel_t;

/* The most message sizes line timing tells apart on one resource (a block and its
 * two tie halves). */
#define TPU_LM_SIZES 3

/* Busy intervals a resource keeps in place; more go to the heap (none is dropped). */
#define TPU_LM_IV_INLINE 8

/*
 * 'classes' selects the representative mode: the schedule holds the flows of one
 * chip of a translation-invariant pod, and every link of a class (axis,
 * direction) carries the same load, the sum over the representative's flows of
 * bytes times the hops its route makes in that class.
 */
tpu_status_t tpu__linkmodel_init(tpu_linkmodel_t *lm, const tpu_topo_t *topo,
                                 const tpu_link_model_t *link, int classes);
void tpu__linkmodel_fini(tpu_linkmodel_t *lm);

/*
 * Orbit mode (after init with classes 0): the schedule holds the flows of the
 * chips whose coordinates are below 'period' on every axis, a fundamental domain
 * of the torus translations by multiples of 'period' that map the schedule onto
 * itself (group algorithms over symmetric groups, see tpu_groups_period(); on an
 * open axis, groups that repeat within windows of the period, plan.c).  Every
 * link then stands for its orbit under those translations: a flow's bytes on a
 * link are counted on the link of the orbit whose source chip is in the domain,
 * which adds up exactly what the full schedule puts on each link of the orbit,
 * so every time comes out bit for bit as in the full schedule.  ICI only.
 */
tpu_status_t tpu__linkmodel_set_orbits(tpu_linkmodel_t *lm, const int *period, unsigned reflect);

/*
 * Time the 'n' flows of one step ('flows'): start[k] holds when flow k's data is
 * at its source (the latest arrival of the flows it depends on) and receives when
 * it starts.  With 'lat' NULL (the link timer), arrival[k] receives when it is
 * usable at its destination, hop latency included, and its start waits for its
 * DMA engine.  With 'lat' (the walk of timing.c), times are those of the bytes
 * alone: arrival[k] receives when its bytes are through, lat[k] its latency (hops,
 * reduction, and what its start waited for its engine beyond its link), and
 * off[k] (or NULL for none) is the latency of its chain so far, which places its
 * start in real time for the engine.
 * @return TPU_OK or TPU_ERR_NO_MEMORY (no message).
 */
tpu_status_t tpu__linkmodel_step(tpu_linkmodel_t *lm, const tpu_flow_t *flows, int64_t n,
                                 double *start, double *arrival, double *lat, const double *off);

/*
 * The resources of flow 'f' into lm->rres / lm->rw, port first, and its latency
 * into '*lat_p'; returns how many (0: the flow moves nothing).
 */
int tpu__linkmodel_flow_resources(tpu_linkmodel_t *lm, const tpu_flow_t *f, double *lat_p);

/* The first resource of flow 'f' (its port), or -1 when it moves nothing. */
int tpu__linkmodel_port(tpu_linkmodel_t *lm, const tpu_flow_t *f);

/* The per-axis statistics of the whole schedule, given its modeled time. */
void tpu__linkmodel_stats(const tpu_linkmodel_t *lm, double total_s, tpu_coll_result_t *res);

/*
 * For observers (timing.c): the resources flow 'f' loads.  Writes its directed ICI
 * link ids in the order crossed into 'links' (room for 'cap') and returns how
 * many; '*src_host_p' and '*dst_host_p' are the hosts whose NICs it uses over
 * DCN, else -1.  In representative mode the links are those of the
 * representative's own flow.
 */
int tpu__linkmodel_flow_links(const tpu_linkmodel_t *lm, const tpu_flow_t *f, int32_t *links,
                              int cap, int *src_host_p, int *dst_host_p);
/* The bandwidth of resource 'r' in bytes/s. */
double tpu__linkmodel_bw(const tpu_linkmodel_t *lm, int r);

#endif /* TPU_LINKMODEL_H */
