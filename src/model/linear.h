// Linear layer y = x · Wᵀ + b as a forward/backward pair; W is (OC, IC) row-major.
// Backward OVERWRITES d_in and ACCUMULATES into d_w, d_b, so gradient accumulation over
// micro-batches needs no extra buffer.
#pragma once
#include <Eigen/Core>

#include "core/gemm.h"

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
void linear_forward(T* out, const T* in, const T* w, const T* b, int N, int IC, int OC) {
  gemm(false, true, N, OC, IC, T(1), in, IC, w, IC, T(0), out, OC);
  if (b) MatMap<T>(out, N, OC).rowwise() += ConstVecMap<T>(b, OC);
}

// d_in (N, IC) = d_out · w;  d_w (OC, IC) += d_outᵀ · in;  d_b (OC) += Σ_rows d_out.  d_in/d_b may be null.
template <class T>
void linear_backward(T* d_in, T* d_w, T* d_b, const T* d_out, const T* in, const T* w, int N, int IC, int OC) {
  if (d_in) gemm(false, false, N, IC, OC, T(1), d_out, OC, w, IC, T(0), d_in, IC);
  gemm(true, false, OC, IC, N, T(1), d_out, OC, in, IC, T(1), d_w, IC);
  if (d_b) VecMap<T>(d_b, OC) += ConstMatMap<T>(d_out, N, OC).colwise().sum();
}

}  // namespace shardlab
