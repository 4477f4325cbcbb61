/*
 * The planner's flags and checks for train --model transformer --model-only
 * (see train_plan.h): a preset's shape, then the model flags given beside it,
 * then the plan (kv heads, head width, MLP, block, tied embeddings, remat,
 * parameter dtype, optimizer, attention mask); the compiled mode with --calibrated; the HBM
 * fit; and the input pipeline.
 *
 * Input pipeline (model only): each step moves every host's share of the batch
 * (the tokens and targets of its chips, int32) from host memory to HBM over
 * the host's PCIe link (the chip's pcie_bw, one link the host's chips share),
 * and the host's producer makes those tokens at --input-rate (per host;
 * unlimited by default).  The input time is the larger of the two.  With
 * --prefetch N >= 1 the next batches load while the step runs: the input is
 * hidden when it takes no longer than the step, and otherwise sets the step
 * ("input-bound"); with --prefetch 0 it adds to the step.  The real run's
 * reader thread is launch/train_prefetch.c.
 */
#include "train_plan.h"

#include "tpu/calibration.h"
#include "tpu/chip.h"
#include "tpu/transformer_presets.h"

#include <string.h>

const char *app_xfmr_plan_flag(const app_opts_t *o)
{
    const struct {
        int given;
        const char *name;
    } f[] = {{o->preset != NULL, "preset"},        {o->kv_heads > 0, "kv-heads"},
             {o->head_dim > 0, "head-dim"},        {o->mlp != NULL, "mlp"},
             {o->block != NULL, "block"},          {o->tied_embeddings, "tied-embeddings"},
             {o->remat != NULL, "remat"},          {o->param_dtype != NULL, "param-dtype"},
             {o->optimizer != NULL, "optimizer"},  {o->search, "search"},
             {o->prefetch != 2, "prefetch"},       {o->input_rate > 0, "input-rate"},
             {o->attention != NULL, "attention"},  {o->dcn_fabric_bw >= 0, "dcn-fabric-bw"},
             {o->mxu_fraction > 0, "mxu-fraction"}};
    size_t i;

    for (i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
        if (f[i].given) {
            return f[i].name;
        }
    }
    return NULL;
}

int app_xfmr_plan_given(const app_opts_t *o)
{
    return app_xfmr_plan_flag(o) != NULL;
}

/* The index of 'v' in the NULL-ended 'names', or -1. */
static int pick(const char *v, const char *const *names)
{
    int i;

    for (i = 0; names[i] != NULL; i++) {
        if (strcmp(v, names[i]) == 0) {
            return i;
        }
    }
    return -1;
}

tpu_status_t app_xfmr_plan_read(const app_opts_t *o, tpu_xfmr_config_t *m, tpu_xfmr_plan_t *p,
                                tpu_err_t *err)
{
    static const char *const mlps[] = {"gelu", "relu", "swiglu", NULL};
    static const char *const blocks[] = {"sequential", "parallel", NULL};
    static const char *const remats[] = {"none", "minimal", "full", NULL};
    static const char *const dtypes[] = {"f32", "bf16", NULL};
    static const char *const opts[] = {"sgd", "adamw", NULL};
    static const char *const masks[] = {"causal", "full", NULL};
    const struct {
        const char *flag, *value;
        const char *const *names;
        const char *valid;
    } choice[] = {{"mlp", o->mlp, mlps, "gelu, relu or swiglu"},
                  {"block", o->block, blocks, "sequential or parallel"},
                  {"remat", o->remat, remats, "none, minimal or full"},
                  {"param-dtype", o->param_dtype, dtypes, "f32 or bf16"},
                  {"optimizer", o->optimizer, opts, "sgd or adamw"},
                  {"attention", o->attention, masks, "causal or full"}};
    int k[6], i;

    tpu_xfmr_plan_init(p);
    for (i = 0; i < 6; i++) {
        k[i] = choice[i].value != NULL ? pick(choice[i].value, choice[i].names) : -2;
        if (k[i] == -1) {
            return tpu_err_set(err, TPU_ERR_INVALID, "--%s must be %s, got '%s'", choice[i].flag,
                               choice[i].valid, choice[i].value);
        }
    }
    if (o->preset != NULL && tpu_xfmr_preset(o->preset, m, p, err) != TPU_OK) {
        return TPU_ERR_INVALID;
    }
    m->layers = o->layers > 0 ? o->layers : m->layers;
    m->d_model = o->d_model > 0 ? o->d_model : m->d_model;
    m->heads = o->heads > 0 ? o->heads : m->heads;
    m->d_ff = o->d_ff > 0 ? o->d_ff : m->d_ff;
    m->vocab = o->vocab > 0 ? o->vocab : m->vocab;
    m->seq = o->seq > 0 ? o->seq : m->seq;
    if (o->preset != NULL && o->heads > 0 && o->kv_heads <= 0) {
        p->kv_heads = 0; /* heads given over a preset: its kv heads no longer apply */
    }
    p->kv_heads = o->kv_heads > 0 ? o->kv_heads : p->kv_heads;
    p->head_dim = o->head_dim > 0 ? o->head_dim : p->head_dim;
    p->mlp = k[0] >= 0 ? (tpu_xfmr_mlp_t)k[0] : p->mlp;
    p->parallel_block = k[1] >= 0 ? k[1] : p->parallel_block;
    p->tied = o->tied_embeddings ? 1 : p->tied;
    p->remat = k[2] >= 0 ? (tpu_xfmr_remat_t)k[2] : p->remat;
    p->param_bytes = k[3] == 1 ? 2 : 4;
    p->adamw = k[4] == 1;
    p->attn_full = k[5] == 1;
    if (!o->calibrated && (o->attention != NULL || o->mxu_fraction > 0 || o->dcn_fabric_bw >= 0)) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "--%s applies to the compiled step: add --calibrated",
                           o->attention != NULL  ? "attention"
                           : o->mxu_fraction > 0 ? "mxu-fraction"
                                                 : "dcn-fabric-bw");
    }
    if (o->dcn_fabric_bw > 0 && o->dcn_fabric_bw < 1e6) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "--dcn-fabric-bw must be 0 (unlimited) or from 1e6 B/s, got %g",
                           o->dcn_fabric_bw);
    }
    if (p->kv_heads > 0 && m->heads % p->kv_heads != 0) {
        return tpu_err_set(err, TPU_ERR_INVALID, "--kv-heads %lld does not divide --heads %lld",
                           (long long)p->kv_heads, (long long)m->heads);
    }
    return TPU_OK;
}

tpu_status_t app_xfmr_plan_pod(const app_opts_t *o, const tpu_pod_t *pod, tpu_xfmr_plan_t *p,
                               tpu_err_t *err)
{
    const char *chip = tpu_pod_chip(pod)->name;
    const tpu_chip_calibration_t *cal = tpu_chip_calibration(chip);

    p->compiled = o->calibrated && o->model_only;
    if (!p->compiled) {
        return TPU_OK;
    }
    tpu_xfmr_plan_fit(chip, p);
    p->dcn_fabric_bw = o->dcn_fabric_bw >= 0 ? o->dcn_fabric_bw : p->dcn_fabric_bw;
    p->mxu_fraction = o->mxu_fraction > 0 ? o->mxu_fraction : p->mxu_fraction;
    /* The profile sustains cal->mxu_efficiency of the peak: a larger fraction than its
     * inverse would run the matmuls above the chip's peak. */
    if (cal != NULL && cal->mxu_efficiency > 0 && p->mxu_fraction * cal->mxu_efficiency > 1) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "--mxu-fraction %g would run the matmuls above the chip's peak: at "
                           "most %.3f on %s (its profile sustains %.0f%% of the peak)",
                           p->mxu_fraction, 1 / cal->mxu_efficiency, chip,
                           100 * cal->mxu_efficiency);
    }
    return TPU_OK;
}

tpu_status_t app_xfmr_fit_check(const tpu_xfmr_cost_t *c, uint64_t capacity, tpu_err_t *err)
{
    int top[3] = {-1, -1, -1}, i, j;

    if (c->hbm_peak_bytes <= capacity) {
        return TPU_OK;
    }
    for (i = 0; i < c->nitems; i++) { /* the three largest, largest first */
        for (j = 0; j < 3; j++) {
            if (top[j] < 0 || c->items[i].bytes > c->items[top[j]].bytes) {
                memmove(&top[j + 1], &top[j], (size_t)(2 - j) * sizeof(int));
                top[j] = i;
                break;
            }
        }
    }
    return tpu_err_set(err, TPU_ERR_RESOURCE_EXHAUSTED,
                       "out of HBM: the step needs %.2f GiB per chip of %.2f GiB (largest: %s "
                       "%.2f GiB, %s %.2f GiB, %s %.2f GiB)",
                       (double)c->hbm_peak_bytes / (1 << 30), (double)capacity / (1 << 30),
                       c->items[top[0]].what, (double)c->items[top[0]].bytes / (1 << 30),
                       c->items[top[1]].what, (double)c->items[top[1]].bytes / (1 << 30),
                       c->items[top[2]].what, (double)c->items[top[2]].bytes / (1 << 30));
}

void app_xfmr_input(const app_opts_t *o, const tpu_pod_t *pod, const tpu_xfmr_cost_t *c,
                    app_xfmr_input_t *in)
{
    const tpu_chip_spec_t *chip = tpu_pod_chip(pod);
    const double pcie = tpu_pod_link(pod)->pcie_bw > 0 ? tpu_pod_link(pod)->pcie_bw : chip->pcie_bw;
    int per = tpu_chip_per_host(chip);

    memset(in, 0, sizeof(*in));
    per = per < 1 ? 1 : per > c->chips ? c->chips : per; /* a pod smaller than a host: one */
    in->chips_per_host = per;
    in->hosts = c->chips / per;
    in->prefetch = o->prefetch;
    /* a chip's tokens and targets (int32): its batch over sequence and tensor as well */
    in->bytes_per_host = 8.0 * (double)c->tokens_chip * per;
    in->pcie_us = pcie > 0 ? in->bytes_per_host / pcie * 1e6 : 0;
    in->produce_us = o->input_rate > 0 ? (double)c->tokens_chip * per / o->input_rate * 1e6 : 0;
    in->input_us = in->pcie_us > in->produce_us ? in->pcie_us : in->produce_us;
    if (o->prefetch == 0) {
        in->step_us = c->step_us + in->input_us;
        in->input_bound = 0;
    } else {
        in->hidden = in->input_us <= c->step_us;
        in->input_bound = !in->hidden;
        in->step_us = in->hidden ? c->step_us : in->input_us;
    }
}

void app_xfmr_input_print(FILE *txt, const app_xfmr_input_t *in)
{
    fprintf(txt,
            "  input: %.0f bytes per host per step (%d hosts of %d chips): PCIe %.3f us, "
            "producer %.3f us; prefetch %d: %s; step with input %.3f us%s\n",
            in->bytes_per_host, in->hosts, in->chips_per_host, in->pcie_us, in->produce_us,
            in->prefetch,
            in->prefetch == 0 ? "not overlapped"
            : in->hidden      ? "hidden"
                              : "not hidden",
            in->step_us, in->input_bound ? " (input-bound)" : "");
}

void app_xfmr_plan_json(app_json_t *j, const tpu_xfmr_plan_t *p, const tpu_xfmr_cost_t *c,
                        const app_xfmr_input_t *in)
{
    static const char *const mlps[] = {"gelu", "relu", "swiglu"};
    static const char *const remats[] = {"none", "minimal", "full"};

    app_json_kobject(j, "plan");
    app_json_kint(j, "kv_heads", (long long)p->kv_heads);
    app_json_kint(j, "head_dim", (long long)p->head_dim);
    app_json_kstr(j, "mlp", mlps[p->mlp]);
    app_json_kstr(j, "block_kind", p->parallel_block ? "parallel" : "sequential");
    app_json_kbool(j, "tied_embeddings", p->tied);
    app_json_kstr(j, "remat", remats[p->remat]);
    app_json_kstr(j, "param_dtype", p->param_bytes == 2 ? "bf16" : "f32");
    app_json_kstr(j, "optimizer", p->adamw ? "adamw" : "sgd");
    /* uncompiled, the emulator's step charges every key (its mask over the whole S x S) */
    app_json_kstr(j, "attention", p->attn_full || !p->compiled ? "full" : "causal");
    app_json_kbool(j, "compiled", p->compiled);
    app_json_kfixed(j, "mxu_fraction", p->mxu_fraction, 4);
    app_json_kfixed(j, "fixed_us", c->fixed_us, 3);
    app_json_knum(j, "dcn_fabric_bw", p->dcn_fabric_bw);
    app_json_object_end(j);
    app_xfmr_input_json(j, in);
}

void app_xfmr_input_json(app_json_t *j, const app_xfmr_input_t *in)
{
    app_json_kobject(j, "input");
    app_json_kint(j, "hosts", in->hosts);
    app_json_kint(j, "chips_per_host", in->chips_per_host);
    app_json_kint(j, "prefetch", in->prefetch);
    app_json_kfixed(j, "pcie_us", in->pcie_us, 3);
    app_json_kfixed(j, "producer_us", in->produce_us, 3);
    app_json_kfixed(j, "input_us", in->input_us, 3);
    app_json_kbool(j, "input_hidden", in->hidden);
    app_json_kbool(j, "input_bound", in->input_bound);
    app_json_kfixed(j, "step_us", in->step_us, 3);
    app_json_object_end(j);
}
