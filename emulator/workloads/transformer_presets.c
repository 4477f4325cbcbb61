/*
 * The published transformer shapes of the planner (tpu/transformer_presets.h)
 * and the compiled mode's constants fitted per chip generation.  Sources
 * (docs/planner.md has the table):
 * - llama2-*: Touvron et al. 2023, "Llama 2", table 1 and the released
 *   config.json (hidden, intermediate, heads, kv heads, layers, vocab 32000,
 *   context 4096); SwiGLU, pre-norm sequential block, untied.
 * - llama3-*: Meta's Llama 3 model card and config.json (vocab 128256, GQA with
 *   8 kv heads, context 8192).
 * - gpt3-175b: Brown et al. 2020, "Language Models are Few-Shot Learners",
 *   table 2.1 (96 layers, d 12288, 96 heads of 128, d_ff 4 d, context 2048);
 *   the vocabulary 50257 padded to 50304 (a multiple of 128, as Megatron and
 *   MaxText pad it); GELU, sequential, tied.
 * - maxtext-default-*: MaxText's default model scaled by
 *   global_parameter_scale (shared/reference/maxtext_mfu.md): head width 256,
 *   vocab 32768, ReLU MLP, the parallel block, tied embeddings, seq 2048.
 */
#include "tpu/transformer_presets.h"

#include <stdio.h>
#include <string.h>

typedef struct preset {
    const char *name;
    int64_t layers, d_model, heads, kv_heads, head_dim, d_ff, vocab, seq;
    tpu_xfmr_mlp_t mlp;
    int parallel, tied;
} preset_t;

#define SWIGLU TPU_XFMR_MLP_SWIGLU
#define RELU   TPU_XFMR_MLP_RELU
#define GELU   TPU_XFMR_MLP_GELU
/* MaxText's default model at a scale: layers, d_model, heads, d_ff. */
#define MAXTEXT(n, l, d, h, f)                         \
    {                                                  \
        n, l, d, h, h, 256, f, 32768, 2048, RELU, 1, 1 \
    }

static const preset_t presets[] = {
    {"llama2-7b", 32, 4096, 32, 32, 128, 11008, 32000, 4096, SWIGLU, 0, 0},
    {"llama2-13b", 40, 5120, 40, 40, 128, 13824, 32000, 4096, SWIGLU, 0, 0},
    {"llama2-70b", 80, 8192, 64, 8, 128, 28672, 32000, 4096, SWIGLU, 0, 0},
    {"llama3-8b", 32, 4096, 32, 8, 128, 14336, 128256, 8192, SWIGLU, 0, 0},
    {"llama3-70b", 80, 8192, 64, 8, 128, 28672, 128256, 8192, SWIGLU, 0, 0},
    {"gpt3-175b", 96, 12288, 96, 96, 128, 49152, 50304, 2048, GELU, 0, 1},
    MAXTEXT("maxtext-default-16b", 32, 5120, 32, 32768),
    MAXTEXT("maxtext-default-32b", 32, 10240, 32, 32768),
    MAXTEXT("maxtext-default-64b", 64, 10240, 32, 32768),
    MAXTEXT("maxtext-default-128b", 64, 10240, 64, 65536),
    MAXTEXT("maxtext-default-256b", 64, 20480, 64, 65536),
    MAXTEXT("maxtext-default-512b", 128, 20480, 64, 65536),
    MAXTEXT("maxtext-default-1024b", 128, 20480, 128, 131072),
};

#define NPRESETS ((int)(sizeof(presets) / sizeof(presets[0])))

const char *tpu_xfmr_preset_name(int i)
{
    return i >= 0 && i < NPRESETS ? presets[i].name : NULL;
}

tpu_status_t tpu_xfmr_preset(const char *name, tpu_xfmr_config_t *m, tpu_xfmr_plan_t *p,
                             tpu_err_t *err)
{
    char list[512];
    size_t len = 0;
    int i;

    for (i = 0; i < NPRESETS; i++) {
        const preset_t *r = &presets[i];

        if (name != NULL && strcmp(name, r->name) == 0) {
            m->layers = r->layers;
            m->d_model = r->d_model;
            m->heads = r->heads;
            m->d_ff = r->d_ff;
            m->vocab = r->vocab;
            m->seq = r->seq;
            p->kv_heads = r->kv_heads;
            p->head_dim = r->head_dim;
            p->mlp = r->mlp;
            p->parallel_block = r->parallel;
            p->tied = r->tied;
            return TPU_OK;
        }
        len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", i ? ", " : "", r->name);
    }
    return tpu_err_set(err, TPU_ERR_INVALID, "--preset: unknown model '%s' (use %s)",
                       name != NULL ? name : "", list);
}

/*
 * The compiled mode's constants per generation (see docs/planner.md for the
 * fit): the sustained MXU fraction relative to the calibrated matmul time
 * (the v5e and v5p calibration profiles borrow v7's MXU constants), the
 * per-step fixed cost and the datacenter network's capacity for a multi-slice
 * job's cross-slice bytes (transformer_cost_time.c).  Fitted together on
 * maxtext_mfu_public.csv's usable rows of the generation (the pair that makes
 * the largest |error| smallest, ties to the smaller RMS error), the same for
 * every row.
 */
static const struct {
    const char *chip;
    double mxu_fraction, fixed_us, dcn_fabric_bw;
} fits[] = {
    {"v5e", 0.972, 0, 7e12},
    {"v5p", 0.937, 0, 0.8e12},
};

void tpu_xfmr_plan_fit(const char *chip, tpu_xfmr_plan_t *p)
{
    size_t i;

    p->mxu_fraction = 1;
    p->fixed_us = 0;
    p->dcn_fabric_bw = 0;
    for (i = 0; chip != NULL && i < sizeof(fits) / sizeof(fits[0]); i++) {
        if (strcmp(chip, fits[i].chip) == 0) {
            p->mxu_fraction = fits[i].mxu_fraction;
            p->fixed_us = fits[i].fixed_us;
            p->dcn_fabric_bw = fits[i].dcn_fabric_bw;
        }
    }
}
