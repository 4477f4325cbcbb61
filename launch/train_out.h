/*
 * A training step in words and in JSON (train, and the default run's step).
 * Private to launch/.
 */
#ifndef APP_TRAIN_OUT_H
#define APP_TRAIN_OUT_H

#include "tpu/mlp.h"
#include "tpu/pod.h"

#include "json.h"
#include "sink.h"

#include <stdint.h>
#include <stdio.h>

/* A number, or null when it is not finite (a diverged loss); 'key' NULL: an array item. */
void app_train_json_num(app_json_t *j, const char *key, double v);
/* Bytes up to GiB for a step's tables: one decimal for KiB, two above. */
void app_train_fmt_bytes(double b, char *buf, size_t len);

/* The members a step's "collectives" row may have (docs/output.md), in no order. */
typedef enum app_train_coll_key {
    APP_TRAIN_COLL_END, /* ends a list of keys */
    APP_TRAIN_COLL_NAME,
    APP_TRAIN_COLL_COLLECTIVE,
    APP_TRAIN_COLL_MESH_AXIS,
    APP_TRAIN_COLL_AXES,
    APP_TRAIN_COLL_GROUPS,
    APP_TRAIN_COLL_GROUP_SIZE,
    APP_TRAIN_COLL_GROUP_COUNT,
    APP_TRAIN_COLL_BYTES,
    APP_TRAIN_COLL_COUNT,
    APP_TRAIN_COLL_MODELED_US,
    APP_TRAIN_COLL_TOTAL_US, /* modeled_us x count */
    APP_TRAIN_COLL_OVERLAPPED,
    APP_TRAIN_COLL_EXPOSED, /* !overlapped */
    APP_TRAIN_COLL_ALGORITHM
} app_train_coll_key_t;

/* One collective of a step (the MLP's or the transformer's), borrowed for one write. */
typedef struct app_train_coll_row {
    const char *name;       /* what it is for: "loss", "grad w2,b2", a hook */
    const char *collective; /* psum, pmax, all-gather, ... */
    const char *mesh_axis;
    const char *axes;   /* the torus axes it runs over */
    const char *groups; /* the groups' chip ids */
    const char *algorithm;
    int group_size;
    int group_count;
    int count; /* calls per step */
    uint64_t bytes;
    double modeled_us; /* one call */
    int overlapped;    /* hidden behind compute */
} app_train_coll_row_t;

/*
 * One row of a step's "collectives" array: an object of the members 'keys'
 * names, in its order (the list ended by APP_TRAIN_COLL_END).
 */
void app_train_json_coll(app_json_t *j, const app_train_coll_key_t *keys,
                         const app_train_coll_row_t *c);

/* The collectives of a step, as a table. */
void app_train_print_colls(FILE *txt, const tpu_mlp_report_t *r);
/* The cost split of a step, in words ('capacity': the chip's HBM bytes). */
void app_train_print_split(FILE *txt, const tpu_mlp_report_t *r, uint64_t capacity);
/* The cost members of a step report, into the object being written. */
void app_train_json_report(app_json_t *j, const tpu_mlp_report_t *r);

/* The transport line and the pod's faults (train's header). */
void app_train_print_transport(FILE *txt, const tpu_pod_t *pod, int model_only, int mpi);

/*
 * The end of a train run's output files (the MLP's and the transformer's): after
 * a failure ('failed') both are discarded, so the files that were there stay as
 * they were; otherwise each is closed (renamed into place) and a failed close
 * is one line and APP_EXIT_OUTPUT.  Returns the exit code ('code' unless a close
 * failed).
 */
int app_train_close_sinks(app_sink_t *json, app_sink_t *csv, int failed, int code);

#endif /* APP_TRAIN_OUT_H */
