/*
 * The emulated pod: resolve a tpu_pod_spec_t into a chip, a torus and a link
 * model, with the same checks (and messages) the tpuemu command line gives.
 *
 * Steps: shape text or dims -> chip (custom, preset, or the default for the
 * number of axes) -> the shape must have no more axes than the chip's torus and
 * fit its largest pod (sorted sides against sorted sides) -> wrap (auto: the
 * chip's slice rules) -> topology with the slices -> link overrides -> chip check
 * -> link model -> its faults.  No cost: it runs once per job.
 */
#include "tpu/pod.h"

#include "tpu/calibration.h"

#include "alloc.h"

#include <stdio.h>
#include <string.h>

struct tpu_pod {
    tpu_chip_spec_t chip;
    tpu_topo_t topo;
    tpu_link_model_t link;
    tpu_faults_t *faults; /* NULL: none */
    char shape[64];
    char wrap[32];
    int wrap_auto;
    int calibrated; /* the link model carries the chip's calibration profile */
};

void tpu_pod_spec_init(tpu_pod_spec_t *spec)
{
    memset(spec, 0, sizeof(*spec));
    spec->ici_bw = -1;
    spec->ici_latency = -1;
    spec->dcn_bw = -1;
    spec->dcn_latency = -1;
    spec->msg_cost = -1;
    spec->pcie_bw = -1;
    spec->nic_bw = -1;
    spec->reduce_bw = -1;
}

/* Sort 'v' (TPU_MAX_AXES ints) largest first. */
static void sort_desc(int *v)
{
    int i, j;

    for (i = 0; i < TPU_MAX_AXES; i++) {
        for (j = i + 1; j < TPU_MAX_AXES; j++) {
            if (v[j] > v[i]) {
                int t = v[i];

                v[i] = v[j];
                v[j] = t;
            }
        }
    }
}

/* Does a slice of 'dims' fit the chip's largest pod (in any orientation)? */
static tpu_status_t check_fits(const tpu_chip_spec_t *chip, const char *shape, int naxes,
                               const int *dims, tpu_err_t *err)
{
    int sd[TPU_MAX_AXES], sm[TPU_MAX_AXES], i;

    if (naxes > chip->ici_axes) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "topology %s has %d axes, but %s chips form a %dD torus", shape, naxes,
                           chip->name, chip->ici_axes);
    }
    for (i = 0; i < TPU_MAX_AXES; i++) {
        sd[i] = i < naxes ? dims[i] : 1;
        sm[i] = chip->max_pod[i] > 0 ? chip->max_pod[i] : 1;
    }
    sort_desc(sd);
    sort_desc(sm);
    for (i = 0; i < TPU_MAX_AXES; i++) {
        if (sd[i] > sm[i]) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "topology %s does not fit a %s pod (at most %dx%dx%d)", shape,
                               chip->name, chip->max_pod[0], chip->max_pod[1], chip->max_pod[2]);
        }
    }
    return TPU_OK;
}

/* The shape of the spec: parsed text, or the dims given (as text for messages). */
static tpu_status_t spec_shape(const tpu_pod_spec_t *spec, int *dims, int *naxes_p, char *text,
                               size_t len, tpu_err_t *err)
{
    int a, used = 0;

    if (spec->shape != NULL || spec->naxes <= 0) {
        snprintf(text, len, "%s", spec->shape != NULL ? spec->shape : "4x4");
        return tpu_topo_parse_shape(text, dims, naxes_p, err);
    }
    if (spec->naxes > TPU_MAX_AXES) {
        return tpu_err_set(err, TPU_ERR_INVALID, "a pod has at most %d axes, got %d", TPU_MAX_AXES,
                           spec->naxes);
    }
    text[0] = '\0';
    for (a = 0; a < spec->naxes; a++) {
        if (spec->dims[a] < 1) {
            return tpu_err_set(err, TPU_ERR_INVALID, "axis %d of the pod has %d chips", a,
                               spec->dims[a]);
        }
        dims[a] = spec->dims[a];
        used += snprintf(text + used, len - (size_t)used, "%s%d", a ? "x" : "", dims[a]);
    }
    *naxes_p = spec->naxes;
    return TPU_OK;
}

tpu_status_t tpu_pod_create(const tpu_pod_spec_t *spec, tpu_pod_t **pod_p, tpu_err_t *err)
{
    tpu_pod_t *pod;
    int dims[TPU_MAX_AXES], w[TPU_MAX_AXES], naxes;
    char shape[64];
    tpu_status_t status;

    *pod_p = NULL;
    pod = tpu__calloc(1, sizeof(*pod));
    if (pod == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for a pod");
    }
    status = spec_shape(spec, dims, &naxes, shape, sizeof(shape), err);
    if (status != TPU_OK) {
        goto fail;
    }
    if (spec->chip_spec != NULL) {
        pod->chip = *spec->chip_spec;
    } else {
        status = tpu_chip_preset(spec->chip ? spec->chip : tpu_chip_default_for_axes(naxes),
                                 &pod->chip, err);
        if (status != TPU_OK) {
            goto fail;
        }
    }
    status = check_fits(&pod->chip, shape, naxes, dims, err);
    if (status != TPU_OK) {
        goto fail;
    }
    status = tpu_topo_parse_wrap(spec->wrap ? spec->wrap : "auto", naxes, w, &pod->wrap_auto, err);
    if (status != TPU_OK) {
        goto fail;
    }
    if (pod->wrap_auto) {
        tpu_topo_wrap_auto(pod->chip.wrap_rule, naxes, dims, w);
    }
    status = tpu_topo_init(&pod->topo, naxes, dims, w, spec->slices > 0 ? spec->slices : 1, err);
    if (status != TPU_OK) {
        goto fail;
    }
    if (spec->ici_bw >= 0) {
        pod->chip.ici_bw = spec->ici_bw;
    }
    if (spec->ici_latency >= 0) {
        pod->chip.ici_latency = spec->ici_latency;
    }
    if (spec->dcn_bw >= 0) {
        pod->chip.dcn_bw = spec->dcn_bw;
    }
    if (spec->dcn_latency >= 0) {
        pod->chip.dcn_latency = spec->dcn_latency;
    }
    if (spec->msg_cost >= 0) {
        pod->chip.msg_cost = spec->msg_cost;
    }
    if (spec->pcie_bw >= 0) {
        pod->chip.pcie_bw = spec->pcie_bw;
    }
    if (spec->nic_bw >= 0) {
        pod->chip.nic_bw = spec->nic_bw;
    }
    if (spec->reduce_bw >= 0) {
        pod->chip.reduce_bw = spec->reduce_bw;
    }
    status = tpu_chip_check(&pod->chip, err);
    if (status != TPU_OK) {
        goto fail;
    }
    tpu_chip_link_model(&pod->chip, &pod->link);
    if (spec->calibrated) {
        tpu_chip_link_calibrate(&pod->chip, &pod->link);
        pod->calibrated = 1;
    }
    if (spec->nfaults > 0) {
        status = tpu_faults_create(&pod->topo, pod->link.host_dims, spec->faults, spec->nfaults,
                                   &pod->faults, err);
        if (status != TPU_OK) {
            goto fail;
        }
        pod->link.faults = pod->faults;
    }
    tpu_topo_shape_str(&pod->topo, pod->shape, sizeof(pod->shape));
    tpu_topo_wrap_str(&pod->topo, pod->wrap, sizeof(pod->wrap));
    *pod_p = pod;
    return TPU_OK;
fail:
    tpu__free(pod);
    return status;
}

void tpu_pod_destroy(tpu_pod_t *pod)
{
    if (pod != NULL) {
        tpu_faults_destroy(pod->faults);
    }
    tpu__free(pod);
}

const tpu_faults_t *tpu_pod_faults(const tpu_pod_t *pod)
{
    return pod->faults;
}

const tpu_topo_t *tpu_pod_topo(const tpu_pod_t *pod)
{
    return &pod->topo;
}

const tpu_link_model_t *tpu_pod_link(const tpu_pod_t *pod)
{
    return &pod->link;
}

const tpu_chip_spec_t *tpu_pod_chip(const tpu_pod_t *pod)
{
    return &pod->chip;
}

const char *tpu_pod_shape(const tpu_pod_t *pod)
{
    return pod->shape;
}

const char *tpu_pod_wrap(const tpu_pod_t *pod)
{
    return pod->wrap;
}

int tpu_pod_wrap_auto(const tpu_pod_t *pod)
{
    return pod->wrap_auto;
}

int tpu_pod_calibrated(const tpu_pod_t *pod)
{
    return pod->calibrated;
}
