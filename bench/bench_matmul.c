/*
 * Host throughput of the emulated MXU matmul (tpu_mxu_matmul through the VMEM
 * executor: DMA of the blocks into VMEM, bf16 widening, cblas_sgemm, rounding,
 * DMA back) against one plain cblas_sgemm of the same shape on f32 arrays.
 *
 *   bench_matmul [rounds]       (default 10; the best time of each is kept)
 *
 * Prints GFLOP/s and the ratio emulated / plain for bf16 and f32.  A benchmark,
 * not a test: it never fails on a timing.
 */
#include "tpu/chip.h"
#include "tpu/dtype.h"
#include "tpu/mxu.h"
#include "tpu/roofline.h"
#include "tpu/vmem.h"
#include "tpu/vpu.h"

#include "clock.h"

#include <cblas.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define INNER 3 /* back-to-back runs of a variant per round; the first is a warm-up */

typedef struct shape {
    int m, k, n;
} shape_t;

static int bench_shape(tpu_vmem_t *vmem, const shape_t *s, int repeats)
{
    const size_t mk = (size_t)s->m * (size_t)s->k;
    const size_t kn = (size_t)s->k * (size_t)s->n;
    const size_t mn = (size_t)s->m * (size_t)s->n;
    const double flops = 2.0 * s->m * s->k * s->n;
    float *af = malloc(mk * sizeof(float));
    float *bf = malloc(kn * sizeof(float));
    float *cf = malloc(mn * sizeof(float));
    uint16_t *ah = malloc(mk * sizeof(uint16_t));
    uint16_t *bh = malloc(kn * sizeof(uint16_t));
    uint16_t *ch = malloc(mn * sizeof(uint16_t));
    double best_plain = 1e30;
    double best_bf16 = 1e30;
    double best_f32 = 1e30;
    tpu_mxu_desc_t d16;
    tpu_mxu_desc_t d32;
    tpu_roofline_report_t rep;
    tpu_err_t err = {0};
    double t;
    size_t i;
    int r;
    int v;
    int rc = 0;

    if (af == NULL || bf == NULL || cf == NULL || ah == NULL || bh == NULL || ch == NULL) {
        fprintf(stderr, "bench_matmul: out of memory\n");
        rc = 1;
        goto out;
    }
    for (i = 0; i < mk; i++) {
        af[i] = (float)((i * 7) % 13) * 0.125f - 0.75f;
        ah[i] = tpu_dtype_f32_to_bf16(af[i]);
    }
    for (i = 0; i < kn; i++) {
        bf[i] = (float)((i * 5) % 11) * 0.25f - 1.25f;
        bh[i] = tpu_dtype_f32_to_bf16(bf[i]);
    }
    tpu_mxu_desc_init(&d16, s->m, s->k, s->n, TPU_DTYPE_BF16);
    tpu_mxu_desc_init(&d32, s->m, s->k, s->n, TPU_DTYPE_F32);
    /* Rounds of 3 back-to-back runs of each variant: the first run of each
     * triple warms that variant's arrays into the caches and is not counted, and
     * the rounds spread each variant's samples over the same stretch of time, so
     * that other load on the machine hits them alike.  The best time is kept. */
    for (r = 0; r < repeats; r++) {
        for (v = 0; v < 3 * INNER; v++) {
            int which = v / INNER;

            t = tpu__now_s();
            if (which == 0) {
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s->m, s->n, s->k, 1.0f, af,
                            s->k, bf, s->n, 0.0f, cf, s->n);
            } else if (tpu_mxu_matmul(vmem, which == 1 ? &d16 : &d32, which == 1 ? (void *)ah : af,
                                      which == 1 ? (void *)bh : bf, which == 1 ? (void *)ch : cf,
                                      which == 1 ? &rep : NULL, &err) != TPU_OK) {
                fprintf(stderr, "bench_matmul: %s\n", err.msg);
                rc = 1;
                goto out;
            }
            t = tpu__now_s() - t;
            if (v % INNER == 0) {
                continue;
            }
            if (which == 0 && t < best_plain) {
                best_plain = t;
            } else if (which == 1 && t < best_bf16) {
                best_bf16 = t;
            } else if (which == 2 && t < best_f32) {
                best_f32 = t;
            }
        }
    }
    printf("%5dx%5dx%5d  %9.1f  %9.1f  %6.3f  %9.1f  %6.3f   %lldx%lldx%lld  %8.1f\n", s->m, s->k,
           s->n, flops / best_plain * 1e-9, flops / best_bf16 * 1e-9, best_plain / best_bf16,
           flops / best_f32 * 1e-9, best_plain / best_f32, (long long)rep.block[0],
           (long long)rep.block[1], (long long)rep.block[2], rep.roofline.modeled_us);

out:
    free(af);
    free(bf);
    free(cf);
    free(ah);
    free(bh);
    free(ch);
    return rc;
}

int main(int argc, char **argv)
{
    static const shape_t shapes[] = {
        {512, 512, 512}, {1024, 1024, 1024}, {2048, 2048, 512}, {2048, 2048, 2048}, {127, 129, 131},
    };
    tpu_chip_spec_t spec;
    tpu_vmem_t *vmem = NULL;
    tpu_err_t err = {0};
    int repeats = argc > 1 ? atoi(argv[1]) : 10;
    size_t i;
    int rc = 0;

    if (repeats < 1) {
        repeats = 1;
    }
    if (tpu_chip_preset("v5e", &spec, &err) != TPU_OK ||
        tpu_vmem_create(&spec, &vmem, &err) != TPU_OK) {
        fprintf(stderr, "bench_matmul: %s\n", err.msg);
        return 1;
    }
    printf("host GFLOP/s of the emulated matmul (v5e VMEM executor) vs one plain cblas_sgemm;\n"
           "best of %d rounds of %d runs each; ratio = plain time / emulated time\n\n",
           repeats, INNER - 1);
    printf("%17s  %9s  %9s  %6s  %9s  %6s   %-14s  %8s\n", "m x k x n", "sgemm", "bf16", "ratio",
           "f32", "ratio", "blocks", "TPU us");
    for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]) && rc == 0; i++) {
        rc = bench_shape(vmem, &shapes[i], repeats);
    }
    tpu_vmem_destroy(vmem);
    return rc;
}
