/*
 * The transformer on a pod (tpu/transformer_pod.h): the public wrapper of the
 * private comm layer (transformer_comm.c) for the command line: the local
 * chips' models made from their shard views, a step of all of them, and the
 * log of collectives as rows of names.
 */
#include "tpu/transformer_pod.h"

#include "alloc.h"
#include "transformer_comm.h"

#include <string.h>

struct tpu_xfmr_pod {
    xfmr_comm_t c;
    tpu_xfmr_t **xfs;        /* [nlocal] */
    tpu_xfmr_report_t *reps; /* [nlocal] */
    int nxfs;
};

tpu_status_t tpu_xfmr_pod_create(const tpu_pod_t *pod, tpu_xport_t *x, const char *mesh,
                                 const tpu_xfmr_config_t *model, const tpu_spmd_opts_t *opts,
                                 tpu_xfmr_pod_t **p_p, tpu_err_t *err)
{
    tpu_xfmr_pod_t *p = tpu__calloc(1, sizeof(*p));
    tpu_status_t status;
    int i;

    *p_p = NULL;
    if (p == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "transformer: no memory for the pod");
    }
    status = tpu__xfmr_comm_init(&p->c, tpu_pod_topo(pod), tpu_pod_link(pod), tpu_pod_chip(pod), x,
                                 mesh, model, opts, err);
    if (status != TPU_OK) {
        tpu__free(p);
        return status;
    }
    p->xfs = tpu__calloc((size_t)p->c.nlocal, sizeof(*p->xfs));
    p->reps = tpu__calloc((size_t)p->c.nlocal, sizeof(*p->reps));
    if (p->xfs == NULL || p->reps == NULL) {
        status =
            tpu_err_set(err, TPU_ERR_NO_MEMORY, "transformer: no memory for %d chips", p->c.nlocal);
    }
    for (i = 0; status == TPU_OK && i < p->c.nlocal; i++) {
        status =
            tpu_xfmr_create(tpu__xfmr_comm_config(&p->c, i), tpu_pod_chip(pod), &p->xfs[i], err);
        p->nxfs += status == TPU_OK;
    }
    if (status != TPU_OK) {
        tpu_xfmr_pod_destroy(p);
        return status;
    }
    *p_p = p;
    return TPU_OK;
}

void tpu_xfmr_pod_destroy(tpu_xfmr_pod_t *p)
{
    int i;

    if (p == NULL) {
        return;
    }
    for (i = 0; i < p->nxfs; i++) {
        tpu_xfmr_destroy(p->xfs[i]);
    }
    tpu__free(p->xfs);
    tpu__free(p->reps);
    tpu__xfmr_comm_fini(&p->c);
    tpu__free(p);
}

int tpu_xfmr_pod_nlocal(const tpu_xfmr_pod_t *p)
{
    return p->c.nlocal;
}

tpu_xfmr_t *tpu_xfmr_pod_chip(tpu_xfmr_pod_t *p, int i)
{
    return i >= 0 && i < p->nxfs ? p->xfs[i] : NULL;
}

int tpu_xfmr_pod_chip_id(const tpu_xfmr_pod_t *p, int i)
{
    return i >= 0 && i < p->c.nlocal ? p->c.chips[i].chip : -1;
}

void tpu_xfmr_pod_mesh(const tpu_xfmr_pod_t *p, int *data, int *sequence, int *tensor)
{
    *data = p->c.size[XFMR_AXIS_DATA];
    *sequence = p->c.size[XFMR_AXIS_SEQUENCE];
    *tensor = p->c.size[XFMR_AXIS_TENSOR];
}

int tpu_xfmr_pod_axis(const tpu_xfmr_pod_t *p, const char *name)
{
    static const struct {
        const char *name;
        int axis;
    } axes[] = {{"dcn", XFMR_AXIS_DCN},
                {"data", XFMR_AXIS_DATA},
                {"fsdp", XFMR_AXIS_FSDP},
                {"sequence", XFMR_AXIS_SEQUENCE},
                {"tensor", XFMR_AXIS_TENSOR}};
    size_t k;

    for (k = 0; k < sizeof(axes) / sizeof(axes[0]); k++) {
        if (strcmp(name, axes[k].name) == 0) {
            return p->c.size[axes[k].axis];
        }
    }
    return 0;
}

int tpu_xfmr_pod_piece(tpu_xfmr_pod_t *p, int i, int *piece_p, uint64_t *hash_p)
{
    const int *k;
    uint64_t h = 1469598103934665603ull;
    int q, np;

    if (i < 0 || i >= p->nxfs) {
        return -1;
    }
    k = p->c.chips[i].coord;
    *piece_p = (k[XFMR_AXIS_FSDP] * p->c.size[XFMR_AXIS_SEQUENCE] + k[XFMR_AXIS_SEQUENCE]) *
                   p->c.size[XFMR_AXIS_TENSOR] +
               k[XFMR_AXIS_TENSOR];
    np = tpu_xfmr_param_count(tpu_xfmr_config(p->xfs[i]));
    for (q = 0; q < np; q++) {
        int64_t shape[2];
        const unsigned char *b = (const unsigned char *)tpu_xfmr_param(p->xfs[i], q, shape);
        size_t n, len = (size_t)(shape[0] * shape[1]) * sizeof(float);

        for (n = 0; n < len; n++) {
            h = (h ^ b[n]) * 1099511628211ull;
        }
    }
    *hash_p = h;
    return 0;
}

tpu_status_t tpu_xfmr_pod_step(tpu_xfmr_pod_t *p, const int32_t *x, const int32_t *y, double lr,
                               tpu_xfmr_report_t *rep_p, tpu_err_t *err)
{
    tpu_status_t status;

    tpu__xfmr_comm_log_clear(&p->c);
    status = tpu__xfmr_comm_step(&p->c, p->xfs, x, y, lr, p->reps, err);
    if (status == TPU_OK && rep_p != NULL) {
        *rep_p = p->reps[0];
    }
    return status;
}

int tpu_xfmr_pod_shard(const tpu_xfmr_pod_t *p, int i, int64_t *row0_p, int64_t *rows_p,
                       int64_t *col0_p, int64_t *cols_p)
{
    if (i < 0 || i >= p->nxfs) {
        return -1;
    }
    tpu__xfmr_comm_window(&p->c, i, row0_p, rows_p, col0_p, cols_p);
    return 0;
}

typedef struct shards_arg {
    tpu_xfmr_pod_t *p;
    const int32_t *const *x, *const *y;
    double lr;
} shards_arg_t;

/* Local chip i's step on its own window. */
static tpu_status_t step_shard(void *arg, int i, tpu_err_t *err)
{
    shards_arg_t *s = arg;

    return tpu_xfmr_step(s->p->xfs[i], s->x[i], s->y[i], s->lr, &s->p->reps[i], err);
}

tpu_status_t tpu_xfmr_pod_step_shards(tpu_xfmr_pod_t *p, const int32_t *const *x,
                                      const int32_t *const *y, double lr, tpu_xfmr_report_t *rep_p,
                                      tpu_err_t *err)
{
    shards_arg_t s = {p, x, y, lr};
    tpu_status_t status;

    tpu__xfmr_comm_log_clear(&p->c);
    status = tpu__xfmr_comm_run(&p->c, step_shard, &s, err);
    if (status == TPU_OK && rep_p != NULL) {
        *rep_p = p->reps[0];
    }
    return status;
}

int64_t tpu_xfmr_pod_colls(const tpu_xfmr_pod_t *p)
{
    return tpu__xfmr_comm_log_count(&p->c);
}

void tpu_xfmr_pod_coll(const tpu_xfmr_pod_t *p, int64_t k, tpu_xfmr_coll_t *row)
{
    const xfmr_comm_entry_t *e = tpu__xfmr_comm_log_at(&p->c, k);

    memset(row, 0, sizeof(*row));
    if (e == NULL) {
        return;
    }
    row->hook = tpu_xfmr_hook_name(e->hook);
    row->index = e->index;
    row->kind = tpu_coll_name(e->kind);
    row->op = tpu_redop_name(e->op);
    row->axes = e->axes_name;
    row->group_size = e->group_size;
    row->bytes = e->bytes;
    row->modeled_us = e->modeled_us;
    row->algorithm = e->algorithm;
}
