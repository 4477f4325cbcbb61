/*
 * Published transformer shapes for the step cost model (tpu/transformer_cost.h)
 * and the constants of its compiled mode fitted per chip generation: a preset
 * fills a model (layers, widths, heads, vocabulary, sequence) and a plan (kv
 * heads, head width, MLP, block, tied embeddings); docs/planner.md gives each
 * preset's source.
 *
 *   tpu_xfmr_config_t m; tpu_xfmr_plan_t p;
 *   tpu_xfmr_config_init(&m); tpu_xfmr_plan_init(&p);
 *   tpu_xfmr_preset("llama2-70b", &m, &p, &err);
 *   p.compiled = 1; tpu_xfmr_plan_fit("v5p", &p);
 *
 * Ownership: static tables; nothing allocated.
 */
#ifndef TPU_TRANSFORMER_PRESETS_H
#define TPU_TRANSFORMER_PRESETS_H

#include "tpu/status.h"
#include "tpu/transformer.h"
#include "tpu/transformer_cost.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Set the shape of preset 'name' in 'model' (batch and precision kept) and
 * 'plan' (remat, dtypes, optimizer and compiled kept).
 * @return TPU_OK, TPU_ERR_INVALID (an unknown name; the message lists them).
 */
TPU_API tpu_status_t tpu_xfmr_preset(const char *name, tpu_xfmr_config_t *model,
                                     tpu_xfmr_plan_t *plan, tpu_err_t *err);
/* The name of preset i, NULL past the last. */
TPU_API const char *tpu_xfmr_preset_name(int i);
/*
 * The compiled mode's constants of chip generation 'chip' into 'plan': the
 * sustained MXU fraction over the calibrated matmul time's and the per-step
 * fixed cost, fitted to MaxText's public rows of that generation (1 and 0 for
 * a generation without rows).
 */
TPU_API void tpu_xfmr_plan_fit(const char *chip, tpu_xfmr_plan_t *plan);

#ifdef __cplusplus
}
#endif

#endif /* TPU_TRANSFORMER_PRESETS_H */
