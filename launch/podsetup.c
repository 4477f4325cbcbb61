/*
 * The pod a command runs on: the config file first, then the flags (flags win),
 * with the faults of both checked one by one where they were given.
 */
#include "podsetup.h"

#include "extremes.h"

#include <string.h>

/*
 * What the pod accepts but a job should not: hosts that do not tile the
 * topology, and a wraparound asked for on an axis of one chip.
 */
static tpu_status_t check_pod(const app_opts_t *o, const app_config_t *cfg, const tpu_pod_t *pod,
                              tpu_err_t *err)
{
    const tpu_topo_t *t = tpu_pod_topo(pod);
    const int *hd = tpu_pod_chip(pod)->host_dims;
    const char *wrap = o->wrap != NULL ? o->wrap : cfg->wrap;
    int a;

    /* The presets' hosts may be cut by a small slice (2x3); host_dims the file sets must
     * tile the topology (a slice smaller than one host along an axis is fine). */
    for (a = 0; a < t->naxes && cfg->host_dims_at[0] != '\0' && o->chip == NULL; a++) {
        int h = hd[a] > 0 ? hd[a] : 1;

        if (t->dims[a] > h && t->dims[a] % h != 0) {
            return tpu_err_set(
                err, TPU_ERR_INVALID,
                "%s: host_dims [%d,%d,%d] of %s do not tile topology %s: axis %s has "
                "%d chips, not a multiple of %d (give host_dims that divide each "
                "axis)",
                cfg->host_dims_at, hd[0], hd[1], hd[2], tpu_pod_chip(pod)->name, tpu_pod_shape(pod),
                tpu_topo_axis_name(a), t->dims[a], h);
        }
    }
    if (wrap[0] != '\0' && strcmp(wrap, "auto") != 0 && strcmp(wrap, "all") != 0 &&
        strcmp(wrap, "none") != 0) {
        for (a = 0; a < t->naxes; a++) {
            const char *p = wrap;
            size_t len;

            for (; *p != '\0'; p += len + (p[len] == ',')) {
                len = strcspn(p, ",");
                if (len == strlen(tpu_topo_axis_name(a)) &&
                    strncmp(p, tpu_topo_axis_name(a), len) == 0 && t->dims[a] == 1) {
                    return tpu_err_set(err, TPU_ERR_INVALID,
                                       "%s%swrap %s: axis %s of topology %s has 1 chip, so it "
                                       "has no wraparound link (drop %s from the wrap list)",
                                       o->wrap != NULL ? "--" : cfg->wrap_at,
                                       o->wrap != NULL ? "" : ": ", wrap, tpu_topo_axis_name(a),
                                       tpu_pod_shape(pod), tpu_topo_axis_name(a));
                }
            }
        }
    }
    return TPU_OK;
}

/*
 * The faults of the file, then of the flags, into 'list'; each checked on its own
 * against the pod, so that a bad one is named where it was given (the file's
 * line or the flag).  The whole set (a cut needs several) is checked by
 * tpu_pod_create().  Returns the count, or -1 with 'err' set.
 */
static int gather_faults(const app_opts_t *o, const app_config_t *cfg, const tpu_pod_t *pod,
                         tpu_fault_t *list, tpu_err_t *err)
{
    int n = 0, i;

    if (cfg->nfaults + o->nfault > TPU_MAX_FAULTS) {
        tpu_err_set(err, TPU_ERR_INVALID, "%d faults in the file and %d flags: at most %d in all",
                    cfg->nfaults, o->nfault, TPU_MAX_FAULTS);
        return -1;
    }
    for (i = 0; i < cfg->nfaults + o->nfault; i++) {
        tpu_faults_t *one = NULL;
        tpu_err_t e = {0};

        if (i < cfg->nfaults) {
            list[n] = cfg->faults[i];
        } else if (tpu_fault_parse(o->fault[i - cfg->nfaults], &list[n], &e) != TPU_OK) {
            tpu_err_set(err, TPU_ERR_INVALID, "--%s", e.msg);
            return -1;
        }
        if (tpu_faults_create(tpu_pod_topo(pod), tpu_pod_link(pod)->host_dims, &list[n], 1, &one,
                              &e) != TPU_OK) {
            if (i < cfg->nfaults) {
                tpu_err_set(err, e.status, "%s: %s", cfg->fault_at[i], e.msg);
            } else {
                tpu_err_set(err, e.status, "--fault '%s': %s", o->fault[i - cfg->nfaults], e.msg);
            }
            return -1;
        }
        tpu_faults_destroy(one);
        n++;
    }
    return n;
}

tpu_status_t app_pod_setup(const app_opts_t *o, tpu_pod_t **pod_p, tpu_err_t *err)
{
    tpu_fault_t faults[TPU_MAX_FAULTS];
    int nfaults;
    app_config_t cfg;
    tpu_pod_spec_t spec;
    tpu_pod_t *pod = NULL;
    tpu_err_t e = {0};
    tpu_status_t status;

    *pod_p = NULL;
    app_config_init(&cfg);
    if (o->config != NULL) {
        status = app_config_load(o->config, &cfg, err);
        if (status != TPU_OK) {
            return status;
        }
    }
    tpu_pod_spec_init(&spec);
    spec.shape = o->topology ? o->topology : cfg.topology[0] ? cfg.topology : "4x4";
    spec.chip = o->chip ? o->chip : cfg.chip[0] ? cfg.chip : NULL;
    if (o->chip == NULL && cfg.chip_custom) {
        spec.chip_spec = &cfg.custom;
    }
    spec.wrap = o->wrap ? o->wrap : cfg.wrap[0] ? cfg.wrap : "auto";
    spec.slices = o->slices > 0 ? o->slices : cfg.slices > 0 ? cfg.slices : 1;
    spec.ici_bw = cfg.ici_bw;
    spec.ici_latency = cfg.ici_latency;
    spec.dcn_bw = cfg.dcn_bw;
    spec.dcn_latency = cfg.dcn_latency;
    /* The link flags were checked by the parser (-1: not given). */
    if (o->ici_bw >= 0) {
        spec.ici_bw = o->ici_bw;
    }
    if (o->ici_latency_us >= 0) {
        spec.ici_latency = o->ici_latency_us * 1e-6;
    }
    if (o->dcn_bw >= 0) {
        spec.dcn_bw = o->dcn_bw;
    }
    if (o->dcn_latency_us >= 0) {
        spec.dcn_latency = o->dcn_latency_us * 1e-6;
    }
    if (o->msg_cost_us >= 0) {
        spec.msg_cost = o->msg_cost_us * 1e-6;
    }
    if (o->pcie_bw >= 0) {
        spec.pcie_bw = o->pcie_bw;
    }
    if (o->nic_bw >= 0) {
        spec.nic_bw = o->nic_bw;
    }
    if (o->reduce_bw >= 0) {
        spec.reduce_bw = o->reduce_bw;
    }
    spec.calibrated = o->calibrated;
    status = tpu_pod_create(&spec, &pod, &e);
    if (status == TPU_OK) {
        status = check_pod(o, &cfg, pod, &e);
    }
    if (status == TPU_OK && cfg.nfaults + o->nfault > 0) {
        /* The pod again, with its faults, once each is known to fit it. */
        nfaults = gather_faults(o, &cfg, pod, faults, err);
        tpu_pod_destroy(pod);
        pod = NULL;
        if (nfaults < 0) {
            return TPU_ERR_INVALID;
        }
        spec.faults = faults;
        spec.nfaults = nfaults;
        status = tpu_pod_create(&spec, &pod, &e);
        if (status != TPU_OK) {
            /* Only the set as a whole can fail here: failed links that cut the torus. */
            if (o->nfault > 0) {
                return tpu_err_set(err, status, "--fault: %s", e.msg);
            }
            return tpu_err_set(err, status, "%s: %s", cfg.fault_at[0], e.msg);
        }
    }
    if (status != TPU_OK) {
        tpu_pod_destroy(pod);
        /* A pod the file describes: say where in the file. */
        if (strncmp(e.msg, cfg.host_dims_at, strlen(cfg.host_dims_at)) == 0 &&
            cfg.host_dims_at[0] != '\0') {
            return tpu_err_set(err, status, "%s", e.msg);
        }
        if (o->topology == NULL && cfg.topology_at[0] != '\0') {
            return tpu_err_set(err, status, "%s: %s", cfg.topology_at, e.msg);
        }
        if (o->chip == NULL && cfg.chip_at[0] != '\0') {
            return tpu_err_set(err, status, "%s: chip: %s", cfg.chip_at, e.msg);
        }
        return tpu_err_set(err, status, "%s", e.msg);
    }
    app_extremes_warn(pod, stderr); /* valid, but far from any real chip or pod */
    *pod_p = pod;
    return TPU_OK;
}
