// LayerNorm over the last dimension as a forward/backward pair (rows vectorised by Eigen):
//   y = (x - mean) · rstd · w + b,   rstd = 1 / sqrt(var + 1e-5)   (biased variance, as PyTorch).
// Forward keeps mean and rstd (N) for the backward. Backward ACCUMULATES into d_in, d_w, d_b (row n's into its
// sample's d_w, d_b with a per-sample split, row_split.h; in the exact mode with sums_w, sums_b, each row's
// contribution into those order-free sums instead: a LayerNorm is whole on every tp rank, which may hold only some
// of a sample's rows; d_out must not overlap d_in there: its rows go into sums_b after the loop)
// (d_in accumulating is what lets the residual stream's gradient pass straight through).
#pragma once
#include <cmath>

#include <Eigen/Core>

#include "core/exact_sum.h"
#include "model/row_split.h"

namespace shardlab {

template <class T>
void layernorm_forward(T* out, T* mean, T* rstd, const T* in, const T* w, const T* b, int N, int C) {
  using Row = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
  using ConstRow = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
  const T eps = T(1e-5);
  ConstRow wv(w, C), bv(b, C);
  for (int n = 0; n < N; ++n) {
    ConstRow x(in + static_cast<size_t>(n) * C, C);
    const T m = x.sum() / T(C);
    const T var = (x - m).square().sum() / T(C);
    const T s = T(1) / std::sqrt(var + eps);
    Row(out + static_cast<size_t>(n) * C, C) = (x - m) * s * wv + bv;
    mean[n] = m;
    rstd[n] = s;
  }
}

// With xhat = (x - mean)·rstd and g = d_out·w:  d_in += rstd · (g - mean(g) - xhat · mean(g·xhat)).
template <class T>
void layernorm_backward(T* d_in, T* d_w, T* d_b, const T* d_out, const T* in, const T* w, const T* mean, const T* rstd,
                        int N, int C, RowSplit split = {}, ExactSum* sums_w = nullptr, ExactSum* sums_b = nullptr) {
  using Row = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
  using ConstRow = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
  ConstRow wv(w, C);
  // The exact mode: the rows' d_w contributions gathered, kRows at a time, each batch into the sums in one pass
  // (order-free: the same bits as row by row); d_b's terms are d_out's rows themselves, added at the end.
  constexpr int kRows = 16;
  Eigen::Array<T, Eigen::Dynamic, 1> contributions(sums_w ? size_t(kRows) * C : 0);
  int gathered = 0;
  for (int n = 0; n < N; ++n) {
    const int group = split.group_of(size_t(n), size_t(N));  // whose gradients row n adds to
    Row dw(split.grad_of(d_w, group), C), db(split.grad_of(d_b, group), C);
    ConstRow x(in + static_cast<size_t>(n) * C, C), dy(d_out + static_cast<size_t>(n) * C, C);
    const T m = mean[n], s = rstd[n];
    const T g_mean = (dy * wv).sum() / T(C);
    const T gx_mean = (dy * wv * (x - m) * s).sum() / T(C);
    if (sums_w) {  // the exact mode: each row's contribution goes into the order-free sums as it is
      Row(contributions.data() + size_t(gathered) * C, C) = dy * (x - m) * s;
      if (++gathered == kRows) {
        exact_add_rows(sums_w, contributions.data(), size_t(C), gathered, size_t(C));
        gathered = 0;
      }
    } else {
      db += dy;
      dw += dy * (x - m) * s;
    }
    Row(d_in + static_cast<size_t>(n) * C, C) += s * (dy * wv - g_mean - (x - m) * s * gx_mean);
  }
  if (sums_w) {
    exact_add_rows(sums_w, contributions.data(), size_t(C), gathered, size_t(C));
    exact_add_rows(sums_b, d_out, size_t(C), N, size_t(C));
  }
}

}  // namespace shardlab
