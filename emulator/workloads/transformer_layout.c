/*
 * The transformer's mesh layout (see transformer_layout.h): which axis each
 * name of a mesh spec is, and the checks, each one line naming the dimension
 * and the axis, that the batch, the heads, the MLP, the vocabulary, the
 * sequence and (fsdp) every parameter's rows divide over their axes.
 */
#include "transformer_layout.h"

#include "tpu/mesh.h"

#include "transformer_ops.h"

#include <stdio.h>
#include <string.h>

/* What the checks read: the model and the axes' sizes and names. */
typedef struct lay {
    const tpu_xfmr_config_t *model;
    const int *size;
    char (*name)[32];
} lay_t;

static const char *const axis_names[XFMR_NAXES] = {"dcn", "data", "fsdp", "sequence", "tensor"};

/* Which transformer axis a spec's name is, or an error naming it. */
static tpu_status_t axis_of(const char *name, int *a_p, tpu_err_t *err)
{
    int a;

    for (a = 0; a < XFMR_NAXES; a++) {
        if (strcmp(name, axis_names[a]) == 0) {
            *a_p = a;
            return TPU_OK;
        }
    }
    if (strcmp(name, "model") == 0) {
        *a_p = XFMR_AXIS_TENSOR;
        return TPU_OK;
    }
    return tpu_err_set(err, TPU_ERR_INVALID,
                       "transformer: unknown mesh axis '%s' (use dcn, data, fsdp, sequence, "
                       "tensor)",
                       name);
}

/* The batch over dcn x data x fsdp: "mesh axis data=4", "mesh axes data=2 x fsdp=2 (4)". */
static tpu_status_t check_batch(const lay_t *c, tpu_err_t *err)
{
    char axes[128];
    int a, n = 0, len = 0;
    int64_t prod = 1;

    for (a = 0; a < XFMR_NAXES; a++) {
        if ((XFMR_BATCH_AXES & (1 << a)) && c->size[a] > 1) {
            len += snprintf(axes + len, sizeof(axes) - (size_t)len, "%s%s=%d", n > 0 ? " x " : "",
                            c->name[a], c->size[a]);
            prod *= c->size[a];
            n++;
        }
    }
    if (c->model->batch >= 1 && c->model->batch % prod == 0) {
        return TPU_OK;
    }
    if (n > 1) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "transformer: batch %lld does not divide over mesh axes %s (%lld)",
                           (long long)c->model->batch, axes, (long long)prod);
    }
    return tpu_err_set(err, TPU_ERR_INVALID,
                       "transformer: batch %lld does not divide over mesh axis %s",
                       (long long)c->model->batch, n > 0 ? axes : "data=1");
}

/*
 * fsdp splits every parameter's block along its first dimension: that
 * dimension, after tensor (embed's vocab, wo's and w2's rows) and sequence
 * (pos), divides over fsdp; else one line naming the parameter.
 */
static tpu_status_t check_fsdp(const lay_t *c, tpu_err_t *err)
{
    const tpu_xfmr_config_t *m = c->model;
    const int np = tpu_xfmr_param_count(m), f = c->size[XFMR_AXIS_FSDP];
    const int t = c->size[XFMR_AXIS_TENSOR], s = c->size[XFMR_AXIS_SEQUENCE];
    int p;

    for (p = 0; p < np && f > 1; p++) {
        char name[TPU_XFMR_NAME_LEN], dim[96];
        int64_t shape[2], rows;
        int j = (p - 2) % XFMR_PER_LAYER, head = p < 2 || p >= np - 2;
        const char *base = p == XFMR_P_EMBED       ? "vocab"
                           : p == XFMR_P_POS       ? "seq"
                           : !head && j == XFMR_W2 ? "d_ff"
                                                   : "d_model";

        tpu_xfmr_param_info(m, p, name, shape);
        rows = shape[0];
        snprintf(dim, sizeof(dim), "%s", base);
        if ((p == XFMR_P_EMBED || (!head && (j == XFMR_WO || j == XFMR_W2))) && t > 1) {
            snprintf(dim, sizeof(dim), "%s / %s", base, c->name[XFMR_AXIS_TENSOR]);
            rows /= t;
        } else if (p == XFMR_P_POS && s > 1) {
            snprintf(dim, sizeof(dim), "seq / %s", c->name[XFMR_AXIS_SEQUENCE]);
            rows /= s;
        }
        if (rows % f != 0) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "transformer: parameter %s: its first dimension (%s = %lld rows) "
                               "does not divide over mesh axis %s=%d",
                               name, dim, (long long)rows, c->name[XFMR_AXIS_FSDP], f);
        }
    }
    return TPU_OK;
}

/* Every dimension the mesh splits divides by its axis. */
static tpu_status_t check_divides(const lay_t *c, tpu_err_t *err)
{
    const tpu_xfmr_config_t *m = c->model;
    const struct {
        const char *dim;
        int64_t n;
        int axis;
    } dims[] = {{"heads", m->heads, XFMR_AXIS_TENSOR},
                {"d_ff", m->d_ff, XFMR_AXIS_TENSOR},
                {"vocab", m->vocab, XFMR_AXIS_TENSOR},
                {"seq", m->seq, XFMR_AXIS_SEQUENCE}};
    size_t i;

    for (i = 0; i < sizeof(dims) / sizeof(dims[0]); i++) {
        int a = dims[i].axis;

        if (dims[i].n < 1 || dims[i].n % c->size[a] != 0) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "transformer: %s %lld does not divide over mesh axis %s=%d",
                               dims[i].dim, (long long)dims[i].n, c->name[a], c->size[a]);
        }
    }
    return check_fsdp(c, err);
}

tpu_status_t tpu__xfmr_layout_read(const char *spec, const tpu_xfmr_config_t *model,
                                   int size[XFMR_NAXES], int axis[XFMR_NAXES],
                                   char name[XFMR_NAXES][32], tpu_err_t *err)
{
    const lay_t lay = {model, size, name}, *c = &lay;
    char names[TPU_MESH_MAX_AXES][TPU_MESH_NAME_LEN];
    int sizes[TPU_MESH_MAX_AXES], n, k, a;
    tpu_status_t status = tpu_mesh_parse(spec, names, sizes, &n, err);

    for (a = 0; a < XFMR_NAXES; a++) {
        size[a] = 1;
        axis[a] = -1;
        snprintf(name[a], sizeof(name[a]), "%s", axis_names[a]);
    }
    for (k = 0; k < n && status == TPU_OK; k++) {
        status = axis_of(names[k], &a, err);
        if (status == TPU_OK && axis[a] >= 0) {
            status = tpu_err_set(err, TPU_ERR_INVALID,
                                 "transformer: mesh axes %s and %s are the same axis", c->name[a],
                                 names[k]);
        }
        if (status == TPU_OK) {
            axis[a] = k; /* the mesh's index, as the spec orders its axes */
            size[a] = sizes[k];
            snprintf(name[a], sizeof(name[a]), "%s", names[k]);
        }
    }
    status = status == TPU_OK ? check_batch(c, err) : status;
    return status == TPU_OK ? check_divides(c, err) : status;
}
