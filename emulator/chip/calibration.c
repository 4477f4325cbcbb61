/*
 * The calibration profile of each chip preset (tpu/calibration.h): the
 * constants of --calibrated, where each was measured and on which rows it was
 * fitted.  docs/timing-model.md has the table with the errors.
 *
 * Links (a collective's time = hops x latency + bytes-term / ici_efficiency +
 * launch; the formula model has efficiency 1 and launch 0):
 * - v5e: the scaling book's three figures (shared/reference/measured_public.csv
 *   M01-M03, fit in collectives/ideal.c): efficiency 0.895, launch 2.5 us.
 * - v7 (TPU7x): AI-Hypercomputer/accelerator-microbenchmarks,
 *   Ironwood/guides/collectives/all_gather.md (commit 5bd5a8d), ten 4-chip
 *   all-gathers on 2x2x1 and 2x2x2 at 2-512 MiB per chip (measured_public.csv
 *   I01 I03 I05 J02 J04, tests/fidelity/measured_more.csv I02 I04 J01 J03
 *   J05).  The large sizes reach 99% of the link rate and every size pays
 *   11-15 us more than the bytes and hops: the fit that makes the largest
 *   relative error smallest is efficiency 0.986, launch 11.4 us (all ten
 *   within 1.6%).
 * - v6e: AI-Hypercomputer/tpu-recipes, microbenchmarks/trillium/collectives/
 *   README.md (commit acf1f8f): the example log of a v6e-256 (16x16) psum of a
 *   replicated bf16[17408, 17408] over the 256 chips, 235.76 GB/s by the
 *   script's 2 (N-1)/N bytes / time, i.e. 5121.4 us (tests/fidelity/
 *   measured_more.csv T01).  One 606 MB row sees the efficiency only: 0.66;
 *   the start cost, which it cannot see, is v7's.
 * - v4, v5p: no public collective measurement; v5e's (the same ICI generation
 *   of v4's 9e10 links, the same TPU generation as v5p).
 *
 * MXU (tpu_mxu_seconds_calibrated() in roofline.c):
 * - v7: the Ironwood GEMM table (accelerator-microbenchmarks,
 *   Ironwood/Ironwood_Microbenchmarks_readme.md, "GEMM": bf16 TFLOP/s per
 *   device = TensorCore for m = n = k from 128 to 32768, eight rows) gives a
 *   start cost of 1.6 us, a sustained 80% of the TensorCore's peak and a
 *   pipeline block of 1536 (the three constants that make the largest error of
 *   the eight smallest: 4.0%); the HBM efficiency 0.865 is measured apart, by
 *   the HBM guide of the same repository (Ironwood/guides/hbm/hbm.md: 3.2e12 of
 *   the 3.7e12 B/s of a TensorCore's share at 0.5-8 GiB).
 * - v6e: AI-Hypercomputer/tpu-recipes, microbenchmarks/README.md, the example
 *   outputs of benchmark_matmul.py on a v6e-1 (device time from the trace):
 *   bf16 4096^3 in 163.585 us (commit af2a7cd), 8192^3 in 1328.756 us
 *   (2a33362), 16384^3 in 10584.555 us (f0335a7): the sustained MXU fraction
 *   0.91 (the three within 8%); the start cost, block and HBM efficiency, which
 *   these large shapes cannot see, are v7's.
 * - v4, v5e, v5p: no public matmul table precise enough; v7's.
 */
#include "tpu/calibration.h"

#include <string.h>

#define V5E_LINKS "scaling book sharding.md pop quiz 2 and 8x16 bandwidth plot (M01-M03)"
#define V7_LINKS                                                                                 \
    "accelerator-microbenchmarks Ironwood all_gather.md @5bd5a8d, 2x2x1 and 2x2x2 at 2-512 MiB " \
    "(I01-I05, J01-J05)"
#define V7_MXU                                                                                     \
    "accelerator-microbenchmarks Ironwood_Microbenchmarks_readme.md GEMM table, m=n=k 128-32768; " \
    "HBM efficiency from Ironwood/guides/hbm/hbm.md"

#define V6E_LINKS                                                                                \
    "tpu-recipes trillium/collectives/README.md @acf1f8f, v6e-256 psum of 606 MB (T01); launch " \
    "v7's"
#define V6E_MXU                                                                         \
    "tpu-recipes microbenchmarks/README.md, v6e-1 bf16 matmul 4096^3, 8192^3, 16384^3 " \
    "(efficiency); launch, block, HBM efficiency v7's"

#define V7_ICI_EFFICIENCY  0.986
#define V7_LAUNCH_S        11.4e-6
#define V7_MXU_LAUNCH_S    1.6e-6
#define V7_MXU_EFFICIENCY  0.80
#define V7_HBM_EFFICIENCY  0.865
#define V7_MXU_BLOCK       1536
#define V6E_ICI_EFFICIENCY 0.66
#define V6E_MXU_EFFICIENCY 0.91

#define V5E_PART(chip) chip, "v5e", TPU_LINK_V5E_ICI_EFFICIENCY, TPU_LINK_V5E_LAUNCH_S, V5E_LINKS
#define V7_PART(chip)  chip, "v7", V7_ICI_EFFICIENCY, V7_LAUNCH_S, V7_LINKS
#define V7_MXU_PART \
    "v7", V7_MXU_LAUNCH_S, V7_MXU_EFFICIENCY, V7_HBM_EFFICIENCY, V7_MXU_BLOCK, V7_MXU

static const tpu_chip_calibration_t profiles[] = {
    {V5E_PART("v4"), V7_MXU_PART},
    {V5E_PART("v5e"), V7_MXU_PART},
    {V5E_PART("v5p"), V7_MXU_PART},
    {"v6e", "v6e", V6E_ICI_EFFICIENCY, V7_LAUNCH_S, V6E_LINKS, "v6e", V7_MXU_LAUNCH_S,
     V6E_MXU_EFFICIENCY, V7_HBM_EFFICIENCY, V7_MXU_BLOCK, V6E_MXU},
    {V7_PART("v7"), V7_MXU_PART},
};

#define NPROFILES ((int)(sizeof(profiles) / sizeof(profiles[0])))

const tpu_chip_calibration_t *tpu_chip_calibration(const char *chip)
{
    tpu_chip_spec_t spec;
    int i;

    /* The preset's own name (aliases resolved); an unknown chip is a v5e. */
    if (chip != NULL && tpu_chip_preset(chip, &spec, NULL) == TPU_OK) {
        for (i = 0; i < NPROFILES; i++) {
            if (strcmp(profiles[i].chip, spec.name) == 0) {
                return &profiles[i];
            }
        }
    }
    return &profiles[1];
}

int tpu_chip_calibration_measured(const tpu_chip_calibration_t *cal)
{
    return strcmp(cal->chip, cal->links_from) == 0 && strcmp(cal->chip, cal->mxu_from) == 0;
}

void tpu_chip_link_calibrate(const tpu_chip_spec_t *spec, tpu_link_model_t *link)
{
    const tpu_chip_calibration_t *cal = tpu_chip_calibration(spec->name);

    link->ici_efficiency = cal->ici_efficiency;
    link->launch = cal->launch;
}
