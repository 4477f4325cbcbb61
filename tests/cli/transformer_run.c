/*
 * A test driver of the one-chip transformer library (include/tpu/transformer.h)
 * on files, for tests/cli/transformer_torch.py (not the CLI: `tpuemu train
 * --model transformer` comes later):
 *
 *   transformer_run L D H F V S B STEPS LR DTYPE SEED INIT_DIR X.npy Y.npy SAVE_DIR
 *
 * makes the model (DTYPE f32 or bf16), initializes it from SEED and writes the
 * initial parameters into INIT_DIR (or, with SEED "-", reads them from
 * INIT_DIR), trains STEPS steps of SGD at LR on the int32 token files X and Y
 * ([rows, S], the batching rule of transformer.md), prints "loss T VALUE" per
 * step, and writes the final parameters into SAVE_DIR.  Exit 0, or 1 with one
 * line on stderr.
 */
#include "tpu/chip.h"
#include "tpu/npy.h"
#include "tpu/transformer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int read_tokens(const char *path, int64_t seq, tpu_npy_t *arr, tpu_err_t *err)
{
    if (tpu_npy_read(path, arr, err) != TPU_OK) {
        return -1;
    }
    if (arr->type != TPU_NPY_I32 || arr->ndim != 2 || arr->shape[1] != seq) {
        tpu_err_set(err, TPU_ERR_INVALID, "%s: expected int32 [rows, %lld]", path, (long long)seq);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    tpu_xfmr_config_t cfg;
    tpu_chip_spec_t chip;
    tpu_xfmr_t *xf = NULL;
    tpu_err_t err = {0};
    tpu_npy_t x = {0}, y = {0};
    long steps, t;
    double lr;
    int rc = 1;

    if (argc != 16) {
        fprintf(stderr, "usage: transformer_run L D H F V S B STEPS LR f32|bf16 SEED|- INIT_DIR "
                        "X.npy Y.npy SAVE_DIR\n");
        return 2;
    }
    tpu_xfmr_config_init(&cfg);
    cfg.layers = atoll(argv[1]);
    cfg.d_model = atoll(argv[2]);
    cfg.heads = atoll(argv[3]);
    cfg.d_ff = atoll(argv[4]);
    cfg.vocab = atoll(argv[5]);
    cfg.seq = atoll(argv[6]);
    cfg.batch = atoll(argv[7]);
    steps = atol(argv[8]);
    lr = atof(argv[9]);
    cfg.precision = strcmp(argv[10], "bf16") == 0 ? TPU_XFMR_BF16 : TPU_XFMR_F32;
    if (tpu_chip_preset("v5e", &chip, &err) != TPU_OK ||
        tpu_xfmr_create(&cfg, &chip, &xf, &err) != TPU_OK) {
        goto out;
    }
    if (strcmp(argv[11], "-") == 0) {
        if (tpu_xfmr_load(xf, argv[12], &err) != TPU_OK) {
            goto out;
        }
    } else {
        tpu_xfmr_init_random(xf, strtoull(argv[11], NULL, 10));
        if (tpu_xfmr_save(xf, argv[12], &err) != TPU_OK) {
            goto out;
        }
    }
    if (read_tokens(argv[13], cfg.seq, &x, &err) != 0 ||
        read_tokens(argv[14], cfg.seq, &y, &err) != 0) {
        goto out;
    }
    if (x.shape[0] != y.shape[0] || x.shape[0] < cfg.batch) {
        tpu_err_set(&err, TPU_ERR_INVALID, "%s and %s: rows differ or fewer than the batch",
                    argv[13], argv[14]);
        goto out;
    }
    if (tpu_xfmr_check_tokens(x.data, x.shape[0], cfg.seq, cfg.vocab, argv[13], &err) != TPU_OK ||
        tpu_xfmr_check_tokens(y.data, y.shape[0], cfg.seq, cfg.vocab, argv[14], &err) != TPU_OK) {
        goto out;
    }
    for (t = 0; t < steps; t++) {
        int64_t row = tpu_xfmr_batch_row(x.shape[0], cfg.batch, t);
        tpu_xfmr_report_t rep;

        if (tpu_xfmr_step(xf, (const int32_t *)x.data + row * cfg.seq,
                          (const int32_t *)y.data + row * cfg.seq, lr, &rep, &err) != TPU_OK) {
            goto out;
        }
        printf("loss %ld %.9g\n", t, rep.loss);
    }
    if (tpu_xfmr_save(xf, argv[15], &err) != TPU_OK) {
        goto out;
    }
    rc = 0;
out:
    if (rc != 0) {
        fprintf(stderr, "transformer_run: %s\n", err.msg);
    }
    tpu_npy_fini(&x);
    tpu_npy_fini(&y);
    tpu_xfmr_destroy(xf);
    return rc;
}
