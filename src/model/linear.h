// Linear layer y = x · Wᵀ + b as a forward/backward pair; W is (OC, IC) row-major.
// Backward OVERWRITES d_in and ACCUMULATES into d_w, d_b, so gradient accumulation over
// micro-batches needs no extra buffer. split (row_split.h): the N rows as one product, or one per sample.
#pragma once
#include <Eigen/Core>

#include "core/gemm.h"
#include "model/row_split.h"

namespace shardlab {

template <class T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using MatMap = Eigen::Map<RowMat<T>>;
template <class T>
using ConstMatMap = Eigen::Map<const RowMat<T>>;
template <class T>
using VecMap = Eigen::Map<Eigen::Matrix<T, 1, Eigen::Dynamic>>;
template <class T>
using ConstVecMap = Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>>;

// out (N, OC) = in (N, IC) · w (OC, IC)ᵀ + b (OC); b may be null.
template <class T>
void linear_forward(T* out, const T* in, const T* w, const T* b, int N, int IC, int OC, RowSplit split = {}) {
  const int n = N / split.groups;
  for (int g = 0; g < split.groups; ++g)
    gemm(false, true, n, OC, IC, T(1), in + size_t(g) * n * IC, IC, w, IC, T(0), out + size_t(g) * n * OC, OC);
  if (b) MatMap<T>(out, N, OC).rowwise() += ConstVecMap<T>(b, OC);
}

// d_in (N, IC) = d_out · w;  d_w (OC, IC) += d_outᵀ · in;  d_b (OC) += Σ_rows d_out.  d_in/d_b may be null.
template <class T>
void linear_backward(T* d_in, T* d_w, T* d_b, const T* d_out, const T* in, const T* w, int N, int IC, int OC,
                     RowSplit split = {}) {
  const int n = N / split.groups;
  for (int g = 0; g < split.groups; ++g) {
    const T* dy = d_out + size_t(g) * n * OC;
    if (d_in) gemm(false, false, n, IC, OC, T(1), dy, OC, w, IC, T(0), d_in + size_t(g) * n * IC, IC);
    gemm(true, false, OC, IC, n, T(1), dy, OC, in + size_t(g) * n * IC, IC, T(1), split.grad_of(d_w, g), IC);
    if (d_b) VecMap<T>(split.grad_of(d_b, g), OC) += ConstMatMap<T>(dy, n, OC).colwise().sum();
  }
}

// d_b (OC) += Σ_rows d_out, per group (a bias added outside the product: the row-parallel ones with sequence
// parallelism).
template <class T>
void bias_backward(T* d_b, const T* d_out, int N, int OC, RowSplit split = {}) {
  const int n = N / split.groups;
  for (int g = 0; g < split.groups; ++g)
    VecMap<T>(split.grad_of(d_b, g), OC) += ConstMatMap<T>(d_out + size_t(g) * n * OC, n, OC).colwise().sum();
}

}  // namespace shardlab
