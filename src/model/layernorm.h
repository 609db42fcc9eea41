// LayerNorm over the last dimension as a forward/backward pair:
//   y = (x - mean) · rstd · w + b,   rstd = 1 / sqrt(var + 1e-5)   (biased variance, as PyTorch).
// Forward keeps mean and rstd (N) for the backward. Backward accumulates into d_in, d_w, d_b.
#pragma once
#include <cmath>

namespace shardlab {

template <class T>
void layernorm_forward(T* out, T* mean, T* rstd, const T* in, const T* w, const T* b, int N, int C) {
  const T eps = T(1e-5);
  for (int n = 0; n < N; ++n) {
    const T* x = in + static_cast<size_t>(n) * C;
    T* y = out + static_cast<size_t>(n) * C;
    T m = 0;
    for (int i = 0; i < C; ++i) m += x[i];
    m /= C;
    T v = 0;
    for (int i = 0; i < C; ++i) v += (x[i] - m) * (x[i] - m);
    v /= C;
    T s = T(1) / std::sqrt(v + eps);
    for (int i = 0; i < C; ++i) y[i] = (x[i] - m) * s * w[i] + b[i];
    mean[n] = m;
    rstd[n] = s;
  }
}

// With xhat = (x - mean)·rstd and g = d_out·w:  d_in += rstd · (g - mean(g) - xhat · mean(g·xhat)).
template <class T>
void layernorm_backward(T* d_in, T* d_w, T* d_b, const T* d_out, const T* in, const T* w, const T* mean,
                        const T* rstd, int N, int C) {
  for (int n = 0; n < N; ++n) {
    const T* x = in + static_cast<size_t>(n) * C;
    const T* dy = d_out + static_cast<size_t>(n) * C;
    T* dx = d_in + static_cast<size_t>(n) * C;
    const T m = mean[n], s = rstd[n];
    T g_mean = 0, gx_mean = 0;
    for (int i = 0; i < C; ++i) {
      T xhat = (x[i] - m) * s;
      T g = dy[i] * w[i];
      g_mean += g;
      gx_mean += g * xhat;
    }
    g_mean /= C;
    gx_mean /= C;
    for (int i = 0; i < C; ++i) {
      T xhat = (x[i] - m) * s;
      d_b[i] += dy[i];
      d_w[i] += dy[i] * xhat;
      dx[i] += s * (dy[i] * w[i] - g_mean - xhat * gx_mean);
    }
  }
}

}  // namespace shardlab
