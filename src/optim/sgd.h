// SGD with (heavy-ball) momentum and decoupled weight decay on a flat range of elements:
//   buf = μ·buf + g;  w = w - lr·(buf + wd·w)      (μ = 0: plain SGD, no state; claim C3's 4 bytes)
#pragma once
#include <cstddef>

namespace shardlab {

template <class T>
void sgd_update(T* w, const T* g, T* momentum_buf, size_t n, double lr, double momentum, double weight_decay,
                double grad_scale) {
  const T mu = T(momentum), lr_ = T(lr), wd = T(weight_decay), gs = T(grad_scale);
  for (size_t i = 0; i < n; ++i) {
    T d = g[i] * gs;
    if (momentum_buf) d = momentum_buf[i] = mu * momentum_buf[i] + d;
    w[i] -= lr_ * (d + wd * w[i]);
  }
}

}  // namespace shardlab
