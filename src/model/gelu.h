// GELU, tanh approximation, as a forward/backward pair (vectorised by Eigen):
//   y = 0.5·x·(1 + tanh(k·(x + 0.044715·x³))),  k = sqrt(2/π).
#pragma once
#include <algorithm>

#include <Eigen/Core>

namespace shardlab {

template <class T>
using ArrMap = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <class T>
using ConstArrMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

template <class T>
void gelu_forward(T* out, const T* in, size_t n) {
  const T k = T(0.7978845608028654);
  ConstArrMap<T> x(in, n);
  ArrMap<T>(out, n) = T(0.5) * x * (T(1) + (k * (x + T(0.044715) * x.cube())).tanh());
}

// d_in = d_out · y'(x),  y' = 0.5·(1 + t) + 0.5·x·(1 - t²)·k·(1 + 3·0.044715·x²),  t = tanh(k·(x + 0.044715·x³)).
// Works in chunks so t lives in a small fixed buffer instead of an allocation per call.
template <class T>
void gelu_backward(T* d_in, const T* d_out, const T* in, size_t n) {
  constexpr size_t kChunk = 1024;
  const T k = T(0.7978845608028654);
  Eigen::Array<T, kChunk, 1> t;
  for (size_t s = 0; s < n; s += kChunk) {
    const Eigen::Index m = static_cast<Eigen::Index>(std::min(kChunk, n - s));
    ConstArrMap<T> x(in + s, m);
    t.head(m) = (k * (x + T(0.044715) * x.cube())).tanh();
    ArrMap<T>(d_in + s, m) =
        ConstArrMap<T>(d_out + s, m) * (T(0.5) * (T(1) + t.head(m)) + T(0.5) * x * (T(1) - t.head(m).square()) * k *
                                                                          (T(1) + T(3 * 0.044715) * x.square()));
  }
}

}  // namespace shardlab
