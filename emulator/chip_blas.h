/*
 * The one CBLAS routine the chip model calls, cblas_sgemm, declared as the
 * reference CBLAS interface declares it (LP64: int sizes, as Debian's OpenBLAS
 * is built; the library itself is linked through PkgConfig::OPENBLAS).
 *
 * Why not <cblas.h>: OpenBLAS' openblas_config.h includes <sched.h> for
 * cpu_set_t, and the tpu_emulator target has collectives/ on its include path,
 * whose sched.h shadows the system's; cblas.h then fails to compile
 * ("unknown type name 'cpu_set_t'").  Private to emulator/; include it in
 * no file that also includes <cblas.h>.
 */
#ifndef TPU_CHIP_BLAS_H
#define TPU_CHIP_BLAS_H

enum CBLAS_ORDER {
    CblasRowMajor = 101,
    CblasColMajor = 102
};

enum CBLAS_TRANSPOSE {
    CblasNoTrans = 111,
    CblasTrans = 112,
    CblasConjTrans = 113,
    CblasConjNoTrans = 114
};

void cblas_sgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE transa, enum CBLAS_TRANSPOSE transb,
                 int m, int n, int k, float alpha, const float *a, int lda, const float *b, int ldb,
                 float beta, float *c, int ldc);

#endif /* TPU_CHIP_BLAS_H */
