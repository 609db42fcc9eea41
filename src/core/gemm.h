// GEMM through OpenBLAS (cblas), overloaded for float and double, row-major throughout.
// C (M,N) = alpha · op(A) (M,K) · op(B) (K,N) + beta · C. Every matrix product in the model goes here,
// and each counts its 2·M·N·K FLOPs (core/flops.h).
#pragma once
#include <cblas.h>

#include "core/flops.h"

namespace shardlab {

inline void gemm(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                 float beta, float* C, int ldc) {
  count_flops(2.0 * M * N * K);
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B,
              ldb, beta, C, ldc);
}

inline void gemm(bool ta, bool tb, int M, int N, int K, double alpha, const double* A, int lda, const double* B,
                 int ldb, double beta, double* C, int ldc) {
  count_flops(2.0 * M * N * K);
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B,
              ldb, beta, C, ldc);
}

}  // namespace shardlab
