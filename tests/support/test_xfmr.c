/*
 * Shared test helper for the transformer's sharded runs (test_xfmr.h): the
 * model, the tokens and the init that a layout's chips and the one-chip
 * reference apply alike.
 */
#include "test_xfmr.h"

#include <math.h>

void tpu_test_xfmr_init(tpu_xfmr_t *xf, uint64_t seed)
{
    const tpu_xfmr_config_t *cfg = tpu_xfmr_config(xf);
    int p, n = tpu_xfmr_param_count(cfg);

    tpu_xfmr_init_random(xf, seed);
    for (p = 0; p < n; p++) {
        char name[TPU_XFMR_NAME_LEN];
        int64_t shape[2], org[2], i;
        int nd = tpu_xfmr_param_info(cfg, p, name, shape);
        float *w = tpu_xfmr_param(xf, p, shape);

        tpu_xfmr_param_origin(xf, p, org); /* a gain's first element, under fsdp */
        for (i = 0; i < shape[0] * shape[1]; i++) {
            w[i] = nd == 1  ? 1.0f + 0.3f * sinf((float)(7 * p + org[0] + i))
                   : p <= 1 ? 25.0f * w[i]
                            : w[i];
        }
    }
}

void tpu_test_xfmr_config(tpu_xfmr_config_t *cfg)
{
    tpu_xfmr_config_init(cfg);
    cfg->layers = 2;
    cfg->d_model = 32;
    cfg->heads = 4;
    cfg->d_ff = 64;
    cfg->vocab = TPU_TEST_XFMR_VOCAB;
    cfg->seq = TPU_TEST_XFMR_SEQ;
    cfg->batch = TPU_TEST_XFMR_BATCH;
}

void tpu_test_xfmr_tokens(int32_t *x, int32_t *y)
{
    uint32_t seed = 77;
    int i;

    for (i = 0; i < TPU_TEST_XFMR_ROWS * TPU_TEST_XFMR_SEQ; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (int32_t)((seed >> 8) % TPU_TEST_XFMR_VOCAB);
        y[i] = i % TPU_TEST_XFMR_SEQ > 0 ? x[i - 1] : x[i];
    }
}
