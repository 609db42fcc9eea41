// AdamW (decoupled weight decay) on a flat range of elements. Works on any slice, so a ZeRO rank
// updates only the shard it owns. The update (claim C2):
//   m = β1·m + (1-β1)·g;  v = β2·v + (1-β2)·g²;  m̂ = m/(1-β1^t);  v̂ = v/(1-β2^t)
//   w = w - lr·(m̂/(sqrt(v̂)+eps) + wd·w)
// g is the gradient times grad_scale (the clipping factor), applied here so gradients are read once.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace shardlab {

struct AdamWParams {
  double lr, beta1, beta2, eps;
};

template <class T>
void adamw_update(T* w, const T* g, T* m, T* v, size_t n, const AdamWParams& p, double weight_decay, int64_t step,
                  double grad_scale) {
  const T b1 = T(p.beta1), b2 = T(p.beta2), eps = T(p.eps), lr = T(p.lr), wd = T(weight_decay), gs = T(grad_scale);
  const T c1 = T(1.0 / (1.0 - std::pow(p.beta1, double(step))));
  const T c2 = T(1.0 / (1.0 - std::pow(p.beta2, double(step))));
  for (size_t i = 0; i < n; ++i) {
    T gi = g[i] * gs;
    m[i] = b1 * m[i] + (T(1) - b1) * gi;
    v[i] = b2 * v[i] + (T(1) - b2) * gi * gi;
    T mhat = m[i] * c1, vhat = v[i] * c2;
    w[i] -= lr * (mhat / (std::sqrt(vhat) + eps) + wd * w[i]);
  }
}

}  // namespace shardlab
