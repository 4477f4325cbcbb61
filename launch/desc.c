/*
 * The collective the flags describe (model, bench): its checks without the pod,
 * and the description built on the pod.
 */
#include "desc.h"

#include "units.h"

#include <math.h>
#include <string.h>

/* bench: at most this many sizes per collective. */
#define MAX_ROWS 10000

/* Which flags the collective named takes; 'given' is the flag the user gave. */
static tpu_status_t check_applies(const app_opts_t *o, tpu_coll_kind_t kind, tpu_err_t *err)
{
    const char *name = tpu_coll_name(kind);

    if (o->has_shift && kind != TPU_COLL_PPERMUTE) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "--shift applies to ppermute only, not to %s (drop it)", name);
    }
    if ((o->src != NULL || o->dst != NULL) && kind != TPU_COLL_P2P) {
        return tpu_err_set(err, TPU_ERR_INVALID, "--%s applies to p2p only, not to %s (drop it)",
                           o->src != NULL ? "src" : "dst", name);
    }
    if (o->chunks > 0 && (kind == TPU_COLL_P2P || kind == TPU_COLL_PPERMUTE)) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "--chunks applies to psum, all-gather, reduce-scatter and all-to-all, "
                           "not to %s (drop it)",
                           name);
    }
    if (o->op != NULL && kind != TPU_COLL_PSUM && kind != TPU_COLL_REDUCE_SCATTER) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "--redop applies to psum and reduce-scatter only, not to %s (drop it)",
                           name);
    }
    return TPU_OK;
}

/*
 * The collective's flags, checked without the pod, at parse time, on every rank;
 * 'max_rows': bench's bound on the sizes of its sweep (0: not a sweep);
 * 'fallback': the collective the flags must apply to when none is named (model's
 * default, psum; bench's is every collective, so -1: none).
 */
static tpu_status_t check(const app_opts_t *o, int max_rows, int fallback, tpu_err_t *err)
{
    unsigned long long lo = 1024, hi = 1u << 20;
    tpu_coll_kind_t kind;
    tpu_dtype_t dtype;
    tpu_redop_t redop;

    if (o->dtype != NULL && tpu_dtype_parse(o->dtype, &dtype, err) != TPU_OK) {
        return TPU_ERR_INVALID;
    }
    if (o->op != NULL && tpu_redop_parse(o->op, &redop, err) != TPU_OK) {
        return TPU_ERR_INVALID;
    }
    /* The sizes' syntax and range were checked by the parser (size rows). */
    if ((o->min_bytes != NULL &&
         app_units_parse_bytes("min-bytes", o->min_bytes, &lo, err) != TPU_OK) ||
        (o->max_bytes != NULL &&
         app_units_parse_bytes("max-bytes", o->max_bytes, &hi, err) != TPU_OK)) {
        return TPU_ERR_INVALID;
    }
    if (hi < lo) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "--max-bytes %llu is below --min-bytes %llu: give min <= max", hi, lo);
    }
    if (max_rows > 0 && log((double)hi / (double)lo) / log(o->factor) > max_rows) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "--factor %g makes over %d sizes from %llu to %llu bytes: give a larger "
                           "--factor",
                           o->factor, max_rows, lo, hi);
    }
    if (o->collective != NULL) {
        if (tpu_coll_parse(o->collective, &kind, err) != TPU_OK) {
            return TPU_ERR_INVALID;
        }
        return check_applies(o, kind, err);
    }
    if (fallback >= 0) {
        return check_applies(o, (tpu_coll_kind_t)fallback, err);
    }
    return TPU_OK;
}

tpu_status_t app_desc_check_model(const app_opts_t *o, tpu_err_t *err)
{
    return check(o, 0, TPU_COLL_PSUM, err); /* the default collective */
}

tpu_status_t app_desc_check_bench(const app_opts_t *o, tpu_err_t *err)
{
    return check(o, MAX_ROWS, -1, err);
}

tpu_status_t app_parse_chip(const tpu_pod_t *pod, const char *text, const char *what, int *chip_p,
                            tpu_err_t *err)
{
    return app_parse_coords(tpu_pod_topo(pod), tpu_pod_shape(pod), text, what, chip_p, err);
}

tpu_status_t app_desc_setup(const app_opts_t *o, const tpu_pod_t *pod, const char *bytes,
                            tpu_coll_desc_t *d, tpu_err_t *err)
{
    unsigned long long n = 0;
    tpu_status_t status;

    tpu_coll_desc_init(d);
    if (o->collective != NULL) {
        status = tpu_coll_parse(o->collective, &d->kind, err);
        if (status != TPU_OK) {
            return status;
        }
    }
    if (o->axes != NULL) {
        status = tpu_topo_parse_axes(tpu_pod_topo(pod), o->axes, &d->axes, err);
        if (status != TPU_OK) {
            return status;
        }
    } else {
        d->axes = (1u << tpu_pod_topo(pod)->naxes) - 1;
        if (d->kind == TPU_COLL_PPERMUTE) {
            d->axes = 1;
        }
    }
    if (o->dtype != NULL && tpu_dtype_parse(o->dtype, &d->dtype, err) != TPU_OK) {
        return TPU_ERR_INVALID;
    }
    if (o->op != NULL && tpu_redop_parse(o->op, &d->op, err) != TPU_OK) {
        return TPU_ERR_INVALID;
    }
    if (bytes != NULL) {
        status = app_parse_size(bytes, &n, err);
        if (status != TPU_OK) {
            return status;
        }
        d->bytes = n;
    }
    if (o->has_shift) {
        d->shift = o->shift;
    }
    if (o->src != NULL && app_parse_chip(pod, o->src, "src", &d->src, err) != TPU_OK) {
        return TPU_ERR_INVALID;
    }
    if (o->dst != NULL && app_parse_chip(pod, o->dst, "dst", &d->dst, err) != TPU_OK) {
        return TPU_ERR_INVALID;
    }
    if (o->algo != NULL) {
        snprintf(d->algo, sizeof(d->algo), "%s", o->algo);
    }
    status = check_applies(o, d->kind, err);
    if (status != TPU_OK) {
        return status;
    }
    d->chunks = o->chunks;
    return TPU_OK;
}
