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

/*
 * The two forms of a step's "collectives" rows (docs/output.md): the MLP's
 * (name, collective, mesh_axis, axes, groups, group_size, bytes, modeled_us,
 * overlapped, algorithm) and the transformer's, whose rows are each a number of
 * calls (name, collective, mesh_axis, axes, group_size, groups, group_count,
 * bytes, count, modeled_us, total_us, exposed, algorithm).
 */
typedef enum app_train_row_form {
    APP_TRAIN_ROW_MLP,
    APP_TRAIN_ROW_XFMR
} app_train_row_form_t;

/* One collective of a step (the MLP's or the transformer's), borrowed for one write. */
typedef struct app_train_coll_row {
    const char *name;       /* what it is for: "loss", "grad w2,b2", a hook */
    const char *collective; /* psum, pmax, all-gather, ... */
    const char *mesh_axis;
    const char *axes;   /* the torus axes it runs over */
    const char *groups; /* the groups' chip ids */
    const char *algorithm;
    int group_size;
    int group_count; /* the transformer's form only */
    int count;       /* calls per step: the transformer's form only */
    uint64_t bytes;
    double modeled_us; /* one call */
    int overlapped;    /* hidden behind compute */
} app_train_coll_row_t;

/* One row of a step's "collectives" array, in the members of 'form'. */
void app_train_json_coll(app_json_t *j, const app_train_coll_row_t *c, app_train_row_form_t form);

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
